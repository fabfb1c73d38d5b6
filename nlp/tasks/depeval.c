/* Dependency decoders and metrics: see nlp/tasks/depeval.h. */
#include "nlp/tasks/depeval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define EPS_LOG 1e-9

static int oom(void)
{
    return gr_error(GR_ENOMEM, "dependency decoding: out of memory");
}

int nlp_dep_decoder_parse(const char *name)
{
    if (strcmp(name, "argmax") == 0) return NLP_DEP_ARGMAX;
    if (strcmp(name, "chuliu") == 0) return NLP_DEP_CHULIU;
    if (strcmp(name, "eisner") == 0) return NLP_DEP_EISNER;
    if (strcmp(name, "structformer") == 0) return NLP_DEP_STRUCTFORMER;
    return -1;
}

const char *nlp_dep_decoder_name(enum nlp_dep_decoder d)
{
    switch (d) {
    case NLP_DEP_ARGMAX: return "argmax";
    case NLP_DEP_CHULIU: return "chuliu";
    case NLP_DEP_EISNER: return "eisner";
    case NLP_DEP_STRUCTFORMER: return "structformer";
    }
    return "?";
}

int nlp_deps_argmax(const float *H, int32_t n, int32_t *pred)
{
    if (n == 1) {
        pred[0] = 0;
        return 0;
    }
    for (int32_t i = 0; i < n; i++) {
        int32_t best = i == 0 ? 1 : 0;
        for (int32_t j = best + 1; j < n; j++) {
            if (j != i && H[(size_t)i * n + j] > H[(size_t)i * n + best]) {
                best = j;
            }
        }
        pred[i] = best;
    }
    return 0;
}

double nlp_deps_tree_score(const float *H, int32_t n, const int32_t *pred)
{
    double s = 0;
    for (int32_t i = 0; i < n; i++) {
        if (pred[i] != i) {
            s += log((double)H[(size_t)i * n + pred[i]] + EPS_LOG);
        }
    }
    return s;
}

/* ---- Chu-Liu/Edmonds ---------------------------------------------------- */

static double diff(double a, double b)
{
    return a == -INFINITY ? -INFINITY : a - b;
}

static int msa_rec(const double *S, int32_t m, int32_t root, int32_t *head)
{
    for (int32_t v = 0; v < m; v++) {
        if (v == root) {
            head[v] = v;
            continue;
        }
        int32_t best = v == 0 ? 1 : 0;
        for (int32_t u = best + 1; u < m; u++) {
            if (u != v && S[(size_t)v * m + u] > S[(size_t)v * m + best]) {
                best = u;
            }
        }
        head[v] = best;
    }
    /* Find a cycle: walk from each node, colouring by the walk's start. */
    int32_t *mark = malloc((size_t)m * 4 * sizeof *mark);
    if (mark == NULL) {
        return oom();
    }
    int32_t *map = mark + m, *unmap = map + m, *aux = unmap + m;
    for (int32_t v = 0; v < m; v++) {
        mark[v] = -1;
    }
    int32_t in_cycle = -1;
    for (int32_t s = 0; s < m && in_cycle < 0; s++) {
        int32_t v = s;
        while (v != root && mark[v] < 0) {
            mark[v] = s;
            v = head[v];
        }
        if (v != root && mark[v] == s) {
            in_cycle = v;
        }
    }
    if (in_cycle < 0) {
        free(mark);
        return 0;
    }
    /* aux[v] = 1 for cycle members. */
    memset(aux, 0, (size_t)m * sizeof *aux);
    int32_t csize = 0;
    int32_t v = in_cycle;
    do {
        aux[v] = 1;
        csize++;
        v = head[v];
    } while (v != in_cycle);
    int32_t mm = m - csize + 1, c = mm - 1;
    for (int32_t u = 0, k = 0; u < m; u++) {
        map[u] = aux[u] ? c : k;
        if (!aux[u]) {
            unmap[k++] = u;
        }
    }
    double *S2 = malloc((size_t)mm * mm * sizeof *S2);
    int32_t *enter = malloc((size_t)(2 * m + mm) * sizeof *enter);
    if (S2 == NULL || enter == NULL) {
        free(S2);
        free(enter);
        free(mark);
        return oom();
    }
    int32_t *leave = enter + m, *head2 = leave + m;
    for (size_t i = 0; i < (size_t)mm * mm; i++) {
        S2[i] = -INFINITY;
    }
    for (int32_t a = 0; a < m; a++) {
        enter[a] = leave[a] = -1;
    }
    for (int32_t vv = 0; vv < m; vv++) {
        for (int32_t u = 0; u < m; u++) {
            if (u == vv) {
                continue;
            }
            double s = S[(size_t)vv * m + u];
            if (!aux[vv] && !aux[u]) {
                S2[(size_t)map[vv] * mm + map[u]] = s;
            } else if (aux[vv] && !aux[u]) {
                /* u -> cycle, entering at vv */
                double w = diff(s, S[(size_t)vv * m + head[vv]]);
                if (enter[u] < 0 || w > S2[(size_t)c * mm + map[u]]) {
                    S2[(size_t)c * mm + map[u]] = w;
                    enter[u] = vv;
                }
            } else if (!aux[vv] && aux[u]) {
                /* cycle -> vv, leaving from u */
                if (leave[vv] < 0 || s > S2[(size_t)map[vv] * mm + c]) {
                    S2[(size_t)map[vv] * mm + c] = s;
                    leave[vv] = u;
                }
            }
        }
    }
    int rc = msa_rec(S2, mm, map[root], head2);
    if (rc == 0) {
        for (int32_t k = 0; k < mm - 1; k++) {
            int32_t u = unmap[k];
            if (u == root) {
                continue;
            }
            int32_t h = head2[k];
            head[u] = h == c ? leave[u] : unmap[h];
        }
        int32_t from = unmap[head2[c]];
        head[enter[from]] = from;
    }
    free(S2);
    free(enter);
    free(mark);
    return rc;
}

int nlp_deps_msa(const double *S, int32_t n, int32_t root, int32_t *head)
{
    if (n <= 0 || root < 0 || root >= n) {
        return gr_error(GR_EINVAL, "msa: root %d of %d nodes", root, n);
    }
    if (n == 1) {
        head[0] = 0;
        return 0;
    }
    return msa_rec(S, n, root, head);
}

static double *log_scores(const float *H, int32_t n)
{
    double *S = malloc((size_t)n * n * sizeof *S);
    if (S == NULL) {
        return NULL;
    }
    for (int32_t i = 0; i < n; i++) {
        for (int32_t j = 0; j < n; j++) {
            S[(size_t)i * n + j] =
                i == j ? -INFINITY
                       : log((double)H[(size_t)i * n + j] + EPS_LOG);
        }
    }
    return S;
}

int nlp_deps_chuliu(const float *H, int32_t n, int32_t *pred)
{
    if (n <= 1) {
        if (n == 1) {
            pred[0] = 0;
        }
        return 0;
    }
    double *S = log_scores(H, n);
    int32_t *t = malloc((size_t)n * sizeof *t);
    if (S == NULL || t == NULL) {
        free(S);
        free(t);
        return oom();
    }
    double best = -INFINITY;
    int have = 0, rc = 0;
    for (int32_t r = 0; r < n && rc == 0; r++) {
        rc = nlp_deps_msa(S, n, r, t);
        if (rc < 0) {
            break;
        }
        double s = 0;
        for (int32_t i = 0; i < n; i++) {
            if (i != r) {
                s += S[(size_t)i * n + t[i]];
            }
        }
        if (!have || s > best) {
            best = s;
            have = 1;
            memcpy(pred, t, (size_t)n * sizeof *t);
        }
    }
    free(S);
    free(t);
    return rc;
}

/* ---- Eisner ---------------------------------------------------------------- */

struct eisner {
    int32_t n;
    const double *S;
    double *Cr, *Cl, *Ir, *Il;
    int32_t *bCr, *bCl, *bIr, *bIl;
    int32_t *pred;
};

#define AT(x, s, t) ((x)[(size_t)(s) * e->n + (t)])

static void bt_C(const struct eisner *e, int32_t s, int32_t t, int right);

static void bt_I(const struct eisner *e, int32_t s, int32_t t, int right)
{
    int32_t q = right ? AT(e->bIr, s, t) : AT(e->bIl, s, t);
    if (right) {
        e->pred[t] = s;
    } else {
        e->pred[s] = t;
    }
    bt_C(e, s, q, 1);
    bt_C(e, q + 1, t, 0);
}

static void bt_C(const struct eisner *e, int32_t s, int32_t t, int right)
{
    if (s == t) {
        return;
    }
    if (right) {
        int32_t q = AT(e->bCr, s, t);
        bt_I(e, s, q, 1);
        bt_C(e, q, t, 1);
    } else {
        int32_t q = AT(e->bCl, s, t);
        bt_C(e, s, q, 0);
        bt_I(e, q, t, 0);
    }
}

int nlp_deps_eisner(const float *H, int32_t n, int32_t *pred)
{
    if (n <= 1) {
        if (n == 1) {
            pred[0] = 0;
        }
        return 0;
    }
    size_t nn = (size_t)n * n;
    double *S = log_scores(H, n);
    double *tab = malloc(4 * nn * sizeof *tab);
    int32_t *bp = malloc(4 * nn * sizeof *bp);
    if (S == NULL || tab == NULL || bp == NULL) {
        free(S);
        free(tab);
        free(bp);
        return oom();
    }
    struct eisner es = {n, S, tab, tab + nn, tab + 2 * nn, tab + 3 * nn,
                        bp, bp + nn, bp + 2 * nn, bp + 3 * nn, pred};
    struct eisner *e = &es;
    for (int32_t s = 0; s < n; s++) {
        AT(e->Cr, s, s) = AT(e->Cl, s, s) = 0;
    }
    for (int32_t w = 1; w < n; w++) {
        for (int32_t s = 0; s + w < n; s++) {
            int32_t t = s + w;
            double best = -INFINITY;
            int32_t arg = s;
            for (int32_t q = s; q < t; q++) {
                double v = AT(e->Cr, s, q) + AT(e->Cl, q + 1, t);
                if (q == s || v > best) {
                    best = v;
                    arg = q;
                }
            }
            AT(e->Ir, s, t) = best + S[(size_t)t * n + s];
            AT(e->Il, s, t) = best + S[(size_t)s * n + t];
            AT(e->bIr, s, t) = AT(e->bIl, s, t) = arg;
            best = -INFINITY;
            arg = s + 1;
            for (int32_t q = s + 1; q <= t; q++) {
                double v = AT(e->Ir, s, q) + AT(e->Cr, q, t);
                if (q == s + 1 || v > best) {
                    best = v;
                    arg = q;
                }
            }
            AT(e->Cr, s, t) = best;
            AT(e->bCr, s, t) = arg;
            best = -INFINITY;
            arg = s;
            for (int32_t q = s; q < t; q++) {
                double v = AT(e->Cl, s, q) + AT(e->Il, q, t);
                if (q == s || v > best) {
                    best = v;
                    arg = q;
                }
            }
            AT(e->Cl, s, t) = best;
            AT(e->bCl, s, t) = arg;
        }
    }
    double best = -INFINITY;
    int32_t root = 0;
    for (int32_t r = 0; r < n; r++) {
        double v = AT(e->Cl, 0, r) + AT(e->Cr, r, n - 1);
        if (r == 0 || v > best) {
            best = v;
            root = r;
        }
    }
    pred[root] = root;
    bt_C(e, 0, root, 0);
    bt_C(e, root, n - 1, 1);
    free(S);
    free(tab);
    free(bp);
    return 0;
}

#undef AT

int nlp_deps_decode(enum nlp_dep_decoder d, const float *H, int32_t n,
                    int32_t *pred)
{
    switch (d) {
    case NLP_DEP_ARGMAX: return nlp_deps_argmax(H, n, pred);
    case NLP_DEP_CHULIU: return nlp_deps_chuliu(H, n, pred);
    case NLP_DEP_EISNER: return nlp_deps_eisner(H, n, pred);
    case NLP_DEP_STRUCTFORMER:
        return gr_error(GR_EINVAL, "the structformer decoder needs a "
                        "StructFormer's heights, not only a head matrix");
    }
    return gr_error(GR_EINVAL, "unknown dependency decoder %d", (int)d);
}

/* ---- metrics ---------------------------------------------------------------- */

void nlp_dep_eval_init(struct nlp_dep_eval *ev)
{
    memset(ev, 0, sizeof *ev);
}

void nlp_dep_eval_free(struct nlp_dep_eval *ev)
{
    for (int32_t i = 0; i < ev->n_labels; i++) {
        free(ev->labels[i]);
    }
    free(ev->labels);
    free(ev->label_total);
    free(ev->label_correct);
    free(ev->mark);
    memset(ev, 0, sizeof *ev);
}

static int32_t label_id(struct nlp_dep_eval *ev, const char *l)
{
    for (int32_t i = 0; i < ev->n_labels; i++) {
        if (strcmp(ev->labels[i], l) == 0) {
            return i;
        }
    }
    if (ev->n_labels == ev->labels_cap) {
        int32_t c = ev->labels_cap ? 2 * ev->labels_cap : 32;
        char **a = realloc(ev->labels, (size_t)c * sizeof *a);
        if (a) ev->labels = a;
        int64_t *b = realloc(ev->label_total, (size_t)c * sizeof *b);
        if (b) ev->label_total = b;
        int64_t *d = realloc(ev->label_correct, (size_t)c * sizeof *d);
        if (d) ev->label_correct = d;
        if (!a || !b || !d) {
            return oom();
        }
        ev->labels_cap = c;
    }
    size_t k = strlen(l) + 1;
    char *s = malloc(k);
    if (s == NULL) {
        return oom();
    }
    memcpy(s, l, k);
    ev->labels[ev->n_labels] = s;
    ev->label_total[ev->n_labels] = ev->label_correct[ev->n_labels] = 0;
    return ev->n_labels++;
}

int nlp_dep_eval_add(struct nlp_dep_eval *ev, int32_t n, const int32_t *pred,
                     const int32_t *gold, const char *const *gold_labels)
{
    for (int32_t i = 0; i < n; i++) {
        if (pred[i] < 0 || pred[i] >= n || gold[i] < 0 || gold[i] >= n) {
            return gr_error(GR_EINVAL, "dependency eval: head of token %d "
                            "out of 0..%d (pred %d, gold %d)", i, n - 1,
                            pred[i], gold[i]);
        }
    }
    int64_t nn = (int64_t)n * n;
    if (nn > ev->mark_cap) {
        uint8_t *m = realloc(ev->mark, (size_t)nn);
        if (m == NULL) {
            return oom();
        }
        ev->mark = m;
        ev->mark_cap = nn;
    }
    memset(ev->mark, 0, (size_t)nn);
    for (int32_t i = 0; i < n; i++) {
        int32_t a = i < gold[i] ? i : gold[i], b = i < gold[i] ? gold[i] : i;
        ev->mark[(size_t)a * n + b] = 1;
    }
    for (int32_t i = 0; i < n; i++) {
        int32_t a = i < pred[i] ? i : pred[i], b = i < pred[i] ? pred[i] : i;
        uint8_t *m = &ev->mark[(size_t)a * n + b];
        if (*m == 1) {
            ev->undirected++;
            *m = 2;
        }
        int ok = pred[i] == gold[i];
        ev->correct += ok;
        if (gold[i] == i) {
            ev->gold_roots++;
            ev->roots_correct += ok;
        }
        if (gold_labels) {
            int32_t l = label_id(ev, gold_labels[i]);
            if (l < 0) {
                return l;
            }
            ev->label_total[l]++;
            ev->label_correct[l] += ok;
        }
    }
    ev->n_sentences++;
    ev->n_tokens += n;
    return 0;
}

void nlp_dep_eval_scores(const struct nlp_dep_eval *ev,
                         struct nlp_dep_scores *s)
{
    s->n_sentences = ev->n_sentences;
    s->n_tokens = ev->n_tokens;
    double t = ev->n_tokens ? (double)ev->n_tokens : NAN;
    s->uas = 100.0 * (double)ev->correct / t;
    s->uuas = 100.0 * (double)ev->undirected / t;
    s->root = ev->gold_roots
                  ? 100.0 * (double)ev->roots_correct / (double)ev->gold_roots
                  : NAN;
}

double nlp_dep_eval_label_recall(const struct nlp_dep_eval *ev, int32_t i)
{
    if (i < 0 || i >= ev->n_labels || ev->label_total[i] == 0) {
        return NAN;
    }
    return 100.0 * (double)ev->label_correct[i] / (double)ev->label_total[i];
}
