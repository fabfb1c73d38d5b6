/* The Transformer encoder stack (nlp/models/transformer.h) and the
 * "transformer" row of the encoder table: embedding (N(0, E^-1/2), scaled
 * by √E as fairseq and T2T do; a linear E -> D when the sizes differ),
 * sinusoidal positions, dropout, the stack with the padding as a key mask,
 * and two-query attention pooling (hybrid_and_trees.md §1.3: two learned
 * query vectors, each a softmax-weighted sum over the real positions,
 * concatenated -> [B, 2D]) for every task. The row "ftt" is the same
 * encoder with the FastTrees-Transformer block (ft_gate), "ftt-conv" with
 * its Conv. FastTrees form (ft_conv). */
#include "nlp/models/transformer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "nlp/models/encoder.h"

struct nlp_transformer_config nlp_transformer_config_default(int d)
{
    struct nlp_transformer_config c;
    memset(&c, 0, sizeof c);
    c.d = d;
    c.layers = 2;
    c.heads = 4;
    c.ffn = 4 * d;
    c.dropout = 0.1f;
    c.dropout_attn = 0.1f;
    c.dropout_ffn = 0.1f;
    c.post_norm = 0;
    return c;
}

static struct gr_tensor *norm_param(struct gr_ctx *ctx, const char *prefix,
                                    const char *part, int d, float value)
{
    char name[300];
    snprintf(name, sizeof name, "%s.%s", prefix, part);
    struct gr_tensor *t = gr_param_new(ctx, name, gr_shape1(d));
    if (t != NULL && value != 0.0f && gr_tensor_fill(t, value) < 0) {
        return NULL;
    }
    return t;
}

int nlp_transformer_init(struct nlp_transformer *t, struct gr_ctx *ctx,
                         const char *prefix,
                         const struct nlp_transformer_config *c,
                         struct gr_rng rng)
{
    memset(t, 0, sizeof *t);
    if (c->d < 1 || c->layers < 1 || c->heads < 1 || c->d % c->heads != 0 ||
        c->ffn < 1) {
        return gr_error(GR_EINVAL, "transformer '%s': width %d, %d layers, "
                        "%d heads (dividing the width), ffn %d", prefix, c->d,
                        c->layers, c->heads, c->ffn);
    }
    if (!(c->ffn_neg_slope >= 0.0f && c->ffn_neg_slope < 1.0f)) {
        return gr_error(GR_EINVAL, "transformer '%s': FFN LeakyReLU slope "
                        "%g outside [0, 1)", prefix,
                        (double)c->ffn_neg_slope);
    }
    t->cfg = *c;
    t->layer = calloc((size_t)c->layers, sizeof *t->layer);
    if (t->layer == NULL) {
        return gr_error(GR_ENOMEM, "transformer: out of memory");
    }
    char p[256];
    for (int l = 0; l < c->layers; l++) {
        struct nlp_transformer_layer *L = &t->layer[l];
        struct gr_rng lr = gr_rng_make(rng.seed,
                                       gr_rng_stream(rng.stream, 3, l, 0));
        snprintf(p, sizeof p, "%s.layers.%d.self_attn", prefix, l);
        if (gr_mha_init(&L->attn, ctx, p, c->d, c->heads, lr) < 0) {
            return GR_EINVAL;
        }
        if (c->decoder) {
            snprintf(p, sizeof p, "%s.layers.%d.multihead_attn", prefix, l);
            if (gr_mha_init(&L->cross, ctx, p, c->d, c->heads, lr) < 0) {
                return GR_EINVAL;
            }
        }
        snprintf(p, sizeof p, "%s.layers.%d", prefix, l);
        if (c->decoder) {
            L->n3w = norm_param(ctx, p, "norm3.weight", c->d, 1.0f);
            L->n3b = norm_param(ctx, p, "norm3.bias", c->d, 0.0f);
            if (!L->n3w || !L->n3b) {
                return gr_error(GR_EINVAL, "transformer '%s': %s", prefix,
                                gr_ctx_error(ctx));
            }
        }
        if (gr_ffn_init(&L->ffn, ctx, p, c->d, c->ffn, lr) < 0) {
            return GR_EINVAL;
        }
        L->ffn.neg_slope = c->ffn_neg_slope;
        L->n1w = norm_param(ctx, p, "norm1.weight", c->d, 1.0f);
        L->n1b = norm_param(ctx, p, "norm1.bias", c->d, 0.0f);
        L->n2w = norm_param(ctx, p, "norm2.weight", c->d, 1.0f);
        L->n2b = norm_param(ctx, p, "norm2.bias", c->d, 0.0f);
        if (c->ft_gate) {
            char nm[300];
            snprintf(nm, sizeof nm, "%s.ft.weight", p);
            L->ftw = gr_param_new(ctx, nm, gr_shape2(3 * c->d, c->d));
            snprintf(nm, sizeof nm, "%s.ft.bias", p);
            L->ftb = gr_param_new(ctx, nm, gr_shape1(3 * c->d));
            float bound = 1.0f / sqrtf((float)c->d);
            if (!L->ftw || !L->ftb ||
                gr_init_uniform(L->ftw, -bound, bound, lr) < 0 ||
                gr_init_uniform(L->ftb, -bound, bound, lr) < 0) {
                return gr_error(GR_EINVAL, "transformer '%s': %s", prefix,
                                gr_ctx_error(ctx));
            }
            if (c->ft_conv) {
                float cb = 1.0f / sqrtf((float)(3 * c->d));
                snprintf(nm, sizeof nm, "%s.ft.conv.weight", p);
                L->ftcw = gr_param_new(ctx, nm,
                                       gr_shape3(3 * c->d, c->d, 3));
                snprintf(nm, sizeof nm, "%s.ft.conv.bias", p);
                L->ftcb = gr_param_new(ctx, nm, gr_shape1(3 * c->d));
                if (!L->ftcw || !L->ftcb ||
                    gr_init_uniform(L->ftcw, -cb, cb, lr) < 0 ||
                    gr_init_uniform(L->ftcb, -cb, cb, lr) < 0) {
                    return gr_error(GR_EINVAL, "transformer '%s': %s",
                                    prefix, gr_ctx_error(ctx));
                }
            }
        }
        if (!L->n1w || !L->n1b || !L->n2w || !L->n2b) {
            return gr_error(GR_EINVAL, "transformer '%s': %s", prefix,
                            gr_ctx_error(ctx));
        }
    }
    if (!c->post_norm) {
        t->nw = norm_param(ctx, prefix, "norm.weight", c->d, 1.0f);
        t->nb = norm_param(ctx, prefix, "norm.bias", c->d, 0.0f);
        if (!t->nw || !t->nb) {
            return gr_error(GR_EINVAL, "transformer '%s': %s", prefix,
                            gr_ctx_error(ctx));
        }
    }
    return 0;
}

/* G ⊙ x from the three pre-activations z = (F_a x, F_b x, F_h x). */
static struct gr_tensor *gate_from(struct gr_ctx *ctx, struct gr_tensor *x,
                                   struct gr_tensor *const *z)
{
    struct gr_tensor *a = gr_cumax(ctx, z[0]);
    struct gr_tensor *bb = gr_affine(ctx, gr_cumax(ctx, z[1]), -1.0f, 1.0f);
    struct gr_tensor *ab = gr_mul(ctx, a, bb);
    struct gr_tensor *g = gr_add(ctx, gr_mul(ctx, gr_sigmoid(ctx, z[2]), ab),
                                 gr_sub(ctx, a, ab));
    return gr_mul(ctx, g, x);
}

struct gr_tensor *nlp_fasttrees_gate(struct gr_ctx *ctx, struct gr_tensor *x,
                                     struct gr_tensor *w, struct gr_tensor *b)
{
    if (x == NULL) {
        return NULL;
    }
    int64_t d = x->shape[x->ndim - 1];
    const int64_t sizes[3] = {d, d, d};
    struct gr_tensor *z[3] = {NULL, NULL, NULL};
    struct gr_tensor *zz = gr_linear(ctx, x, w, b);
    if (zz == NULL || gr_split(ctx, zz, -1, 3, sizes, z) < 0) {
        return NULL;
    }
    return gate_from(ctx, x, z);
}

/* The layer's FastTrees module on x [T, B, D]: the linear form, or the
 * convolutional one (width 3 over positions; `causal`: the decoder's,
 * else same padding with the padded positions zeroed first, so a padded
 * batch equals its sequences alone). */
static struct gr_tensor *ft_module(struct gr_ctx *ctx,
                                   const struct nlp_transformer_layer *L,
                                   struct gr_tensor *x,
                                   struct gr_tensor *key_len, int causal)
{
    if (L->ftcw == NULL || x == NULL) {
        return nlp_fasttrees_gate(ctx, x, L->ftw, L->ftb);
    }
    const int64_t t = x->shape[0], b = x->shape[1], d = x->shape[2];
    struct gr_tensor *in = x;
    if (!causal) {
        if (key_len != NULL) {
            int32_t *len = malloc((size_t)b * sizeof *len);
            float *mk = malloc((size_t)(t * b) * sizeof *mk);
            int ok = len && mk && gr_tensor_to_host(key_len, len) == 0;
            for (int64_t i = 0; ok && i < t * b; i++) {
                mk[i] = i / b < len[i % b] ? 1.0f : 0.0f;
            }
            struct gr_tensor *m =
                ok ? gr_tensor_from_host(ctx, GR_F32, gr_shape3(t, b, 1), mk)
                   : NULL;
            free(len);
            free(mk);
            if (m == NULL) {
                gr_error(GR_ENOMEM, "transformer: the padding mask");
                return NULL;
            }
            in = gr_mul(ctx, x, m);
        }
        /* same padding: a causal conv over x and one zero step, shifted */
        struct gr_tensor *pair[2] = {in, gr_zeros(ctx, gr_shape3(1, b, d))};
        in = gr_concat(ctx, 2, pair, 0);
    }
    struct gr_tensor *c = gr_conv1d_causal(ctx, in, L->ftcw, L->ftcb, 1);
    if (c != NULL && !causal) {
        c = gr_slice(ctx, c, 0, 1, t);
    }
    const int64_t sizes[3] = {d, d, d};
    struct gr_tensor *cz[3] = {NULL, NULL, NULL}, *z[3];
    if (c == NULL || gr_split(ctx, c, -1, 3, sizes, cz) < 0) {
        return NULL;
    }
    for (int k = 0; k < 3; k++) {
        z[k] = gr_linear(ctx, cz[k], gr_slice(ctx, L->ftw, 0, k * d, d),
                         gr_slice(ctx, L->ftb, 0, k * d, d));
    }
    return gate_from(ctx, x, z);
}

static struct gr_tensor *drop(struct gr_ctx *ctx, struct gr_tensor *x,
                              float p, int training, struct gr_rng rng,
                              int site, int layer)
{
    if (!training || p <= 0.0f || x == NULL) {
        return x;
    }
    return gr_dropout(ctx, x, p,
                      gr_rng_make(rng.seed, gr_rng_stream(rng.stream, site,
                                                          layer, 0)));
}

struct gr_tensor *nlp_transformer_forward(struct gr_ctx *ctx,
                                          const struct nlp_transformer *t,
                                          struct gr_tensor *x,
                                          struct gr_tensor *key_len,
                                          int causal, int training,
                                          struct gr_rng rng)
{
    const struct nlp_transformer_config *c = &t->cfg;
    const float eps = 1e-5f;
    if (c->decoder) {
        gr_error(GR_EINVAL, "nlp_transformer_forward: a decoder stack runs "
                 "through nlp_transformer_decode");
        return NULL;
    }
    for (int l = 0; l < c->layers && x != NULL; l++) {
        const struct nlp_transformer_layer *L = &t->layer[l];
        struct gr_rng ar = gr_rng_make(rng.seed,
                                       gr_rng_stream(rng.stream, 21, l, 0));
        struct gr_rng fr = gr_rng_make(rng.seed,
                                       gr_rng_stream(rng.stream, 22, l, 0));
        float pa = training ? c->dropout_attn : 0.0f;
        float pf = training ? c->dropout_ffn : 0.0f;
        if (c->post_norm) {
            struct gr_tensor *a = gr_mha_forward(ctx, &L->attn, x, x, NULL,
                                                 key_len, causal, pa, ar);
            if (c->ft_gate) {
                a = ft_module(ctx, L, a, key_len, causal);
            }
            x = gr_layer_norm(ctx,
                              gr_add(ctx, x, drop(ctx, a, c->dropout,
                                                  training, rng, 23, l)),
                              L->n1w, L->n1b, eps);
            struct gr_tensor *f = gr_ffn_forward(ctx, &L->ffn, x, pf, fr);
            x = gr_layer_norm(ctx,
                              gr_add(ctx, x, drop(ctx, f, c->dropout,
                                                  training, rng, 24, l)),
                              L->n2w, L->n2b, eps);
        } else {
            struct gr_tensor *h = gr_layer_norm(ctx, x, L->n1w, L->n1b, eps);
            struct gr_tensor *a = gr_mha_forward(ctx, &L->attn, h, h, NULL,
                                                 key_len, causal, pa, ar);
            if (c->ft_gate) {
                a = ft_module(ctx, L, a, key_len, causal);
            }
            x = gr_add(ctx, x, drop(ctx, a, c->dropout, training, rng, 23, l));
            h = gr_layer_norm(ctx, x, L->n2w, L->n2b, eps);
            struct gr_tensor *f = gr_ffn_forward(ctx, &L->ffn, h, pf, fr);
            x = gr_add(ctx, x, drop(ctx, f, c->dropout, training, rng, 24, l));
        }
    }
    if (x != NULL && t->nw != NULL) {
        x = gr_layer_norm(ctx, x, t->nw, t->nb, eps);
    }
    return x;
}

struct gr_tensor *nlp_transformer_decode(struct gr_ctx *ctx,
                                         const struct nlp_transformer *t,
                                         struct gr_tensor *y,
                                         struct gr_tensor *memory,
                                         struct gr_tensor *mem_len,
                                         int training, struct gr_rng rng)
{
    const struct nlp_transformer_config *c = &t->cfg;
    const float eps = 1e-5f;
    if (!c->decoder) {
        gr_error(GR_EINVAL, "nlp_transformer_decode: the stack was made "
                 "without cfg.decoder");
        return NULL;
    }
    for (int l = 0; l < c->layers && y != NULL; l++) {
        const struct nlp_transformer_layer *L = &t->layer[l];
        struct gr_rng ar = gr_rng_make(rng.seed,
                                       gr_rng_stream(rng.stream, 21, l, 0));
        struct gr_rng cr = gr_rng_make(rng.seed,
                                       gr_rng_stream(rng.stream, 25, l, 0));
        struct gr_rng fr = gr_rng_make(rng.seed,
                                       gr_rng_stream(rng.stream, 22, l, 0));
        float pa = training ? c->dropout_attn : 0.0f;
        float pf = training ? c->dropout_ffn : 0.0f;
        if (c->post_norm) {
            struct gr_tensor *a = gr_mha_forward(ctx, &L->attn, y, y, NULL,
                                                 NULL, 1, pa, ar);
            if (c->ft_gate) {
                a = ft_module(ctx, L, a, NULL, 1);
            }
            y = gr_layer_norm(ctx,
                              gr_add(ctx, y, drop(ctx, a, c->dropout,
                                                  training, rng, 23, l)),
                              L->n1w, L->n1b, eps);
            a = gr_mha_forward(ctx, &L->cross, y, memory, NULL, mem_len, 0,
                               pa, cr);
            y = gr_layer_norm(ctx,
                              gr_add(ctx, y, drop(ctx, a, c->dropout,
                                                  training, rng, 26, l)),
                              L->n2w, L->n2b, eps);
            struct gr_tensor *f = gr_ffn_forward(ctx, &L->ffn, y, pf, fr);
            y = gr_layer_norm(ctx,
                              gr_add(ctx, y, drop(ctx, f, c->dropout,
                                                  training, rng, 24, l)),
                              L->n3w, L->n3b, eps);
        } else {
            struct gr_tensor *h = gr_layer_norm(ctx, y, L->n1w, L->n1b, eps);
            struct gr_tensor *a = gr_mha_forward(ctx, &L->attn, h, h, NULL,
                                                 NULL, 1, pa, ar);
            if (c->ft_gate) {
                a = ft_module(ctx, L, a, NULL, 1);
            }
            y = gr_add(ctx, y, drop(ctx, a, c->dropout, training, rng, 23, l));
            h = gr_layer_norm(ctx, y, L->n2w, L->n2b, eps);
            a = gr_mha_forward(ctx, &L->cross, h, memory, NULL, mem_len, 0,
                               pa, cr);
            y = gr_add(ctx, y, drop(ctx, a, c->dropout, training, rng, 26, l));
            h = gr_layer_norm(ctx, y, L->n3w, L->n3b, eps);
            struct gr_tensor *f = gr_ffn_forward(ctx, &L->ffn, h, pf, fr);
            y = gr_add(ctx, y, drop(ctx, f, c->dropout, training, rng, 24, l));
        }
    }
    if (y != NULL && t->nw != NULL) {
        y = gr_layer_norm(ctx, y, t->nw, t->nb, eps);
    }
    return y;
}

int nlp_transformer_cache_init(struct nlp_transformer_cache *c,
                               const struct nlp_transformer *t)
{
    memset(c, 0, sizeof *c);
    const size_t n = (size_t)t->cfg.layers;
    c->layers = t->cfg.layers;
    c->k = calloc(n, sizeof *c->k);
    c->v = calloc(n, sizeof *c->v);
    c->ck = calloc(n, sizeof *c->ck);
    c->cv = calloc(n, sizeof *c->cv);
    c->a = calloc(n, sizeof *c->a);
    if (!c->k || !c->v || !c->ck || !c->cv || !c->a) {
        nlp_transformer_cache_free(c);
        return gr_error(GR_ENOMEM, "transformer: out of memory (cache)");
    }
    return 0;
}

void nlp_transformer_cache_free(struct nlp_transformer_cache *c)
{
    free(c->k);
    free(c->v);
    free(c->ck);
    free(c->cv);
    free(c->a);
    memset(c, 0, sizeof *c);
}

/* prev (or NULL) followed by x along the positions. */
static struct gr_tensor *append(struct gr_ctx *ctx, struct gr_tensor *prev,
                                struct gr_tensor *x)
{
    if (prev == NULL || x == NULL) {
        return x;
    }
    struct gr_tensor *pair[2] = {prev, x};
    return gr_concat(ctx, 2, pair, 0);
}

/* Self-attention of the new position over the cached ones (h [1, B, D]). */
static struct gr_tensor *self_step(struct gr_ctx *ctx,
                                   const struct nlp_transformer_layer *L,
                                   struct gr_tensor *h,
                                   struct nlp_transformer_cache *c, int l)
{
    const int64_t d = L->attn.d;
    const int64_t sizes[3] = {d, d, d};
    struct gr_tensor *parts[3] = {NULL, NULL, NULL};
    struct gr_tensor *qkv = gr_linear(ctx, h, L->attn.in_w, L->attn.in_b);
    if (qkv == NULL || gr_split(ctx, qkv, -1, 3, sizes, parts) < 0) {
        return NULL;
    }
    c->k[l] = append(ctx, c->k[l], parts[1]);
    c->v[l] = append(ctx, c->v[l], parts[2]);
    if (c->k[l] == NULL || c->v[l] == NULL) {
        return NULL;
    }
    struct gr_tensor *a = gr_attention(ctx, parts[0], c->k[l], c->v[l],
                                       L->attn.heads, NULL, NULL, 0, 0.0f,
                                       gr_rng_make(0, 0));
    return gr_linear(ctx, a, L->attn.out_w, L->attn.out_b);
}

static struct gr_tensor *cross_step(struct gr_ctx *ctx,
                                    const struct nlp_transformer_layer *L,
                                    struct gr_tensor *h,
                                    struct gr_tensor *memory,
                                    struct gr_tensor *mem_len,
                                    struct nlp_transformer_cache *c, int l)
{
    const int64_t d = L->cross.d;
    if (c->ck[l] == NULL) {
        const int64_t sizes[2] = {d, d};
        struct gr_tensor *kv[2] = {NULL, NULL};
        struct gr_tensor *p =
            gr_linear(ctx, memory, gr_slice(ctx, L->cross.in_w, 0, d, 2 * d),
                      gr_slice(ctx, L->cross.in_b, 0, d, 2 * d));
        if (p == NULL || gr_split(ctx, p, -1, 2, sizes, kv) < 0) {
            return NULL;
        }
        c->ck[l] = kv[0];
        c->cv[l] = kv[1];
    }
    struct gr_tensor *q = gr_linear(ctx, h,
                                    gr_slice(ctx, L->cross.in_w, 0, 0, d),
                                    gr_slice(ctx, L->cross.in_b, 0, 0, d));
    struct gr_tensor *a = gr_attention(ctx, q, c->ck[l], c->cv[l],
                                       L->cross.heads, NULL, mem_len, 0,
                                       0.0f, gr_rng_make(0, 0));
    return gr_linear(ctx, a, L->cross.out_w, L->cross.out_b);
}

/* The FastTrees gate on the new attention output (the conv form sees the
 * outputs of the positions before it). */
static struct gr_tensor *ft_step(struct gr_ctx *ctx,
                                 const struct nlp_transformer_layer *L,
                                 struct gr_tensor *a,
                                 struct nlp_transformer_cache *c, int l)
{
    if (L->ftcw == NULL) {
        return ft_module(ctx, L, a, NULL, 1);
    }
    c->a[l] = append(ctx, c->a[l], a);
    struct gr_tensor *g = c->a[l] ? ft_module(ctx, L, c->a[l], NULL, 1)
                                  : NULL;
    return g ? gr_slice(ctx, g, 0, g->shape[0] - 1, 1) : NULL;
}

struct gr_tensor *nlp_transformer_decode_step(
    struct gr_ctx *ctx, const struct nlp_transformer *t, struct gr_tensor *y,
    struct gr_tensor *memory, struct gr_tensor *mem_len,
    struct nlp_transformer_cache *c)
{
    const struct nlp_transformer_config *cf = &t->cfg;
    const float eps = 1e-5f;
    if (!cf->decoder || c->layers != cf->layers) {
        gr_error(GR_EINVAL, "nlp_transformer_decode_step: a decoder stack "
                 "and its cache");
        return NULL;
    }
    for (int l = 0; l < cf->layers && y != NULL; l++) {
        const struct nlp_transformer_layer *L = &t->layer[l];
        if (cf->post_norm) {
            struct gr_tensor *a = self_step(ctx, L, y, c, l);
            if (cf->ft_gate) {
                a = ft_step(ctx, L, a, c, l);
            }
            y = gr_layer_norm(ctx, gr_add(ctx, y, a), L->n1w, L->n1b, eps);
            a = cross_step(ctx, L, y, memory, mem_len, c, l);
            y = gr_layer_norm(ctx, gr_add(ctx, y, a), L->n2w, L->n2b, eps);
            struct gr_tensor *f = gr_ffn_forward(ctx, &L->ffn, y, 0.0f,
                                                 gr_rng_make(0, 0));
            y = gr_layer_norm(ctx, gr_add(ctx, y, f), L->n3w, L->n3b, eps);
        } else {
            struct gr_tensor *h = gr_layer_norm(ctx, y, L->n1w, L->n1b, eps);
            struct gr_tensor *a = self_step(ctx, L, h, c, l);
            if (cf->ft_gate) {
                a = ft_step(ctx, L, a, c, l);
            }
            y = gr_add(ctx, y, a);
            h = gr_layer_norm(ctx, y, L->n2w, L->n2b, eps);
            y = gr_add(ctx, y, cross_step(ctx, L, h, memory, mem_len, c, l));
            h = gr_layer_norm(ctx, y, L->n3w, L->n3b, eps);
            y = gr_add(ctx, y, gr_ffn_forward(ctx, &L->ffn, h, 0.0f,
                                              gr_rng_make(0, 0)));
        }
    }
    if (y != NULL && t->nw != NULL) {
        y = gr_layer_norm(ctx, y, t->nw, t->nb, eps);
    }
    if (y != NULL) {
        c->t++;
    }
    return y;
}

/* x [T, B, D] with its batch rows reordered by rows (host copies). */
static struct gr_tensor *select_rows(struct gr_ctx *ctx, struct gr_tensor *x,
                                     const int32_t *rows)
{
    if (x == NULL) {
        return NULL;
    }
    const int64_t t = x->shape[0], b = x->shape[1], d = x->shape[2];
    float *h = malloc((size_t)(2 * x->numel) * sizeof *h);
    if (h == NULL || gr_tensor_to_host(x, h) < 0) {
        free(h);
        return NULL;
    }
    float *o = h + x->numel;
    for (int64_t i = 0; i < t; i++) {
        for (int64_t j = 0; j < b; j++) {
            memcpy(o + (i * b + j) * d, h + (i * b + rows[j]) * d,
                   (size_t)d * sizeof *o);
        }
    }
    struct gr_tensor *r = gr_tensor_from_host(ctx, GR_F32,
                                              gr_shape3(t, b, d), o);
    free(h);
    return r;
}

int nlp_transformer_cache_select(struct gr_ctx *ctx,
                                 struct nlp_transformer_cache *c,
                                 const int32_t *rows)
{
    for (int l = 0; l < c->layers; l++) {
        struct gr_tensor **all[3] = {&c->k[l], &c->v[l], &c->a[l]};
        for (int k = 0; k < 3; k++) {
            if (*all[k] == NULL) {
                continue;
            }
            *all[k] = select_rows(ctx, *all[k], rows);
            if (*all[k] == NULL) {
                return gr_error(GR_ENOMEM, "transformer: the cache's rows");
            }
        }
    }
    return 0;
}

void nlp_transformer_free(struct nlp_transformer *t)
{
    free(t->layer);
    memset(t, 0, sizeof *t);
}

/* ---- the encoder-table row ---- */

struct tf_encoder {
    struct gr_tensor *emb;     /* [V, E] enc.emb.weight */
    struct gr_tensor *proj;    /* [D, E] enc.proj.weight or NULL */
    struct gr_tensor *queries; /* [2, D] enc.pool.queries */
    struct nlp_transformer stack;
};

static void tf_defaults(struct nlp_encoder_config *c, const char *task)
{
    /* grove's choices (the OM table's Transformer rows give no sizes):
     * logic as the hybrid paper's logic setup (hybrid_and_trees.md §1.3:
     * 256 wide, two layers, dropout 0.2), ListOps T2T "tiny", SST 300 wide
     * like the recurrent encoders */
    c->emsize = c->hidden = 128;
    c->layers = 2;
    c->heads = 4;
    c->ffn = 512;
    c->dropout_in = c->dropout_cell = c->dropout_attn = 0.1f;
    c->left_pad = 0;
    if (task != NULL && strcmp(task, "logic") == 0) {
        c->emsize = c->hidden = 256;
        c->ffn = 1024;
        c->dropout_in = c->dropout_cell = 0.2f;
    } else if (task != NULL && strncmp(task, "sst", 3) == 0) {
        c->emsize = c->hidden = 300;
        c->heads = 6;
        c->ffn = 600;
        c->dropout_in = c->dropout_cell = 0.3f;
    }
}

static int tf_init_any(struct nlp_encoder *e, struct gr_ctx *ctx,
                       struct gr_rng rng, int ft_gate, int ft_conv)
{
    const struct nlp_encoder_config *c = &e->cfg;
    if (c->hidden % c->heads != 0) {
        return gr_error(GR_EINVAL, "transformer: --nhid %d is not a multiple "
                        "of --heads %d", (int)c->hidden, (int)c->heads);
    }
    struct tf_encoder *t = calloc(1, sizeof *t);
    if (t == NULL) {
        return gr_error(GR_ENOMEM, "transformer: out of memory");
    }
    e->impl = t;
    t->emb = gr_param_new(ctx, "enc.emb.weight",
                          gr_shape2(c->vocab, c->emsize));
    if (c->emsize != c->hidden) {
        t->proj = gr_param_new(ctx, "enc.proj.weight",
                               gr_shape2(c->hidden, c->emsize));
    }
    t->queries = gr_param_new(ctx, "enc.pool.queries",
                              gr_shape2(2, c->hidden));
    if (t->emb == NULL || t->queries == NULL ||
        (c->emsize != c->hidden && t->proj == NULL)) {
        return gr_error(GR_EINVAL, "transformer: %s", gr_ctx_error(ctx));
    }
    struct gr_rng r1 = gr_rng_make(rng.seed,
                                   gr_rng_stream(rng.stream, 1, 0, 0));
    float qb = 1.0f / sqrtf((float)c->hidden);
    int rc = gr_tensor_rand_normal(t->emb, 0.0f,
                                   1.0f / sqrtf((float)c->emsize), r1);
    if (rc == 0) {
        rc = gr_init_uniform(t->queries, -qb, qb, r1);
    }
    if (rc == 0 && t->proj != NULL) {
        float pb = 1.0f / sqrtf((float)c->emsize);
        rc = gr_init_uniform(t->proj, -pb, pb, r1);
    }
    if (rc < 0) {
        return rc;
    }
    struct nlp_transformer_config tc = nlp_transformer_config_default(
        c->hidden);
    tc.layers = c->layers;
    tc.heads = c->heads;
    tc.ffn = c->ffn;
    tc.dropout = c->dropout_cell;
    tc.dropout_attn = c->dropout_attn;
    tc.dropout_ffn = c->dropout_cell;
    tc.post_norm = c->post_norm;
    tc.ft_gate = ft_gate;
    tc.ft_conv = ft_conv;
    return nlp_transformer_init(&t->stack, ctx, "enc", &tc,
                                gr_rng_make(rng.seed,
                                            gr_rng_stream(rng.stream, 2, 0,
                                                          0)));
}

static int tf_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                   struct gr_rng rng)
{
    return tf_init_any(e, ctx, rng, 0, 0);
}

static int ftt_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                    struct gr_rng rng)
{
    return tf_init_any(e, ctx, rng, 1, 0);
}

static int ftt_conv_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                         struct gr_rng rng)
{
    return tf_init_any(e, ctx, rng, 1, 1);
}

struct gr_tensor *nlp_two_query_pool(struct gr_ctx *ctx,
                                     struct gr_tensor *queries,
                                     struct gr_tensor *x,
                                     struct gr_tensor *key_len,
                                     struct gr_rng rng)
{
    if (x == NULL) {
        return NULL;
    }
    const int64_t B = x->shape[1], D = x->shape[2];
    struct gr_tensor *q = gr_add(ctx, gr_zeros(ctx, gr_shape3(2, B, D)),
                                 gr_reshape(ctx, queries, gr_shape3(2, 1, D)));
    struct gr_tensor *pooled = gr_attention(ctx, q, x, x, 1, NULL, key_len, 0,
                                            0.0f, rng);
    if (pooled == NULL) {
        return NULL;
    }
    return gr_reshape(ctx, gr_transpose(ctx, pooled, 0, 1),
                      gr_shape2(B, 2 * D));
}

static struct gr_tensor *tf_encode(struct nlp_encoder *e,
                                   const struct nlp_encoder_batch *b,
                                   int training, struct gr_rng rng)
{
    struct tf_encoder *t = e->impl;
    struct gr_ctx *ctx = e->ctx;
    const struct nlp_encoder_config *c = &e->cfg;
    for (int32_t j = 0; j < b->B; j++) {
        if (b->lengths[j] < 1 || b->lengths[j] > b->T) {
            gr_error(GR_EINVAL, "transformer: sequence %d has length %d of "
                     "%d", (int)j, (int)b->lengths[j], (int)b->T);
            return NULL;
        }
    }
    struct gr_tensor *kl = gr_tensor_from_host(ctx, GR_I32, gr_shape1(b->B),
                                               b->lengths);
    struct gr_tensor *x = gr_scale(ctx, gr_embedding(ctx, t->emb, b->ids),
                                   sqrtf((float)c->emsize));
    if (t->proj != NULL) {
        x = gr_linear(ctx, x, t->proj, NULL);
    }
    x = gr_add(ctx, x, gr_positions_sinusoidal(ctx, b->T, c->hidden, 0));
    x = drop(ctx, x, c->dropout_in, training, rng, 20, 0);
    x = nlp_transformer_forward(ctx, &t->stack, x, kl, 0, training, rng);
    return nlp_two_query_pool(ctx, t->queries, x, kl, rng);
}

static int32_t tf_out_dim(const struct nlp_encoder *e)
{
    return 2 * e->cfg.hidden;
}

static void tf_free(struct nlp_encoder *e)
{
    struct tf_encoder *t = e->impl;
    if (t != NULL) {
        nlp_transformer_free(&t->stack);
        free(t);
    }
}

const struct nlp_encoder_kind nlp_encoder_transformer = {
    "transformer",
    "Transformer encoder (pre-norm; --post-norm), sinusoidal positions, "
    "two-query attention pooling",
    tf_defaults,
    tf_init,
    tf_encode,
    tf_out_dim,
    tf_free,
    NULL,
};

const struct nlp_encoder_kind nlp_encoder_ftt = {
    "ftt",
    "FastTrees-Transformer: the transformer with the FastTrees gate on "
    "every attention output (docs/models.md)",
    tf_defaults,
    ftt_init,
    tf_encode,
    tf_out_dim,
    tf_free,
    NULL,
};

const struct nlp_encoder_kind nlp_encoder_ftt_conv = {
    "ftt-conv",
    "FastTrees-Transformer with the Conv. FastTrees form of F (width-3 "
    "convolution over positions; docs/models.md)",
    tf_defaults,
    ftt_conv_init,
    tf_encode,
    tf_out_dim,
    tf_free,
    NULL,
};
