/* UDGN (nlp/models/udgn.h, udgn.md §3-§5): parser, dependency mask, DGN
 * layers with channel competition, tied MLM head; compositions of kernel
 * ops, batch-major. */
#include "nlp/models/udgn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/ops.h"
#include "nlp/models/mlm_head.h"

struct nlp_udgn_config nlp_udgn_config_default(int vocab)
{
    struct nlp_udgn_config c;
    memset(&c, 0, sizeof c);
    c.vocab = vocab;
    c.d = 512;
    c.layers = 8;
    c.channels = 8;
    c.head_size = 128;
    c.parser_layers = 3;
    c.pos_classes = 5;
    c.dropout = 0.2f;
    c.parser_dropout = 0.2f;
    c.dropatt = 0.1f;
    c.max_len = 512;
    return c;
}

void nlp_udgn_config_single_channel(struct nlp_udgn_config *c)
{
    c->head_size *= c->channels;
    c->channels = 1;
}

int64_t nlp_udgn_param_count(const struct nlp_udgn_config *c)
{
    int64_t V = c->vocab, d = c->d, K = c->pos_classes;
    int64_t cd = (int64_t)c->channels * c->head_size;
    int64_t n = 2 * V * d;                        /* E, E_p */
    if (K > 0) {
        n += V * (K + 1) + d * K;                 /* T, U */
    }
    for (int l = 0; l < c->parser_layers; l++) {
        int64_t in = l == 0 ? d : 2 * d;
        n += 2 * (4 * d * (in + d) + 8 * d);      /* two directions */
    }
    n += 2 * d * 2 * d + 2 * d;                   /* W_f, c_f */
    int64_t layer = d * 4 * cd + 4 * cd + cd * d + d;
    if (!c->abs_pos) {
        layer += 2 * (int64_t)c->channels;
    }
    n += c->layers * layer;
    n += 2 * d + V;                               /* LN, c_out */
    if (c->abs_pos) {
        n += (int64_t)c->max_len * d;
    }
    return n;
}

static struct gr_tensor *param(struct gr_ctx *ctx, const char *name,
                               struct gr_shape s)
{
    return gr_param_new(ctx, name, s);
}

static int xavier(struct gr_tensor *w, struct gr_rng rng)
{
    double a = sqrt(6.0 / (double)(w->shape[0] + w->shape[1]));
    return gr_init_uniform(w, (float)-a, (float)a, rng);
}

int nlp_udgn_init(struct nlp_udgn *m, struct gr_ctx *ctx,
                  const struct nlp_udgn_config *c, uint64_t seed)
{
    memset(m, 0, sizeof *m);
    if (c->vocab < 4 || c->d < 1 || c->layers < 1 ||
        c->layers > NLP_UDGN_MAX_LAYERS || c->channels < 1 ||
        c->head_size < 1 || c->parser_layers < 1 ||
        c->parser_layers > NLP_UDGN_MAX_PARSER_LAYERS ||
        c->pos_classes < 0 || (c->abs_pos && c->max_len < 1)) {
        return gr_error(GR_EINVAL,
                        "udgn: bad sizes (vocab %d, nemb %d, nlayers %d "
                        "(1..%d), nheads %d, head-size %d, parser-layers "
                        "%d (1..%d), pos-classes %d)",
                        c->vocab, c->d, c->layers, NLP_UDGN_MAX_LAYERS,
                        c->channels, c->head_size, c->parser_layers,
                        NLP_UDGN_MAX_PARSER_LAYERS, c->pos_classes);
    }
    m->cfg = *c;
    struct gr_rng rng = gr_rng_make(seed, 0x75646ull);
    int64_t V = c->vocab, d = c->d, K = c->pos_classes;
    int64_t cd = (int64_t)c->channels * c->head_size;
    char name[128];
    int rc = 0;
    m->emb = param(ctx, "emb.weight", gr_shape2(V, d));
    m->pemb = param(ctx, "parser.emb.weight", gr_shape2(V, d));
    if (!m->emb || !m->pemb) {
        return gr_ctx_status(ctx);
    }
    rc |= gr_init_uniform(m->emb, -0.1f, 0.1f, rng);
    rc |= gr_init_uniform(m->pemb, -0.1f, 0.1f, rng);
    if (K > 0) {
        m->ptable = param(ctx, "parser.pos.table", gr_shape2(V, K + 1));
        m->pproj = param(ctx, "parser.pos.proj", gr_shape2(d, K));
        if (!m->ptable || !m->pproj) {
            return gr_ctx_status(ctx);
        }
        rc |= gr_tensor_fill(m->ptable, 0.0f);
        rc |= gr_init_uniform(m->pproj, -0.1f, 0.1f, rng);
    }
    for (int l = 0; l < c->parser_layers; l++) {
        int in = l == 0 ? c->d : 2 * c->d;
        snprintf(name, sizeof name, "parser.lstm.%d.fw", l);
        rc |= gr_lstm_init(&m->fw[l], ctx, name, in, c->d, rng);
        snprintf(name, sizeof name, "parser.lstm.%d.bw", l);
        rc |= gr_lstm_init(&m->bw[l], ctx, name, in, c->d, rng);
        if (rc < 0) {
            return rc;
        }
    }
    m->mlp_w = param(ctx, "parser.mlp.weight", gr_shape2(2 * d, 2 * d));
    m->mlp_b = param(ctx, "parser.mlp.bias", gr_shape1(2 * d));
    if (!m->mlp_w || !m->mlp_b) {
        return gr_ctx_status(ctx);
    }
    rc |= xavier(m->mlp_w, rng);
    rc |= gr_tensor_fill(m->mlp_b, 0.0f);
    for (int l = 0; l < c->layers; l++) {
        struct nlp_udgn_layer *L = &m->layer[l];
        snprintf(name, sizeof name, "layers.%d.proj.weight", l);
        L->proj_w = param(ctx, name, gr_shape2(4 * cd, d));
        snprintf(name, sizeof name, "layers.%d.proj.bias", l);
        L->proj_b = param(ctx, name, gr_shape1(4 * cd));
        snprintf(name, sizeof name, "layers.%d.out.weight", l);
        L->out_w = param(ctx, name, gr_shape2(d, cd));
        snprintf(name, sizeof name, "layers.%d.out.bias", l);
        L->out_b = param(ctx, name, gr_shape1(d));
        if (!L->proj_w || !L->proj_b || !L->out_w || !L->out_b) {
            return gr_ctx_status(ctx);
        }
        rc |= xavier(L->proj_w, rng);
        rc |= gr_tensor_fill(L->proj_b, 0.0f);
        rc |= xavier(L->out_w, rng);
        rc |= gr_tensor_fill(L->out_b, 0.0f);
        if (!c->abs_pos) {
            snprintf(name, sizeof name, "layers.%d.relpos", l);
            L->relpos = param(ctx, name, gr_shape2(2, c->channels));
            if (!L->relpos) {
                return gr_ctx_status(ctx);
            }
            rc |= gr_init_uniform(L->relpos, -0.1f, 0.1f, rng);
        }
    }
    m->norm_w = param(ctx, "norm.weight", gr_shape1(d));
    m->norm_b = param(ctx, "norm.bias", gr_shape1(d));
    m->out_bias = param(ctx, "out_bias", gr_shape1(V));
    if (!m->norm_w || !m->norm_b || !m->out_bias) {
        return gr_ctx_status(ctx);
    }
    rc |= gr_tensor_fill(m->norm_w, 1.0f);
    rc |= gr_tensor_fill(m->norm_b, 0.0f);
    rc |= gr_tensor_fill(m->out_bias, 0.0f);
    if (c->abs_pos) {
        m->pos_emb = param(ctx, "pos_emb", gr_shape2(c->max_len, d));
        if (!m->pos_emb) {
            return gr_ctx_status(ctx);
        }
        rc |= gr_init_uniform(m->pos_emb, -0.1f, 0.1f, rng);
    }
    return rc < 0 ? gr_error(GR_EINVAL, "udgn: initialisation failed: %s",
                             gr_last_error())
                  : 0;
}

/* A dropout key per (call rng, site, layer). */
static struct gr_rng sub(struct gr_rng rng, uint64_t site, uint64_t l)
{
    return gr_rng_make(rng.seed, gr_rng_stream(rng.stream, site, l, 0));
}

static struct gr_tensor *drop(struct gr_ctx *ctx, struct gr_tensor *x,
                              float p, int training, struct gr_rng rng)
{
    return (training && p > 0.0f) ? gr_dropout(ctx, x, p, rng) : x;
}

struct gr_tensor *nlp_udgn_parser(struct gr_ctx *ctx, const struct nlp_udgn *m,
                                  struct gr_tensor *ids, const int32_t *lens,
                                  int training, struct gr_rng rng)
{
    if (!ids) {
        return NULL;
    }
    const struct nlp_udgn_config *c = &m->cfg;
    int64_t B = ids->shape[0], n = ids->shape[1], d = c->d;
    float pd = c->parser_dropout;
    struct gr_tensor *e = gr_embedding(ctx, m->pemb, ids); /* [B, n, d] */
    if (c->pos_classes > 0) {
        struct gr_tensor *tau =
            gr_softmax(ctx, gr_embedding(ctx, m->ptable, ids), NULL);
        struct gr_tensor *tk = gr_slice(ctx, tau, 2, 1, c->pos_classes);
        e = gr_add(ctx, e, gr_linear(ctx, tk, m->pproj, NULL));
    }
    e = drop(ctx, e, pd, training, sub(rng, 1, 0));
    struct gr_tensor *x = gr_transpose(ctx, e, 0, 1); /* [n, B, d] */

    /* Row permutations over the flattened [n·B] positions: each sequence
     * reversed inside its length (padding stays where it is), and the
     * real-position mask of the packed outputs. */
    int32_t *rev = malloc((size_t)(n * B) * sizeof *rev);
    float *real = malloc((size_t)(n * B) * sizeof *real);
    if (!rev || !real) {
        free(rev);
        free(real);
        gr_error(GR_ENOMEM, "udgn: out of memory");
        return NULL;
    }
    for (int64_t t = 0; t < n; t++) {
        for (int64_t b = 0; b < B; b++) {
            int64_t len = lens[b];
            rev[t * B + b] =
                (int32_t)(t < len ? (len - 1 - t) * B + b : t * B + b);
            real[t * B + b] = t < len ? 1.0f : 0.0f;
        }
    }
    struct gr_tensor *revt =
        gr_tensor_from_host(ctx, GR_I32, gr_shape2(n, B), rev);
    struct gr_tensor *realt =
        gr_tensor_from_host(ctx, GR_F32, gr_shape3(n, B, 1), real);
    free(rev);
    free(real);
    for (int l = 0; l < c->parser_layers; l++) {
        struct gr_rnn_out of, ob;
        memset(&of, 0, sizeof of);
        memset(&ob, 0, sizeof ob);
        if (!x || gr_lstm_forward(ctx, &m->fw[l], x, NULL, NULL, NULL,
                                  &of) < 0) {
            return NULL;
        }
        int64_t in = x->shape[2];
        struct gr_tensor *xr = gr_embedding(
            ctx, gr_reshape(ctx, x, gr_shape2(n * B, in)), revt);
        if (!xr || gr_lstm_forward(ctx, &m->bw[l], xr, NULL, NULL, NULL,
                                   &ob) < 0) {
            return NULL;
        }
        struct gr_tensor *yb = gr_embedding(
            ctx, gr_reshape(ctx, ob.y, gr_shape2(n * B, d)), revt);
        struct gr_tensor *cat[2] = {of.y, yb};
        x = gr_concat(ctx, 2, cat, 2); /* [n, B, 2d] */
        if (l + 1 < c->parser_layers) {
            x = drop(ctx, x, pd, training, sub(rng, 2, (uint64_t)l));
        }
    }
    x = gr_mul(ctx, x, realt); /* packed sequences: 0 at padding */
    x = drop(ctx, x, pd, training, sub(rng, 3, 0));
    struct gr_tensor *h = gr_transpose(ctx, x, 0, 1); /* [B, n, 2d] */
    struct gr_tensor *ab = gr_linear(ctx, h, m->mlp_w, m->mlp_b);
    struct gr_tensor *a = gr_slice(ctx, ab, 2, 0, d);  /* as a head */
    struct gr_tensor *bq = gr_slice(ctx, ab, 2, d, d); /* as a dependent */
    struct gr_tensor *s = gr_scale(ctx, gr_matmul(ctx, bq, a, 0, 1),
                                   (float)(1.0 / sqrt((double)d)));
    float *pad = malloc((size_t)(B * n) * sizeof *pad);
    if (!pad) {
        gr_error(GR_ENOMEM, "udgn: out of memory");
        return NULL;
    }
    for (int64_t b = 0; b < B; b++) {
        for (int64_t j = 0; j < n; j++) {
            pad[b * n + j] = j < lens[b] ? 0.0f : -INFINITY;
        }
    }
    struct gr_tensor *padt =
        gr_tensor_from_host(ctx, GR_F32, gr_shape3(B, 1, n), pad);
    free(pad);
    return gr_softmax(ctx, s, padt);
}

struct gr_tensor *nlp_udgn_mask(struct gr_ctx *ctx, struct gr_tensor *P)
{
    if (!P) {
        return NULL;
    }
    int64_t n = P->shape[1];
    float *off = malloc((size_t)(n * n) * sizeof *off);
    if (!off) {
        gr_error(GR_ENOMEM, "udgn: out of memory");
        return NULL;
    }
    for (int64_t i = 0; i < n * n; i++) {
        off[i] = (i / n == i % n) ? 0.0f : 1.0f;
    }
    struct gr_tensor *offt =
        gr_tensor_from_host(ctx, GR_F32, gr_shape2(n, n), off);
    free(off);
    struct gr_tensor *H = gr_mul(ctx, P, offt);
    struct gr_tensor *Ht = gr_transpose(ctx, H, 1, 2);
    return gr_sub(ctx, gr_add(ctx, H, Ht), gr_mul(ctx, H, Ht));
}

/* The constant [2, n·n] of the relative-position bias: row 0 is 1 where
 * j < i (LEFT), row 1 where j > i (RIGHT), both 0 on the diagonal. */
static struct gr_tensor *direction_matrix(struct gr_ctx *ctx, int64_t n)
{
    float *dm = malloc((size_t)(2 * n * n) * sizeof *dm);
    if (!dm) {
        gr_error(GR_ENOMEM, "udgn: out of memory");
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < n; j++) {
            dm[i * n + j] = j < i ? 1.0f : 0.0f;
            dm[n * n + i * n + j] = j > i ? 1.0f : 0.0f;
        }
    }
    struct gr_tensor *t =
        gr_tensor_from_host(ctx, GR_F32, gr_shape2(2, n * n), dm);
    free(dm);
    return t;
}

/* [B, n, C·dc] -> [B, C, n, dc] */
static struct gr_tensor *channels(struct gr_ctx *ctx, struct gr_tensor *x,
                                  int64_t C, int64_t dc)
{
    if (!x) {
        return NULL;
    }
    int64_t B = x->shape[0], n = x->shape[1];
    return gr_transpose(ctx, gr_reshape(ctx, x, gr_shape4(B, n, C, dc)), 1,
                        2);
}

struct gr_tensor *nlp_udgn_layer_forward(struct gr_ctx *ctx,
                                         const struct nlp_udgn *m, int l,
                                         struct gr_tensor *x,
                                         struct gr_tensor *M,
                                         struct gr_tensor *keep,
                                         int training, struct gr_rng rng,
                                         struct gr_tensor **pi_out)
{
    if (!x || !M || !keep) {
        return NULL;
    }
    const struct nlp_udgn_config *c = &m->cfg;
    const struct nlp_udgn_layer *L = &m->layer[l];
    int64_t B = x->shape[0], n = x->shape[1];
    int64_t C = c->channels, dc = c->head_size, cd = C * dc;
    struct gr_tensor *z = gr_linear(ctx, x, L->proj_w, L->proj_b);
    struct gr_tensor *qkvg[4] = {NULL, NULL, NULL, NULL};
    int64_t sizes[4] = {cd, cd, cd, cd};
    if (!z || gr_split(ctx, z, 2, 4, sizes, qkvg) < 0) {
        return NULL;
    }
    struct gr_tensor *q = channels(ctx, qkvg[0], C, dc);
    struct gr_tensor *k = channels(ctx, qkvg[1], C, dc);
    struct gr_tensor *v = channels(ctx, qkvg[2], C, dc);
    struct gr_tensor *s = gr_matmul(ctx, q, k, 0, 1); /* [B, C, i, j] */
    if (L->relpos) {
        /* r^c_dir(i,j) as rᵀ [C, 2] times the direction matrix, added
         * before the 1/√dc scaling (the code's order). */
        struct gr_tensor *bias =
            gr_matmul(ctx, L->relpos, direction_matrix(ctx, n), 1, 0);
        s = gr_add(ctx, s, gr_reshape(ctx, bias, gr_shape3(C, n, n)));
    }
    s = gr_scale(ctx, s, (float)(1.0 / sqrt((double)dc)));
    struct gr_tensor *st = gr_transpose(ctx, s, 1, 3); /* [B, j, i, C] */
    struct gr_tensor *pi =
        c->sigmoid ? gr_sigmoid(ctx, st) : gr_softmax(ctx, st, NULL);
    if (pi_out) {
        *pi_out = pi;
    }
    /* w^c_ij = π^c_ij (M_ij + 1e-6), zero where the sender j is padding. */
    struct gr_tensor *mt = gr_reshape(
        ctx, gr_affine(ctx, gr_transpose(ctx, M, 1, 2), 1.0f, 1e-6f),
        gr_shape4(B, n, n, 1));
    struct gr_tensor *w = gr_mul(ctx, gr_mul(ctx, pi, mt), keep);
    w = drop(ctx, w, c->dropatt, training, sub(rng, 10, (uint64_t)l));
    struct gr_tensor *wc = gr_transpose(ctx, w, 1, 3); /* [B, C, i, j] */
    struct gr_tensor *val = c->no_nonlinear ? v : gr_tanh(ctx, v);
    struct gr_tensor *o = gr_matmul(ctx, wc, val, 0, 0); /* [B, C, i, dc] */
    o = gr_reshape(ctx, gr_transpose(ctx, o, 1, 2), gr_shape3(B, n, cd));
    if (!c->no_gates) {
        o = gr_mul(ctx, o, gr_sigmoid(ctx, qkvg[3]));
    }
    o = drop(ctx, o, c->dropout, training, sub(rng, 11, (uint64_t)l));
    struct gr_tensor *y = gr_linear(ctx, o, L->out_w, L->out_b);
    y = drop(ctx, y, c->dropout, training, sub(rng, 12, (uint64_t)l));
    return gr_add(ctx, x, y);
}

int nlp_udgn_forward(struct gr_ctx *ctx, const struct nlp_udgn *m,
                     const int32_t *ids, const int32_t *lens, int32_t B,
                     int32_t n, const int32_t *targets, int training,
                     struct gr_rng rng, struct nlp_udgn_out *out)
{
    memset(out, 0, sizeof *out);
    const struct nlp_udgn_config *c = &m->cfg;
    if (c->abs_pos && n > c->max_len) {
        return gr_error(GR_EINVAL, "udgn: a sentence of %d tokens is longer "
                        "than the position table (%d)", n, c->max_len);
    }
    struct gr_tensor *idt =
        gr_tensor_from_host(ctx, GR_I32, gr_shape2(B, n), ids);
    float *kp = malloc((size_t)B * n * sizeof *kp);
    if (!kp) {
        return gr_error(GR_ENOMEM, "udgn: out of memory");
    }
    for (int32_t b = 0; b < B; b++) {
        for (int32_t j = 0; j < n; j++) {
            kp[(int64_t)b * n + j] = j < lens[b] ? 1.0f : 0.0f;
        }
    }
    struct gr_tensor *keep =
        gr_tensor_from_host(ctx, GR_F32, gr_shape4(B, n, 1, 1), kp);
    free(kp);
    out->P = nlp_udgn_parser(ctx, m, idt, lens, training, sub(rng, 20, 0));
    out->M = nlp_udgn_mask(ctx, out->P);
    struct gr_tensor *x = gr_embedding(ctx, m->emb, idt); /* [B, n, d] */
    if (m->pos_emb) {
        struct gr_tensor *p = gr_positions_learned(ctx, m->pos_emb, n, 0);
        x = gr_add(ctx, x, gr_reshape(ctx, p, gr_shape3(1, n, c->d)));
    }
    x = drop(ctx, x, c->dropout, training, sub(rng, 21, 0));
    for (int l = 0; l < c->layers; l++) {
        x = nlp_udgn_layer_forward(ctx, m, l, x, out->M, keep, training,
                                   rng, NULL);
    }
    out->X = x;
    if (!x) {
        return gr_ctx_status(ctx) < 0 ? gr_ctx_status(ctx) : GR_EINVAL;
    }
    if (targets) {
        return nlp_mlm_head(ctx, x, m->emb, m->norm_w, m->norm_b,
                            m->out_bias, targets, B, n, c->dropout, training,
                            sub(rng, 22, 0), &out->logits, &out->loss,
                            &out->n_masked);
    }
    return 0;
}

int nlp_udgn_heads(struct gr_ctx *ctx, const struct nlp_udgn *m,
                   const int32_t *ids, int32_t n, float *H)
{
    struct gr_tensor *idt =
        gr_tensor_from_host(ctx, GR_I32, gr_shape2(1, n), ids);
    struct gr_tensor *P =
        nlp_udgn_parser(ctx, m, idt, &n, 0, gr_rng_make(0, 0));
    if (!P || gr_tensor_to_host(P, H) < 0) {
        return gr_ctx_status(ctx) < 0 ? gr_ctx_status(ctx) : GR_EINVAL;
    }
    for (int32_t i = 0; i < n; i++) {
        H[(int64_t)i * n + i] = 0.0f;
    }
    return 0;
}

int nlp_udgn_channels(struct gr_ctx *ctx, const struct nlp_udgn *m,
                      const int32_t *ids, int32_t n, float *pi)
{
    const struct nlp_udgn_config *c = &m->cfg;
    if (c->abs_pos && n > c->max_len) {
        return gr_error(GR_EINVAL, "udgn: a sentence of %d tokens is longer "
                        "than the position table (%d)", n, c->max_len);
    }
    struct gr_rng r0 = gr_rng_make(0, 0);
    struct gr_tensor *idt =
        gr_tensor_from_host(ctx, GR_I32, gr_shape2(1, n), ids);
    struct gr_tensor *keep = gr_full(ctx, gr_shape4(1, n, 1, 1), 1.0f);
    struct gr_tensor *M =
        nlp_udgn_mask(ctx, nlp_udgn_parser(ctx, m, idt, &n, 0, r0));
    struct gr_tensor *x = gr_embedding(ctx, m->emb, idt);
    if (m->pos_emb) {
        struct gr_tensor *p = gr_positions_learned(ctx, m->pos_emb, n, 0);
        x = gr_add(ctx, x, gr_reshape(ctx, p, gr_shape3(1, n, c->d)));
    }
    int64_t per = (int64_t)n * n * c->channels;
    for (int l = 0; l < c->layers; l++) {
        struct gr_tensor *p = NULL;
        x = nlp_udgn_layer_forward(ctx, m, l, x, M, keep, 0, r0, &p);
        if (!x || !p || gr_tensor_to_host(p, pi + l * per) < 0) {
            return gr_ctx_status(ctx) < 0 ? gr_ctx_status(ctx) : GR_EINVAL;
        }
    }
    return 0;
}
