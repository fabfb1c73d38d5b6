/* The MLM task (nlp/tasks/mlm_task.h): the model table, the trainer on
 * train/, perplexity over maskings, dependency parsing with a model's
 * heads. */
#define _XOPEN_SOURCE 700
#include "nlp/tasks/mlm_task.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/error.h"
#include "core/files.h"
#include "kernels/attention.h"
#include "kernels/checkpoint.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "kernels/tape.h"
#include "nlp/data/treebank.h"
#include "nlp/models/transformer.h"
#include "nlp/models/mlm_head.h"
#include "nlp/models/structformer.h"
#include "nlp/models/udgn.h"
#include "train/train.h"

void nlp_mlm_options_default(struct nlp_mlm_options *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->model, sizeof o->model, "udgn");
    o->nemb = 512;
    o->nlayers = 8;
    o->nheads = 8;
    o->head_size = 128;
    o->parser_layers = 3;
    o->pos_classes = 5;
    o->dropout = 0.2f;
    o->dropatt = 0.1f;
    o->parser_dropout = 0.2f;
    o->learned_pos = 1;
}

void nlp_mlm_train_config_default(struct nlp_mlm_train_config *c)
{
    memset(c, 0, sizeof *c);
    nlp_mlm_options_default(&c->opt);
    c->epochs = 100;
    c->batch_tokens = 4096;
    c->eval_runs = 5;
    c->lr = 1e-3f;
    c->mask_rate = 0.3f;
    c->clip = 0.25f;
    c->weight_decay = 1.2e-6f;
    c->seed = 1111;
}

/* ---- the udgn row ------------------------------------------------------- */

static int udgn_init(void **state, struct gr_ctx *ctx,
                     const struct nlp_mlm_options *o, int32_t vocab,
                     uint64_t seed)
{
    struct nlp_udgn *m = calloc(1, sizeof *m);
    if (!m) {
        return gr_error(GR_ENOMEM, "udgn: out of memory");
    }
    struct nlp_udgn_config c = nlp_udgn_config_default(vocab);
    c.d = o->nemb;
    c.layers = o->nlayers;
    c.channels = o->nheads;
    c.head_size = o->head_size;
    c.parser_layers = o->parser_layers;
    c.pos_classes = o->pos_classes;
    c.dropout = o->dropout;
    c.dropatt = o->dropatt;
    c.parser_dropout = o->parser_dropout;
    c.no_nonlinear = o->no_nonlinear;
    c.no_gates = o->no_gates;
    c.sigmoid = o->sigmoid;
    c.abs_pos = o->abs_pos;
    if (o->single_channel) {
        nlp_udgn_config_single_channel(&c);
    }
    int rc = nlp_udgn_init(m, ctx, &c, seed);
    if (rc < 0) {
        free(m);
        return rc;
    }
    *state = m;
    return 0;
}

static int udgn_loss(void *state, struct gr_ctx *ctx,
                     const struct nlp_mlm_input *in, int training,
                     struct gr_rng rng, struct gr_tensor **loss,
                     int32_t *n_masked)
{
    struct nlp_udgn_out o;
    int rc = nlp_udgn_forward(ctx, state, in->ids, in->lens, in->B, in->n,
                              in->targets, training, rng, &o);
    *loss = o.loss;
    *n_masked = o.n_masked;
    return rc;
}

static int udgn_heads(void *state, struct gr_ctx *ctx, const int32_t *ids,
                      int32_t n, float *H)
{
    return nlp_udgn_heads(ctx, state, ids, n, H);
}

/* ---- the transformer row ------------------------------------------------ */

struct tf_mlm {
    struct nlp_transformer enc;
    struct gr_tensor *emb, *out_bias;
    struct gr_tensor *pos; /* [NLP_MLM_POS_TABLE, d], or NULL: sinusoidal */
    float dropout;
};

static int tf_init(void **state, struct gr_ctx *ctx,
                   const struct nlp_mlm_options *o, int32_t vocab,
                   uint64_t seed)
{
    if (o->nemb < 1 || o->nheads < 1 || o->nemb % o->nheads != 0 ||
        o->nlayers < 1) {
        return gr_error(GR_EINVAL, "transformer: --nemb %d must be a "
                        "multiple of --nheads %d (and --nlayers >= 1)",
                        o->nemb, o->nheads);
    }
    struct tf_mlm *m = calloc(1, sizeof *m);
    if (!m) {
        return gr_error(GR_ENOMEM, "transformer: out of memory");
    }
    struct nlp_transformer_config c = nlp_transformer_config_default(o->nemb);
    c.layers = o->nlayers;
    c.heads = o->nheads;
    c.ffn = 4 * o->nemb;
    c.dropout = o->dropout;
    c.dropout_attn = o->dropatt;
    c.dropout_ffn = o->dropout;
    /* udgn.md §7: "the same layer" as StructFormer's, LeakyReLU FFN */
    c.ffn_neg_slope = o->ffn_relu ? 0.0f : 0.01f;
    m->dropout = o->dropout;
    int rc = nlp_transformer_init(&m->enc, ctx, "enc", &c,
                                  gr_rng_make(seed, 3));
    if (rc == 0) {
        m->emb = gr_param_new(ctx, "emb.weight", gr_shape2(vocab, o->nemb));
        m->out_bias = gr_param_new(ctx, "out_bias", gr_shape1(vocab));
        rc = (m->emb && m->out_bias) ? 0 : gr_ctx_status(ctx);
    }
    if (rc == 0) {
        rc = gr_init_uniform(m->emb, -0.1f, 0.1f, gr_rng_make(seed, 4));
    }
    if (rc == 0) {
        rc = gr_tensor_fill(m->out_bias, 0.0f);
    }
    if (rc == 0 && o->learned_pos) {
        m->pos = gr_param_new(ctx, "pos_emb.weight",
                              gr_shape2(NLP_MLM_POS_TABLE, o->nemb));
        rc = m->pos ? gr_init_uniform(m->pos, -0.1f, 0.1f,
                                      gr_rng_make(seed, 5))
                    : gr_ctx_status(ctx);
    }
    if (rc < 0) {
        nlp_transformer_free(&m->enc);
        free(m);
        return rc;
    }
    *state = m;
    return 0;
}

static int tf_loss(void *state, struct gr_ctx *ctx,
                   const struct nlp_mlm_input *in, int training,
                   struct gr_rng rng, struct gr_tensor **loss,
                   int32_t *n_masked)
{
    struct tf_mlm *m = state;
    int64_t B = in->B, n = in->n, d = m->emb->shape[1];
    if (m->pos && n > NLP_MLM_POS_TABLE) {
        return gr_error(GR_EINVAL, "transformer: a sentence of %lld tokens; "
                        "the learned position table has %d (train with "
                        "--positions sinusoidal for longer ones)",
                        (long long)n, NLP_MLM_POS_TABLE);
    }
    int32_t *tm = malloc((size_t)(B * n) * sizeof *tm);
    if (!tm) {
        return gr_error(GR_ENOMEM, "transformer: out of memory");
    }
    for (int64_t b = 0; b < B; b++) {
        for (int64_t t = 0; t < n; t++) {
            tm[t * B + b] = in->ids[b * n + t];
        }
    }
    struct gr_tensor *ids =
        gr_tensor_from_host(ctx, GR_I32, gr_shape2(n, B), tm);
    free(tm);
    struct gr_tensor *len =
        gr_tensor_from_host(ctx, GR_I32, gr_shape1(B), in->lens);
    struct gr_tensor *x = gr_embedding(ctx, m->emb, ids); /* [n, B, d] */
    x = gr_add(ctx, x, m->pos ? gr_positions_learned(ctx, m->pos, n, 0)
                              : gr_positions_sinusoidal(ctx, n, d, 0));
    if (training && m->dropout > 0) {
        x = gr_dropout(ctx, x, m->dropout,
                       gr_rng_make(rng.seed, gr_rng_stream(rng.stream, 1, 0,
                                                           0)));
    }
    struct gr_tensor *y = nlp_transformer_forward(
        ctx, &m->enc, x, len, 0, training,
        gr_rng_make(rng.seed, gr_rng_stream(rng.stream, 2, 0, 0)));
    y = gr_transpose(ctx, y, 0, 1); /* [B, n, d] */
    struct gr_tensor *logits = NULL;
    return nlp_mlm_head(ctx, y, m->emb, NULL, NULL, m->out_bias, in->targets,
                        in->B, in->n, m->dropout, training,
                        gr_rng_make(rng.seed,
                                    gr_rng_stream(rng.stream, 3, 0, 0)),
                        &logits, loss, n_masked);
}

static void tf_free(void *state)
{
    struct tf_mlm *m = state;
    if (m) {
        nlp_transformer_free(&m->enc);
        free(m);
    }
}

/* ---- the structformer row ------------------------------------------------- */

static int sf_init(void **state, struct gr_ctx *ctx,
                   const struct nlp_mlm_options *o, int32_t vocab,
                   uint64_t seed)
{
    struct nlp_structformer *m = calloc(1, sizeof *m);
    if (!m) {
        return gr_error(GR_ENOMEM, "structformer: out of memory");
    }
    struct nlp_structformer_config c = nlp_structformer_config_default(vocab);
    c.d = o->nemb;
    c.layers = o->nlayers;
    c.heads = o->nheads;
    c.ffn = 4 * o->nemb;
    c.parser_layers = o->parser_layers;
    c.dropout = o->dropout;
    c.dropout_attn = o->dropatt;
    c.parser_dropout = o->parser_dropout;
    int rc = nlp_structformer_init(m, ctx, "sf", &c, gr_rng_make(seed, 6));
    if (rc < 0) {
        nlp_structformer_free(m);
        free(m);
        return rc;
    }
    *state = m;
    return 0;
}

/* ids [n, B] time-major from a batch-major host array. */
static struct gr_tensor *time_major(struct gr_ctx *ctx, const int32_t *ids,
                                    int64_t B, int64_t n)
{
    int32_t *tm = malloc((size_t)(B * n) * sizeof *tm);
    if (!tm) {
        gr_error(GR_ENOMEM, "mlm: out of memory");
        return NULL;
    }
    for (int64_t b = 0; b < B; b++) {
        for (int64_t t = 0; t < n; t++) {
            tm[t * B + b] = ids[b * n + t];
        }
    }
    struct gr_tensor *r =
        gr_tensor_from_host(ctx, GR_I32, gr_shape2(n, B), tm);
    free(tm);
    return r;
}

static int sf_loss(void *state, struct gr_ctx *ctx,
                   const struct nlp_mlm_input *in, int training,
                   struct gr_rng rng, struct gr_tensor **loss,
                   int32_t *n_masked)
{
    int64_t B = in->B, n = in->n, N = 0;
    *loss = NULL;
    *n_masked = 0;
    for (int64_t k = 0; k < B * n; k++) {
        N += in->targets[k] >= 0;
    }
    if (N == 0) {
        return 0;
    }
    int32_t *rows = malloc((size_t)N * sizeof *rows);
    int32_t *tg = malloc((size_t)N * sizeof *tg);
    if (!rows || !tg) {
        free(rows);
        free(tg);
        return gr_error(GR_ENOMEM, "mlm: out of memory");
    }
    int64_t k = 0;
    for (int64_t t = 0; t < n; t++) { /* flat time-major positions t·B + b */
        for (int64_t b = 0; b < B; b++) {
            int32_t y = in->targets[b * n + t];
            if (y >= 0) {
                rows[k] = (int32_t)(t * B + b);
                tg[k++] = y;
            }
        }
    }
    struct gr_tensor *rt = gr_tensor_from_host(ctx, GR_I32, gr_shape1(N), rows);
    struct gr_tensor *tt = gr_tensor_from_host(ctx, GR_I32, gr_shape1(N), tg);
    free(rows);
    free(tg);
    struct nlp_structformer_out o;
    int rc = nlp_structformer_forward(ctx, state, time_major(ctx, in->ids, B,
                                                             n),
                                      in->lens, rt, training, rng, &o);
    if (rc < 0) {
        return rc;
    }
    *loss = gr_cross_entropy(ctx, o.logits, tt, -1);
    *n_masked = (int32_t)N;
    return *loss ? 0 : gr_ctx_status(ctx);
}

/* H = Par (its diagonal is 0): argmax / Chu-Liu / Eisner decode it like
 * UDGN's; StructFormer's own decoding (the highest token the root) is
 * nlp_structformer_decode. */
static int sf_heads(void *state, struct gr_ctx *ctx, const int32_t *ids,
                    int32_t n, float *H)
{
    struct nlp_structformer_out o;
    int rc = nlp_structformer_parse(ctx, state, time_major(ctx, ids, 1, n),
                                    &n, &o);
    if (rc < 0 || gr_tensor_to_host(o.head, H) < 0) {
        return rc < 0 ? rc : gr_ctx_status(ctx);
    }
    for (int32_t i = 0; i < n; i++) {
        H[(int64_t)i * n + i] = 0.0f;
    }
    return 0;
}

/* StructFormer's own decoding (udgn.md §7) of one unmasked sentence: the
 * parser's Par and heights, then nlp_structformer_decode. */
static int sf_decode(void *state, struct gr_ctx *ctx, const int32_t *ids,
                     int32_t n, float *H, int32_t *pred)
{
    struct nlp_structformer_out o;
    float *height = malloc((size_t)n * sizeof *height);
    if (!height) {
        return gr_error(GR_ENOMEM, "mlm: out of memory");
    }
    int rc = nlp_structformer_parse(ctx, state, time_major(ctx, ids, 1, n),
                                    &n, &o);
    if (rc == 0 && (gr_tensor_to_host(o.head, H) < 0 ||
                    gr_tensor_to_host(o.height, height) < 0)) {
        rc = gr_ctx_status(ctx);
    }
    if (rc == 0) {
        nlp_structformer_decode(H, n, height, n, pred);
    }
    free(height);
    return rc;
}

static void sf_free(void *state)
{
    if (state) {
        nlp_structformer_free(state);
        free(state);
    }
}

/* ---- the table ---------------------------------------------------------- */

const struct nlp_mlm_model_entry nlp_mlm_models[] = {
    {"udgn", "UDGN (udgn.md §3-§5): parser, dependency mask, DGN layers",
     udgn_init, udgn_loss, udgn_heads, free},
    {"transformer", "pre-norm Transformer encoder, learned (or sinusoidal) "
     "positions, tied MLM head (no parser)", tf_init, tf_loss, NULL, tf_free},
    {"structformer", "StructFormer (udgn.md §7): distance/height parser, "
     "Par-gated sigmoid attention", sf_init, sf_loss, sf_heads, sf_free},
    {NULL, NULL, NULL, NULL, NULL, NULL},
};

const struct nlp_mlm_model_entry *nlp_mlm_model_find(const char *name)
{
    for (int i = 0; nlp_mlm_models[i].name; i++) {
        if (strcmp(nlp_mlm_models[i].name, name) == 0) {
            return &nlp_mlm_models[i];
        }
    }
    return NULL;
}

const char *nlp_mlm_model_names(void)
{
    static char buf[256];
    if (buf[0] == '\0') {
        for (int i = 0; nlp_mlm_models[i].name; i++) {
            size_t l = strlen(buf);
            snprintf(buf + l, sizeof buf - l, "%s%s", i ? "|" : "",
                     nlp_mlm_models[i].name);
        }
    }
    return buf;
}

/* ---- data --------------------------------------------------------------- */

static int is_ptb_dir(const char *data)
{
    char p[GR_PATH_MAX];
    return gr_path_join(p, sizeof p, data, "ptb.train.txt") == 0 &&
           gr_path_exists(p);
}

int nlp_mlm_load_data(struct nlp_mlm_corpus *c, const char *data,
                      int32_t min_count)
{
    if (is_ptb_dir(data)) {
        return nlp_mlm_from_ptb(c, data, min_count > 0 ? min_count : 1);
    }
    struct nlp_treebank tb;
    int rc = nlp_treebank_read(&tb, data);
    if (rc < 0) {
        return gr_error(rc, "--data %s: neither a folder with ptb.train.txt "
                        "nor a treebank: %s", data, gr_last_error());
    }
    rc = nlp_mlm_from_treebank(c, &tb, min_count > 0 ? min_count : 5);
    nlp_treebank_free(&tb);
    return rc;
}

static int ends_with_ci(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    if (a < b) {
        return 0;
    }
    for (size_t i = 0; i < b; i++) {
        if (tolower((unsigned char)s[a - b + i]) !=
            tolower((unsigned char)suffix[i])) {
            return 0;
        }
    }
    return 1;
}

int nlp_mlm_load_trees(struct nlp_deptrees *out, const char *path,
                       int tag_column, int *converted)
{
    struct stat st;
    int treebank = (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) ||
                   ends_with_ci(path, ".zip") || ends_with_ci(path, ".mrg");
    struct nlp_deptrees d;
    int rc;
    if (converted) {
        *converted = treebank;
    }
    if (treebank) {
        struct nlp_treebank tb;
        rc = nlp_treebank_read(&tb, path);
        if (rc < 0) {
            return rc;
        }
        rc = nlp_deps_from_treebank(&d, &tb, 0);
        nlp_treebank_free(&tb);
    } else {
        rc = nlp_conll_read(&d, path, tag_column);
    }
    if (rc < 0) {
        return rc;
    }
    rc = nlp_deps_filter(out, &d);
    nlp_deptrees_free(&d);
    return rc;
}

void nlp_mlm_tree_ids(const struct nlp_vocab *v,
                      const struct nlp_dep_sentence *s, int32_t *ids)
{
    char w[512];
    for (int32_t i = 0; i < s->n; i++) {
        const char *f = s->forms[i];
        size_t k = 0;
        for (size_t j = 0; f[j] && k + 2 < sizeof w; j++) {
            unsigned char ch = (unsigned char)f[j];
            if (isdigit(ch)) {
                if (j == 0 || !isdigit((unsigned char)f[j - 1])) {
                    w[k++] = 'N'; /* one N per run of digits */
                }
            } else {
                w[k++] = (char)tolower(ch);
            }
        }
        w[k] = '\0';
        int32_t id = nlp_vocab_find(v, w, k);
        ids[i] = id < 0 ? NLP_MLM_UNK : id;
    }
}

/* ---- evaluation --------------------------------------------------------- */

static uint64_t mask_seed(uint64_t seed, uint64_t what, uint64_t k)
{
    return gr_rng_key(gr_rng_make(seed, gr_rng_stream(0x6d6c6dull, what, k,
                                                      0)));
}

/* Masks the rows of a filled batch: sentence order[first + r] at row r. */
static int32_t mask_batch(const struct nlp_mlm_batches *bl, int32_t k,
                          const int32_t *ids, const int32_t *lens, int32_t n,
                          float rate, uint64_t seed, int32_t *in,
                          int32_t *tg)
{
    const struct nlp_mlm_batch *b = &bl->batches[k];
    int32_t m = 0;
    for (int32_t r = 0; r < b->count; r++) {
        int64_t row = (int64_t)r * n;
        int32_t sid = bl->order[b->first + r];
        m += nlp_mlm_mask(ids + row, lens[r], rate, seed,
                          (uint64_t)sid << 16, in + row, tg + row);
        for (int32_t t = lens[r]; t < n; t++) {
            in[row + t] = NLP_MLM_PAD;
            tg[row + t] = -1;
        }
    }
    return m;
}

struct bufs {
    int32_t *ids, *lens, *in, *tg;
};

static int bufs_alloc(struct bufs *b, const struct nlp_mlm_batches *bl)
{
    int64_t cap = 1, rows = 1;
    for (int32_t k = 0; k < bl->n_batches; k++) {
        int64_t c = (int64_t)bl->batches[k].count * bl->batches[k].max_len;
        cap = c > cap ? c : cap;
        rows = bl->batches[k].count > rows ? bl->batches[k].count : rows;
    }
    b->ids = malloc((size_t)cap * sizeof *b->ids);
    b->in = malloc((size_t)cap * sizeof *b->in);
    b->tg = malloc((size_t)cap * sizeof *b->tg);
    b->lens = malloc((size_t)rows * sizeof *b->lens);
    if (!b->ids || !b->in || !b->tg || !b->lens) {
        return gr_error(GR_ENOMEM, "mlm: out of memory");
    }
    return 0;
}

static void bufs_free(struct bufs *b)
{
    free(b->ids);
    free(b->lens);
    free(b->in);
    free(b->tg);
    memset(b, 0, sizeof *b);
}

int nlp_mlm_perplexity(struct gr_ctx *ctx,
                       const struct nlp_mlm_model_entry *e, void *model,
                       const struct nlp_mlm_split *s, int32_t batch_tokens,
                       float rate, int32_t runs, uint64_t seed, double *ppl,
                       double *loss)
{
    struct nlp_mlm_batches bl;
    int rc = nlp_mlm_batches(&bl, s, batch_tokens);
    if (rc < 0) {
        return rc;
    }
    struct bufs b;
    memset(&b, 0, sizeof b);
    rc = bufs_alloc(&b, &bl);
    int prev = gr_set_grad_enabled(ctx, 0);
    double total = 0.0;
    for (int32_t r = 0; rc == 0 && r < runs; r++) {
        double sum = 0.0;
        int64_t cnt = 0;
        uint64_t ms = mask_seed(seed, 2, (uint64_t)r);
        for (int32_t k = 0; rc == 0 && k < bl.n_batches; k++) {
            const struct nlp_mlm_batch *bt = &bl.batches[k];
            nlp_mlm_batch_fill(&bl, k, s, b.ids, b.lens);
            mask_batch(&bl, k, b.ids, b.lens, bt->max_len, rate, ms, b.in,
                       b.tg);
            struct nlp_mlm_input in = {b.in, b.lens, b.tg, bt->count,
                                       bt->max_len};
            gr_step_reset(ctx);
            struct gr_tensor *l = NULL;
            int32_t nm = 0;
            rc = e->loss(model, ctx, &in, 0, gr_rng_make(seed, 0), &l, &nm);
            if (rc == 0 && l) {
                sum += (double)gr_tensor_item(l) * nm;
                cnt += nm;
            }
        }
        total += cnt ? sum / (double)cnt : 0.0;
    }
    gr_set_grad_enabled(ctx, prev);
    bufs_free(&b);
    nlp_mlm_batches_free(&bl);
    if (rc == 0) {
        *loss = total / (runs > 0 ? runs : 1);
        *ppl = exp(*loss);
    }
    return rc;
}

int nlp_mlm_depparse(struct gr_ctx *ctx, const struct nlp_mlm_model_entry *e,
                     void *model, const struct nlp_vocab *v,
                     const struct nlp_deptrees *gold, int32_t limit,
                     enum nlp_dep_decoder dec, int32_t *pred,
                     struct nlp_dep_eval *ev)
{
    if (!e->heads) {
        return gr_error(GR_EINVAL, "model '%s' has no parser (no head "
                        "distribution to decode)", e->name);
    }
    int sf = dec == NLP_DEP_STRUCTFORMER;
    if (sf && strcmp(e->name, "structformer") != 0) {
        return gr_error(GR_EINVAL, "the structformer decoder needs a "
                        "structformer model, not '%s'", e->name);
    }
    int32_t ns = gold->n_sentences;
    if (limit > 0 && limit < ns) {
        ns = limit;
    }
    int32_t nmax = 1;
    for (int32_t i = 0; i < ns; i++) {
        nmax = gold->sentences[i].n > nmax ? gold->sentences[i].n : nmax;
    }
    int32_t *ids = malloc((size_t)nmax * sizeof *ids);
    int32_t *p = malloc((size_t)nmax * sizeof *p);
    float *H = malloc((size_t)nmax * nmax * sizeof *H);
    int rc = (ids && p && H) ? 0 : gr_error(GR_ENOMEM, "mlm: out of memory");
    int prev = gr_set_grad_enabled(ctx, 0);
    int64_t at = 0;
    for (int32_t i = 0; rc == 0 && i < ns; i++) {
        const struct nlp_dep_sentence *s = &gold->sentences[i];
        nlp_mlm_tree_ids(v, s, ids);
        gr_step_reset(ctx);
        if (sf) {
            rc = sf_decode(model, ctx, ids, s->n, H, p);
        } else {
            rc = e->heads(model, ctx, ids, s->n, H);
            if (rc == 0) {
                rc = nlp_deps_decode(dec, H, s->n, p);
            }
        }
        if (rc == 0) {
            rc = nlp_dep_eval_add(ev, s->n, p, s->heads, s->labels);
        }
        if (rc == 0 && pred) {
            memcpy(pred + at, p, (size_t)s->n * sizeof *p);
            at += s->n;
        }
    }
    gr_set_grad_enabled(ctx, prev);
    free(ids);
    free(p);
    free(H);
    return rc;
}

/* ---- channel / label correlation (Table 4.3) ---------------------------- */

void nlp_mlm_channel_corr_free(struct nlp_mlm_channel_corr *c)
{
    for (int32_t i = 0; i < c->n_labels; i++) {
        free(c->labels[i]);
    }
    free(c->labels);
    free(c->count);
    free(c->layer);
    free(c->channel);
    free(c->r);
    memset(c, 0, sizeof *c);
}

int nlp_mlm_channel_correlation(struct gr_ctx *ctx,
                                const struct nlp_mlm_model_entry *e,
                                void *model, const struct nlp_vocab *v,
                                const struct nlp_deptrees *gold,
                                int32_t limit,
                                struct nlp_mlm_channel_corr *out)
{
    memset(out, 0, sizeof *out);
    if (strcmp(e->name, "udgn") != 0) {
        return gr_error(GR_EINVAL, "channel correlations need a udgn model, "
                        "not '%s'", e->name);
    }
    const struct nlp_udgn *m = model;
    int64_t L = m->cfg.layers, C = m->cfg.channels, K = L * C;
    int32_t ns = gold->n_sentences;
    if (limit > 0 && limit < ns) {
        ns = limit;
    }
    int32_t nmax = 1;
    for (int32_t i = 0; i < ns; i++) {
        nmax = gold->sentences[i].n > nmax ? gold->sentences[i].n : nmax;
    }
    int32_t *ids = malloc((size_t)nmax * sizeof *ids);
    float *pi = malloc((size_t)(K * nmax * nmax) * sizeof *pi);
    double *sx = calloc((size_t)K, sizeof *sx);
    double *sxx = calloc((size_t)K, sizeof *sxx);
    double *sxl = NULL; /* [label][K] */
    int32_t cap = 0;
    int rc = (ids && pi && sx && sxx) ? 0
             : gr_error(GR_ENOMEM, "mlm: out of memory");
    int prev = gr_set_grad_enabled(ctx, 0);
    for (int32_t si = 0; rc == 0 && si < ns; si++) {
        const struct nlp_dep_sentence *s = &gold->sentences[si];
        int32_t n = s->n;
        nlp_mlm_tree_ids(v, s, ids);
        gr_step_reset(ctx);
        rc = nlp_udgn_channels(ctx, m, ids, n, pi);
        for (int32_t i = 0; rc == 0 && i < n; i++) {
            int32_t j = s->heads[i];
            if (j == i) {
                continue;
            }
            const char *lab = s->labels && s->labels[i] ? s->labels[i] : "_";
            int32_t li = 0;
            while (li < out->n_labels && strcmp(out->labels[li], lab) != 0) {
                li++;
            }
            if (li == out->n_labels) {
                if (li == cap) {
                    cap = cap ? 2 * cap : 32;
                    char **nl = realloc(out->labels,
                                        (size_t)cap * sizeof *nl);
                    int64_t *nc = realloc(out->count,
                                          (size_t)cap * sizeof *nc);
                    if (nl) {
                        out->labels = nl;
                    }
                    if (nc) {
                        out->count = nc;
                    }
                    double *ns2 = realloc(sxl, (size_t)(cap * K) *
                                                   sizeof *ns2);
                    if (!nl || !nc || !ns2) {
                        rc = gr_error(GR_ENOMEM, "mlm: out of memory");
                        break;
                    }
                    sxl = ns2;
                }
                out->labels[li] = malloc(strlen(lab) + 1);
                if (!out->labels[li]) {
                    rc = gr_error(GR_ENOMEM, "mlm: out of memory");
                    break;
                }
                strcpy(out->labels[li], lab);
                out->count[li] = 0;
                memset(sxl + li * K, 0, (size_t)K * sizeof *sxl);
                out->n_labels++;
            }
            out->count[li]++;
            out->n_arcs++;
            for (int64_t l = 0; l < L; l++) {
                const float *p = pi + l * n * n * C +
                                 ((int64_t)i * n + j) * C; /* i -> j */
                for (int64_t c = 0; c < C; c++) {
                    double x = p[c];
                    sx[l * C + c] += x;
                    sxx[l * C + c] += x * x;
                    sxl[li * K + l * C + c] += x;
                }
            }
        }
    }
    gr_set_grad_enabled(ctx, prev);
    int32_t nl = out->n_labels;
    if (rc == 0 && nl > 0) {
        out->layer = malloc((size_t)nl * sizeof *out->layer);
        out->channel = malloc((size_t)nl * sizeof *out->channel);
        out->r = malloc((size_t)nl * sizeof *out->r);
        if (!out->layer || !out->channel || !out->r) {
            rc = gr_error(GR_ENOMEM, "mlm: out of memory");
        }
    }
    double N = (double)out->n_arcs;
    for (int32_t li = 0; rc == 0 && li < nl; li++) {
        double py = (double)out->count[li] / N;
        out->r[li] = NAN;
        out->layer[li] = out->channel[li] = 0;
        for (int64_t k = 0; k < K; k++) {
            double mx = sx[k] / N, vx = sxx[k] / N - mx * mx;
            double cov = sxl[li * K + k] / N - mx * py;
            double den = sqrt(vx > 0 ? vx : 0) * sqrt(py * (1.0 - py));
            double r = den > 0 ? cov / den : NAN;
            if (!isnan(r) && (isnan(out->r[li]) || r > out->r[li])) {
                out->r[li] = r;
                out->layer[li] = (int32_t)(k / C);
                out->channel[li] = (int32_t)(k % C);
            }
        }
    }
    free(ids);
    free(pi);
    free(sx);
    free(sxx);
    free(sxl);
    if (rc < 0) {
        nlp_mlm_channel_corr_free(out);
    }
    return rc;
}

/* ---- config text --------------------------------------------------------- */

static int config_text(const struct nlp_mlm_train_config *tc,
                       const char *data_abs, char *out, size_t cap)
{
    const struct nlp_mlm_options *o = &tc->opt;
    int n = snprintf(
        out, cap,
        "model %s\nnemb %d\nnlayers %d\nnheads %d\nhead_size %d\n"
        "parser_layers %d\npos_classes %d\ndropout %.9g\ndropatt %.9g\n"
        "parser_dropout %.9g\nno_nonlinear %d\nno_gates %d\nsigmoid %d\n"
        "single_channel %d\nabs_pos %d\ndata %s\nmin_count %d\n"
        "batch_tokens %d\nmask_rate %.9g\nlr %.9g\nclip %.9g\n"
        "weight_decay %.9g\neval_runs %d\nmax_batches %d\nseed %llu\n",
        o->model, o->nemb, o->nlayers, o->nheads, o->head_size,
        o->parser_layers, o->pos_classes, (double)o->dropout,
        (double)o->dropatt, (double)o->parser_dropout, o->no_nonlinear,
        o->no_gates, o->sigmoid, o->single_channel, o->abs_pos, data_abs,
        tc->min_count, tc->batch_tokens, (double)tc->mask_rate,
        (double)tc->lr, (double)tc->clip, (double)tc->weight_decay,
        tc->eval_runs, tc->max_batches, (unsigned long long)tc->seed);
    if (n >= 0 && (size_t)n < cap && strcmp(o->model, "transformer") == 0) {
        /* the FFN's activation; a checkpoint without the line is ReLU */
        n += snprintf(out + n, cap - (size_t)n, "ffn_act %s\n",
                      o->ffn_relu ? "relu" : "leaky_relu");
        /* a checkpoint without the line is sinusoidal */
        if (n >= 0 && (size_t)n < cap) {
            n += snprintf(out + n, cap - (size_t)n, "positions %s\n",
                          o->learned_pos ? "learned" : "sinusoidal");
        }
    }
    if (n < 0 || (size_t)n >= cap) {
        return gr_error(GR_EINVAL, "mlm: config text too long");
    }
    return 0;
}

/* The value of `key` in a config text, or NULL (static copy). */
static const char *config_get(const char *text, const char *key)
{
    static char val[4096];
    size_t kl = strlen(key);
    for (const char *l = text; l && *l;) {
        const char *eol = strchr(l, '\n');
        size_t len = eol ? (size_t)(eol - l) : strlen(l);
        if (len > kl && strncmp(l, key, kl) == 0 && l[kl] == ' ') {
            size_t vl = len - kl - 1;
            vl = vl < sizeof val - 1 ? vl : sizeof val - 1;
            memcpy(val, l + kl + 1, vl);
            val[vl] = '\0';
            return val;
        }
        l = eol ? eol + 1 : NULL;
    }
    return NULL;
}

static int options_from_config(struct nlp_mlm_options *o, const char *t,
                               const char *path)
{
    nlp_mlm_options_default(o);
    const char *v = config_get(t, "model");
    if (!v) {
        return gr_error(GR_EFORMAT, "%s: not an MLM checkpoint (no 'model' "
                        "in its config)", path);
    }
    snprintf(o->model, sizeof o->model, "%s", v);
    struct {
        const char *k;
        int *dst;
    } ints[] = {
        {"nemb", &o->nemb},       {"nlayers", &o->nlayers},
        {"nheads", &o->nheads},   {"head_size", &o->head_size},
        {"parser_layers", &o->parser_layers},
        {"pos_classes", &o->pos_classes},
        {"no_nonlinear", &o->no_nonlinear}, {"no_gates", &o->no_gates},
        {"sigmoid", &o->sigmoid}, {"single_channel", &o->single_channel},
        {"abs_pos", &o->abs_pos},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if ((v = config_get(t, ints[i].k)) == NULL) {
            return gr_error(GR_EFORMAT, "%s: config lacks '%s'", path,
                            ints[i].k);
        }
        *ints[i].dst = atoi(v);
    }
    if ((v = config_get(t, "dropout"))) {
        o->dropout = strtof(v, NULL);
    }
    if ((v = config_get(t, "dropatt"))) {
        o->dropatt = strtof(v, NULL);
    }
    if ((v = config_get(t, "parser_dropout"))) {
        o->parser_dropout = strtof(v, NULL);
    }
    if (strcmp(o->model, "transformer") == 0) {
        /* No ffn_act line: written before the row's FFN became udgn.md
         * §7's LeakyReLU; such a checkpoint was trained with ReLU and is
         * evaluated with it. */
        v = config_get(t, "ffn_act");
        if (v && strcmp(v, "relu") != 0 && strcmp(v, "leaky_relu") != 0) {
            return gr_error(GR_EFORMAT, "%s: ffn_act '%s' in its config is "
                            "not relu or leaky_relu", path, v);
        }
        o->ffn_relu = !v || strcmp(v, "relu") == 0;
        /* No positions line: written before learned positions became the
         * row's default; trained with sinusoidal ones. */
        v = config_get(t, "positions");
        if (v && strcmp(v, "learned") != 0 && strcmp(v, "sinusoidal") != 0) {
            return gr_error(GR_EFORMAT, "%s: positions '%s' in its config is "
                            "not learned or sinusoidal", path, v);
        }
        o->learned_pos = v && strcmp(v, "learned") == 0;
    } else {
        o->learned_pos = 0;
    }
    return 0;
}

/* The config without its "state." lines (what --resume compares). */
static void strip_state(const char *in, char *out, size_t cap)
{
    size_t k = 0;
    for (const char *l = in; l && *l;) {
        const char *eol = strchr(l, '\n');
        size_t len = eol ? (size_t)(eol - l) + 1 : strlen(l);
        if (strncmp(l, "state.", 6) != 0 && k + len < cap) {
            memcpy(out + k, l, len);
            k += len;
        }
        l = eol ? eol + 1 : NULL;
    }
    out[k] = '\0';
}

/* ---- training ----------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct sched {
    int64_t epoch;       /* epochs done */
    double best_val;     /* lowest validation loss so far */
    double wall;         /* training + validation seconds so far */
    struct gr_lr_plateau pl;
};

static int write_vocab(const char *dir, const struct nlp_vocab *v)
{
    char path[GR_PATH_MAX];
    int rc = gr_path_join(path, sizeof path, dir, "vocab.txt");
    size_t cap = 16;
    for (int32_t i = 0; i < v->size; i++) {
        cap += strlen(nlp_vocab_word(v, i)) + 1;
    }
    char *txt = malloc(cap), *q = txt;
    if (rc == 0 && !txt) {
        rc = gr_error(GR_ENOMEM, "mlm: out of memory");
    }
    for (int32_t i = 0; rc == 0 && i < v->size; i++) {
        q += sprintf(q, "%s\n", nlp_vocab_word(v, i));
    }
    if (rc == 0) {
        rc = gr_write_file_atomic(path, txt, (size_t)(q - txt), 1);
    }
    free(txt);
    return rc;
}

static int save_last(struct train_run *run, struct gr_ctx *ctx,
                     const char *cfg, const struct sched *s)
{
    size_t cap = strlen(cfg) + 512;
    char *t = malloc(cap);
    if (!t) {
        return gr_error(GR_ENOMEM, "mlm: out of memory");
    }
    snprintf(t, cap,
             "%sstate.epoch %lld\nstate.best_val %.17g\nstate.wall %.17g\n"
             "state.lr %.9g\nstate.pl_best %.17g\nstate.pl_bad %d\n"
             "state.pl_cooldown %d\nstate.pl_seen %d\n",
             cfg, (long long)s->epoch, s->best_val, s->wall,
             (double)s->pl.lr, s->pl.best, s->pl.bad_epochs,
             s->pl.cooldown_left, s->pl.seen);
    int rc = train_save(run, TRAIN_LAST, ctx, t, GR_CKPT_ALL, s->epoch);
    free(t);
    return rc;
}

static int load_state(const char *text, struct sched *s)
{
    const char *keys[] = {"state.epoch", "state.best_val", "state.wall",
                          "state.lr", "state.pl_best", "state.pl_bad",
                          "state.pl_cooldown", "state.pl_seen"};
    double v[8];
    for (int i = 0; i < 8; i++) {
        const char *x = config_get(text, keys[i]);
        if (!x) {
            return gr_error(GR_EFORMAT, "last.ckpt: config lacks '%s'",
                            keys[i]);
        }
        v[i] = strtod(x, NULL);
    }
    s->epoch = (int64_t)v[0];
    s->best_val = v[1];
    s->wall = v[2];
    s->pl.lr = (float)v[3];
    s->pl.best = v[4];
    s->pl.bad_epochs = (int)v[5];
    s->pl.cooldown_left = (int)v[6];
    s->pl.seen = (int)v[7];
    return 0;
}

int nlp_mlm_train(const struct nlp_mlm_train_config *tc,
                  const struct gr_ctx_config *cc, int *usage)
{
    *usage = 0;
    const struct nlp_mlm_model_entry *e = nlp_mlm_model_find(tc->opt.model);
    if (!e) {
        *usage = 1;
        return gr_error(GR_EINVAL, "--model '%s': not one of %s",
                        tc->opt.model, nlp_mlm_model_names());
    }
    char data_abs[GR_PATH_MAX];
    if (!realpath(tc->data, data_abs)) {
        *usage = 1;
        return gr_error(GR_EINVAL, "--data %s: it does not exist", tc->data);
    }
    static char cfg[16384];
    int rc = config_text(tc, data_abs, cfg, sizeof cfg);
    if (rc < 0) {
        return rc;
    }
    static const struct train_column cols[] = {
        {"epoch", "%.0f"}, {"train_loss", "%.6f"}, {"valid_ppl", "%.4f"},
        {"uas", "%.2f"},   {"uuas", "%.2f"},       {"lr", "%.9g"},
        {"wall_s", "%.3f"},
    };
    struct train_run_spec spec = train_run_spec_default();
    spec.dir = tc->out_dir;
    spec.force = tc->force;
    spec.resume = tc->resume;
    spec.argc = tc->argc;
    spec.argv = tc->argv;
    spec.config_text = cfg;
    spec.check_config = 0; /* the state lines differ; compared below */
    spec.columns = cols;
    spec.n_columns = 7;
    spec.what = "nlp mlm train";
    spec.step_unit = "epoch";
    if ((rc = train_run_check(&spec)) < 0) {
        *usage = rc == GR_EINVAL;
        return rc;
    }
    char *resumed = NULL;
    if (tc->resume) {
        char last[GR_PATH_MAX];
        rc = gr_path_join(last, sizeof last, tc->out_dir, "last.ckpt");
        if (rc == 0) {
            rc = gr_checkpoint_read_config(last, &resumed);
        }
        if (rc < 0) {
            return rc;
        }
        static char a[16384];
        strip_state(resumed, a, sizeof a);
        if (strcmp(tc->opt.model, "transformer") == 0 &&
            config_get(a, "ffn_act") == NULL) {
            free(resumed);
            *usage = 1;
            return gr_error(GR_EINVAL, "--resume: %s was trained with a ReLU "
                            "FFN (written before the transformer row took "
                            "udgn.md's LeakyReLU); it can be evaluated "
                            "(nlp mlm eval) but not resumed", tc->out_dir);
        }
        if (strcmp(tc->opt.model, "transformer") == 0 &&
            config_get(a, "positions") == NULL) {
            /* written before the line existed: sinusoidal positions */
            size_t al = strlen(a);
            snprintf(a + al, sizeof a - al, "positions sinusoidal\n");
        }
        if (strcmp(a, cfg) != 0) {
            char diff[512];
            train_config_first_difference(a, cfg, diff, sizeof diff);
            free(resumed);
            *usage = 1;
            return gr_error(GR_EINVAL, "--resume with other options than "
                            "the run's: %s", diff);
        }
    }
    struct nlp_mlm_corpus corpus;
    memset(&corpus, 0, sizeof corpus);
    struct nlp_deptrees trees;
    memset(&trees, 0, sizeof trees);
    int have_trees = 0;
    struct gr_ctx *ctx = NULL;
    void *model = NULL;
    struct gr_optim *opt = NULL;
    struct nlp_mlm_batches bl;
    memset(&bl, 0, sizeof bl);
    struct bufs b;
    memset(&b, 0, sizeof b);
    int32_t *perm = NULL;
    struct train_run run;
    int run_open = 0;

    rc = nlp_mlm_load_data(&corpus, tc->data, tc->min_count);
    if (rc == 0 && corpus.valid.n_sentences == 0) {
        rc = gr_error(GR_EINVAL, "--data %s: no validation sentences",
                      tc->data);
    }
    if (rc == 0 && tc->trees && e->heads) {
        rc = nlp_mlm_load_trees(&trees, tc->trees, 0, NULL);
        have_trees = rc == 0;
    }
    if (rc == 0) {
        rc = gr_ctx_new(&ctx, cc);
    }
    if (rc == 0) {
        rc = e->init(&model, ctx, &tc->opt, corpus.vocab.size, tc->seed);
        if (rc == GR_EINVAL) {
            *usage = 1;
        }
    }
    if (rc == 0) {
        struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
        oc.lr = tc->lr;
        oc.eps = 1e-9f;
        oc.weight_decay = tc->weight_decay;
        rc = gr_optim_new(&opt, ctx, "adam", &oc);
    }
    if (rc == 0) {
        rc = nlp_mlm_batches(&bl, &corpus.train, tc->batch_tokens);
    }
    if (rc == 0) {
        rc = bufs_alloc(&b, &bl);
    }
    perm = rc == 0 ? malloc((size_t)bl.n_batches * sizeof *perm) : NULL;
    if (rc == 0 && !perm) {
        rc = gr_error(GR_ENOMEM, "mlm: out of memory");
    }
    struct sched s;
    memset(&s, 0, sizeof s);
    gr_lr_plateau_init(&s.pl, 0, tc->lr);
    s.pl.factor = 0.5f;
    s.pl.patience = 2;
    s.pl.threshold = 0.0f;
    s.best_val = INFINITY;
    if (rc == 0) {
        rc = train_run_open(&run, &spec);
        run_open = rc == 0;
    }
    if (rc == 0 && tc->resume) {
        rc = gr_checkpoint_load(ctx, run.path_last, GR_CKPT_ALL, NULL);
        if (rc == 0) {
            rc = load_state(resumed, &s);
        }
        if (rc == 0) {
            gr_optim_set_lr(opt, s.pl.lr);
            rc = train_metrics_resume(&run, s.epoch);
        }
    } else if (rc == 0) {
        /* the initial model as both checkpoints: --epochs 0 gives a
         * model to evaluate, and --resume works from the start */
        rc = write_vocab(tc->out_dir, &corpus.vocab);
        if (rc == 0) {
            rc = train_save(&run, TRAIN_BEST, ctx, cfg, GR_CKPT_PARAMS, 0);
        }
        if (rc == 0) {
            rc = save_last(&run, ctx, cfg, &s);
        }
    }
    if (rc == 0 && !tc->quiet) {
        int64_t params = gr_param_count(ctx, NULL);
        fprintf(stderr, "mlm: model %s, %lld parameters; vocabulary %d; "
                "train %d sentences / %lld tokens in %d batches; valid %d "
                "sentences%s%s\n", e->name, (long long)params,
                corpus.vocab.size, corpus.train.n_sentences,
                (long long)corpus.train.n_tokens, bl.n_batches,
                corpus.valid.n_sentences,
                have_trees ? "; UAS on " : "",
                have_trees ? tc->trees : "");
        if (have_trees) {
            fprintf(stderr, "mlm: UAS/UUAS are argmax decoding on %s; on "
                    "trees converted by grove they are NOT comparable with "
                    "the thesis's (Stanford dependencies of WSJ §23)\n",
                    tc->trees);
        }
    }
    for (int64_t epoch = s.epoch + 1; rc == 0 && epoch <= tc->epochs;
         epoch++) {
        double t0 = now_s();
        nlp_mlm_shuffle(bl.n_batches, mask_seed(tc->seed, 3,
                                                (uint64_t)epoch), perm);
        int32_t nb = bl.n_batches;
        if (tc->max_batches > 0 && tc->max_batches < nb) {
            nb = tc->max_batches;
        }
        uint64_t ms = mask_seed(tc->seed, 1, (uint64_t)epoch);
        double sum = 0.0;
        int64_t cnt = 0;
        int stopped = 0;
        for (int32_t i = 0; rc == 0 && i < nb; i++) {
            if (train_stop_requested()) {
                stopped = 1;
                break;
            }
            int32_t k = perm[i];
            const struct nlp_mlm_batch *bt = &bl.batches[k];
            nlp_mlm_batch_fill(&bl, k, &corpus.train, b.ids, b.lens);
            mask_batch(&bl, k, b.ids, b.lens, bt->max_len, tc->mask_rate, ms,
                       b.in, b.tg);
            struct nlp_mlm_input in = {b.in, b.lens, b.tg, bt->count,
                                       bt->max_len};
            gr_step_reset(ctx);
            gr_zero_grad(ctx);
            struct gr_tensor *loss = NULL;
            int32_t nm = 0;
            rc = e->loss(model, ctx, &in, 1,
                         gr_rng_make(tc->seed,
                                     gr_rng_stream(9, (uint64_t)epoch,
                                                   (uint64_t)i, 0)),
                         &loss, &nm);
            if (rc < 0 || !loss) {
                continue;
            }
            double lv = gr_tensor_item(loss);
            if ((rc = train_check_finite(&run, lv, epoch)) < 0) {
                break;
            }
            rc = gr_backward(ctx, loss);
            if (rc == 0 && tc->clip > 0) {
                rc = gr_clip_grad_norm(ctx, NULL, tc->clip, NULL);
            }
            if (rc == 0) {
                rc = gr_optim_step(opt);
            }
            sum += lv * nm;
            cnt += nm;
        }
        if (rc < 0) {
            break;
        }
        if (stopped) {
            train_print_stopped(&run, s.epoch);
            break;
        }
        double vloss = 0.0, vppl = 0.0;
        rc = nlp_mlm_perplexity(ctx, e, model, &corpus.valid,
                                tc->batch_tokens, tc->mask_rate,
                                tc->eval_runs, tc->seed, &vppl, &vloss);
        double uas = NAN, uuas = NAN;
        if (rc == 0 && have_trees) {
            struct nlp_dep_eval ev;
            nlp_dep_eval_init(&ev);
            rc = nlp_mlm_depparse(ctx, e, model, &corpus.vocab, &trees,
                                  tc->trees_limit, NLP_DEP_ARGMAX, NULL,
                                  &ev);
            struct nlp_dep_scores sc;
            nlp_dep_eval_scores(&ev, &sc);
            uas = sc.uas;
            uuas = sc.uuas;
            nlp_dep_eval_free(&ev);
        }
        if (rc < 0) {
            break;
        }
        double lr = gr_optim_lr(opt);
        s.wall += now_s() - t0;
        s.epoch = epoch;
        struct train_cell cells[7] = {
            TRAIN_NUM(epoch), TRAIN_NUM(cnt ? sum / (double)cnt : NAN),
            TRAIN_NUM(vppl),  TRAIN_NUM(uas),
            TRAIN_NUM(uuas),  TRAIN_NUM(lr),
            TRAIN_NUM(s.wall),
        };
        int best = vloss < s.best_val;
        if (!tc->quiet) {
            fprintf(stderr, "| epoch %3lld | %7.1f s | train loss %.4f | "
                    "valid ppl %9.2f", (long long)epoch, s.wall,
                    cnt ? sum / (double)cnt : NAN, vppl);
            if (have_trees) {
                fprintf(stderr, " | UAS %.1f UUAS %.1f", uas, uuas);
            }
            fprintf(stderr, " | lr %.3g%s\n", lr, best ? " | saved best" : "");
        }
        /* the schedule decides the next epoch's lr */
        gr_optim_set_lr(opt, gr_lr_plateau_step(&s.pl, vloss));
        rc = train_metrics_row(&run, cells);
        if (rc == 0 && best) {
            s.best_val = vloss;
            rc = train_save(&run, TRAIN_BEST, ctx, cfg, GR_CKPT_PARAMS,
                            epoch);
        }
        if (rc == 0) {
            rc = save_last(&run, ctx, cfg, &s);
        }
        if (rc == 0 && tc->on_epoch) {
            struct nlp_mlm_epoch_log lg = {epoch, cells[1].num, vppl, uas,
                                           uuas, lr, s.wall, tc->out_dir};
            tc->on_epoch(tc->user, &lg);
        }
    }
    if (rc == 0 && !tc->quiet && !train_stop_requested() &&
        isfinite(s.best_val)) {
        fprintf(stderr, "run %s: best validation perplexity %.2f -> %s\n",
                tc->out_dir, exp(s.best_val), run.path_best);
    }
    if (run_open) {
        train_run_close(&run);
    }
    free(resumed);
    free(perm);
    bufs_free(&b);
    nlp_mlm_batches_free(&bl);
    gr_optim_free(opt);
    if (model) {
        e->free(model);
    }
    gr_ctx_free(ctx);
    if (have_trees) {
        nlp_deptrees_free(&trees);
    }
    nlp_mlm_free(&corpus);
    return rc;
}

/* ---- reopening -------------------------------------------------------- */

int nlp_mlm_open(struct nlp_mlm_runtime *rt, const char *checkpoint,
                 const struct gr_ctx_config *cc)
{
    memset(rt, 0, sizeof *rt);
    nlp_vocab_init(&rt->vocab);
    char *text = NULL;
    int rc = gr_checkpoint_read_config(checkpoint, &text);
    if (rc == 0) {
        rc = options_from_config(&rt->opt, text, checkpoint);
    }
    if (rc == 0) {
        rt->entry = nlp_mlm_model_find(rt->opt.model);
        if (!rt->entry) {
            rc = gr_error(GR_EFORMAT, "%s: model '%s' is not one of %s",
                          checkpoint, rt->opt.model, nlp_mlm_model_names());
        }
    }
    const char *v;
    if (rc == 0) {
        snprintf(rt->data, sizeof rt->data, "%s",
                 (v = config_get(text, "data")) ? v : "");
        rt->min_count = (v = config_get(text, "min_count")) ? atoi(v) : 0;
        rt->mask_rate =
            (v = config_get(text, "mask_rate")) ? strtof(v, NULL) : 0.3f;
        rt->seed = (v = config_get(text, "seed"))
                       ? strtoull(v, NULL, 10) : 1111;
    }
    /* vocab.txt beside the checkpoint */
    char dir[GR_PATH_MAX], path[GR_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", checkpoint);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
    } else {
        snprintf(dir, sizeof dir, ".");
    }
    char *words = NULL;
    size_t size = 0;
    if (rc == 0) {
        rc = gr_path_join(path, sizeof path, dir, "vocab.txt");
    }
    if (rc == 0 && gr_read_file(path, (size_t)256 << 20, &words, &size) < 0) {
        rc = gr_error(GR_EIO, "%s: cannot read the vocabulary %s beside the "
                      "checkpoint", checkpoint, path);
    }
    for (char *l = words; rc == 0 && l && *l;) {
        char *eol = strchr(l, '\n');
        size_t len = eol ? (size_t)(eol - l) : strlen(l);
        rc = nlp_vocab_add(&rt->vocab, l, len, NULL);
        l = eol ? eol + 1 : NULL;
    }
    free(words);
    if (rc == 0) {
        rc = gr_ctx_new(&rt->ctx, cc);
    }
    if (rc == 0) {
        rc = rt->entry->init(&rt->model, rt->ctx, &rt->opt, rt->vocab.size,
                             rt->seed);
    }
    if (rc == 0) {
        rc = gr_checkpoint_load(rt->ctx, checkpoint, GR_CKPT_PARAMS, NULL);
    }
    free(text);
    if (rc < 0) {
        nlp_mlm_close(rt);
    }
    return rc;
}

void nlp_mlm_close(struct nlp_mlm_runtime *rt)
{
    if (rt->model && rt->entry) {
        rt->entry->free(rt->model);
    }
    gr_ctx_free(rt->ctx);
    nlp_vocab_free(&rt->vocab);
    memset(rt, 0, sizeof *rt);
}
