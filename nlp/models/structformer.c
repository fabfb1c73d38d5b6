/* StructFormer (nlp/models/structformer.h, udgn.md §7), composed from the
 * ops of kernels/ops.h and gr_attention_gated: it runs and differentiates
 * on either device. The host computes only constants (masks, the
 * calibration's arg-max position) from the lengths and from δ, η. */
#include "nlp/models/structformer.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/layers.h"
#include "kernels/ops.h"

#define SF_BIG 1e9f
#define SF_EPS 1e-5f

struct nlp_structformer_config nlp_structformer_config_default(int32_t vocab)
{
    struct nlp_structformer_config c;
    memset(&c, 0, sizeof c);
    c.vocab = vocab;
    c.d = 512;
    c.layers = 8;
    c.heads = 8;
    c.ffn = 2048;
    c.parser_layers = 3;
    c.conv = 9;
    c.dropout = 0.1f;
    c.dropout_attn = 0.0f;
    c.parser_dropout = 0.0f;
    c.pos_emb = 500;
    c.norm_affine = 1;
    return c;
}

/* ---- config text ---- */

struct sf_field {
    const char *key;
    size_t off;
    char kind; /* 'i' int / int32_t, 'f' float */
};

#define SF_FIELD(k, m, t)                                                    \
    { k, offsetof(struct nlp_structformer_config, m), t }
static const struct sf_field sf_fields[] = {
    SF_FIELD("sf-vocab", vocab, 'i'),
    SF_FIELD("sf-d", d, 'i'),
    SF_FIELD("sf-layers", layers, 'i'),
    SF_FIELD("sf-heads", heads, 'i'),
    SF_FIELD("sf-ffn", ffn, 'i'),
    SF_FIELD("sf-parser-layers", parser_layers, 'i'),
    SF_FIELD("sf-conv", conv, 'i'),
    SF_FIELD("sf-dropout", dropout, 'f'),
    SF_FIELD("sf-dropout-attn", dropout_attn, 'f'),
    SF_FIELD("sf-parser-dropout", parser_dropout, 'f'),
    SF_FIELD("sf-pos-emb", pos_emb, 'i'),
    SF_FIELD("sf-norm-affine", norm_affine, 'i'),
};
#define SF_N_FIELDS (sizeof sf_fields / sizeof sf_fields[0])

int nlp_structformer_config_format(const struct nlp_structformer_config *c,
                                   char *out, size_t cap, int *len)
{
    for (size_t i = 0; i < SF_N_FIELDS; i++) {
        const char *p = (const char *)c + sf_fields[i].off;
        int n = sf_fields[i].kind == 'f'
                    ? snprintf(out + *len, cap - (size_t)*len, "%s %.9g\n",
                               sf_fields[i].key, (double)*(const float *)p)
                    : snprintf(out + *len, cap - (size_t)*len, "%s %d\n",
                               sf_fields[i].key, *(const int *)p);
        if (n < 0 || (size_t)(*len + n) >= cap) {
            return gr_error(GR_EINVAL, "structformer config: text too long");
        }
        *len += n;
    }
    return 0;
}

int nlp_structformer_config_parse(const char *text, const char *what,
                                  struct nlp_structformer_config *c)
{
    for (size_t i = 0; i < SF_N_FIELDS; i++) {
        const char *key = sf_fields[i].key;
        size_t k = strlen(key);
        const char *v = NULL;
        for (const char *p = text; p != NULL && *p != '\0';) {
            if (strncmp(p, key, k) == 0 && p[k] == ' ') {
                v = p + k + 1;
                break;
            }
            p = strchr(p, '\n');
            p = p ? p + 1 : NULL;
        }
        if (v == NULL) {
            continue;
        }
        char *end = NULL;
        char *dst = (char *)c + sf_fields[i].off;
        if (sf_fields[i].kind == 'f') {
            double x = strtod(v, &end);
            *(float *)dst = (float)x;
        } else {
            long x = strtol(v, &end, 10);
            *(int *)dst = (int)x;
        }
        if (end == v || (*end != '\n' && *end != '\0')) {
            return gr_error(GR_EINVAL, "%s: structformer config: bad value for "
                            "%s", what, key);
        }
    }
    return 0;
}

/* ---- parameters ---- */

static struct gr_tensor *param(struct gr_ctx *ctx, const char *prefix,
                               const char *part, struct gr_shape s)
{
    char name[320];
    snprintf(name, sizeof name, "%s.%s", prefix, part);
    return gr_param_new(ctx, name, s);
}

/* Xavier-uniform with the given fans; -1 for a NULL tensor (the caller
 * reports the context's error). */
static int xavier(struct gr_tensor *t, int64_t fan_in, int64_t fan_out,
                  struct gr_rng rng)
{
    if (t == NULL) {
        return -1;
    }
    float a = sqrtf(6.0f / (float)(fan_in + fan_out));
    return gr_init_uniform(t, -a, a, rng);
}

int nlp_structformer_init(struct nlp_structformer *m, struct gr_ctx *ctx,
                          const char *prefix,
                          const struct nlp_structformer_config *c,
                          struct gr_rng rng)
{
    memset(m, 0, sizeof *m);
    if (c->vocab < 1 || c->d < 1 || c->layers < 1 || c->heads < 1 ||
        c->d % c->heads != 0 || c->ffn < 1 || c->parser_layers < 0 ||
        c->conv < 1 || c->conv % 2 == 0 || c->pos_emb < 0 ||
        !(c->dropout >= 0.0f && c->dropout < 1.0f) ||
        !(c->dropout_attn >= 0.0f && c->dropout_attn < 1.0f) ||
        !(c->parser_dropout >= 0.0f && c->parser_dropout < 1.0f)) {
        return gr_error(GR_EINVAL, "structformer '%s': vocabulary %d, width "
                        "%d, %d layers, %d heads (dividing the width), ffn %d, "
                        "%d parser layers, odd conv width %d, dropouts in "
                        "[0, 1)", prefix, c->vocab, c->d, c->layers, c->heads,
                        c->ffn, c->parser_layers, c->conv);
    }
    m->cfg = *c;
    const int64_t d = c->d;
    m->layer = calloc((size_t)c->layers, sizeof *m->layer);
    m->pconv_w = calloc((size_t)c->parser_layers + 1, sizeof *m->pconv_w);
    m->pconv_b = calloc((size_t)c->parser_layers + 1, sizeof *m->pconv_b);
    if (!m->layer || !m->pconv_w || !m->pconv_b) {
        nlp_structformer_free(m);
        return gr_error(GR_ENOMEM, "structformer: out of memory");
    }
    int bad = 0;
    m->emb = param(ctx, prefix, "emb.weight", gr_shape2(c->vocab, d));
    bad |= !m->emb || gr_init_uniform(m->emb, -0.1f, 0.1f, rng) < 0;
    if (!c->encoder_only) {
        m->out_bias = param(ctx, prefix, "output_bias", gr_shape1(c->vocab));
        bad |= !m->out_bias;
    }
    if (c->pos_emb > 0) {
        m->pos = param(ctx, prefix, "pos_emb.weight", gr_shape2(c->pos_emb, d));
        bad |= !m->pos || gr_init_uniform(m->pos, -0.1f, 0.1f, rng) < 0;
    }
    char part[128];
    for (int l = 0; l < c->parser_layers && !bad; l++) {
        snprintf(part, sizeof part, "parser.layers.%d.weight", l);
        m->pconv_w[l] = param(ctx, prefix, part, gr_shape3(d, d, c->conv));
        snprintf(part, sizeof part, "parser.layers.%d.bias", l);
        m->pconv_b[l] = param(ctx, prefix, part, gr_shape1(d));
        bad |= xavier(m->pconv_w[l], d * c->conv, d * c->conv, rng) < 0 ||
               !m->pconv_b[l];
    }
    m->dconv_w = param(ctx, prefix, "parser.distance.conv.weight",
                       gr_shape3(d, d, 2));
    m->dconv_b = param(ctx, prefix, "parser.distance.conv.bias", gr_shape1(d));
    m->dout_w = param(ctx, prefix, "parser.distance.out.weight",
                      gr_shape2(1, d));
    m->dout_b = param(ctx, prefix, "parser.distance.out.bias", gr_shape1(1));
    m->hlin_w = param(ctx, prefix, "parser.height.linear.weight",
                      gr_shape2(d, d));
    m->hlin_b = param(ctx, prefix, "parser.height.linear.bias", gr_shape1(d));
    m->hout_w = param(ctx, prefix, "parser.height.out.weight",
                      gr_shape2(1, d));
    m->hout_b = param(ctx, prefix, "parser.height.out.bias", gr_shape1(1));
    m->size = param(ctx, prefix, "parser.size", gr_shape1(2));
    bad |= !bad && (xavier(m->dconv_w, 2 * d, 2 * d, rng) < 0 ||
                    xavier(m->dout_w, d, 1, rng) < 0 ||
                    xavier(m->hlin_w, d, d, rng) < 0 ||
                    xavier(m->hout_w, d, 1, rng) < 0 || !m->dconv_b ||
                    !m->dout_b || !m->hlin_b || !m->hout_b || !m->size);
    m->rel = param(ctx, prefix, "rel_weight", gr_shape3(c->layers, c->heads, 2));
    bad |= !m->rel || gr_tensor_rand_normal(m->rel, 0.0f, 0.1f, rng) < 0;
    for (int l = 0; l < c->layers && !bad; l++) {
        struct nlp_structformer_layer *L = &m->layer[l];
        struct gr_rng lr = gr_rng_make(rng.seed,
                                       gr_rng_stream(rng.stream, 5, l, 0));
        char p[200];
        snprintf(p, sizeof p, "%s.layers.%d", prefix, l);
        L->in_w = param(ctx, p, "self_attn.in_proj_weight", gr_shape2(3 * d, d));
        L->in_b = param(ctx, p, "self_attn.in_proj_bias", gr_shape1(3 * d));
        L->out_w = param(ctx, p, "self_attn.out_proj.weight", gr_shape2(d, d));
        L->out_b = param(ctx, p, "self_attn.out_proj.bias", gr_shape1(d));
        L->w1 = param(ctx, p, "linear1.weight", gr_shape2(c->ffn, d));
        L->b1 = param(ctx, p, "linear1.bias", gr_shape1(c->ffn));
        L->w2 = param(ctx, p, "linear2.weight", gr_shape2(d, c->ffn));
        L->b2 = param(ctx, p, "linear2.bias", gr_shape1(d));
        bad |= !L->in_b || !L->out_b || !L->b1 || !L->b2 ||
               xavier(L->out_w, d, d, lr) < 0 ||
               xavier(L->w1, d, c->ffn, lr) < 0 ||
               xavier(L->w2, c->ffn, d, lr) < 0;
        if (!bad) {
            /* Xavier per q, k, v block: draw [3d, d] at the block's bound */
            float a = sqrtf(6.0f / (float)(2 * d));
            bad |= gr_init_uniform(L->in_w, -a, a, lr) < 0;
        }
        if (c->norm_affine && !bad) {
            L->n1w = param(ctx, p, "norm1.weight", gr_shape1(d));
            L->n1b = param(ctx, p, "norm1.bias", gr_shape1(d));
            L->n2w = param(ctx, p, "norm2.weight", gr_shape1(d));
            L->n2b = param(ctx, p, "norm2.bias", gr_shape1(d));
            bad |= !L->n1w || !L->n1b || !L->n2w || !L->n2b ||
                   gr_tensor_fill(L->n1w, 1.0f) < 0 ||
                   gr_tensor_fill(L->n2w, 1.0f) < 0;
        }
    }
    if (!bad) {
        m->nw = param(ctx, prefix, "norm.weight", gr_shape1(d));
        m->nb = param(ctx, prefix, "norm.bias", gr_shape1(d));
        bad |= !m->nw || !m->nb || gr_tensor_fill(m->nw, 1.0f) < 0;
    }
    if (bad) {
        int code = gr_error(GR_EINVAL, "structformer '%s': %s", prefix,
                            gr_ctx_status(ctx) ? gr_ctx_error(ctx)
                                               : gr_last_error());
        nlp_structformer_free(m);
        return code;
    }
    return 0;
}

void nlp_structformer_free(struct nlp_structformer *m)
{
    if (m == NULL) {
        return;
    }
    free(m->layer);
    free(m->pconv_w);
    free(m->pconv_b);
    m->layer = NULL;
    m->pconv_w = m->pconv_b = NULL;
}

/* ---- helpers ---- */

static struct gr_rng sub_rng(struct gr_rng r, uint64_t what, uint64_t l)
{
    return gr_rng_make(r.seed, gr_rng_stream(r.stream, 9, what, l));
}

static struct gr_tensor *drop(struct gr_ctx *ctx, struct gr_tensor *x,
                              float p, int training, struct gr_rng r)
{
    return training && p > 0.0f ? gr_dropout(ctx, x, p, r) : x;
}

/* A constant from host floats (NULL with the context's error). */
static struct gr_tensor *konst(struct gr_ctx *ctx, struct gr_shape s,
                               const float *v)
{
    return gr_tensor_from_host(ctx, GR_F32, s, v);
}

/* "same" 1-D convolution over time of x [T, B, d] with w [d, d, K], y_t =
 * Σ_j W_j x_{t + j - left}, zeros outside: the causal convolution of x
 * followed by K - 1 - left zero steps, from step K - 1 - left on. */
static struct gr_tensor *conv_ahead(struct gr_ctx *ctx, struct gr_tensor *x,
                                    struct gr_tensor *w, struct gr_tensor *b,
                                    int64_t ahead)
{
    if (x == NULL || w == NULL) {
        return NULL;
    }
    const int64_t t = x->shape[0];
    struct gr_tensor *in = x;
    if (ahead > 0) {
        struct gr_tensor *z = gr_zeros(ctx, gr_shape3(ahead, x->shape[1],
                                                      x->shape[2]));
        struct gr_tensor *xs[2] = {x, z};
        in = z ? gr_concat(ctx, 2, xs, 0) : NULL;
    }
    struct gr_tensor *y = gr_conv1d_causal(ctx, in, w, b, 1);
    return ahead > 0 ? gr_slice(ctx, y, 0, ahead, t) : y;
}

/* [T, B, 1] -> [B, T] */
static struct gr_tensor *batch_major(struct gr_ctx *ctx, struct gr_tensor *x,
                                     int64_t t, int64_t b)
{
    return gr_transpose(ctx, gr_reshape(ctx, x, gr_shape2(t, b)), 0, 1);
}

/* Reverse cumulative minimum over the last dimension of x [B, T, T]:
 * y[..., l] = min_{k >= l} x[..., k]. */
static struct gr_tensor *cummin_rev(struct gr_ctx *ctx, struct gr_tensor *x,
                                    int64_t t, struct gr_tensor **cols)
{
    cols[t - 1] = gr_slice(ctx, x, 2, t - 1, 1);
    for (int64_t l = t - 2; l >= 0; l--) {
        cols[l] = gr_minimum(ctx, gr_slice(ctx, x, 2, l, 1), cols[l + 1]);
    }
    return t == 1 ? cols[0] : gr_concat(ctx, (int)t, cols, 2);
}

/* Exclusive cumulative minimum from 1: y[..., 0] = 1, y[..., r] =
 * min_{k < r} x[..., k]. */
static struct gr_tensor *cummin_excl(struct gr_ctx *ctx, struct gr_tensor *x,
                                     int64_t t, int64_t b,
                                     struct gr_tensor **cols)
{
    cols[0] = gr_full(ctx, gr_shape3(b, t, 1), 1.0f);
    if (t > 1) {
        cols[1] = gr_slice(ctx, x, 2, 0, 1);
    }
    for (int64_t r = 2; r < t; r++) {
        cols[r] = gr_minimum(ctx, gr_slice(ctx, x, 2, r - 1, 1), cols[r - 1]);
    }
    return t == 1 ? cols[0] : gr_concat(ctx, (int)t, cols, 2);
}

/* x [B, T, T] shifted along the last dimension by one: right (y[l] =
 * x[l-1], 0 first) or left (y[r] = x[r+1], 0 last). */
static struct gr_tensor *shift(struct gr_ctx *ctx, struct gr_tensor *x,
                               int64_t t, int64_t b, int right)
{
    struct gr_tensor *z = gr_zeros(ctx, gr_shape3(b, t, 1));
    if (t == 1) {
        return z;
    }
    struct gr_tensor *part = gr_slice(ctx, x, 2, right ? 0 : 1, t - 1);
    struct gr_tensor *xs[2] = {right ? z : part, right ? part : z};
    return gr_concat(ctx, 2, xs, 2);
}

/* The calibration shift μ of udgn.md §7 on the tape: one over the batch,
 * [1] (its arg-max entry found on the host), or one per sentence, [B, 1]
 * (per_sentence); a constant 0 where no margin is positive. */
static struct gr_tensor *calibration(struct gr_ctx *ctx, struct gr_tensor *dist,
                                     struct gr_tensor *height,
                                     const int32_t *len, int64_t t, int64_t b,
                                     int per_sentence)
{
    const int64_t ns = per_sentence ? b : 1;
    float *dh = malloc((size_t)(2 * b * t) * sizeof *dh);
    double *best = calloc((size_t)ns, sizeof *best);
    /* per slot: bsrc, the flat δ index or -2 for δ_{-1}; bk, the flat η
     * index of Hmax (-1: no positive margin) */
    int64_t *bsrc = malloc((size_t)(2 * ns) * sizeof *bsrc);
    int64_t *bk = bsrc ? bsrc + ns : NULL;
    if (dh == NULL || best == NULL || bsrc == NULL ||
        gr_tensor_to_host(dist, dh) < 0 ||
        gr_tensor_to_host(height, dh + b * t) < 0) {
        free(dh);
        free(best);
        free(bsrc);
        return NULL;
    }
    for (int64_t s = 0; s < ns; s++) {
        bsrc[s] = -1;
        bk[s] = -1;
    }
    const float *dd = dh, *hh = dh + b * t;
    for (int64_t bi = 0; bi < b; bi++) {
        const float *db = dd + bi * t, *hb = hh + bi * t;
        const int64_t s = per_sentence ? bi : 0;
        for (int64_t i = 0; i < t; i++) {
            double hmax = -INFINITY;
            int64_t kmax = i;
            for (int64_t j = i; j < t; j++) {
                if (hb[j] >= hmax) {
                    hmax = hb[j];
                    kmax = j;
                }
                int valid = i == 0 ? j + 1 < len[bi] : j < len[bi];
                if (!valid) {
                    continue;
                }
                double left = (i == 0 ? (double)SF_BIG : db[i - 1]) - hmax;
                double right = (double)db[j] - hmax;
                left = left > 0.0 ? left : 0.0;
                right = right > 0.0 ? right : 0.0;
                double mg = left > right ? right : left;
                int64_t src = left > right ? bi * t + j
                                           : (i == 0 ? -2 : bi * t + i - 1);
                if (mg > best[s]) {
                    best[s] = mg;
                    bsrc[s] = src;
                    bk[s] = bi * t + kmax;
                }
            }
        }
    }
    free(dh);
    free(best);
    struct gr_tensor *mu = NULL;
    if (!per_sentence) {
        if (bk[0] < 0) {
            free(bsrc);
            return gr_zeros(ctx, gr_shape1(1));
        }
        struct gr_tensor *hk = gr_slice(ctx, gr_reshape(ctx, height,
                                                        gr_shape1(b * t)),
                                        0, bk[0], 1);
        struct gr_tensor *diff;
        if (bsrc[0] == -2) {
            diff = gr_affine(ctx, hk, -1.0f, SF_BIG);
        } else {
            struct gr_tensor *ds = gr_slice(ctx, gr_reshape(ctx, dist,
                                                            gr_shape1(b * t)),
                                            0, bsrc[0], 1);
            diff = gr_sub(ctx, ds, hk);
        }
        free(bsrc);
        return gr_relu(ctx, diff);
    }
    /* per sentence: μ_b = keep_b · relu(a_b·δ[src_b] + c_b − η[k_b]), the
     * entries picked by row lookups (a_b = 0, c_b = 1e9 for δ_{-1}) */
    int32_t *ik = malloc((size_t)(2 * b) * sizeof *ik);
    float *acs = malloc((size_t)(3 * b) * sizeof *acs);
    if (ik == NULL || acs == NULL) {
        free(ik);
        free(acs);
        free(bsrc);
        gr_error(GR_ENOMEM, "structformer: out of memory");
        return NULL;
    }
    int32_t *is = ik + b;
    float *av = acs, *cv = acs + b, *kv = acs + 2 * b;
    for (int64_t bi = 0; bi < b; bi++) {
        ik[bi] = (int32_t)(bk[bi] < 0 ? 0 : bk[bi]);
        is[bi] = (int32_t)(bsrc[bi] < 0 ? 0 : bsrc[bi]);
        av[bi] = bsrc[bi] >= 0 ? 1.0f : 0.0f;
        cv[bi] = bsrc[bi] == -2 ? SF_BIG : 0.0f;
        kv[bi] = bk[bi] >= 0 ? 1.0f : 0.0f;
    }
    struct gr_tensor *hk = gr_embedding(
        ctx, gr_reshape(ctx, height, gr_shape2(b * t, 1)),
        gr_tensor_from_host(ctx, GR_I32, gr_shape1(b), ik));
    struct gr_tensor *ds = gr_embedding(
        ctx, gr_reshape(ctx, dist, gr_shape2(b * t, 1)),
        gr_tensor_from_host(ctx, GR_I32, gr_shape1(b), is));
    struct gr_tensor *diff = gr_sub(
        ctx, gr_add(ctx, gr_mul(ctx, ds, konst(ctx, gr_shape2(b, 1), av)),
                    konst(ctx, gr_shape2(b, 1), cv)),
        hk);
    mu = gr_mul(ctx, gr_relu(ctx, diff), konst(ctx, gr_shape2(b, 1), kv));
    free(ik);
    free(acs);
    free(bsrc);
    return mu;
}

/* Par [B, T, T] from δ, η [B, T] (udgn.md §7). */
static struct gr_tensor *parents(struct gr_ctx *ctx,
                                 const struct nlp_structformer *m,
                                 struct gr_tensor *dist,
                                 struct gr_tensor *height, int64_t t,
                                 int64_t b)
{
    const int64_t tt = t * t;
    float *cst = malloc((size_t)(4 * tt + tt * t) * sizeof *cst);
    struct gr_tensor **cols = malloc((size_t)t * sizeof *cols);
    if (cst == NULL || cols == NULL) {
        free(cst);
        free(cols);
        gr_error(GR_ENOMEM, "structformer: out of memory");
        return NULL;
    }
    float *lower1 = cst, *upper0 = cst + tt, *lower0 = cst + 2 * tt,
          *offdiag = cst + 3 * tt, *span = cst + 4 * tt;
    for (int64_t i = 0; i < t; i++) {
        for (int64_t k = 0; k < t; k++) {
            lower1[i * t + k] = k < i ? 1.0f : 0.0f;
            upper0[i * t + k] = k >= i ? 1.0f : 0.0f;
            lower0[i * t + k] = k <= i ? 1.0f : 0.0f;
            offdiag[i * t + k] = k != i ? 1.0f : 0.0f;
        }
    }
    for (int64_t l = 0; l < t; l++) {
        for (int64_t r = 0; r < t; r++) {
            for (int64_t k = 0; k < t; k++) {
                span[(l * t + r) * t + k] =
                    l <= k && k <= r ? 0.0f : -INFINITY;
            }
        }
    }
    struct gr_tensor *L1 = konst(ctx, gr_shape2(t, t), lower1);
    struct gr_tensor *U0 = konst(ctx, gr_shape2(t, t), upper0);
    struct gr_tensor *L0 = konst(ctx, gr_shape2(t, t), lower0);
    struct gr_tensor *OD = konst(ctx, gr_shape2(t, t), offdiag);
    struct gr_tensor *SP = konst(ctx, gr_shape3(t, t, t), span);
    free(cst);

    struct gr_tensor *s = gr_exp(ctx, m->size);
    struct gr_tensor *s0 = gr_slice(ctx, s, 0, 0, 1);
    struct gr_tensor *s1 = gr_slice(ctx, s, 0, 1, 1);
    /* γ(i, k) = σ(−(δ_k − η_i)·s0) */
    struct gr_tensor *dk = gr_add(ctx, gr_zeros(ctx, gr_shape3(b, t, t)),
                                  gr_reshape(ctx, dist, gr_shape3(b, 1, t)));
    struct gr_tensor *x = gr_sub(ctx, dk,
                                 gr_reshape(ctx, height, gr_shape3(b, t, 1)));
    struct gr_tensor *gam = gr_sigmoid(ctx,
                                       gr_mul(ctx, x, gr_scale(ctx, s0, -1.0f)));
    /* left ends */
    struct gr_tensor *gl = gr_add(ctx, gr_mul(ctx, gam, L1), U0);
    struct gr_tensor *cl = cummin_rev(ctx, gl, t, cols);
    struct gr_tensor *pl = gr_mul(ctx, gr_sub(ctx, cl, shift(ctx, cl, t, b, 1)),
                                  L0);
    /* right ends */
    struct gr_tensor *gr_ = gr_add(ctx, gr_mul(ctx, gam, U0), L1);
    struct gr_tensor *cr = cummin_excl(ctx, gr_, t, b, cols);
    struct gr_tensor *pr = gr_mul(ctx, gr_sub(ctx, cr, shift(ctx, cr, t, b, 0)),
                                  U0);
    free(cols);
    /* B(i, l, r) and the span heads Hd(l, r, k) */
    struct gr_tensor *blk = gr_matmul(ctx,
                                      gr_reshape(ctx, pl, gr_shape4(b, t, t, 1)),
                                      gr_reshape(ctx, pr, gr_shape4(b, t, 1, t)),
                                      0, 0);
    struct gr_tensor *hl = gr_add(ctx, gr_zeros(ctx, gr_shape4(b, t, t, t)),
                                  gr_reshape(ctx, gr_mul(ctx, height, s1),
                                             gr_shape4(b, 1, 1, t)));
    struct gr_tensor *hd = gr_softmax(ctx, hl, SP);
    struct gr_tensor *par = gr_matmul(ctx,
                                      gr_reshape(ctx, blk, gr_shape3(b, t, tt)),
                                      gr_reshape(ctx, hd, gr_shape3(b, tt, t)),
                                      0, 0);
    return gr_mul(ctx, par, OD);
}

static int parse_impl(struct gr_ctx *ctx, const struct nlp_structformer *m,
                      struct gr_tensor *ids, const int32_t *lengths,
                      int training, struct gr_rng rng,
                      struct nlp_structformer_out *out)
{
    const struct nlp_structformer_config *c = &m->cfg;
    const int64_t t = ids->shape[0], b = ids->shape[1];
    float *mk = malloc((size_t)(5 * t * b) * sizeof *mk);
    if (mk == NULL) {
        return gr_error(GR_ENOMEM, "structformer: out of memory");
    }
    float *tm = mk;                 /* [T, B] real */
    float *real = mk + t * b;       /* [B, T] real */
    float *gap = mk + 2 * t * b;    /* [B, T] real gap (t + 1 real) */
    float *hfill = mk + 3 * t * b;  /* -1e9 at padding */
    float *dfill = mk + 4 * t * b;  /* +1e9 where no gap */
    for (int64_t i = 0; i < t; i++) {
        for (int64_t bi = 0; bi < b; bi++) {
            int r = i < lengths[bi], g = i + 1 < lengths[bi];
            tm[i * b + bi] = (float)r;
            real[bi * t + i] = (float)r;
            gap[bi * t + i] = (float)g;
            hfill[bi * t + i] = r ? 0.0f : -SF_BIG;
            dfill[bi * t + i] = g ? 0.0f : SF_BIG;
        }
    }
    struct gr_tensor *TM = konst(ctx, gr_shape3(t, b, 1), tm);
    struct gr_tensor *R = konst(ctx, gr_shape2(b, t), real);
    struct gr_tensor *G = konst(ctx, gr_shape2(b, t), gap);
    struct gr_tensor *HF = konst(ctx, gr_shape2(b, t), hfill);
    struct gr_tensor *DF = konst(ctx, gr_shape2(b, t), dfill);
    free(mk);

    struct gr_tensor *g = gr_embedding(ctx, m->emb, ids);
    g = drop(ctx, g, c->parser_dropout, training, sub_rng(rng, 1, 0));
    for (int l = 0; l < c->parser_layers; l++) {
        g = gr_mul(ctx, g, TM);
        g = conv_ahead(ctx, g, m->pconv_w[l], m->pconv_b[l], c->conv / 2);
        g = gr_tanh(ctx, gr_layer_norm(ctx, g, NULL, NULL, SF_EPS));
        g = drop(ctx, g, c->parser_dropout, training, sub_rng(rng, 2, l));
    }
    struct gr_tensor *h = gr_linear(ctx, g, m->hlin_w, m->hlin_b);
    h = gr_tanh(ctx, gr_layer_norm(ctx, h, NULL, NULL, SF_EPS));
    h = batch_major(ctx, gr_linear(ctx, h, m->hout_w, m->hout_b), t, b);
    struct gr_tensor *height = gr_add(ctx, gr_mul(ctx, h, R), HF);
    struct gr_tensor *dd = conv_ahead(ctx, g, m->dconv_w, m->dconv_b, 1);
    dd = gr_tanh(ctx, gr_layer_norm(ctx, dd, NULL, NULL, SF_EPS));
    dd = batch_major(ctx, gr_linear(ctx, dd, m->dout_w, m->dout_b), t, b);
    struct gr_tensor *dist = gr_add(ctx, gr_mul(ctx, dd, G), DF);
    if (dist == NULL || height == NULL) {
        return gr_error(GR_EINVAL, "structformer: %s", gr_ctx_error(ctx));
    }
    struct gr_tensor *mu = calibration(ctx, dist, height, lengths, t, b,
                                       c->sentence_calibration);
    dist = gr_sub(ctx, dist, mu);
    out->distance = dist;
    out->height = height;
    out->head = parents(ctx, m, dist, height, t, b);
    if (out->head == NULL) {
        return gr_error(GR_EINVAL, "structformer: %s", gr_ctx_status(ctx)
                        ? gr_ctx_error(ctx) : gr_last_error());
    }
    return 0;
}

static int check_batch(struct gr_ctx *ctx, const struct nlp_structformer *m,
                       struct gr_tensor *ids, const int32_t *lengths)
{
    if (ids == NULL || ids->dtype != GR_I32 || ids->ndim != 2 ||
        lengths == NULL) {
        return gr_error(GR_EINVAL, "structformer: ids must be i32 [T, B] with "
                        "host lengths [B]");
    }
    for (int64_t bi = 0; bi < ids->shape[1]; bi++) {
        if (lengths[bi] < 1 || lengths[bi] > ids->shape[0]) {
            return gr_error(GR_EINVAL, "structformer: length %d of sequence "
                            "%lld outside [1, T = %lld]", lengths[bi],
                            (long long)bi, (long long)ids->shape[0]);
        }
    }
    if (m->pos && ids->shape[0] > m->cfg.pos_emb) {
        return gr_error(GR_EINVAL, "structformer: %lld positions, the position "
                        "table has %d", (long long)ids->shape[0],
                        m->cfg.pos_emb);
    }
    (void)ctx;
    return 0;
}

int nlp_structformer_parse(struct gr_ctx *ctx,
                           const struct nlp_structformer *m,
                           struct gr_tensor *ids, const int32_t *lengths,
                           struct nlp_structformer_out *out)
{
    memset(out, 0, sizeof *out);
    int rc = check_batch(ctx, m, ids, lengths);
    return rc < 0 ? rc
                  : parse_impl(ctx, m, ids, lengths, 0, gr_rng_make(0, 0), out);
}

struct gr_tensor *nlp_structformer_gates(struct gr_ctx *ctx,
                                         const struct nlp_structformer *m,
                                         struct gr_tensor *head)
{
    if (head == NULL) {
        return NULL;
    }
    const int64_t b = head->shape[0], t = head->shape[1], tt = t * t;
    const int64_t lh = (int64_t)m->cfg.layers * m->cfg.heads;
    struct gr_tensor *rel[2] = {
        gr_reshape(ctx, head, gr_shape3(b, tt, 1)),
        gr_reshape(ctx, gr_transpose(ctx, head, 1, 2), gr_shape3(b, tt, 1))};
    struct gr_tensor *w = gr_softmax(ctx, gr_reshape(ctx, m->rel,
                                                     gr_shape2(lh, 2)), NULL);
    struct gr_tensor *g = gr_matmul(ctx, gr_concat(ctx, 2, rel, 2), w, 0, 1);
    return gr_reshape(ctx, gr_transpose(ctx, g, 1, 2), gr_shape4(b, lh, t, t));
}

struct gr_tensor *nlp_structformer_layer_forward(
    struct gr_ctx *ctx, const struct nlp_structformer *m, int l,
    struct gr_tensor *x, struct gr_tensor *gate, struct gr_tensor *key_len,
    int training, struct gr_rng rng)
{
    const struct nlp_structformer_config *c = &m->cfg;
    const struct nlp_structformer_layer *L = &m->layer[l];
    if (x == NULL) {
        return NULL;
    }
    const int64_t d = c->d;
    struct gr_tensor *h = gr_layer_norm(ctx, x, L->n1w, L->n1b, SF_EPS);
    struct gr_tensor *qkv[3] = {NULL, NULL, NULL};
    const int64_t sizes[3] = {d, d, d};
    struct gr_tensor *z = gr_linear(ctx, h, L->in_w, L->in_b);
    if (z == NULL || gr_split(ctx, z, -1, 3, sizes, qkv) < 0) {
        return NULL;
    }
    struct gr_tensor *a = gr_attention_gated(
        ctx, qkv[0], qkv[1], qkv[2], c->heads, gate, key_len,
        training ? c->dropout_attn : 0.0f, sub_rng(rng, 10, (uint64_t)l));
    a = gr_linear(ctx, a, L->out_w, L->out_b);
    x = gr_add(ctx, x, drop(ctx, a, c->dropout, training,
                            sub_rng(rng, 11, (uint64_t)l)));
    h = gr_layer_norm(ctx, x, L->n2w, L->n2b, SF_EPS);
    h = gr_linear(ctx, h, L->w1, L->b1);
    h = gr_maximum(ctx, h, gr_scale(ctx, h, 0.01f)); /* LeakyReLU */
    h = drop(ctx, h, c->dropout, training, sub_rng(rng, 12, (uint64_t)l));
    h = gr_linear(ctx, h, L->w2, L->b2);
    return gr_add(ctx, x, drop(ctx, h, c->dropout, training,
                               sub_rng(rng, 13, (uint64_t)l)));
}

int nlp_structformer_forward(struct gr_ctx *ctx,
                             const struct nlp_structformer *m,
                             struct gr_tensor *ids, const int32_t *lengths,
                             struct gr_tensor *rows, int training,
                             struct gr_rng rng,
                             struct nlp_structformer_out *out)
{
    memset(out, 0, sizeof *out);
    const struct nlp_structformer_config *c = &m->cfg;
    int rc = check_batch(ctx, m, ids, lengths);
    if (rc < 0 || (rc = parse_impl(ctx, m, ids, lengths, training, rng,
                                   out)) < 0) {
        return rc;
    }
    const int64_t t = ids->shape[0], b = ids->shape[1];
    struct gr_tensor *gates = nlp_structformer_gates(ctx, m, out->head);
    struct gr_tensor *klen = gr_tensor_from_host(ctx, GR_I32, gr_shape1(b),
                                                 lengths);
    struct gr_tensor *x = gr_embedding(ctx, m->emb, ids);
    if (m->pos) {
        x = gr_add(ctx, x, gr_positions_learned(ctx, m->pos, t, 0));
    }
    x = drop(ctx, x, c->dropout, training, sub_rng(rng, 3, 0));
    for (int l = 0; l < c->layers; l++) {
        struct gr_tensor *gl = gr_slice(ctx, gates, 1,
                                        (int64_t)l * c->heads, c->heads);
        x = nlp_structformer_layer_forward(ctx, m, l, x, gl, klen, training,
                                           rng);
    }
    struct gr_tensor *zz = gr_layer_norm(ctx, x, m->nw, m->nb, SF_EPS);
    out->hidden = zz;
    zz = drop(ctx, zz, c->dropout, training, sub_rng(rng, 4, 0));
    if (rows != NULL) {
        zz = gr_embedding(ctx, gr_reshape(ctx, zz, gr_shape2(t * b, c->d)),
                          rows);
    }
    out->logits = gr_linear(ctx, zz, m->emb, m->out_bias);
    if (out->logits == NULL) {
        return gr_error(GR_EINVAL, "structformer: %s", gr_ctx_error(ctx));
    }
    return 0;
}

void nlp_structformer_decode(const float *par, int64_t stride,
                             const float *height, int32_t n,
                             int32_t *heads)
{
    int32_t root = 0;
    for (int32_t i = 1; i < n; i++) {
        if (height[i] > height[root]) {
            root = i;
        }
    }
    for (int32_t i = 0; i < n; i++) {
        if (i == root) {
            heads[i] = i;
            continue;
        }
        int32_t best = -1;
        for (int32_t k = 0; k < n; k++) {
            if (k != i && (best < 0 || par[i * stride + k] >
                                           par[i * stride + best])) {
                best = k;
            }
        }
        heads[i] = best < 0 ? i : best;
    }
}
