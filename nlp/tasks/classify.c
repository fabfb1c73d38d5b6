/* Sentence and sentence-pair classification on any encoder, on train/: see
 * nlp/tasks/classify.h. */
#define _POSIX_C_SOURCE 200809L
#include "nlp/tasks/classify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"
#include "core/lines.h"
#include "core/progress.h"
#include "core/random.h"
#include "kernels/checkpoint.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "kernels/tape.h"
#include "nlp/models/heads.h"
#include "nlp/data/vectors.h"
#include "nlp/models/om.h"
#include "nlp/models/structformer.h"
#include "nlp/models/treenets.h"
#include "train/train.h"

#define CLS_MAGIC "grove-classify 1"

/* ---- data ---------------------------------------------------------------- */

void nlp_cls_data_init(struct nlp_cls_data *d)
{
    memset(d, 0, sizeof *d);
    d->n_groups = 0;
}

void nlp_cls_data_free(struct nlp_cls_data *d)
{
    free(d->tokens);
    free(d->vocab_text);
    free(d->tree_parent);
    free(d->tree_word);
    free(d->tree_label);
    for (int s = 0; s < 3; s++) {
        free(d->split[s].ex);
    }
    memset(d, 0, sizeof *d);
}

static int push_tokens(struct nlp_cls_data *d, const int32_t *t, int32_t n,
                       int64_t *off)
{
    if (d->n_tokens + n > d->cap_tokens) {
        int64_t cap = d->cap_tokens ? d->cap_tokens * 2 : 4096;
        while (cap < d->n_tokens + n) {
            cap *= 2;
        }
        int32_t *p = realloc(d->tokens, (size_t)cap * sizeof *p);
        if (p == NULL) {
            return gr_error(GR_ENOMEM, "classification data: out of memory");
        }
        d->tokens = p;
        d->cap_tokens = cap;
    }
    *off = d->n_tokens;
    memcpy(d->tokens + d->n_tokens, t, (size_t)n * sizeof *t);
    d->n_tokens += n;
    return 0;
}

int nlp_cls_add(struct nlp_cls_data *d, int s, const int32_t *a,
                int32_t len_a, const int32_t *b, int32_t len_b, int32_t label,
                int32_t group)
{
    if (s < 0 || s > 2 || len_a < 1 || (d->pair && len_b < 1) ||
        label < 0 || label >= d->n_classes) {
        return gr_error(GR_EINVAL, "classification data: bad example (split "
                                   "%d, lengths %d/%d, label %d of %d)",
                        s, (int)len_a, (int)len_b, (int)label, d->n_classes);
    }
    struct nlp_cls_split *sp = &d->split[s];
    if (sp->n == sp->cap) {
        int64_t cap = sp->cap ? sp->cap * 2 : 1024;
        struct nlp_cls_example *p = realloc(sp->ex, (size_t)cap * sizeof *p);
        if (p == NULL) {
            return gr_error(GR_ENOMEM, "classification data: out of memory");
        }
        sp->ex = p;
        sp->cap = cap;
    }
    struct nlp_cls_example *e = &sp->ex[sp->n];
    memset(e, 0, sizeof *e);
    int rc = push_tokens(d, a, len_a, &e->a);
    if (rc == 0 && d->pair) {
        rc = push_tokens(d, b, len_b, &e->b);
    }
    if (rc < 0) {
        return rc;
    }
    e->len_a = len_a;
    e->len_b = d->pair ? len_b : 0;
    e->label = label;
    e->group = group;
    sp->n++;
    return 0;
}

int nlp_cls_add_tree(struct nlp_cls_data *d, int s, int second, int32_t n,
                     const int32_t *parent, const int32_t *word,
                     const int32_t *label)
{
    if (s < 0 || s > 2 || d->split[s].n < 1 || n < 1 ||
        (second && !d->pair)) {
        return gr_error(GR_EINVAL, "classification data: a tree without "
                                   "its example (split %d)", s);
    }
    if (d->n_tree_nodes + n > d->cap_tree_nodes) {
        int64_t cap = d->cap_tree_nodes ? d->cap_tree_nodes * 2 : 4096;
        while (cap < d->n_tree_nodes + n) {
            cap *= 2;
        }
        int32_t *a = realloc(d->tree_parent, (size_t)cap * sizeof *a);
        if (a != NULL) {
            d->tree_parent = a;
        }
        int32_t *b = realloc(d->tree_word, (size_t)cap * sizeof *b);
        if (b != NULL) {
            d->tree_word = b;
        }
        int32_t *c = realloc(d->tree_label, (size_t)cap * sizeof *c);
        if (c != NULL) {
            d->tree_label = c;
        }
        if (a == NULL || b == NULL || c == NULL) {
            return gr_error(GR_ENOMEM, "classification data: out of memory");
        }
        d->cap_tree_nodes = cap;
    }
    struct nlp_cls_example *e = &d->split[s].ex[d->split[s].n - 1];
    int64_t at = d->n_tree_nodes;
    memcpy(d->tree_parent + at, parent, (size_t)n * sizeof *parent);
    memcpy(d->tree_word + at, word, (size_t)n * sizeof *word);
    for (int32_t j = 0; j < n; j++) {
        d->tree_label[at + j] = label != NULL ? label[j] : -1;
        d->node_labels |= label != NULL && label[j] >= 0;
    }
    d->n_tree_nodes += n;
    if (second) {
        e->tb = at;
        e->tn_b = n;
    } else {
        e->ta = at;
        e->tn_a = n;
    }
    return 0;
}

static const char *const split_names[3] = {"train", "valid", "test"};

/* "sst5 train example 17 (line 18)" */
static void example_name(const struct nlp_cls_data *d, int s, int64_t i,
                         int second, char *out, size_t cap)
{
    const struct nlp_cls_example *e = &d->split[s].ex[i];
    int w = snprintf(out, cap, "%s %s example %lld%s", d->task,
                     split_names[s], (long long)i,
                     second ? " (hypothesis)" : d->pair ? " (premise)" : "");
    if (e->line > 0 && w > 0 && (size_t)w < cap) {
        snprintf(out + w, cap - (size_t)w, " (line %d)", (int)e->line);
    }
}

/* The tree of example i's sequence (second: the hypothesis), named. */
static int example_tree(const struct nlp_cls_data *d, int s, int64_t i,
                        int second, int binary, int32_t vocab,
                        struct nlp_tree *t, char *name, size_t cap)
{
    const struct nlp_cls_example *e = &d->split[s].ex[i];
    int64_t at = second ? e->tb : e->ta;
    int32_t n = second ? e->tn_b : e->tn_a;
    t->n_nodes = n;
    t->parent = n ? d->tree_parent + at : NULL;
    t->word = n ? d->tree_word + at : NULL;
    t->label = n ? d->tree_label + at : NULL;
    t->name = NULL;
    if (n == 0 || binary >= 0) {
        example_name(d, s, i, second, name, cap);
        t->name = name;
        if (n == 0) {
            return gr_error(GR_EINVAL, "%s has no tree (the %s task gives "
                            "none; the tree models read given trees)", name,
                            d->task);
        }
        return nlp_tree_check(t, binary > 0, vocab);
    }
    return 0;
}

int nlp_cls_check_trees(const struct nlp_cls_data *d, int binary)
{
    char name[160];
    for (int s = 0; s < 3; s++) {
        for (int64_t i = 0; i < d->split[s].n; i++) {
            for (int second = 0; second <= d->pair; second++) {
                struct nlp_tree t;
                int rc = example_tree(d, s, i, second, binary, d->vocab_size,
                                      &t, name, sizeof name);
                if (rc < 0) {
                    return rc;
                }
            }
        }
    }
    return 0;
}

/* ---- configuration ---------------------------------------------------------- */

void nlp_cls_train_config_default(struct nlp_cls_train_config *tc,
                                  const char *task)
{
    memset(tc, 0, sizeof *tc);
    tc->head_hidden = -1; /* -1: the encoder's D for pairs, 0 for single */
    tc->dropout_out = 0.2f;
    tc->lr = 1e-3f;
    tc->beta1 = 0.0f;
    tc->beta2 = 0.999f;
    tc->eps = 1e-9f;
    tc->wdecay = 1.2e-6f;
    tc->clip = 1.0f;
    tc->plateau_factor = 0.5f;
    tc->plateau_patience = 2;
    tc->epochs = 50;
    tc->batch = 128;
    tc->eval_batch = 256;
    tc->eval_tokens = NLP_CLS_EVAL_TOKENS;
    tc->test_every = 1;
    tc->seed = 1111;
    if (task != NULL && strcmp(task, "logic") == 0) {
        tc->dropout_out = 0.3f; /* OM's r_o; the ON-LSTM script uses 0.2 */
    } else if (task != NULL && strcmp(task, "listops") == 0) {
        tc->dropout_out = 0.2f;
    } else if (task != NULL && strncmp(task, "sst", 3) == 0) {
        tc->dropout_out = 0.5f; /* hybrid_and_trees.md §3.3's output */
        tc->batch = 25;
        tc->epochs = 10;
    } else if (task != NULL && strcmp(task, "snli") == 0) {
        /* fasttrees.md §6.4: MLP hidden 1024, dropout 0.2, Adam 4e-4,
         * x0.2 on a plateau */
        tc->head_hidden = 1024;
        tc->dropout_out = 0.2f;
        tc->lr = 4e-4f;
        tc->plateau_factor = 0.2f;
        tc->epochs = 10;
    }
}

/* ---- the model: encoder and head ------------------------------------------------ */

struct nlp_cls_model {
    struct gr_ctx *ctx;
    struct nlp_encoder enc;
    struct gr_linear_layer fc1; /* the MLP head's hidden layer, if any */
    struct gr_linear_layer out;
    int has_hidden;
    int pair;
    int n_classes;
    int32_t pad_id;
    float dropout_out;
    /* scratch for batches (grown as needed) */
    int32_t *ids, *lens, *labels;
    int32_t batch_T; /* the time steps of the last batch in ids */
    size_t cap_ids, cap_rows;
    /* models given their trees: the batch's trees, and with node labels
     * the logits and labels of every node of the last forward */
    struct nlp_tree *trees;
    size_t cap_trees;
    int32_t *node_labels;
    int64_t n_nodes, cap_nodes;
    struct gr_tensor *node_logits;
};

static int model_build(struct nlp_cls_model *m, struct gr_ctx *ctx,
                       const struct nlp_encoder_config *enc, int pair,
                       int n_classes, int32_t head_hidden, float dropout_out,
                       uint64_t seed)
{
    memset(m, 0, sizeof *m);
    m->ctx = ctx;
    m->pair = pair;
    m->n_classes = n_classes;
    m->pad_id = enc->pad_id;
    m->dropout_out = dropout_out;
    int rc = nlp_encoder_init(&m->enc, ctx, enc, gr_rng_make(seed, 1));
    if (rc < 0) {
        return rc;
    }
    int32_t D = nlp_encoder_out_dim(&m->enc);
    int32_t in = pair ? 4 * D : D;
    int32_t H = head_hidden < 0 ? (pair ? D : 0) : head_hidden;
    m->has_hidden = H > 0;
    if (m->has_hidden) {
        rc = gr_linear_init(&m->fc1, ctx, "head.fc1", in, H, 1,
                            gr_rng_make(seed, 2));
        in = H;
    }
    if (rc == 0) {
        rc = gr_linear_init(&m->out, ctx, "head.out", in, n_classes, 1,
                            gr_rng_make(seed, 3));
    }
    return rc;
}

static void model_release(struct nlp_cls_model *m)
{
    nlp_encoder_free(&m->enc);
    free(m->ids);
    free(m->lens);
    free(m->labels);
    free(m->trees);
    free(m->node_labels);
    m->ids = m->lens = m->labels = NULL;
    m->trees = NULL;
    m->node_labels = NULL;
}

void nlp_cls_model_free(struct nlp_cls_model *m)
{
    if (m == NULL) {
        return;
    }
    model_release(m);
    gr_ctx_free(m->ctx);
    free(m);
}

const struct nlp_encoder_config *nlp_cls_model_encoder(
    const struct nlp_cls_model *m)
{
    return &m->enc.cfg;
}

static int grow(struct nlp_cls_model *m, size_t n_ids, size_t n_rows)
{
    if (n_ids > m->cap_ids) {
        int32_t *p = realloc(m->ids, n_ids * sizeof *p);
        if (p == NULL) {
            return gr_error(GR_ENOMEM, "classifier: out of memory");
        }
        m->ids = p;
        m->cap_ids = n_ids;
    }
    if (n_rows > m->cap_rows) {
        int32_t *a = realloc(m->lens, n_rows * sizeof *a);
        if (a != NULL) {
            m->lens = a;
        }
        int32_t *b = realloc(m->labels, n_rows * sizeof *b);
        if (b != NULL) {
            m->labels = b;
        }
        if (a == NULL || b == NULL) {
            return gr_error(GR_ENOMEM, "classifier: out of memory");
        }
        m->cap_rows = n_rows;
    }
    return 0;
}

/* dropout -> [Linear -> ELU -> dropout] -> Linear */
static struct gr_tensor *head(struct nlp_cls_model *m, struct gr_tensor *f,
                              int training, struct gr_rng r1,
                              struct gr_rng r2)
{
    struct gr_ctx *ctx = m->ctx;
    if (training && m->dropout_out > 0.0f) {
        f = gr_dropout(ctx, f, m->dropout_out, r1);
    }
    if (m->has_hidden) {
        f = gr_elu(ctx, gr_linear_forward(ctx, &m->fc1, f));
        if (training && m->dropout_out > 0.0f) {
            f = gr_dropout(ctx, f, m->dropout_out, r2);
        }
    }
    return gr_linear_forward(ctx, &m->out, f);
}

/* The trees of the batch's rows into m->trees (checked, named on error),
 * and when the data has node labels (single sequences) every node's label
 * into m->node_labels (m->n_nodes). */
static int batch_trees(struct nlp_cls_model *m, const struct nlp_cls_data *d,
                       const struct nlp_cls_example *ex, const int64_t *idx,
                       int32_t n)
{
    int32_t rows = m->pair ? 2 * n : n;
    if ((size_t)rows > m->cap_trees) {
        struct nlp_tree *t = realloc(m->trees, (size_t)rows * sizeof *t);
        if (t == NULL) {
            return gr_error(GR_ENOMEM, "classifier: out of memory");
        }
        m->trees = t;
        m->cap_trees = (size_t)rows;
    }
    int s = 0;
    while (s < 2 && d->split[s].ex != ex) {
        s++;
    }
    int binary = nlp_encoder_trees(m->enc.kind) == 2;
    int64_t total = 0;
    char name[160];
    for (int32_t r = 0; r < rows; r++) {
        int rc = example_tree(d, s, idx[r % n], r >= n, binary,
                              m->enc.cfg.vocab, &m->trees[r], name,
                              sizeof name);
        if (rc < 0) {
            return rc;
        }
        m->trees[r].name = NULL;
        total += m->trees[r].n_nodes;
    }
    if (!d->node_labels || m->pair || !nlp_encoder_trees(m->enc.kind)) {
        return 0;
    }
    if (total > m->cap_nodes) {
        int32_t *p = realloc(m->node_labels, (size_t)total * sizeof *p);
        if (p == NULL) {
            return gr_error(GR_ENOMEM, "classifier: out of memory");
        }
        m->node_labels = p;
        m->cap_nodes = total;
    }
    int64_t at = 0;
    for (int32_t r = 0; r < rows; r++) {
        for (int32_t j = 0; j < m->trees[r].n_nodes; j++) {
            m->node_labels[at++] = m->trees[r].label[j];
        }
    }
    m->n_nodes = total;
    return 0;
}

/* Logits [n, classes] of examples ex[idx[0..n)] (a pair batch encodes the
 * n premises then the n hypotheses); m->labels gets their labels. */
static struct gr_tensor *forward(struct nlp_cls_model *m,
                                 const struct nlp_cls_data *d,
                                 const struct nlp_cls_example *ex,
                                 const int64_t *idx, int32_t n, int training,
                                 struct gr_rng rng)
{
    struct gr_ctx *ctx = m->ctx;
    int32_t rows = m->pair ? 2 * n : n;
    int32_t T = 1;
    for (int32_t j = 0; j < n; j++) {
        const struct nlp_cls_example *e = &ex[idx[j]];
        T = e->len_a > T ? e->len_a : T;
        T = e->len_b > T ? e->len_b : T;
    }
    if (grow(m, (size_t)T * (size_t)rows, (size_t)rows) < 0) {
        return NULL;
    }
    m->batch_T = T;
    int left = m->enc.cfg.left_pad;
    for (size_t i = 0; i < (size_t)T * (size_t)rows; i++) {
        m->ids[i] = m->pad_id;
    }
    for (int32_t r = 0; r < rows; r++) {
        const struct nlp_cls_example *e = &ex[idx[r % n]];
        int second = r >= n;
        const int32_t *tok = d->tokens + (second ? e->b : e->a);
        int32_t len = second ? e->len_b : e->len_a;
        int32_t start = left ? T - len : 0;
        for (int32_t t = 0; t < len; t++) {
            m->ids[(size_t)(start + t) * (size_t)rows + (size_t)r] = tok[t];
        }
        m->lens[r] = left ? T : len;
        if (!second) {
            m->labels[r] = e->label;
        }
    }
    struct nlp_encoder_batch b;
    b.ids = gr_tensor_from_host(ctx, GR_I32, gr_shape2(T, rows), m->ids);
    b.lengths = m->lens;
    b.T = T;
    b.B = rows;
    b.trees = NULL;
    m->node_logits = NULL;
    m->n_nodes = 0;
    if (nlp_encoder_trees(m->enc.kind) && batch_trees(m, d, ex, idx, n) < 0) {
        return NULL;
    }
    b.trees = nlp_encoder_trees(m->enc.kind) ? m->trees : NULL;
    struct gr_tensor *h = nlp_encoder_encode(&m->enc, &b, training, rng);
    if (h == NULL) {
        return NULL;
    }
    struct gr_tensor *f = h;
    if (m->pair) {
        /* the same features as nlp/models/heads.h's pair head (its
         * parameter names, initial draws and dropout streams differ, so
         * the layers stay here: checkpoints keep head.fc1 / head.out) */
        struct gr_tensor *u = gr_slice(ctx, h, 0, 0, n);
        struct gr_tensor *v = gr_slice(ctx, h, 0, n, n);
        f = nlp_head_pair_features(ctx, u, v);
    }
    struct gr_rng r1 = gr_rng_make(rng.seed, gr_rng_stream(rng.stream, 21, 0,
                                                            0));
    struct gr_rng r2 = gr_rng_make(rng.seed, gr_rng_stream(rng.stream, 22, 0,
                                                            0));
    /* every labelled node through the same head (SST, §3.3) */
    if (m->n_nodes > 0 && nlp_encoder_trees(m->enc.kind)) {
        struct gr_rng r3 = gr_rng_make(rng.seed, gr_rng_stream(rng.stream,
                                                                23, 0, 0));
        struct gr_rng r4 = gr_rng_make(rng.seed, gr_rng_stream(rng.stream,
                                                                24, 0, 0));
        m->node_logits = head(m, nlp_encoder_node_states(&m->enc), training,
                              r3, r4);
        if (m->node_logits == NULL) {
            return NULL;
        }
    }
    return head(m, f, training, r1, r2);
}

/* ---- evaluation ---------------------------------------------------------------- */

static int sst_negative(int n_classes, int label)
{
    return label >= 0 && (n_classes == 2 ? label == 0 : label <= 1);
}

static int sst_positive(int n_classes, int label)
{
    return n_classes == 2 ? label == 1 : label >= 3;
}

/* SST-2: logit 1 - logit 0; SST-5: the expected class under softmax */
static double positivity(const float *p, int n_classes)
{
    if (n_classes == 2) {
        return (double)p[1] - (double)p[0];
    }
    double mx = p[0], z = 0.0, e = 0.0;
    for (int k = 1; k < n_classes; k++) {
        mx = p[k] > mx ? p[k] : mx;
    }
    for (int k = 0; k < n_classes; k++) {
        double w = exp((double)p[k] - mx);
        z += w;
        e += w * k;
    }
    return e / z;
}

void nlp_cls_negation_add(const struct nlp_tree *trees, int32_t B,
                          const float *logits, int n_classes,
                          const uint8_t *neg_word, int32_t vocab,
                          int64_t *np_ok, int64_t *np_n, int64_t *nn_ok,
                          int64_t *nn_n)
{
    int64_t off = 0;
    for (int32_t b = 0; b < B; off += trees[b].n_nodes, b++) {
        const struct nlp_tree *t = &trees[b];
        if (t->label == NULL) {
            continue;
        }
        for (int32_t j = 0; j < t->n_nodes; j++) {
            /* the first two children of j in index order */
            int32_t c[2] = {-1, -1}, nc = 0;
            for (int32_t k = 0; k < t->n_nodes && nc < 3; k++) {
                if (t->parent[k] == j) {
                    if (nc < 2) {
                        c[nc] = k;
                    }
                    nc++;
                }
            }
            if (nc != 2) {
                continue;
            }
            int32_t w = t->word[c[0]];
            int first_leaf = 1;
            for (int32_t k = 0; k < t->n_nodes; k++) {
                first_leaf &= t->parent[k] != c[0];
            }
            if (!first_leaf || w < 0 || w >= vocab || !neg_word[w]) {
                continue;
            }
            const float *pj = logits + (size_t)(off + j) * (size_t)n_classes;
            const float *pc =
                logits + (size_t)(off + c[1]) * (size_t)n_classes;
            int lj = t->label[j], lc = t->label[c[1]];
            if (sst_positive(n_classes, lc) && sst_negative(n_classes, lj)) {
                int best = 0;
                for (int k = 1; k < n_classes; k++) {
                    best = pj[k] > pj[best] ? k : best;
                }
                (*np_n)++;
                *np_ok += sst_negative(n_classes, best);
            } else if (sst_negative(n_classes, lc) &&
                       !sst_negative(n_classes, lj) &&
                       (lj >= 0 || n_classes == 2)) {
                (*nn_n)++;
                *nn_ok += positivity(pj, n_classes) >
                          positivity(pc, n_classes);
            }
        }
    }
}

/* neg_word[id] for the words of vocab_text (not, n't, never, no) */
static uint8_t *negation_words(const struct nlp_cls_data *d)
{
    if (d->vocab_text == NULL || strncmp(d->task, "sst", 3) != 0 ||
        d->dep_trees) {
        return NULL;
    }
    uint8_t *f = calloc((size_t)d->vocab_size, 1);
    if (f == NULL) {
        return NULL;
    }
    static const char *const neg[] = {"not", "n't", "never", "no"};
    int32_t id = 0;
    for (const char *p = d->vocab_text; *p != '\0' && id < d->vocab_size;
         id++) {
        size_t n = strcspn(p, "\n");
        for (size_t k = 0; k < sizeof neg / sizeof neg[0]; k++) {
            size_t m = strlen(neg[k]), i = 0;
            while (i < m && i < n &&
                   (p[i] | 0x20) == (neg[k][i] | 0x20)) {
                i++;
            }
            f[id] |= i == m && n == m;
        }
        p += n + (p[n] == '\n');
    }
    return f;
}

static const struct nlp_cls_example *sort_ex;
static int by_length(const void *a, const void *b);

/* An example's length for sorting and for the evaluation token cap: its
 * longer side (a pair's two sides are encoded as two batches). */
static int32_t example_length(const struct nlp_cls_example *x)
{
    return x->len_a > x->len_b ? x->len_a : x->len_b;
}

/* Examples are taken in order of length, at most `batch` of them and at
 * most `max_tokens` tokens counting the padding (n times the longest; one
 * example alone may exceed it). Activations of a batch stay until its end
 * (the step arena), so memory grows with n times the longest sequence:
 * ListOps' test goes up to 939 tokens, where 256 rows of OM held 19 GB. */
static int32_t eval_batch_size(const struct nlp_cls_split *sp,
                               const int64_t *idx, int64_t i0, int32_t batch,
                               int64_t max_tokens)
{
    int32_t n = (int32_t)(sp->n - i0 < batch ? sp->n - i0 : batch);
    while (n > 1 && max_tokens > 0 &&
           (int64_t)n * example_length(&sp->ex[idx[i0 + n - 1]]) >
               max_tokens) {
        n--;
    }
    return n;
}

static int evaluate_split(struct nlp_cls_model *m, const struct nlp_cls_data *d,
                          int s, int32_t batch, int64_t max_tokens,
                          struct nlp_cls_eval *out)
{
    memset(out, 0, sizeof *out);
    const struct nlp_cls_split *sp = &d->split[s];
    int64_t correct = 0;
    int64_t gc[NLP_CLS_MAX_GROUPS] = {0};
    int64_t node_correct = 0, node_n = 0;
    int64_t np_ok = 0, np_n = 0, nn_ok = 0, nn_n = 0;
    uint8_t *neg_word = negation_words(d);
    double loss_sum = 0.0;
    int was = gr_set_grad_enabled(m->ctx, 0);
    /* validation with the training slot count, test with the evaluation
     * one (ordered_memory.md §9: 12 and 24 for logic) */
    int32_t slots_eval = m->enc.cfg.slots_eval;
    if (s == NLP_CLS_VALID) {
        m->enc.cfg.slots_eval = m->enc.cfg.slots_train;
    }
    /* batches of similar lengths (little padding): the examples by length */
    int64_t *idx = malloc((size_t)(sp->n > 0 ? sp->n : 1) * sizeof *idx);
    if (idx != NULL) {
        for (int64_t i = 0; i < sp->n; i++) {
            idx[i] = i;
        }
        sort_ex = sp->ex;
        qsort(idx, (size_t)sp->n, sizeof *idx, by_length);
    }
    float *logits = malloc((size_t)(batch > 0 ? batch : 1) *
                           (size_t)m->n_classes * sizeof *logits);
    int rc = idx == NULL || logits == NULL
                 ? gr_error(GR_ENOMEM, "evaluation: out of memory")
                 : 0;
    int32_t n = 0;
    for (int64_t i0 = 0; rc == 0 && i0 < sp->n; i0 += n) {
        n = eval_batch_size(sp, idx, i0, batch, max_tokens);
        out->batches++;
        gr_step_reset(m->ctx);
        struct gr_tensor *lg =
            forward(m, d, sp->ex, idx + i0, n, 0, gr_rng_make(0, 0));
        struct gr_tensor *tg =
            lg ? gr_tensor_from_host(m->ctx, GR_I32, gr_shape1(n), m->labels)
               : NULL;
        struct gr_tensor *loss = tg ? gr_cross_entropy(m->ctx, lg, tg, -1)
                                    : NULL;
        if (loss == NULL || gr_tensor_to_host(lg, logits) < 0) {
            /* an op's failure is the context's; the trees' check sets
             * the thread's message */
            rc = gr_ctx_status(m->ctx) < 0
                     ? gr_error(GR_EINVAL, "evaluation: %s",
                                gr_ctx_error(m->ctx))
                     : gr_error_wrap(GR_EINVAL, "evaluation");
            break;
        }
        loss_sum += (double)gr_tensor_item(loss) * n;
        if (m->node_logits != NULL && rc == 0) {
            float *nl = malloc((size_t)m->n_nodes * (size_t)m->n_classes *
                               sizeof *nl);
            if (nl == NULL || gr_tensor_to_host(m->node_logits, nl) < 0) {
                free(nl);
                rc = gr_error(GR_ENOMEM, "evaluation: node logits");
                break;
            }
            for (int64_t j = 0; j < m->n_nodes; j++) {
                if (m->node_labels[j] < 0) {
                    continue;
                }
                const float *p = nl + (size_t)j * (size_t)m->n_classes;
                int best = 0;
                for (int k = 1; k < m->n_classes; k++) {
                    best = p[k] > p[best] ? k : best;
                }
                node_correct += best == m->node_labels[j];
                node_n++;
            }
            if (neg_word != NULL) {
                nlp_cls_negation_add(m->trees, n, nl, m->n_classes, neg_word,
                                     d->vocab_size, &np_ok, &np_n, &nn_ok,
                                     &nn_n);
            }
            free(nl);
        }
        for (int32_t j = 0; j < n; j++) {
            const float *p = logits + (size_t)j * (size_t)m->n_classes;
            int best = 0;
            for (int k = 1; k < m->n_classes; k++) {
                best = p[k] > p[best] ? k : best;
            }
            int ok = best == m->labels[j];
            correct += ok;
            int g = sp->ex[idx[i0 + j]].group;
            if (g >= 0 && g < NLP_CLS_MAX_GROUPS) {
                out->group_n[g]++;
                gc[g] += ok;
            }
        }
    }
    gr_step_reset(m->ctx);
    gr_set_grad_enabled(m->ctx, was);
    m->enc.cfg.slots_eval = slots_eval;
    free(idx);
    free(logits);
    out->n = sp->n;
    out->acc = sp->n ? (double)correct / (double)sp->n : NAN;
    out->loss = sp->n ? loss_sum / (double)sp->n : NAN;
    out->node_n = node_n;
    out->node_acc = node_n ? (double)node_correct / (double)node_n : NAN;
    out->neg_pos_n = np_n;
    out->neg_neg_n = nn_n;
    out->neg_pos_acc = np_n ? (double)np_ok / (double)np_n : NAN;
    out->neg_neg_acc = nn_n ? (double)nn_ok / (double)nn_n : NAN;
    free(neg_word);
    for (int g = 0; g < NLP_CLS_MAX_GROUPS; g++) {
        out->group_acc[g] = out->group_n[g]
                                ? (double)gc[g] / (double)out->group_n[g]
                                : NAN;
    }
    return rc;
}

int nlp_cls_evaluate(struct nlp_cls_model *m, const struct nlp_cls_data *d,
                     int s, int32_t batch, int64_t max_tokens,
                     struct nlp_cls_eval *out)
{
    if (d->pair != m->pair || d->n_classes != m->n_classes) {
        return gr_error(GR_EINVAL, "the data (%s, %d classes) does not fit "
                                   "the model (%s, %d classes)",
                        d->pair ? "pairs" : "single", d->n_classes,
                        m->pair ? "pairs" : "single", m->n_classes);
    }
    return evaluate_split(m, d, s, batch < 1 ? 256 : batch, max_tokens, out);
}

int nlp_cls_distances(struct nlp_cls_model *m, const int32_t *ids,
                      int32_t len, float *d)
{
    if (m->enc.kind->distances == NULL) {
        return gr_error(GR_EUNSUPPORTED, "model %s induces no tree",
                        m->enc.kind->name);
    }
    int was = gr_set_grad_enabled(m->ctx, 0);
    gr_step_reset(m->ctx);
    struct nlp_encoder_batch b;
    b.ids = gr_tensor_from_host(m->ctx, GR_I32, gr_shape2(len, 1), ids);
    b.lengths = &len;
    b.T = len;
    b.B = 1;
    b.trees = NULL;
    struct gr_tensor *h = nlp_encoder_encode(&m->enc, &b, 0, gr_rng_make(0, 0));
    int rc = h == NULL ? gr_error(GR_EINVAL, "%s", gr_ctx_error(m->ctx))
                       : m->enc.kind->distances(&m->enc, d);
    gr_step_reset(m->ctx);
    gr_set_grad_enabled(m->ctx, was);
    return rc;
}

/* ---- batches -------------------------------------------------------------------- */

/* Fisher-Yates on Philox: a permutation of 0..n-1 for (seed, epoch, salt). */
static void shuffle(int64_t *p, int64_t n, uint64_t seed, uint64_t epoch,
                    uint64_t salt)
{
    struct gr_philox_stream r = gr_philox_stream_init(
        gr_mix64(seed ^ 0xC1A5500000000000ull ^ salt) ^ epoch, 0);
    for (int64_t i = n - 1; i > 0; i--) {
        uint64_t hi = gr_philox_next_u32(&r), lo = gr_philox_next_u32(&r);
        int64_t j = (int64_t)(((hi << 32) | lo) % (uint64_t)(i + 1));
        int64_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

static int by_length(const void *a, const void *b)
{
    const struct nlp_cls_example *x = &sort_ex[*(const int64_t *)a];
    const struct nlp_cls_example *y = &sort_ex[*(const int64_t *)b];
    int32_t lx = example_length(x), ly = example_length(y);
    if (lx != ly) {
        return lx < ly ? -1 : 1;
    }
    return *(const int64_t *)a < *(const int64_t *)b ? -1 : 1;
}

/* The epoch's batches: order[] holds example indices, batch k is
 * order[start[k] .. start[k] + size[k]). Plain: a shuffle cut into batches
 * (the last one short). Bucketed (ListOps, §9): shuffle, 10 chunks, each
 * sorted by length and cut into full batches (remainders dropped), the
 * batch order shuffled; a batch larger than a chunk is cut to the chunk
 * (else no batch would be full and the epoch would train nothing).
 * Returns the batch count. */
static int64_t epoch_batches(const struct nlp_cls_data *d, int32_t B,
                             uint64_t seed, int32_t epoch, int64_t *order,
                             int64_t *start, int32_t *size)
{
    const struct nlp_cls_split *sp = &d->split[NLP_CLS_TRAIN];
    int64_t n = sp->n;
    for (int64_t i = 0; i < n; i++) {
        order[i] = i;
    }
    shuffle(order, n, seed, (uint64_t)epoch, 1);
    int64_t nb = 0;
    if (!d->bucket) {
        for (int64_t i = 0; i < n; i += B) {
            start[nb] = i;
            size[nb] = (int32_t)(n - i < B ? n - i : B);
            nb++;
        }
        return nb;
    }
    int64_t chunk = (n + 9) / 10;
    if (B > chunk && chunk > 0) {
        B = (int32_t)chunk;
    }
    sort_ex = sp->ex;
    int64_t *tmp = start; /* reuse: the starts are rebuilt below */
    int64_t kept = 0;
    for (int64_t c0 = 0; c0 < n; c0 += chunk) {
        int64_t len = n - c0 < chunk ? n - c0 : chunk;
        qsort(order + c0, (size_t)len, sizeof *order, by_length);
        for (int64_t i = 0; i + B <= len; i += B) {
            tmp[kept++] = c0 + i;
        }
    }
    nb = kept;
    int64_t *perm = malloc((size_t)(nb > 0 ? nb : 1) * sizeof *perm);
    if (perm == NULL) {
        return -1;
    }
    for (int64_t k = 0; k < nb; k++) {
        perm[k] = k;
    }
    shuffle(perm, nb, seed, (uint64_t)epoch, 2);
    int64_t *starts = malloc((size_t)(nb > 0 ? nb : 1) * sizeof *starts);
    if (starts == NULL) {
        free(perm);
        return -1;
    }
    for (int64_t k = 0; k < nb; k++) {
        starts[k] = tmp[perm[k]];
    }
    for (int64_t k = 0; k < nb; k++) {
        start[k] = starts[k];
        size[k] = B;
    }
    free(perm);
    free(starts);
    return nb;
}

/* ---- checkpoints ------------------------------------------------------------------ */

struct cls_state {
    int32_t epoch_done;
    int32_t best_epoch;
    double best_valid;
    int64_t global_step;
    double wall;
    struct gr_lr_plateau plateau;
};

/* The config text of a checkpoint: what rebuilds the model, the training
 * options (checked on --resume), the state, the vocabulary. */
static int config_text(const struct nlp_cls_train_config *tc,
                       const struct nlp_cls_data *d,
                       const struct cls_state *st, char **out)
{
    size_t cap = 8192 + (d->vocab_text ? strlen(d->vocab_text) : 0);
    char *t = malloc(cap);
    if (t == NULL) {
        return gr_error(GR_ENOMEM, "classifier: out of memory");
    }
    /* the count of generated ListOps trees, which the validation part
     * held out of them depends on (classify eval --on valid regenerates
     * them); only when not the default, so that the configs of the runs
     * before this line, which --resume compares, stay as they were */
    char listops_n[40] = "";
    if (d->listops_generated > 0 &&
        d->listops_generated != NLP_CLS_LISTOPS_GENERATE) {
        snprintf(listops_n, sizeof listops_n, "listops-n %d\n",
                 (int)d->listops_generated);
    }
    /* the SST training unit, likewise only when not the default */
    static const char *const units[3] = {"", "sst-train nodes\n",
                                         "sst-train phrases\n"};
    const char *sst_unit =
        d->sst_train_unit > 0 && d->sst_train_unit < 3 ? units[d->sst_train_unit]
                                                       : "";
    int len = snprintf(
        t, cap,
        "%s\ntask %s\npair %d\nclasses %d\ngroups %d\nbucket %d\n"
        "head-hidden %d\ndropouto %.9g\nlr %.9g\nbeta1 %.9g\nbeta2 %.9g\n"
        "eps %.9g\nwdecay %.9g\nclip %.9g\nplateau-factor %.9g\n"
        "plateau-patience %d\nbatch %d\nmax-batches %d\nselect-on-test %d\n"
        "seed %llu\ndata %s\n%s%s%s",
        CLS_MAGIC, d->task, d->pair, d->n_classes, d->n_groups, d->bucket,
        (int)tc->head_hidden, (double)tc->dropout_out, (double)tc->lr,
        (double)tc->beta1, (double)tc->beta2, (double)tc->eps,
        (double)tc->wdecay, (double)tc->clip, (double)tc->plateau_factor,
        (int)tc->plateau_patience, (int)tc->batch, (int)tc->max_batches,
        tc->select_on_test, (unsigned long long)tc->seed,
        tc->data_desc ? tc->data_desc : "-",
        d->dep_trees ? "trees dependency\n" : "", listops_n, sst_unit);
    int rc = nlp_encoder_config_format(&tc->enc, t, cap, &len);
    if (rc == 0 && st != NULL) {
        int n = snprintf(
            t + len, cap - (size_t)len,
            "state-epoch %d\nstate-best-epoch %d\nstate-best-valid %.17g\n"
            "state-global-step %lld\nstate-wall %.17g\nstate-lr %.9g\n"
            "state-plateau-best %.17g\nstate-plateau-bad %d\n"
            "state-plateau-cooldown %d\nstate-plateau-seen %d\n",
            (int)st->epoch_done, (int)st->best_epoch, st->best_valid,
            (long long)st->global_step, st->wall, (double)st->plateau.lr,
            st->plateau.best, st->plateau.bad_epochs,
            st->plateau.cooldown_left, st->plateau.seen);
        rc = n < 0 || (size_t)(len + n) >= cap ? GR_EINVAL : 0;
        len += n > 0 ? n : 0;
    }
    if (rc == 0 && d->vocab_text != NULL) {
        int n = snprintf(t + len, cap - (size_t)len, "vocab\n%s",
                         d->vocab_text);
        rc = n < 0 || (size_t)(len + n) >= cap ? GR_EINVAL : 0;
    }
    if (rc < 0) {
        free(t);
        return gr_error(GR_EINVAL, "classifier: config text too long");
    }
    *out = t;
    return 0;
}

/* The config lines before the state (what --resume must find unchanged). */
static size_t options_length(const char *text)
{
    const char *p = strstr(text, "\nstate-epoch ");
    if (p == NULL) {
        p = strstr(text, "\nvocab\n");
    }
    return p ? (size_t)(p - text) + 1 : strlen(text);
}

static const char *value_of(const char *text, const char *key)
{
    struct gr_lines it;
    size_t len;
    gr_lines_begin(&it, text);
    while (gr_lines_next(&it)) {
        const char *v = gr_lines_value(&it, key, &len);
        if (v != NULL) {
            return v;
        }
        if (strncmp(it.line, "vocab\n", 6) == 0) {
            return NULL; /* the words follow: no keys there */
        }
    }
    return NULL;
}

static int get_num(const char *text, const char *what, const char *key,
                   double *v)
{
    const char *s = value_of(text, key);
    char *end;
    if (s == NULL) {
        return gr_error(GR_EFORMAT, "%s: no '%s' line", what, key);
    }
    *v = strtod(s, &end);
    if (end == s || (*end != '\n' && *end != '\0')) {
        return gr_error(GR_EFORMAT, "%s: bad '%s' line", what, key);
    }
    return 0;
}

static int state_read(const char *text, const char *what, struct cls_state *st)
{
    double v[10];
    const char *keys[10] = {"state-epoch",         "state-best-epoch",
                            "state-best-valid",    "state-global-step",
                            "state-wall",          "state-lr",
                            "state-plateau-best",  "state-plateau-bad",
                            "state-plateau-cooldown", "state-plateau-seen"};
    for (int i = 0; i < 10; i++) {
        int rc = get_num(text, what, keys[i], &v[i]);
        if (rc < 0) {
            return rc;
        }
    }
    st->epoch_done = (int32_t)v[0];
    st->best_epoch = (int32_t)v[1];
    st->best_valid = v[2];
    st->global_step = (int64_t)v[3];
    st->wall = v[4];
    st->plateau.lr = (float)v[5];
    st->plateau.best = v[6];
    st->plateau.bad_epochs = (int)v[7];
    st->plateau.cooldown_left = (int)v[8];
    st->plateau.seen = (int)v[9];
    return 0;
}

int nlp_cls_model_load(struct nlp_cls_model **out, const char *path,
                       const struct gr_ctx_config *cc, char *task_out,
                       char **vocab_text)
{
    *out = NULL;
    if (vocab_text != NULL) {
        *vocab_text = NULL;
    }
    char *text = NULL;
    int rc = gr_checkpoint_read_config(path, &text);
    if (rc < 0) {
        return rc;
    }
    if (strncmp(text, CLS_MAGIC "\n", strlen(CLS_MAGIC) + 1) != 0) {
        free(text);
        return gr_error(GR_EFORMAT, "%s: not a grove classifier checkpoint "
                                    "(grove nlp classify train writes those)",
                        path);
    }
    struct nlp_encoder_config enc;
    double pair = 0, classes = 0, hh = 0, dro = 0, seed = 0;
    rc = nlp_encoder_config_parse(text, path, &enc);
    if (rc == 0) {
        rc = get_num(text, path, "pair", &pair);
    }
    if (rc == 0) {
        rc = get_num(text, path, "classes", &classes);
    }
    if (rc == 0) {
        rc = get_num(text, path, "head-hidden", &hh);
    }
    if (rc == 0) {
        rc = get_num(text, path, "dropouto", &dro);
    }
    if (rc == 0) {
        rc = get_num(text, path, "seed", &seed);
    }
    const char *task = value_of(text, "task");
    if (rc == 0 && (task == NULL || classes < 2 ||
                    classes > NLP_CLS_MAX_CLASSES)) {
        rc = gr_error(GR_EFORMAT, "%s: bad task or class count", path);
    }
    if (rc == 0 && task_out != NULL) {
        size_t n = strcspn(task, "\n");
        snprintf(task_out, 16, "%.*s", (int)(n < 15 ? n : 15), task);
    }
    struct nlp_cls_model *m = calloc(1, sizeof *m);
    struct gr_ctx *ctx = NULL;
    if (rc == 0 && m == NULL) {
        rc = gr_error(GR_ENOMEM, "out of memory");
    }
    if (rc == 0) {
        rc = gr_ctx_new(&ctx, cc);
    }
    if (rc == 0) {
        rc = model_build(m, ctx, &enc, (int)pair, (int)classes, (int32_t)hh,
                         (float)dro, (uint64_t)seed);
    }
    if (rc == 0) {
        rc = gr_checkpoint_load(ctx, path, GR_CKPT_PARAMS, NULL);
    }
    if (rc == 0 && vocab_text != NULL) {
        const char *v = strstr(text, "\nvocab\n");
        if (v != NULL) {
            *vocab_text = strdup(v + 7);
            rc = *vocab_text == NULL ? GR_ENOMEM : 0;
        }
    }
    free(text);
    if (rc < 0) {
        if (m != NULL) {
            m->ctx = ctx;
            nlp_cls_model_free(m);
        } else {
            gr_ctx_free(ctx);
        }
        return rc;
    }
    *out = m;
    return 0;
}

/* ---- training ---------------------------------------------------------------------- */

#define CLS_MAX_COLS (8 + NLP_CLS_MAX_GROUPS)

struct trainer {
    const struct nlp_cls_train_config *tc;
    struct nlp_cls_data *d;
    struct nlp_cls_model m;
    struct gr_ctx *ctx;
    struct gr_optim *opt;
    struct train_run run;
    int have_run;
    struct cls_state st;
    struct train_column cols[CLS_MAX_COLS];
    char col_names[NLP_CLS_MAX_GROUPS][24];
    int n_cols;
    FILE *trace; /* GROVE_CLASSIFY_TRACE: every training batch and loss */
};

static void build_columns(struct trainer *tr)
{
    static const struct train_column base[] = {
        {"epoch", "%.0f"},      {"global_step", "%.0f"},
        {"train_loss", "%.6f"}, {"train_acc", "%.6f"},
        {"valid_acc", "%.6f"},  {"test_acc", "%.6f"},
        {"lr", "%.9g"},         {"wall_s", "%.3f"},
    };
    int n = 0;
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) {
        tr->cols[n++] = base[i];
    }
    /* logic: test accuracy per number of operators 1..n_groups-1 */
    for (int g = 1; g < tr->d->n_groups && g < NLP_CLS_MAX_GROUPS; g++) {
        snprintf(tr->col_names[g], sizeof tr->col_names[g], "test_acc_%d", g);
        tr->cols[n].name = tr->col_names[g];
        tr->cols[n].format = "%.6f";
        n++;
    }
    tr->n_cols = n;
}

static int save(struct trainer *tr, enum train_which which)
{
    char *text = NULL;
    int rc = config_text(tr->tc, tr->d, &tr->st, &text);
    if (rc == 0) {
        rc = train_save(&tr->run, which, tr->ctx, text,
                        which == TRAIN_LAST ? GR_CKPT_ALL : GR_CKPT_PARAMS,
                        tr->st.epoch_done);
    }
    free(text);
    return rc;
}

static int data_check(const struct nlp_cls_data *d)
{
    if (d->split[NLP_CLS_TRAIN].n < 1) {
        return gr_error(GR_EINVAL, "%s: no training examples", d->task);
    }
    if (d->split[NLP_CLS_VALID].n < 1) {
        return gr_error(GR_EINVAL, "%s: no validation examples", d->task);
    }
    if (d->n_classes < 2 || d->n_classes > NLP_CLS_MAX_CLASSES ||
        d->vocab_size < 1) {
        return gr_error(GR_EINVAL, "%s: %d classes, vocabulary %d", d->task,
                        d->n_classes, (int)d->vocab_size);
    }
    for (int64_t i = 0; i < d->n_tokens; i++) {
        if (d->tokens[i] < 0 || d->tokens[i] >= d->vocab_size) {
            return gr_error(GR_EINVAL, "%s: token id %d outside the "
                                       "vocabulary of %d",
                            d->task, (int)d->tokens[i], (int)d->vocab_size);
        }
    }
    return 0;
}

/* GROVE_CLASSIFY_TRACE=FILE (bench/nlp/om_compare.sh): each training
 * batch as the encoder saw it and its loss before the update, so that a
 * reference implementation can replay the same steps from the same
 * initial weights. A record: "batch EPOCH K T ROWS N LOSS", then T lines
 * of ROWS token ids (time-major, padding included; a pair batch holds the
 * N premises then the N hypotheses), then a line of the N labels. */
static int trace_batch(struct trainer *tr, int32_t epoch, int64_t k,
                       int32_t n, double loss)
{
    const struct nlp_cls_model *m = &tr->m;
    int32_t rows = m->pair ? 2 * n : n;
    int32_t T = m->batch_T;
    fprintf(tr->trace, "batch %d %lld %d %d %d %.9g\n", (int)epoch,
            (long long)k, (int)T, (int)rows, (int)n, loss);
    for (int32_t t = 0; t < T; t++) {
        for (int32_t r = 0; r < rows; r++) {
            fprintf(tr->trace, "%d%c", (int)m->ids[(size_t)t * rows + r],
                    r + 1 < rows ? ' ' : '\n');
        }
    }
    for (int32_t j = 0; j < n; j++) {
        fprintf(tr->trace, "%d%c", (int)m->labels[j], j + 1 < n ? ' ' : '\n');
    }
    if (fflush(tr->trace) != 0 || ferror(tr->trace)) {
        return gr_error(GR_EIO, "GROVE_CLASSIFY_TRACE: writing failed");
    }
    return 0;
}

static int train_epoch(struct trainer *tr, int32_t epoch, double *loss_out,
                       double *acc_out)
{
    const struct nlp_cls_train_config *tc = tr->tc;
    const struct nlp_cls_split *sp = &tr->d->split[NLP_CLS_TRAIN];
    int32_t B = tc->batch;
    int64_t n = sp->n;
    /* bucketed epochs may cut batches to a chunk of n/10 (epoch_batches) */
    int64_t Bmin = tr->d->bucket && (n + 9) / 10 < B ? (n + 9) / 10 : B;
    int64_t max_b = Bmin > 0 ? (n + Bmin - 1) / Bmin + 1 : 1;
    int64_t *order = malloc((size_t)n * sizeof *order);
    int64_t *start = malloc((size_t)max_b * sizeof *start);
    int32_t *size = malloc((size_t)max_b * sizeof *size);
    float *logits = malloc((size_t)B * (size_t)tr->d->n_classes *
                           sizeof *logits);
    int rc = 0;
    if (order == NULL || start == NULL || size == NULL || logits == NULL) {
        rc = gr_error(GR_ENOMEM, "training: out of memory");
    }
    int64_t nb = rc == 0 ? epoch_batches(tr->d, B, tc->seed, epoch, order,
                                         start, size)
                         : 0;
    if (nb < 0) {
        rc = gr_error(GR_ENOMEM, "training: out of memory");
    }
    if (tc->max_batches > 0 && nb > tc->max_batches) {
        nb = tc->max_batches;
    }
    char label[48];
    snprintf(label, sizeof label, "epoch %d/%d", (int)epoch, (int)tc->epochs);
    struct gr_progress prog;
    gr_progress_start(&prog, label, (uint64_t)nb, "batches", tc->quiet);
    double loss_sum = 0.0;
    int64_t seen = 0, correct = 0;
    for (int64_t k = 0; rc == 0 && k < nb; k++) {
        if (train_stop_requested()) {
            break; /* the epoch is dropped; --resume redoes it */
        }
        gr_step_reset(tr->ctx);
        gr_zero_grad(tr->ctx);
        struct gr_rng rng = gr_rng_make(tc->seed,
                                        gr_rng_stream((uint64_t)epoch,
                                                      (uint64_t)k, 7, 0));
        int32_t bn = size[k];
        struct gr_tensor *lg =
            forward(&tr->m, tr->d, sp->ex, order + start[k], bn, 1, rng);
        struct gr_tensor *tg =
            lg ? gr_tensor_from_host(tr->ctx, GR_I32, gr_shape1(bn),
                                     tr->m.labels)
               : NULL;
        struct gr_tensor *loss =
            tg ? gr_cross_entropy(tr->ctx, lg, tg, -1) : NULL;
        if (loss != NULL && tr->m.node_logits != NULL) {
            /* supervision at every labelled node (hybrid_and_trees.md
             * §3.3), the mean over the batch's labelled nodes */
            loss = gr_cross_entropy(
                tr->ctx, tr->m.node_logits,
                gr_tensor_from_host(tr->ctx, GR_I32,
                                    gr_shape1(tr->m.n_nodes),
                                    tr->m.node_labels),
                -1);
        }
        if (loss == NULL) {
            rc = gr_ctx_status(tr->ctx) < 0
                     ? gr_error(GR_EINVAL, "epoch %d batch %lld: %s",
                                (int)epoch, (long long)k,
                                gr_ctx_error(tr->ctx))
                     : gr_error_wrap(GR_EINVAL, "epoch %d batch %lld",
                                     (int)epoch, (long long)k);
            break;
        }
        double l = (double)gr_tensor_item(loss);
        rc = tr->trace != NULL ? trace_batch(tr, epoch, k, bn, l) : 0;
        if (rc == 0 && tr->have_run) {
            rc = train_check_finite(&tr->run, l, epoch);
        }
        if (rc < 0) {
            rc = gr_error_wrap(rc, "batch %lld", (long long)k);
            break;
        }
        if ((rc = gr_tensor_to_host(lg, logits)) < 0 ||
            (rc = gr_backward(tr->ctx, loss)) < 0 ||
            (tc->clip > 0 &&
             (rc = gr_clip_grad_norm(tr->ctx, NULL, tc->clip, NULL)) < 0) ||
            (rc = gr_optim_step(tr->opt)) < 0) {
            break;
        }
        for (int32_t j = 0; j < bn; j++) {
            const float *p = logits + (size_t)j * (size_t)tr->d->n_classes;
            int best = 0;
            for (int c = 1; c < tr->d->n_classes; c++) {
                best = p[c] > p[best] ? c : best;
            }
            correct += best == tr->m.labels[j];
        }
        loss_sum += l * bn;
        seen += bn;
        tr->st.global_step++;
        if (!tc->quiet) {
            char extra[64];
            snprintf(extra, sizeof extra, "loss %.4f acc %.3f",
                     loss_sum / (double)seen, (double)correct / (double)seen);
            gr_progress_set_extra(&prog, extra);
        }
        gr_progress_update(&prog, (uint64_t)k + 1);
    }
    gr_progress_finish(&prog);
    gr_step_reset(tr->ctx);
    free(order);
    free(start);
    free(size);
    free(logits);
    *loss_out = seen ? loss_sum / (double)seen : NAN;
    *acc_out = seen ? (double)correct / (double)seen : NAN;
    return rc;
}

/* --vectors: the file's rows into enc.emb.weight (a fresh run) */
static int load_vectors(struct gr_ctx *ctx,
                        const struct nlp_cls_train_config *tc,
                        const struct nlp_cls_data *d)
{
    struct gr_tensor *emb = gr_ctx_find(ctx, "enc.emb.weight");
    if (emb == NULL || emb->ndim != 2) {
        return gr_error(GR_EINVAL, "--vectors: model %s has no word table "
                        "enc.emb.weight", tc->enc.model);
    }
    float *w = malloc((size_t)emb->numel * sizeof *w);
    if (w == NULL) {
        return gr_error(GR_ENOMEM, "--vectors: out of memory");
    }
    int32_t found = 0;
    int rc = gr_tensor_to_host(emb, w);
    if (rc == 0) {
        rc = nlp_vectors_load(tc->vectors, d->vocab_text, w,
                              (int32_t)emb->shape[0], (int32_t)emb->shape[1],
                              &found);
    }
    if (rc == 0) {
        rc = gr_tensor_set_host(emb, w);
    }
    free(w);
    if (rc == 0 && !tc->quiet) {
        fprintf(stderr, "vectors: %d of %d words found in %s (the others "
                "keep their random init)\n", (int)found,
                (int)(d->vocab_size - 1), tc->vectors);
    }
    return rc;
}

static void trainer_free(struct trainer *tr)
{
    if (tr->trace != NULL) {
        fclose(tr->trace);
    }
    if (tr->have_run) {
        train_run_close(&tr->run);
    }
    gr_optim_free(tr->opt);
    model_release(&tr->m);
    gr_ctx_free(tr->ctx);
}

int nlp_cls_train(const struct nlp_cls_train_config *tc,
                  struct nlp_cls_data *d, const struct gr_ctx_config *cc,
                  struct nlp_cls_train_result *res)
{
    memset(res, 0, sizeof *res);
    res->test.acc = NAN;
    res->best_valid_acc = NAN;
    int rc = data_check(d);
    const struct nlp_encoder_kind *kind = nlp_encoder_find(tc->enc.model);
    if (rc == 0 && kind != NULL && nlp_encoder_trees(kind)) {
        rc = nlp_cls_check_trees(d, nlp_encoder_trees(kind) == 2);
    }
    if (rc < 0) {
        return rc;
    }
    if (tc->epochs < 0 || tc->batch < 1 || tc->eval_batch < 1 ||
        !(tc->lr > 0) || tc->test_every < 1) {
        return gr_error(GR_EINVAL, "epochs >= 0, batch >= 1, lr > 0, "
                                   "test-every >= 1");
    }
    struct trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.tc = tc;
    tr.d = d;
    tr.st.best_valid = -1.0;
    tr.st.best_epoch = 0;
    build_columns(&tr);
    gr_lr_plateau_init(&tr.st.plateau, 1, tc->lr);
    tr.st.plateau.factor = tc->plateau_factor;
    tr.st.plateau.patience = tc->plateau_patience;
    tr.st.plateau.threshold = 0.0f;

    /* the run folder: a fresh run writes its config (options and state 0);
     * --resume must find the same options in last.ckpt */
    char *text = NULL;
    rc = config_text(tc, d, &tr.st, &text);
    if (rc < 0) {
        return rc;
    }
    struct train_run_spec spec = train_run_spec_default();
    spec.dir = tc->out_dir;
    spec.force = tc->force;
    spec.resume = tc->resume;
    spec.argc = tc->argc;
    spec.argv = tc->argv;
    spec.config_text = text;
    spec.check_config = 0; /* the options part only: below */
    spec.columns = tr.cols;
    spec.n_columns = tr.n_cols;
    spec.what = "nlp classify train";
    spec.step_unit = "epoch";
    const char *trace = getenv("GROVE_CLASSIFY_TRACE");
    if (trace != NULL && *trace) {
        /* "x": never over an existing file */
        tr.trace = fopen(trace, "wx");
        if (tr.trace == NULL) {
            free(text);
            return gr_error(GR_EIO, "GROVE_CLASSIFY_TRACE: cannot create "
                                    "%s (it must not exist)",
                            trace);
        }
    }
    /* the device and the model before the run folder: a failed start
     * leaves nothing behind */
    rc = gr_ctx_new(&tr.ctx, cc);
    if (rc == 0) {
        rc = model_build(&tr.m, tr.ctx, &tc->enc, d->pair, d->n_classes,
                         tc->head_hidden, tc->dropout_out, tc->seed);
    }
    if (rc == 0 && tc->vectors != NULL && !tc->resume) {
        rc = load_vectors(tr.ctx, tc, d);
    }
    if (rc == 0) {
        struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
        oc.lr = tc->lr;
        oc.beta1 = tc->beta1;
        oc.beta2 = tc->beta2;
        oc.eps = tc->eps;
        oc.weight_decay = tc->wdecay;
        rc = gr_optim_new(&tr.opt, tr.ctx, "adam", &oc);
    }
    if (rc == 0) {
        rc = train_run_open(&tr.run, &spec);
        tr.have_run = rc == 0;
    }
    if (rc == 0 && tc->resume) {
        size_t a = options_length(tr.run.resumed_config);
        size_t b = options_length(text);
        if (a != b || memcmp(tr.run.resumed_config, text, a) != 0) {
            char diff[512];
            train_config_first_difference(tr.run.resumed_config, text, diff,
                                          sizeof diff);
            tr.run.config_mismatch = 1;
            rc = gr_error(GR_EINVAL, "--resume: the options differ from the "
                                     "run's (first difference: %s)",
                          diff);
        }
        if (rc == 0) {
            rc = state_read(tr.run.resumed_config, tr.run.path_last, &tr.st);
        }
    }
    free(text);
    if (rc == 0 && tc->resume) {
        rc = gr_checkpoint_load(tr.ctx, tr.run.path_last, GR_CKPT_ALL, NULL);
        if (rc == 0) {
            gr_optim_set_lr(tr.opt, tr.st.plateau.lr);
            train_note_last_saved(&tr.run, tr.st.epoch_done);
            rc = train_metrics_resume(&tr.run, tr.st.epoch_done);
        }
    } else if (rc == 0) {
        /* the initial model: --epochs 0 exports it, --resume from it equals
         * the fresh run */
        rc = save(&tr, TRAIN_LAST);
        if (rc == 0 && tc->epochs == 0) {
            rc = save(&tr, TRAIN_BEST);
        }
    }
    if (rc < 0) {
        res->config_mismatch = tr.have_run && tr.run.config_mismatch;
        trainer_free(&tr);
        return rc;
    }

    int stopped = 0;
    /* the test evaluation of the best epoch, when it had one: best.ckpt
     * holds those weights, so the final test needs no second pass */
    struct nlp_cls_eval best_test;
    int have_best_test = 0;
    for (int32_t epoch = tr.st.epoch_done + 1;
         rc == 0 && epoch <= tc->epochs; epoch++) {
        double t0 = gr_now_seconds();
        double train_loss, train_acc;
        rc = train_epoch(&tr, epoch, &train_loss, &train_acc);
        if (rc < 0) {
            break;
        }
        if (train_stop_requested()) {
            stopped = 1;
            train_print_stopped(&tr.run, tr.st.epoch_done);
            break;
        }
        struct nlp_cls_eval ev, et;
        rc = evaluate_split(&tr.m, d, NLP_CLS_VALID, tc->eval_batch,
                            tc->eval_tokens, &ev);
        int do_test = d->split[NLP_CLS_TEST].n > 0 &&
                      (epoch % tc->test_every == 0 || epoch == tc->epochs ||
                       tc->select_on_test);
        memset(&et, 0, sizeof et);
        et.acc = NAN;
        for (int g = 0; g < NLP_CLS_MAX_GROUPS; g++) {
            et.group_acc[g] = NAN;
        }
        if (rc == 0 && do_test) {
            rc = evaluate_split(&tr.m, d, NLP_CLS_TEST, tc->eval_batch,
                                tc->eval_tokens, &et);
        }
        if (rc < 0) {
            break;
        }
        double select = tc->select_on_test ? et.acc : ev.acc;
        int best = select > tr.st.best_valid;
        tr.st.epoch_done = epoch;
        tr.st.wall += gr_now_seconds() - t0;
        if (best) {
            tr.st.best_valid = select;
            tr.st.best_epoch = epoch;
            have_best_test = do_test;
            best_test = et;
        }
        float lr_now = gr_optim_lr(tr.opt);
        float lr_next = gr_lr_plateau_step(&tr.st.plateau, select);
        gr_optim_set_lr(tr.opt, lr_next);
        struct train_cell cells[CLS_MAX_COLS];
        int c = 0;
        cells[c++] = TRAIN_NUM(epoch);
        cells[c++] = TRAIN_NUM(tr.st.global_step);
        cells[c++] = TRAIN_NUM(train_loss);
        cells[c++] = TRAIN_NUM(train_acc);
        cells[c++] = TRAIN_NUM(ev.acc);
        cells[c++] = TRAIN_NUM(et.acc);
        cells[c++] = TRAIN_NUM(lr_now);
        cells[c++] = TRAIN_NUM(tr.st.wall);
        for (int g = 1; g < d->n_groups && g < NLP_CLS_MAX_GROUPS; g++) {
            cells[c++] = TRAIN_NUM(et.group_acc[g]);
        }
        if (best) {
            rc = save(&tr, TRAIN_BEST);
        }
        if (rc == 0) {
            rc = train_metrics_row(&tr.run, cells);
        }
        if (rc == 0) {
            rc = save(&tr, TRAIN_LAST);
        }
        if (rc == 0 && !tc->quiet) {
            char test[32] = "";
            if (do_test) {
                snprintf(test, sizeof test, " | test acc %.4f", et.acc);
            }
            fprintf(stderr,
                    "| epoch %3d | %6.1f s | train loss %.4f acc %.4f | valid "
                    "acc %.4f%s | lr %.3g%s\n",
                    (int)epoch, gr_now_seconds() - t0, train_loss, train_acc,
                    ev.acc, test, (double)lr_now,
                    best ? " | saved best" : "");
        }
    }
    res->epochs_done = tr.st.epoch_done;
    res->best_epoch = tr.st.best_epoch;
    res->best_valid_acc = tr.st.best_valid;
    res->wall_s = tr.st.wall;
    res->stopped = stopped;
    if (rc == 0 && !stopped && have_best_test) {
        res->test = best_test;
    } else if (rc == 0 && !stopped && tc->epochs > 0 &&
               d->split[NLP_CLS_TEST].n > 0) {
        rc = gr_checkpoint_load(tr.ctx, tr.run.path_best, GR_CKPT_PARAMS, NULL);
        if (rc == 0) {
            rc = evaluate_split(&tr.m, d, NLP_CLS_TEST, tc->eval_batch,
                                tc->eval_tokens, &res->test);
        }
    }
    trainer_free(&tr);
    return rc;
}

/* ---- induced trees -------------------------------------------------------------- */

int nlp_cls_has_trees(const struct nlp_cls_model *m)
{
    return m->enc.kind == &nlp_encoder_om ||
           m->enc.kind == &nlp_encoder_structformer ||
           m->enc.kind->distances != NULL;
}

/* The k = n - 1 brackets sp[2k] (pairs lo, hi over n leaves) with the
 * dropped leaves deleted and unary nodes collapsed, into out. */
static int32_t tree_finish(int32_t *sp, int32_t n, const uint8_t *drop,
                           struct nlp_span *out)
{
    uint8_t *none = NULL;
    int32_t *kept = malloc((size_t)(n > 1 ? n - 1 : 1) * 2 * sizeof *kept);
    if (drop == NULL) {
        none = calloc((size_t)(n > 0 ? n : 1), 1);
        drop = none;
    }
    int32_t k = -1;
    if (kept != NULL && drop != NULL) {
        k = nlp_om_tree_remove_leaves(sp, n, drop, kept);
    }
    for (int32_t i = 0; i < k; i++) {
        out[i].start = kept[2 * i];
        out[i].end = kept[2 * i + 1];
    }
    free(kept);
    free(none);
    return k < 0 ? gr_error(GR_ENOMEM, "tree: out of memory") : k;
}

int32_t nlp_cls_tree_om(const int32_t *dist, int32_t n, const uint8_t *drop,
                        struct nlp_span *out)
{
    if (n < 2) {
        return 0;
    }
    int32_t *sp = malloc((size_t)(n - 1) * 2 * sizeof *sp);
    int32_t k = sp != NULL ? nlp_om_build_tree(dist, n, sp) : -1;
    int32_t rc = k == n - 1 ? tree_finish(sp, n, drop, out)
                            : gr_error(GR_ENOMEM, "tree: out of memory");
    free(sp);
    return rc;
}

/* The tree of a greedy top-down parser (nlp_parse_distances: one score a
 * word; nlp_parse_gaps: one a gap) over n items, finished as the others. */
static int32_t tree_from_parser(int32_t (*parse)(const float *, int32_t,
                                                 struct nlp_span *),
                                const float *v, int32_t n,
                                const uint8_t *drop, struct nlp_span *out)
{
    if (n < 2) {
        return 0;
    }
    int32_t *sp = malloc((size_t)(n - 1) * 2 * sizeof *sp);
    struct nlp_span *s = malloc((size_t)(n - 1) * sizeof *s);
    int32_t rc;
    if (sp == NULL || s == NULL) {
        rc = gr_error(GR_ENOMEM, "tree: out of memory");
    } else {
        int32_t k = parse(v, n, s);
        for (int32_t i = 0; i < k; i++) {
            sp[2 * i] = s[i].start;
            sp[2 * i + 1] = s[i].end;
        }
        rc = tree_finish(sp, n, drop, out);
    }
    free(sp);
    free(s);
    return rc;
}

int32_t nlp_cls_tree_distances(const float *d, int32_t n, const uint8_t *drop,
                               struct nlp_span *out)
{
    return tree_from_parser(nlp_parse_distances, d, n, drop, out);
}

int32_t nlp_cls_tree_gaps(const float *g, int32_t n, const uint8_t *drop,
                          struct nlp_span *out)
{
    return tree_from_parser(nlp_parse_gaps, g, n, drop, out);
}

/* StructFormer: the distances δ of ids[0..len) encoded alone (one
 * sentence: the calibration is its own, udgn.md §7). */
static int sf_gaps(struct nlp_cls_model *m, const int32_t *ids, int32_t len,
                   float *g)
{
    int was = gr_set_grad_enabled(m->ctx, 0);
    gr_step_reset(m->ctx);
    struct nlp_encoder_batch b;
    b.ids = gr_tensor_from_host(m->ctx, GR_I32, gr_shape2(len, 1), ids);
    b.lengths = &len;
    b.T = len;
    b.B = 1;
    b.trees = NULL;
    struct gr_tensor *h = b.ids ? nlp_encoder_encode(&m->enc, &b, 0,
                                                     gr_rng_make(0, 0))
                                : NULL;
    const float *d = NULL;
    int32_t T = 0, B = 0;
    int rc = h == NULL ? gr_error(GR_EINVAL, "%s", gr_ctx_error(m->ctx))
                       : nlp_sf_encoder_distances(&m->enc, &d, &T, &B);
    if (rc == 0 && (T != len || B != 1)) {
        rc = gr_error(GR_EINVAL, "structformer: distances of [%d, %d] for "
                                 "one sequence of %d", (int)B, (int)T,
                      (int)len);
    }
    if (rc == 0) {
        memcpy(g, d, (size_t)len * sizeof *g);
    }
    gr_step_reset(m->ctx);
    gr_set_grad_enabled(m->ctx, was);
    return rc;
}

/* OM: the pointer distances of ids[0..len) encoded alone (§8). */
static int om_distances(struct nlp_cls_model *m, const int32_t *ids,
                        int32_t len, int32_t *dist)
{
    int was = gr_set_grad_enabled(m->ctx, 0);
    gr_step_reset(m->ctx);
    struct nlp_encoder_batch b;
    b.ids = gr_tensor_from_host(m->ctx, GR_I32, gr_shape2(len, 1), ids);
    b.lengths = &len;
    b.T = len;
    b.B = 1;
    b.trees = NULL;
    struct gr_tensor *h = b.ids ? nlp_encoder_encode(&m->enc, &b, 0,
                                                     gr_rng_make(0, 0))
                                : NULL;
    const float *probs = NULL;
    int32_t T = 0, B = 0, N = 0;
    int rc = h == NULL ? gr_error(GR_EINVAL, "%s", gr_ctx_error(m->ctx))
                       : nlp_om_encoder_probs(&m->enc, &probs, &T, &B, &N);
    if (rc == 0 && (T != len || B != 1)) {
        rc = gr_error(GR_EINVAL, "om: pointers of [%d, %d] for one sequence "
                                 "of %d", (int)T, (int)B, (int)len);
    }
    if (rc == 0) {
        nlp_om_distances(probs, len, N, dist);
    }
    gr_step_reset(m->ctx);
    gr_set_grad_enabled(m->ctx, was);
    return rc;
}

int32_t nlp_cls_tree(struct nlp_cls_model *m, const int32_t *ids,
                     int32_t len, const uint8_t *drop, struct nlp_span *out)
{
    if (!nlp_cls_has_trees(m)) {
        return gr_error(GR_EUNSUPPORTED, "model %s induces no tree",
                        m->enc.kind->name);
    }
    if (len < 1) {
        return gr_error(GR_EINVAL, "tree: empty sequence");
    }
    int om = m->enc.kind == &nlp_encoder_om;
    int sf = m->enc.kind == &nlp_encoder_structformer;
    void *d = malloc((size_t)len * (om ? sizeof(int32_t) : sizeof(float)));
    if (d == NULL) {
        return gr_error(GR_ENOMEM, "tree: out of memory");
    }
    int32_t rc = om   ? om_distances(m, ids, len, d)
                 : sf ? sf_gaps(m, ids, len, d)
                      : nlp_cls_distances(m, ids, len, d);
    if (rc == 0) {
        rc = om   ? nlp_cls_tree_om(d, len, drop, out)
             : sf ? nlp_cls_tree_gaps(d, len, drop, out)
                  : nlp_cls_tree_distances(d, len, drop, out);
    }
    free(d);
    return rc;
}
