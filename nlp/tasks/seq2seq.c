/* The sequence-to-sequence task (nlp/tasks/seq2seq.h). */
#define _POSIX_C_SOURCE 200809L
#include "nlp/tasks/seq2seq.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "core/files.h"
#include "kernels/checkpoint.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "kernels/tape.h"
#include "nlp/data/mlu.h"
#include "nlp/tasks/bleu.h"
#include "train/train.h"

#define LINE_CAP (1 << 16)

static const char *const specials[4] = {"<pad>", "<s>", "</s>", "<unk>"};
enum { PAD = 0, BOS = 1, EOS = 2, UNK = 3 };

void nlp_s2s_train_config_default(struct nlp_s2s_train_config *c)
{
    memset(c, 0, sizeof *c);
    c->model = nlp_s2s_config_default(4, 4);
    c->model_name = "transformer";
    c->bpe_merges = 2000;
    c->max_len = 64;
    c->batch = 32;
    c->max_steps = 1000;
    c->eval_every = 200;
    c->warmup = 400;
    c->lr_factor = 2.0f;
    c->label_smoothing = 0.1f;
    c->clip = 1.0f;
    c->seed = 1;
    c->task = "tsv";
    c->adam_beta2 = 0.98f;
}

void nlp_s2s_train_config_mlu(struct nlp_s2s_train_config *c)
{
    nlp_s2s_train_config_default(c);
    c->task = "mlu";
    c->bpe_merges = 0;
    c->max_len = 32;
    c->batch = 256;
    c->max_steps = 100000;
    c->eval_every = 1000;
    c->warmup = 8000;
    c->lr_factor = 2.0f;
    c->adam_beta2 = 0.997f;
    c->mlu_train = 1000000;
    c->mlu_valid = 10000;
}

int nlp_s2s_model_by_name(struct nlp_s2s_config *m, const char *name)
{
    if (strcmp(name, "transformer") == 0) {
        m->ft_gate = m->ft_conv = 0;
    } else if (strcmp(name, "ftt") == 0) {
        m->ft_gate = 1;
        m->ft_conv = 0;
    } else if (strcmp(name, "ftt-conv") == 0) {
        m->ft_gate = m->ft_conv = 1;
    } else {
        return gr_error(GR_EINVAL, "unknown seq2seq model '%s' (known: "
                        "transformer|ftt|ftt-conv)", name);
    }
    return 0;
}

/* ---- data ---- */

struct pairs {
    char **src, **tgt;
    int64_t n;
    char *buf;
};

/* A set read from a file owns src, tgt and buf; a view of generated
 * pairs (buf NULL) owns nothing. */
static void pairs_free(struct pairs *p)
{
    if (p->buf != NULL) {
        free(p->src);
        free(p->tgt);
        free(p->buf);
    }
    memset(p, 0, sizeof *p);
}

static struct pairs pairs_view(const struct nlp_mlu_set *m, int64_t off,
                               int64_t n)
{
    struct pairs p = {m->src + off, m->tgt + off, n, NULL};
    return p;
}

/* Writes pairs as TSV (source TAB target), atomically. */
static int write_pairs(const char *path, const struct pairs *p, int force)
{
    size_t cap = 1;
    for (int64_t i = 0; i < p->n; i++) {
        cap += strlen(p->src[i]) + strlen(p->tgt[i]) + 2;
    }
    char *txt = malloc(cap), *q = txt;
    if (txt == NULL) {
        return gr_error(GR_ENOMEM, "seq2seq: out of memory");
    }
    for (int64_t i = 0; i < p->n; i++) {
        q += sprintf(q, "%s\t%s\n", p->src[i], p->tgt[i]);
    }
    int rc = gr_write_file_atomic(path, txt, (size_t)(q - txt), force);
    free(txt);
    return rc;
}

static int read_tsv(const char *path, struct pairs *p)
{
    memset(p, 0, sizeof *p);
    size_t size = 0;
    int rc = gr_read_file(path, (size_t)1 << 30, &p->buf, &size);
    if (rc < 0) {
        return rc;
    }
    int64_t lines = 1;
    for (size_t i = 0; i < size; i++) {
        lines += p->buf[i] == '\n';
    }
    p->src = malloc((size_t)lines * sizeof *p->src);
    p->tgt = malloc((size_t)lines * sizeof *p->tgt);
    if (p->src == NULL || p->tgt == NULL) {
        pairs_free(p);
        return gr_error(GR_ENOMEM, "%s: out of memory", path);
    }
    char *s = p->buf;
    for (int64_t line = 1; s != NULL && *s; line++) {
        char *nl = strchr(s, '\n');
        if (nl) {
            *nl = '\0';
        }
        size_t len = strlen(s);
        if (len > 0 && s[len - 1] == '\r') {
            s[--len] = '\0';
        }
        if (len > 0) {
            char *tab = strchr(s, '\t');
            if (tab == NULL || strchr(tab + 1, '\t') != NULL) {
                pairs_free(p);
                return gr_error(GR_EFORMAT, "%s:%lld: want one TAB between "
                                "source and target", path, (long long)line);
            }
            if (len > LINE_CAP / 4) {
                pairs_free(p);
                return gr_error(GR_EFORMAT, "%s:%lld: a line of %zu bytes "
                                "(at most %d)", path, (long long)line, len,
                                LINE_CAP / 4);
            }
            *tab = '\0';
            p->src[p->n] = s;
            p->tgt[p->n] = tab + 1;
            p->n++;
        }
        s = nl ? nl + 1 : NULL;
    }
    if (p->n == 0) {
        pairs_free(p);
        return gr_error(GR_EFORMAT, "%s: no source TAB target pairs", path);
    }
    return 0;
}

/* Subword ids of a raw line, at most cap of them (*cut set when more). */
static int to_ids(const struct nlp_bpe *bpe, const struct nlp_vocab *v,
                  const char *line, int32_t cap, int32_t *ids, int32_t *n,
                  int *cut)
{
    static char enc[LINE_CAP];
    int rc = nlp_bpe_encode_line(bpe, line, enc, sizeof enc);
    if (rc < 0) {
        return rc;
    }
    *n = 0;
    *cut = 0;
    for (char *t = strtok(enc, " "); t != NULL; t = strtok(NULL, " ")) {
        if (*n == cap) {
            *cut = 1;
            break;
        }
        int32_t id = nlp_vocab_find(v, t, strlen(t));
        ids[(*n)++] = id < 0 ? UNK : id;
    }
    return 0;
}

/* Text of ids (subwords joined, "@@ " removed) into out[cap]. */
static int to_text(const struct nlp_vocab *v, const int32_t *ids, int32_t n,
                   char *out, size_t cap)
{
    static char joined[LINE_CAP];
    size_t o = 0;
    joined[0] = '\0';
    for (int32_t i = 0; i < n; i++) {
        const char *w = ids[i] >= 0 && ids[i] < v->size
                            ? nlp_vocab_word(v, ids[i])
                            : specials[UNK];
        size_t wl = strlen(w);
        if (o + wl + 2 >= sizeof joined) {
            break;
        }
        if (i) {
            joined[o++] = ' ';
        }
        memcpy(joined + o, w, wl);
        o += wl;
        joined[o] = '\0';
    }
    return nlp_bpe_decode_line(joined, out, cap);
}

struct encoded {
    int32_t *ids;   /* all sequences, concatenated */
    int64_t *start; /* [2n + 1]: source i at start[2i], target at 2i+1 */
    int64_t n;
    int64_t cut;
};

static void encoded_free(struct encoded *e)
{
    free(e->ids);
    free(e->start);
    memset(e, 0, sizeof *e);
}

static int encode_pairs(const struct nlp_bpe *bpe, const struct nlp_vocab *v,
                        const struct pairs *p, int32_t max_len,
                        struct encoded *e)
{
    memset(e, 0, sizeof *e);
    e->n = p->n;
    int64_t cap = 2 * p->n * 16 + max_len; /* grows as needed */
    e->ids = malloc((size_t)cap * sizeof *e->ids);
    e->start = malloc((size_t)(2 * p->n + 1) * sizeof *e->start);
    if (e->ids == NULL || e->start == NULL) {
        encoded_free(e);
        return gr_error(GR_ENOMEM, "seq2seq: out of memory");
    }
    int64_t o = 0;
    for (int64_t i = 0; i < 2 * p->n; i++) {
        const char *line = i % 2 ? p->tgt[i / 2] : p->src[i / 2];
        int32_t n = 0;
        int cut = 0;
        e->start[i] = o;
        if (o + max_len > cap) {
            int64_t nc = cap * 2;
            int32_t *ni = realloc(e->ids, (size_t)nc * sizeof *ni);
            if (ni == NULL) {
                encoded_free(e);
                return gr_error(GR_ENOMEM, "seq2seq: out of memory");
            }
            e->ids = ni;
            cap = nc;
        }
        int rc = to_ids(bpe, v, line, max_len - 1, e->ids + o, &n, &cut);
        if (rc < 0) {
            encoded_free(e);
            return rc;
        }
        if (n == 0) { /* an empty side: one <unk> keeps shapes valid */
            e->ids[o] = UNK;
            n = 1;
        }
        o += n;
        e->cut += cut;
    }
    e->start[2 * p->n] = o;
    return 0;
}

/* A batch of pairs idx[0..b): src [Ts, b], len, tgt_in / tgt_out [Ty, b]
 * (host arrays of cap elements each). */
static void make_batch(const struct encoded *e, const int64_t *idx, int b,
                       int32_t *src, int32_t *len, int32_t *tin,
                       int32_t *tout, int32_t *ts, int32_t *ty)
{
    *ts = 1;
    *ty = 1;
    for (int j = 0; j < b; j++) {
        int64_t i = idx[j];
        int32_t ns = (int32_t)(e->start[2 * i + 1] - e->start[2 * i]);
        int32_t nt = (int32_t)(e->start[2 * i + 2] - e->start[2 * i + 1]);
        *ts = ns > *ts ? ns : *ts;
        *ty = nt + 1 > *ty ? nt + 1 : *ty;
    }
    for (int j = 0; j < b; j++) {
        int64_t i = idx[j];
        const int32_t *s = e->ids + e->start[2 * i];
        const int32_t *t = e->ids + e->start[2 * i + 1];
        int32_t ns = (int32_t)(e->start[2 * i + 1] - e->start[2 * i]);
        int32_t nt = (int32_t)(e->start[2 * i + 2] - e->start[2 * i + 1]);
        len[j] = ns;
        for (int32_t k = 0; k < *ts; k++) {
            src[k * b + j] = k < ns ? s[k] : PAD;
        }
        for (int32_t k = 0; k < *ty; k++) {
            tin[k * b + j] = k == 0 ? BOS : (k <= nt ? t[k - 1] : PAD);
            tout[k * b + j] = k < nt ? t[k] : (k == nt ? EOS : PAD);
        }
    }
}

/* ---- config text ---- */

static int is_mlu_generated(const struct nlp_s2s_train_config *tc)
{
    return tc->task != NULL && strcmp(tc->task, "mlu") == 0 &&
           tc->train == NULL;
}

static int config_text(const struct nlp_s2s_train_config *tc,
                       const struct nlp_s2s_config *m, char *out, size_t cap)
{
    int n = snprintf(out, cap,
                     "grove-seq2seq 1\ntask %s\nmodel %s\nvocab %d\nd %d\n"
                     "layers %d\n"
                     "heads %d\nffn %d\ndropout %.9g\ndropout-attn %.9g\n"
                     "post-norm %d\nmax-len %d\nbpe-merges %d\nbatch %d\n"
                     "max-steps %d\neval-every %d\nwarmup %d\n"
                     "lr-factor %.9g\nlabel-smoothing %.9g\nclip %.9g\n"
                     "seed %llu\nadam-beta2 %.9g\nmlu-train %lld\n"
                     "mlu-valid %lld\naverage-last %d\n",
                     tc->task, tc->model_name, (int)m->src_vocab, m->d, m->layers,
                     m->heads, m->ffn, (double)m->dropout,
                     (double)m->dropout_attn, m->post_norm, (int)tc->max_len,
                     (int)tc->bpe_merges, (int)tc->batch, (int)tc->max_steps,
                     (int)tc->eval_every, (int)tc->warmup,
                     (double)tc->lr_factor, (double)tc->label_smoothing,
                     (double)tc->clip, (unsigned long long)tc->seed,
                     (double)tc->adam_beta2,
                     (long long)(is_mlu_generated(tc) ? tc->mlu_train : 0),
                     (long long)(is_mlu_generated(tc) ? tc->mlu_valid : 0),
                     (int)tc->average_last);
    return n > 0 && (size_t)n < cap ? 0
                                    : gr_error(GR_EINVAL, "seq2seq: config "
                                               "text too long");
}

static const char *cfg_value(const char *text, const char *key)
{
    size_t k = strlen(key);
    for (const char *p = text; p && *p;) {
        if (strncmp(p, key, k) == 0 && p[k] == ' ') {
            return p + k + 1;
        }
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    return NULL;
}

/* ---- evaluation ---- */

static int evaluate_encoded(struct gr_ctx *ctx, const struct nlp_s2s *m,
                            const struct nlp_vocab *v,
                            const struct encoded *e, const struct pairs *p,
                            int32_t max_len, int32_t beam, float alpha,
                            double *bleu, double *acc)
{
    enum { EB = 32 };
    int32_t *src = malloc((size_t)(EB * max_len) * sizeof *src);
    int32_t *tin = malloc((size_t)(EB * (max_len + 1)) * sizeof *tin);
    int32_t *tout = malloc((size_t)(EB * (max_len + 1)) * sizeof *tout);
    int32_t *out = malloc((size_t)(EB * max_len) * sizeof *out);
    int32_t len[EB], olen[EB];
    int64_t idx[EB];
    char *hyp = malloc(LINE_CAP), *ref = malloc(LINE_CAP);
    struct nlp_bleu_acc ba;
    memset(&ba, 0, sizeof ba);
    int64_t right = 0;
    int rc = src && tin && tout && out && hyp && ref
                 ? 0
                 : gr_error(GR_ENOMEM, "seq2seq: out of memory");
    for (int64_t i0 = 0; rc == 0 && i0 < e->n; i0 += EB) {
        int b = (int)(e->n - i0 < EB ? e->n - i0 : EB);
        for (int j = 0; j < b; j++) {
            idx[j] = i0 + j;
        }
        int32_t ts, ty;
        make_batch(e, idx, b, src, len, tin, tout, &ts, &ty);
        gr_step_reset(ctx);
        rc = beam <= 1 ? nlp_s2s_greedy(ctx, m, src, len, ts, b, max_len,
                                        out, olen)
                       : nlp_s2s_beam(ctx, m, src, len, ts, b, beam, alpha,
                                      max_len, out, olen);
        for (int j = 0; rc == 0 && j < b; j++) {
            rc = to_text(v, out + (int64_t)j * max_len, olen[j], hyp,
                         LINE_CAP);
            int32_t nt = (int32_t)(e->start[2 * (i0 + j) + 2] -
                                   e->start[2 * (i0 + j) + 1]);
            if (rc == 0) {
                rc = to_text(v, e->ids + e->start[2 * (i0 + j) + 1], nt, ref,
                             LINE_CAP);
            }
            if (rc == 0) {
                /* BLEU against the raw reference line */
                rc = nlp_bleu_add(&ba, hyp, p->tgt[i0 + j]);
                right += strcmp(hyp, ref) == 0;
            }
        }
    }
    if (rc == 0) {
        struct nlp_bleu bl;
        nlp_bleu_score(&ba, &bl);
        *bleu = bl.score;
        *acc = e->n ? (double)right / (double)e->n : 0.0;
    }
    free(src);
    free(tin);
    free(tout);
    free(out);
    free(hyp);
    free(ref);
    return rc;
}

/* ---- training ---- */

/* The training state carried by last.ckpt's config after the options:
 * what --resume needs besides the tensors (the data order and the
 * dropout masks are functions of the seed and the step). */
struct s2s_state {
    int64_t step;
    double best, wall, loss_sum;
    int64_t loss_n;
};

static int state_text(const char *options, const struct s2s_state *st,
                      char *out, size_t cap)
{
    int n = snprintf(out, cap, "%sstate-step %lld\nstate-best %.17g\n"
                     "state-wall %.17g\nstate-loss-sum %.17g\n"
                     "state-loss-n %lld\n", options, (long long)st->step,
                     st->best, st->wall, st->loss_sum, (long long)st->loss_n);
    return n > 0 && (size_t)n < cap ? 0
                                    : gr_error(GR_EINVAL, "seq2seq: config "
                                               "text too long");
}

static int state_read(const char *text, const char *path,
                      struct s2s_state *st)
{
    const char *keys[5] = {"state-step", "state-best", "state-wall",
                           "state-loss-sum", "state-loss-n"};
    double v[5];
    for (int k = 0; k < 5; k++) {
        const char *val = cfg_value(text, keys[k]);
        char *end = NULL;
        v[k] = val ? strtod(val, &end) : 0.0;
        if (val == NULL || end == val || (*end != '\n' && *end != '\0')) {
            return gr_error(GR_EFORMAT, "%s: no valid '%s' line in the "
                            "config", path, keys[k]);
        }
    }
    st->step = (int64_t)v[0];
    st->best = v[1];
    st->wall = v[2];
    st->loss_sum = v[3];
    st->loss_n = (int64_t)v[4];
    return 0;
}

/* a[0..na) equals b[0..nb) but for the "max-steps" line. */
static int same_but_max_steps(const char *a, size_t na, const char *b,
                              size_t nb)
{
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        int skip_a = strncmp(a + i, "max-steps ", 10) == 0;
        int skip_b = strncmp(b + j, "max-steps ", 10) == 0;
        if (skip_a != skip_b) {
            return 0;
        }
        const char *ea = memchr(a + i, '\n', na - i);
        const char *eb = memchr(b + j, '\n', nb - j);
        size_t la = ea ? (size_t)(ea - (a + i)) + 1 : na - i;
        size_t lb = eb ? (size_t)(eb - (b + j)) + 1 : nb - j;
        if (!skip_a && (la != lb || memcmp(a + i, b + j, la) != 0)) {
            return 0;
        }
        i += la;
        j += lb;
    }
    return i == na && j == nb;
}

/* The seeded order of epoch e (counted from 0). */
static void epoch_order(int64_t *perm, int64_t n, uint64_t seed, int64_t e)
{
    for (int64_t i = 0; i < n; i++) {
        perm[i] = i;
    }
    uint64_t key = gr_rng_key(gr_rng_make(seed, (uint64_t)e + 77));
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t r = (int64_t)(gr_rng_u32(key, (uint64_t)i) %
                              (uint32_t)(i + 1));
        int64_t t = perm[i];
        perm[i] = perm[r];
        perm[r] = t;
    }
}

/* The checkpoint kept for averaging at `step`. */
static int avg_path(char *out, size_t cap, const char *dir, int64_t step)
{
    char name[64];
    snprintf(name, sizeof name, "avg-%09lld.ckpt", (long long)step);
    return gr_path_join(out, cap, dir, name);
}

/* The step whose averaging checkpoint leaves the window when `step`'s is
 * written (n kept; validation at multiples of every and at the last
 * step), or 0. */
static int64_t avg_dropped(int64_t step, int64_t every, int64_t n)
{
    int64_t top = step % every == 0 ? step : step / every * every;
    int64_t back = step % every == 0 ? n : n - 1;
    int64_t d = top - back * every;
    return d > 0 ? d : 0;
}

/* Parameters <- the mean of the checkpoints at the given steps (loaded
 * one after another, summed in double on the host). */
static int average_checkpoints(struct gr_ctx *ctx, const char *dir,
                               const int64_t *steps, int n)
{
    int nn = gr_ctx_n_named(ctx);
    int64_t total = 0;
    for (int i = 0; i < nn; i++) {
        struct gr_tensor *t = gr_ctx_named(ctx, i);
        total += t->kind == GR_KIND_PARAM ? t->numel : 0;
    }
    double *sum = calloc((size_t)total + 1, sizeof *sum);
    float *tmp = malloc(((size_t)total + 1) * sizeof *tmp);
    int rc = sum && tmp ? 0 : gr_error(GR_ENOMEM, "seq2seq: out of memory");
    char path[GR_PATH_MAX];
    for (int k = 0; rc == 0 && k < n; k++) {
        rc = avg_path(path, sizeof path, dir, steps[k]);
        if (rc == 0) {
            rc = gr_checkpoint_load(ctx, path, GR_CKPT_PARAMS, NULL);
        }
        int64_t o = 0;
        for (int i = 0; rc == 0 && i < nn; i++) {
            struct gr_tensor *t = gr_ctx_named(ctx, i);
            if (t->kind != GR_KIND_PARAM) {
                continue;
            }
            rc = gr_tensor_to_host(t, tmp);
            for (int64_t j = 0; rc == 0 && j < t->numel; j++) {
                sum[o + j] += tmp[j];
            }
            o += t->numel;
        }
    }
    int64_t o = 0;
    for (int i = 0; rc == 0 && i < nn; i++) {
        struct gr_tensor *t = gr_ctx_named(ctx, i);
        if (t->kind != GR_KIND_PARAM) {
            continue;
        }
        for (int64_t j = 0; j < t->numel; j++) {
            tmp[j] = (float)(sum[o + j] / n);
        }
        rc = gr_tensor_set_host(t, tmp);
        o += t->numel;
    }
    free(sum);
    free(tmp);
    return rc;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int nlp_s2s_train(const struct nlp_s2s_train_config *tc,
                  const struct gr_ctx_config *cc)
{
    if (tc->average_last < 0 || tc->average_last > 64) {
        return gr_error(GR_EINVAL, "seq2seq: average-last %d (0..64)",
                        (int)tc->average_last);
    }
    if (tc->batch < 1 || tc->batch > 4096 || tc->eval_every < 1 ||
        tc->max_steps < 1 || tc->max_len < 2 || tc->warmup < 1) {
        return gr_error(GR_EINVAL, "seq2seq: batch %d (1..4096), eval-every "
                        "%d, max-steps %d, warmup %d (>= 1), max-len %d "
                        "(>= 2)", (int)tc->batch, (int)tc->eval_every,
                        (int)tc->max_steps, (int)tc->warmup,
                        (int)tc->max_len);
    }
    struct pairs tr, va, te;
    struct nlp_mlu_set mlu;
    memset(&te, 0, sizeof te);
    memset(&mlu, 0, sizeof mlu);
    const int generated = is_mlu_generated(tc);
    int rc = 0;
    if (generated) {
        if (tc->mlu_train < 1 || tc->mlu_valid < 1 ||
            tc->mlu_train + 2 * tc->mlu_valid > NLP_MLU_MAX_N) {
            return gr_error(GR_EINVAL, "seq2seq: mlu sizes %lld + 2 x %lld "
                            "(each >= 1, at most %d in all)",
                            (long long)tc->mlu_train,
                            (long long)tc->mlu_valid, NLP_MLU_MAX_N);
        }
        rc = nlp_mlu_generate(&mlu, tc->mlu_train + 2 * tc->mlu_valid,
                              tc->seed);
        if (rc < 0) {
            return rc;
        }
        tr = pairs_view(&mlu, 0, tc->mlu_train);
        va = pairs_view(&mlu, tc->mlu_train, tc->mlu_valid);
        te = pairs_view(&mlu, tc->mlu_train + tc->mlu_valid, tc->mlu_valid);
    } else {
        if (tc->train == NULL || tc->valid == NULL) {
            return gr_error(GR_EINVAL, "seq2seq: task %s needs train and "
                            "valid files", tc->task ? tc->task : "tsv");
        }
        rc = read_tsv(tc->train, &tr);
        if (rc < 0) {
            return rc;
        }
        rc = read_tsv(tc->valid, &va);
        if (rc < 0) {
            pairs_free(&tr);
            return rc;
        }
    }
    /* joint BPE on both sides of the training pairs */
    const char **lines = malloc((size_t)(2 * tr.n) * sizeof *lines);
    struct nlp_bpe bpe;
    struct nlp_vocab v;
    nlp_vocab_init(&v);
    memset(&bpe, 0, sizeof bpe);
    struct encoded etr, eva;
    memset(&etr, 0, sizeof etr);
    memset(&eva, 0, sizeof eva);
    struct gr_ctx *ctx = NULL;
    struct nlp_s2s model;
    memset(&model, 0, sizeof model);
    struct gr_optim *opt = NULL;
    struct train_run run;
    int run_open = 0;
    int64_t *perm = NULL;
    int32_t *bsrc = NULL, *btin = NULL, *btout = NULL, *blen = NULL;
    rc = lines ? 0 : gr_error(GR_ENOMEM, "seq2seq: out of memory");
    for (int64_t i = 0; rc == 0 && i < tr.n; i++) {
        lines[2 * i] = tr.src[i];
        lines[2 * i + 1] = tr.tgt[i];
    }
    if (rc == 0) {
        rc = nlp_bpe_learn(&bpe, lines, 2 * tr.n, tc->bpe_merges);
    }
    for (int k = 0; rc == 0 && k < 4; k++) {
        rc = nlp_vocab_add(&v, specials[k], strlen(specials[k]), NULL);
    }
    static char enc[LINE_CAP];
    for (int64_t i = 0; rc == 0 && i < 2 * tr.n; i++) {
        rc = nlp_bpe_encode_line(&bpe, lines[i], enc, sizeof enc);
        for (char *t = rc == 0 ? strtok(enc, " ") : NULL; t != NULL;
             t = strtok(NULL, " ")) {
            if (nlp_vocab_add(&v, t, strlen(t), NULL) < 0) {
                rc = GR_ENOMEM;
                break;
            }
        }
    }
    if (rc == 0) {
        rc = encode_pairs(&bpe, &v, &tr, tc->max_len, &etr);
    }
    if (rc == 0) {
        rc = encode_pairs(&bpe, &v, &va, tc->max_len, &eva);
    }
    struct nlp_s2s_config mc = tc->model;
    mc.src_vocab = mc.tgt_vocab = v.size;
    mc.pad = PAD;
    mc.bos = BOS;
    mc.eos = EOS;
    char cfg[4096];
    if (rc == 0) {
        rc = nlp_s2s_model_by_name(&mc, tc->model_name);
    }
    if (rc == 0) {
        rc = config_text(tc, &mc, cfg, sizeof cfg);
    }
    if (rc == 0) {
        rc = gr_ctx_new(&ctx, cc);
    }
    if (rc == 0) {
        rc = nlp_s2s_init(&model, ctx, &mc, gr_rng_make(tc->seed, 0));
    }
    if (rc == 0) {
        struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
        oc.beta1 = 0.9f;
        oc.beta2 = tc->adam_beta2 > 0 ? tc->adam_beta2 : 0.98f;
        oc.eps = 1e-9f;
        rc = gr_optim_new(&opt, ctx, "adam", &oc);
    }
    char path[GR_PATH_MAX];
    static const struct train_column cols[] = {
        {"step", "%.0f"},     {"train_loss", "%.6f"},
        {"valid_bleu", "%.4f"}, {"valid_acc", "%.6f"},
        {"lr", "%.9g"},       {"wall_s", "%.3f"},
    };
    if (rc == 0) {
        struct train_run_spec s = train_run_spec_default();
        s.dir = tc->out_dir;
        s.force = tc->force;
        s.resume = tc->resume;
        s.check_config = 0; /* the options part only: below */
        s.argc = tc->argc;
        s.argv = tc->argv;
        s.config_text = cfg;
        s.columns = cols;
        s.n_columns = 6;
        s.what = "nlp seq2seq train";
        s.step_unit = "step";
        rc = train_run_open(&run, &s);
        run_open = rc == 0;
    }
    struct s2s_state st = {0, -1.0, 0.0, 0.0, 0};
    if (rc == 0 && tc->resume) {
        /* the options must be the run's, but --max-steps may grow */
        const char *rs = strstr(run.resumed_config, "state-step ");
        size_t a = rs ? (size_t)(rs - run.resumed_config) : 0;
        if (!same_but_max_steps(run.resumed_config, a, cfg, strlen(cfg))) {
            /* the first difference other than max-steps: ours as the
             * run's there */
            static char cmp[8192];
            const char *ms = strstr(cfg, "\nmax-steps ");
            const char *rms = strstr(run.resumed_config, "\nmax-steps ");
            snprintf(cmp, sizeof cmp, "%s", cfg);
            if (ms != NULL && rms != NULL) {
                const char *me = strchr(ms + 1, '\n');
                const char *re = strchr(rms + 1, '\n');
                if (me != NULL && re != NULL) {
                    snprintf(cmp, sizeof cmp, "%.*s%.*s%s",
                             (int)(ms - cfg), cfg, (int)(re - rms), rms, me);
                }
            }
            char diff[512];
            train_config_first_difference(run.resumed_config, cmp, diff,
                                          sizeof diff);
            run.config_mismatch = 1;
            rc = gr_error(GR_EINVAL, "--resume: the options differ from the "
                          "run's (first difference: %s)", diff);
        }
        if (rc == 0) {
            rc = state_read(run.resumed_config, run.path_last, &st);
        }
        if (rc == 0) {
            rc = gr_checkpoint_load(ctx, run.path_last, GR_CKPT_ALL, NULL);
        }
        if (rc == 0) {
            train_note_last_saved(&run, st.step);
            rc = train_metrics_resume(&run, st.step);
        }
        if (rc == 0 && !tc->quiet) {
            fprintf(stderr, "seq2seq: resumed %s at step %lld\n",
                    run.path_last, (long long)st.step);
        }
    }
    static char stcfg[8192];
    if (rc == 0) {
        rc = gr_path_join(path, sizeof path, tc->out_dir, "bpe.codes");
    }
    if (rc == 0) {
        rc = nlp_bpe_save(&bpe, path, 1);
    }
    if (rc == 0) {
        rc = gr_path_join(path, sizeof path, tc->out_dir, "vocab.txt");
    }
    if (rc == 0) {
        size_t cap = 16;
        for (int32_t i = 0; i < v.size; i++) {
            cap += strlen(nlp_vocab_word(&v, i)) + 1;
        }
        char *txt = malloc(cap), *q = txt;
        rc = txt ? 0 : gr_error(GR_ENOMEM, "seq2seq: out of memory");
        for (int32_t i = 0; rc == 0 && i < v.size; i++) {
            q += sprintf(q, "%s\n", nlp_vocab_word(&v, i));
        }
        if (rc == 0) {
            rc = gr_write_file_atomic(path, txt, (size_t)(q - txt), 1);
        }
        free(txt);
    }
    static const char *const mlu_files[3] = {"mlu_train.tsv",
                                             "mlu_valid.tsv",
                                             "mlu_test.tsv"};
    const struct pairs *mlu_sets[3] = {&tr, &va, &te};
    for (int k = 0; generated && rc == 0 && k < 3; k++) {
        rc = gr_path_join(path, sizeof path, tc->out_dir, mlu_files[k]);
        if (rc == 0) {
            rc = write_pairs(path, mlu_sets[k], 1);
        }
    }
    if (rc == 0 && generated && !tc->quiet) {
        fprintf(stderr, "seq2seq: mlu: generated %lld / %lld / %lld "
                "distinct examples (seed %llu, %lld draws) -> %s/mlu_*.tsv\n",
                (long long)tr.n, (long long)va.n, (long long)te.n,
                (unsigned long long)tc->seed, (long long)mlu.draws,
                tc->out_dir);
    }
    if (rc == 0 && !tc->quiet) {
        fprintf(stderr, "seq2seq: %lld training pairs, %lld validation; "
                "%d BPE merges, vocabulary %d; %lld sides truncated to %d "
                "subwords\n", (long long)tr.n, (long long)va.n,
                (int)bpe.n_merges, (int)v.size,
                (long long)(etr.cut + eva.cut), (int)tc->max_len - 1);
    }
    const int b = tc->batch;
    perm = rc == 0 ? malloc((size_t)etr.n * sizeof *perm) : NULL;
    bsrc = malloc((size_t)(b * tc->max_len) * sizeof *bsrc);
    btin = malloc((size_t)(b * (tc->max_len + 1)) * sizeof *btin);
    btout = malloc((size_t)(b * (tc->max_len + 1)) * sizeof *btout);
    blen = malloc((size_t)b * sizeof *blen);
    if (rc == 0 && (!perm || !bsrc || !btin || !btout || !blen)) {
        rc = gr_error(GR_ENOMEM, "seq2seq: out of memory");
    }
    double t0 = now_s() - st.wall, best = st.best, loss_sum = st.loss_sum;
    int64_t loss_n = st.loss_n, pos = etr.n, epoch = 0;
    int64_t idx[4096];
    const int bb = (int)(b < etr.n ? b : etr.n);
    if (rc == 0 && st.step > 0) { /* where the data order stood */
        int64_t used = st.step * (int64_t)bb;
        epoch = (used + etr.n - 1) / etr.n;
        epoch_order(perm, etr.n, tc->seed, epoch - 1);
        pos = used - (epoch - 1) * etr.n;
    }
    int completed = 0;
    for (int64_t step = st.step + 1; rc == 0 && step <= tc->max_steps;
         step++) {
        if (train_stop_requested()) {
            st.step = step - 1;
            st.best = best;
            st.wall = now_s() - t0;
            st.loss_sum = loss_sum;
            st.loss_n = loss_n;
            if (run.last_saved_step != step - 1) {
                rc = state_text(cfg, &st, stcfg, sizeof stcfg);
                if (rc == 0) {
                    rc = train_save(&run, TRAIN_LAST, ctx, stcfg, GR_CKPT_ALL,
                                    step - 1);
                }
            }
            if (rc == 0) {
                train_print_stopped(&run, step - 1);
            }
            break;
        }
        for (int j = 0; j < bb; j++) {
            if (pos == etr.n) { /* a new seeded order each epoch */
                epoch_order(perm, etr.n, tc->seed, epoch);
                pos = 0;
                epoch++;
            }
            idx[j] = perm[pos++];
        }
        int32_t ts, ty;
        make_batch(&etr, idx, bb, bsrc, blen, btin, btout, &ts, &ty);
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct gr_tensor *srct = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape2(ts, bb), bsrc);
        struct gr_tensor *ti = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape2(ty, bb), btin);
        struct gr_tensor *to = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape2(ty, bb), btout);
        struct gr_tensor *loss = nlp_s2s_loss(
            ctx, &model, srct, blen, ti, to, tc->label_smoothing, 1,
            gr_rng_make(tc->seed, (uint64_t)step + 1000));
        if (loss == NULL) {
            rc = gr_error(GR_EINVAL, "seq2seq: step %lld: %s",
                          (long long)step, gr_ctx_error(ctx));
            break;
        }
        double lv = gr_tensor_item(loss);
        if ((rc = train_check_finite(&run, lv, step)) < 0) {
            break;
        }
        if ((rc = gr_backward(ctx, loss)) < 0) {
            break;
        }
        if (tc->clip > 0) {
            gr_clip_grad_norm(ctx, NULL, tc->clip, NULL);
        }
        float lr = (float)nlp_s2s_noam_lr(step, mc.d, tc->warmup,
                                          tc->lr_factor);
        gr_optim_set_lr(opt, lr);
        gr_optim_step(opt);
        loss_sum += lv;
        loss_n++;
        if (step % tc->eval_every == 0 || step == tc->max_steps) {
            double bleu = 0.0, acc = 0.0;
            rc = evaluate_encoded(ctx, &model, &v, &eva, &va, tc->max_len, 1,
                                  0.0f, &bleu, &acc);
            if (rc < 0) {
                break;
            }
            struct train_cell cells[6] = {
                TRAIN_NUM(step), TRAIN_NUM(loss_sum / (double)loss_n),
                TRAIN_NUM(bleu), TRAIN_NUM(acc), TRAIN_NUM(lr),
                TRAIN_NUM(now_s() - t0)};
            if (!tc->quiet) {
                fprintf(stderr, "| step %6lld | train loss %.4f | valid "
                        "BLEU %.2f acc %.4f | lr %.3g%s\n", (long long)step,
                        loss_sum / (double)loss_n, bleu, acc, (double)lr,
                        bleu > best ? " | saved best" : "");
            }
            loss_sum = 0.0;
            loss_n = 0;
            rc = train_metrics_row(&run, cells);
            if (rc == 0 && bleu > best) {
                best = bleu;
                rc = train_save(&run, TRAIN_BEST, ctx, cfg, GR_CKPT_PARAMS,
                                step);
            }
            if (rc == 0 && tc->average_last > 0) {
                rc = avg_path(path, sizeof path, tc->out_dir, step);
                if (rc == 0) {
                    rc = gr_checkpoint_save(ctx, path, cfg, GR_CKPT_PARAMS,
                                            1);
                }
                int64_t drop = avg_dropped(step, tc->eval_every,
                                           tc->average_last);
                if (rc == 0 && drop > 0 &&
                    avg_path(path, sizeof path, tc->out_dir, drop) == 0) {
                    remove(path);
                }
            }
            if (rc == 0) {
                st.step = step;
                st.best = best;
                st.wall = now_s() - t0;
                st.loss_sum = 0.0;
                st.loss_n = 0;
                rc = state_text(cfg, &st, stcfg, sizeof stcfg);
            }
            if (rc == 0) {
                rc = train_save(&run, TRAIN_LAST, ctx, stcfg, GR_CKPT_ALL,
                                step);
            }
            completed = rc == 0 && step == tc->max_steps;
        }
    }
    if (rc == 0 && st.step >= tc->max_steps) {
        completed = 1; /* resumed a finished run: average again */
    }
    if (rc == 0 && completed && tc->average_last > 0) {
        /* the last average_last validation steps, newest first */
        int64_t steps[64];
        int n = 0;
        for (int64_t s2 = tc->max_steps; s2 > 0 && n < tc->average_last;) {
            steps[n++] = s2;
            s2 = s2 % tc->eval_every == 0 ? s2 - tc->eval_every
                                          : s2 / tc->eval_every *
                                                tc->eval_every;
        }
        rc = average_checkpoints(ctx, tc->out_dir, steps, n);
        double bleu = 0.0, acc = 0.0;
        if (rc == 0) {
            rc = gr_path_join(path, sizeof path, tc->out_dir,
                              "averaged.ckpt");
        }
        if (rc == 0) {
            rc = gr_checkpoint_save(ctx, path, cfg, GR_CKPT_PARAMS, 1);
        }
        if (rc == 0) {
            rc = evaluate_encoded(ctx, &model, &v, &eva, &va, tc->max_len,
                                  1, 0.0f, &bleu, &acc);
        }
        if (rc == 0 && !tc->quiet) {
            fprintf(stderr, "averaged the last %d checkpoints (steps %lld.."
                    "%lld) -> %s: valid BLEU %.2f acc %.4f\n", n,
                    (long long)steps[n - 1], (long long)steps[0], path, bleu,
                    acc);
        }
    }
    if (rc == 0 && !tc->quiet) {
        fprintf(stderr, "run %s: best validation BLEU %.2f -> %s\n",
                tc->out_dir, best, train_path(&run, TRAIN_BEST));
    }
    if (run_open) {
        train_run_close(&run);
    }
    free(perm);
    free(bsrc);
    free(btin);
    free(btout);
    free(blen);
    gr_optim_free(opt);
    nlp_s2s_free(&model);
    gr_ctx_free(ctx);
    encoded_free(&etr);
    encoded_free(&eva);
    nlp_bpe_free(&bpe);
    nlp_vocab_free(&v);
    free(lines);
    pairs_free(&tr);
    pairs_free(&va);
    nlp_mlu_free(&mlu);
    return rc;
}

/* ---- reopening a checkpoint ---- */

int nlp_s2s_open(struct nlp_s2s_runtime *rt, const char *checkpoint,
                 const struct gr_ctx_config *cc)
{
    memset(rt, 0, sizeof *rt);
    nlp_vocab_init(&rt->vocab);
    char *cfg = NULL;
    int rc = gr_checkpoint_read_config(checkpoint, &cfg);
    if (rc < 0) {
        return rc;
    }
    if (strncmp(cfg, "grove-seq2seq 1\n", 16) != 0) {
        free(cfg);
        return gr_error(GR_EFORMAT, "%s: not a grove seq2seq checkpoint",
                        checkpoint);
    }
    struct nlp_s2s_config mc = nlp_s2s_config_default(4, 4);
    const char *keys[] = {"vocab", "d", "layers", "heads", "ffn", "post-norm",
                          "max-len"};
    int *dst[] = {&mc.src_vocab, &mc.d, &mc.layers, &mc.heads, &mc.ffn,
                  &mc.post_norm, &rt->max_len};
    for (int k = 0; k < 7 && rc == 0; k++) {
        const char *val = cfg_value(cfg, keys[k]);
        if (val == NULL) {
            rc = gr_error(GR_EFORMAT, "%s: the config has no '%s' line",
                          checkpoint, keys[k]);
        } else {
            *dst[k] = atoi(val);
        }
    }
    char name[32] = "";
    const char *mv = cfg_value(cfg, "model");
    if (rc == 0 && mv != NULL) {
        sscanf(mv, "%31s", name);
        rc = nlp_s2s_model_by_name(&mc, name);
    }
    free(cfg);
    mc.tgt_vocab = mc.src_vocab;
    mc.dropout = mc.dropout_attn = 0.0f;
    char dir[GR_PATH_MAX], path[GR_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", checkpoint);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
    } else {
        snprintf(dir, sizeof dir, ".");
    }
    if (rc == 0) {
        gr_path_join(path, sizeof path, dir, "bpe.codes");
        rc = nlp_bpe_load(&rt->bpe, path);
    }
    if (rc == 0) {
        gr_path_join(path, sizeof path, dir, "vocab.txt");
        char *buf = NULL;
        size_t size = 0;
        rc = gr_read_file(path, (size_t)1 << 28, &buf, &size);
        for (char *s = rc == 0 ? buf : NULL; s && *s;) {
            char *nl = strchr(s, '\n');
            size_t l = nl ? (size_t)(nl - s) : strlen(s);
            if (nlp_vocab_add(&rt->vocab, s, l, NULL) < 0) {
                rc = GR_ENOMEM;
                break;
            }
            s = nl ? nl + 1 : NULL;
        }
        free(buf);
        if (rc == 0 && rt->vocab.size != mc.src_vocab) {
            rc = gr_error(GR_EFORMAT, "%s: %d words, the checkpoint's model "
                          "has %d", path, (int)rt->vocab.size,
                          (int)mc.src_vocab);
        }
    }
    if (rc == 0) {
        rc = gr_ctx_new(&rt->ctx, cc);
    }
    if (rc == 0) {
        rc = nlp_s2s_init(&rt->model, rt->ctx, &mc, gr_rng_make(1, 0));
    }
    if (rc == 0) {
        rc = gr_checkpoint_load(rt->ctx, checkpoint, GR_CKPT_PARAMS, NULL);
    }
    if (rc < 0) {
        nlp_s2s_close(rt);
    }
    return rc;
}

void nlp_s2s_close(struct nlp_s2s_runtime *rt)
{
    nlp_s2s_free(&rt->model);
    gr_ctx_free(rt->ctx);
    nlp_bpe_free(&rt->bpe);
    nlp_vocab_free(&rt->vocab);
    memset(rt, 0, sizeof *rt);
}

int nlp_s2s_translate(struct nlp_s2s_runtime *rt, const char *const *src,
                      int64_t n, int32_t beam, float alpha, char **out,
                      int64_t *truncated)
{
    const int32_t ml = rt->max_len;
    int32_t *ids = malloc((size_t)ml * sizeof *ids);
    int32_t *res = malloc((size_t)ml * sizeof *res);
    char *text = malloc(LINE_CAP);
    int rc = ids && res && text ? 0 : gr_error(GR_ENOMEM, "seq2seq: out of "
                                               "memory");
    *truncated = 0;
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        int32_t len = 0, olen = 0;
        int cut = 0;
        rc = to_ids(&rt->bpe, &rt->vocab, src[i], ml - 1, ids, &len, &cut);
        *truncated += cut;
        if (rc == 0 && len == 0) {
            ids[0] = UNK;
            len = 1;
        }
        gr_step_reset(rt->ctx);
        if (rc == 0) {
            rc = beam <= 1 ? nlp_s2s_greedy(rt->ctx, &rt->model, ids, &len,
                                            len, 1, ml, res, &olen)
                           : nlp_s2s_beam(rt->ctx, &rt->model, ids, &len, len,
                                          1, beam, alpha, ml, res, &olen);
        }
        if (rc == 0) {
            rc = to_text(&rt->vocab, res, olen, text, LINE_CAP);
        }
        out[i] = rc == 0 ? strdup(text) : NULL;
    }
    free(ids);
    free(res);
    free(text);
    return rc;
}

int nlp_s2s_evaluate(struct nlp_s2s_runtime *rt, const char *tsv,
                     int32_t beam, float alpha, double *bleu,
                     double *accuracy, int64_t *n_pairs,
                     int64_t *truncated)
{
    struct pairs p;
    int rc = read_tsv(tsv, &p);
    if (rc < 0) {
        return rc;
    }
    struct encoded e;
    rc = encode_pairs(&rt->bpe, &rt->vocab, &p, rt->max_len, &e);
    if (rc == 0) {
        rc = evaluate_encoded(rt->ctx, &rt->model, &rt->vocab, &e, &p,
                              rt->max_len, beam, alpha, bleu, accuracy);
        *n_pairs = p.n;
        *truncated = e.cut;
        encoded_free(&e);
    }
    pairs_free(&p);
    return rc;
}
