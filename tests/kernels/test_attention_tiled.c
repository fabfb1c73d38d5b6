/* The fused attention path (kernels/attention_fused_cuda.cu), in two modes:
 *
 *   test_kernels_attention_tiled   (ctest kernels_attention_tiled)
 *       The tiled algorithm of the CUDA kernels written here in plain C
 *       (tiles of 32 queries and 32 keys, the 8 lanes of a row and their
 *       butterfly sum, the online softmax, the backward's dK/dV pass per
 *       key tile and dQ pass per query tile recomputing P from the lse),
 *       installed as the CPU's fused entries (gr_attn_cpu_set_fused) so
 *       that gr_attention's fused dispatch, tape and backward run it; its
 *       output and q, k, v gradients must equal the chunked composition's
 *       (the fused path off) to 1e-5 relative, with key padding, causal
 *       masks with Tq != Tk (queries that see no key), a batch item with no
 *       key, heads of 128, at tiles of 32 (the kernels') and of 5 and 8
 *       (many tile boundaries); a gradient 1.0001 times too large and an
 *       online softmax that forgets to rescale must both be rejected.
 *       Also: the fused path runs (its counter) only where it may (no bias,
 *       no dropout, dk, dv <= 128), a q that takes no gradient, q = k = v
 *       (three gradients into one buffer), and the step-arena peak of
 *       forward + backward, linear in T and below the composition's.
 *   test_kernels_attention_tiled --parity
 *                                  (ctest kernels_attention_fused_cuda_parity)
 *       the CUDA fused path against the CUDA composition and the CPU, output
 *       and every gradient, on the same cases and larger ones; two fused
 *       runs bitwise equal (no atomics); the step-arena peak and time of
 *       one forward + backward, fused against composed, printed. Exit 77
 *       without a GPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"
#include "kernels/attention.h"
#include "kernels/attention_internal.h"
#include "kernels/device.h"
#include "kernels/ops.h"
#include "kernels/rng.h"
#include "kernels/tape.h"
#include "kernels/tensor.h"
#include "tests/test.h"

/* ---- the tiled algorithm of attention_fused_cuda.cu, in C ---- */

#define LANES 8                  /* threads per row (kLanes) */
#define MAXD GR_ATTN_FUSED_MAX_D /* 128 */

static int tile = 32; /* rows per tile (kTile = 32 in the kernels) */
static int broken;    /* 1: the online softmax does not rescale (must fail) */

/* The kernels' dot product: lane t sums columns t, t + 8, ... in order,
 * then the butterfly of shuffles (xor 4, 2, 1) adds the 8 partials. */
static float dot_lanes(const float *x, const float *y, int d)
{
    float v[LANES], w[LANES];
    for (int t = 0; t < LANES; t++) {
        float s = 0.0f;
        for (int c = t; c < d; c += LANES) {
            s += x[c] * y[c];
        }
        v[t] = s;
    }
    for (int off = 4; off >= 1; off >>= 1) {
        for (int a = 0; a < LANES; a++) {
            w[a] = v[a] + v[a ^ off];
        }
        memcpy(v, w, sizeof v);
    }
    return v[0];
}

static int64_t key_limit(const struct gr_attn_fused *f, int64_t b, int64_t i)
{
    int64_t lim = f->tk;
    if (f->key_len && f->key_len[b] < lim) {
        lim = f->key_len[b];
    }
    if (f->causal && i + (f->tk - f->tq) + 1 < lim) {
        lim = i + (f->tk - f->tq) + 1;
    }
    return lim < 0 ? 0 : lim;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* k_fused_fwd: per (query tile, b·H + h), a loop over key tiles. */
static int tiled_fwd(void *st, const float *q, const float *k, const float *v,
                     float *o, float *lse, const struct gr_attn_fused *f)
{
    (void)st;
    const int dk = (int)f->dk, dv = (int)f->dv;
    const int64_t ldq = f->b * f->heads * f->dk, ldv = f->b * f->heads * f->dv;
    float *acc = malloc((size_t)tile * MAXD * sizeof *acc);
    float *run_max = malloc((size_t)tile * sizeof *run_max);
    float *run_sum = malloc((size_t)tile * sizeof *run_sum);
    float *s = malloc((size_t)tile * sizeof *s);
    if (!acc || !run_max || !run_sum || !s) {
        free(acc), free(run_max), free(run_sum), free(s);
        return gr_error(GR_ENOMEM, "tiled_fwd: out of memory");
    }
    for (int64_t bh = 0; bh < f->b * f->heads; bh++) {
        const int64_t b = bh / f->heads;
        for (int64_t i0 = 0; i0 < f->tq; i0 += tile) {
            const int64_t kend = key_limit(f, b, min64(i0 + tile, f->tq) - 1);
            for (int r = 0; r < tile; r++) {
                run_max[r] = -INFINITY;
                run_sum[r] = 0.0f;
                memset(acc + r * MAXD, 0, MAXD * sizeof *acc);
            }
            for (int64_t j0 = 0; j0 < kend; j0 += tile) {
                for (int r = 0; r < tile && i0 + r < f->tq; r++) {
                    const int64_t i = i0 + r, lim = key_limit(f, b, i);
                    const float *qi = q + i * ldq + bh * dk;
                    float tile_max = -INFINITY;
                    for (int jr = 0; jr < tile; jr++) {
                        int64_t j = j0 + jr;
                        float z = j < f->tk ? f->scale * dot_lanes(
                                                  qi, k + j * ldq + bh * dk,
                                                  dk)
                                            : 0.0f;
                        s[jr] = j < lim ? z : -INFINITY;
                        tile_max = fmaxf(tile_max, s[jr]);
                    }
                    float new_max = fmaxf(run_max[r], tile_max);
                    if (new_max == -INFINITY) {
                        continue;
                    }
                    float alpha = broken ? 1.0f : expf(run_max[r] - new_max);
                    float tile_sum = 0.0f, *a = acc + r * MAXD;
                    for (int c = 0; c < dv; c++) {
                        a[c] *= alpha;
                    }
                    for (int jr = 0; jr < tile; jr++) {
                        float p = s[jr] == -INFINITY ? 0.0f
                                                     : expf(s[jr] - new_max);
                        tile_sum += p;
                        if (p == 0.0f) {
                            continue; /* (a key past Tk has p = 0) */
                        }
                        const float *vj = v + (j0 + jr) * ldv + bh * dv;
                        for (int c = 0; c < dv; c++) {
                            a[c] += p * vj[c];
                        }
                    }
                    run_sum[r] = run_sum[r] * alpha + tile_sum;
                    run_max[r] = new_max;
                }
            }
            for (int r = 0; r < tile && i0 + r < f->tq; r++) {
                const int64_t i = i0 + r;
                float inv = run_sum[r] > 0.0f ? 1.0f / run_sum[r] : 0.0f;
                for (int c = 0; c < dv; c++) {
                    o[i * ldv + bh * dv + c] = acc[r * MAXD + c] * inv;
                }
                lse[bh * f->tq + i] = run_sum[r] > 0.0f
                                          ? run_max[r] + logf(run_sum[r])
                                          : -INFINITY;
            }
        }
    }
    free(acc), free(run_max), free(run_sum), free(s);
    return 0;
}

/* k_fused_bwd_kv then k_fused_bwd_q. */
static int tiled_bwd(void *st, const float *q, const float *k, const float *v,
                     const float *go, const float *lse, const float *delta,
                     float *gq, float *gk, float *gv,
                     const struct gr_attn_fused *f)
{
    (void)st;
    const int dk = (int)f->dk, dv = (int)f->dv;
    const int64_t ldq = f->b * f->heads * f->dk, ldv = f->b * f->heads * f->dv;
    float *acc_k = calloc((size_t)tile * MAXD, sizeof *acc_k);
    float *acc_v = calloc((size_t)tile * MAXD, sizeof *acc_v);
    if (!acc_k || !acc_v) {
        free(acc_k), free(acc_v);
        return gr_error(GR_ENOMEM, "tiled_bwd: out of memory");
    }
    for (int64_t bh = 0; (gk || gv) && bh < f->b * f->heads; bh++) {
        const int64_t b = bh / f->heads;
        const int64_t klen = f->key_len && f->key_len[b] < f->tk
                                 ? f->key_len[b] : f->tk;
        for (int64_t j0 = 0; j0 < f->tk; j0 += tile) {
            int64_t istart = 0;
            if (f->causal && j0 - (f->tk - f->tq) > 0) {
                istart = (j0 - (f->tk - f->tq)) / tile * tile;
            }
            if (j0 >= klen) {
                istart = f->tq;
            }
            memset(acc_k, 0, (size_t)tile * MAXD * sizeof *acc_k);
            memset(acc_v, 0, (size_t)tile * MAXD * sizeof *acc_v);
            for (int64_t i0 = istart; i0 < f->tq; i0 += tile) {
                for (int r = 0; r < tile && j0 + r < f->tk; r++) {
                    const int64_t j = j0 + r;
                    const float *kj = k + j * ldq + bh * dk;
                    const float *vj = v + j * ldv + bh * dv;
                    float *ak = acc_k + r * MAXD, *av = acc_v + r * MAXD;
                    for (int ir = 0; ir < tile && i0 + ir < f->tq; ir++) {
                        const int64_t i = i0 + ir;
                        const float *qi = q + i * ldq + bh * dk;
                        const float *gi = go + i * ldv + bh * dv;
                        float l = lse[bh * f->tq + i];
                        float z = f->scale * dot_lanes(kj, qi, dk);
                        float dp = dot_lanes(vj, gi, dv);
                        int seen = j < klen &&
                                   (!f->causal || j <= i + (f->tk - f->tq)) &&
                                   l != -INFINITY;
                        float p = seen ? expf(z - l) : 0.0f;
                        float ds = p * (dp - delta[bh * f->tq + i]);
                        for (int c = 0; c < dv; c++) {
                            av[c] += p * gi[c];
                        }
                        for (int c = 0; c < dk; c++) {
                            ak[c] += ds * qi[c];
                        }
                    }
                }
            }
            for (int r = 0; r < tile && j0 + r < f->tk; r++) {
                const int64_t j = j0 + r;
                for (int c = 0; gk && c < dk; c++) {
                    gk[j * ldq + bh * dk + c] += f->scale * acc_k[r * MAXD + c];
                }
                for (int c = 0; gv && c < dv; c++) {
                    gv[j * ldv + bh * dv + c] += acc_v[r * MAXD + c];
                }
            }
        }
    }
    for (int64_t bh = 0; gq && bh < f->b * f->heads; bh++) {
        const int64_t b = bh / f->heads;
        for (int64_t i0 = 0; i0 < f->tq; i0 += tile) {
            const int64_t kend = key_limit(f, b, min64(i0 + tile, f->tq) - 1);
            memset(acc_k, 0, (size_t)tile * MAXD * sizeof *acc_k);
            for (int64_t j0 = 0; j0 < kend; j0 += tile) {
                for (int r = 0; r < tile && i0 + r < f->tq; r++) {
                    const int64_t i = i0 + r, lim = key_limit(f, b, i);
                    const float *qi = q + i * ldq + bh * dk;
                    const float *gi = go + i * ldv + bh * dv;
                    const float l = lse[bh * f->tq + i];
                    const float dl = delta[bh * f->tq + i];
                    float *dq = acc_k + r * MAXD;
                    for (int jr = 0; jr < tile && j0 + jr < f->tk; jr++) {
                        const int64_t j = j0 + jr;
                        const float *kj = k + j * ldq + bh * dk;
                        float z = f->scale * dot_lanes(qi, kj, dk);
                        float dp = dot_lanes(gi, v + j * ldv + bh * dv, dv);
                        float p = j < lim && l != -INFINITY ? expf(z - l)
                                                            : 0.0f;
                        float ds = p * (dp - dl);
                        for (int c = 0; c < dk; c++) {
                            dq[c] += ds * kj[c];
                        }
                    }
                }
            }
            for (int r = 0; r < tile && i0 + r < f->tq; r++) {
                for (int c = 0; c < dk; c++) {
                    gq[(i0 + r) * ldq + bh * dk + c] +=
                        f->scale * acc_k[r * MAXD + c];
                }
            }
        }
    }
    free(acc_k), free(acc_v);
    return 0;
}

/* ---- cases ---- */

struct fcase {
    const char *name;
    int tq, tk, b, h, dk, dv;
    int key_len[4]; /* per batch item; all -1: no padding */
    int causal;
};

static const struct fcase cases[] = {
    {"self, no mask, one tile", 5, 5, 2, 2, 3, 3, {-1, -1}, 0},
    {"self, key padding + causal, 3 tiles each way", 70, 70, 3, 2, 8, 8,
     {70, 33, 1}, 1},
    {"cross Tq < Tk, causal offset, padding, dv != dk", 40, 75, 2, 3, 16, 12,
     {75, 50}, 1},
    {"cross Tq > Tk, causal: queries 0..33 see no key", 67, 33, 2, 2, 5, 9,
     {33, 20}, 1},
    {"a batch item with no key, Tq = Tk = 64 (exact tiles)", 64, 64, 2, 1,
     32, 32, {0, 64}, 0},
    {"heads of 128, Tk 65", 33, 65, 1, 2, 128, 128, {-1, -1}, 0},
    {"one query, causal, padding, dk 64 dv 24", 1, 97, 2, 2, 64, 24, {97, 40},
     1},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

/* larger cases for the GPU (parity only) */
static const struct fcase big_cases[] = {
    {"T 300, 4 heads of 64, causal + padding", 300, 300, 2, 4, 64, 64,
     {300, 257}, 1},
    {"cross 129 x 515, heads of 128 and 96, padding", 129, 515, 2, 2, 128,
     96, {515, 260}, 0},
};
#define N_BIG ((int)(sizeof big_cases / sizeof big_cases[0]))

struct inputs {
    float *x[3]; /* q, k, v */
    int64_t n[3], n_out;
    float *proj; /* the loss is sum(out ⊙ proj) */
};

static void inputs_make(struct inputs *in, const struct fcase *c,
                        uint64_t seed)
{
    in->n[0] = (int64_t)c->tq * c->b * c->h * c->dk;
    in->n[1] = (int64_t)c->tk * c->b * c->h * c->dk;
    in->n[2] = (int64_t)c->tk * c->b * c->h * c->dv;
    in->n_out = (int64_t)c->tq * c->b * c->h * c->dv;
    uint64_t key = gr_rng_key(gr_rng_make(seed, 1));
    uint64_t ctr = 0;
    for (int k = 0; k < 3; k++) {
        in->x[k] = malloc((size_t)in->n[k] * sizeof(float));
        for (int64_t i = 0; i < in->n[k]; i++) {
            /* q, k in [-2, 2): peaked rows, so that a missing rescale of
             * the online softmax shows */
            float u = gr_rng_uniform(key, ctr++);
            in->x[k][i] = k < 2 ? 4.0f * u - 2.0f : 2.0f * u - 1.0f;
        }
    }
    in->proj = malloc((size_t)in->n_out * sizeof(float));
    for (int64_t i = 0; i < in->n_out; i++) {
        in->proj[i] = 2.0f * gr_rng_uniform(key, ctr++) - 1.0f;
    }
}

static void inputs_free(struct inputs *in)
{
    for (int k = 0; k < 3; k++) {
        free(in->x[k]);
    }
    free(in->proj);
}

struct result {
    float *out, *g[3];
};

static void result_alloc(struct result *r, const struct inputs *in)
{
    r->out = malloc((size_t)in->n_out * sizeof(float));
    for (int k = 0; k < 3; k++) {
        r->g[k] = malloc((size_t)in->n[k] * sizeof(float));
    }
}

static void result_free(struct result *r)
{
    free(r->out);
    for (int k = 0; k < 3; k++) {
        free(r->g[k]);
    }
}

static struct gr_ctx *new_ctx(enum gr_device dev)
{
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.device = dev;
    cfg.step_chunk_bytes = 1 << 20;
    struct gr_ctx *ctx = NULL;
    if (gr_ctx_new(&ctx, &cfg) < 0) {
        fprintf(stderr, "context: %s\n", gr_last_error());
        return NULL;
    }
    return ctx;
}

/* Runs gr_attention on ctx with the fused path on or off (q takes a
 * gradient when q_grad), the loss sum(out ⊙ proj) and its backward; the
 * output and gradients (zero where none) into res. Returns how many fused
 * runs it made (forward + backward), or -1. */
static int run_case(struct gr_ctx *ctx, const struct fcase *c,
                    const struct inputs *in, int fused, int q_grad,
                    struct result *res)
{
    gr_step_reset(ctx);
    int old = gr_attention_set_fused(fused);
    int64_t runs0 = gr_attention_fused_runs();
    struct gr_tensor *t[3];
    const struct gr_shape sh[3] = {
        gr_shape3(c->tq, c->b, (int64_t)c->h * c->dk),
        gr_shape3(c->tk, c->b, (int64_t)c->h * c->dk),
        gr_shape3(c->tk, c->b, (int64_t)c->h * c->dv)};
    for (int k = 0; k < 3; k++) {
        t[k] = gr_tensor_from_host(ctx, GR_F32, sh[k], in->x[k]);
        if (t[k] == NULL) {
            gr_attention_set_fused(old);
            return -1;
        }
        gr_tensor_set_requires_grad(t[k], k > 0 || q_grad);
    }
    struct gr_tensor *len = NULL;
    if (c->key_len[0] >= 0) {
        len = gr_tensor_from_host(ctx, GR_I32, gr_shape1(c->b), c->key_len);
    }
    struct gr_tensor *y = gr_attention(ctx, t[0], t[1], t[2], c->h, NULL, len,
                                       c->causal, 0.0f, gr_rng_make(1, 2));
    struct gr_tensor *pr = gr_tensor_from_host(
        ctx, GR_F32, gr_tensor_shape(y ? y : t[0]), in->proj);
    struct gr_tensor *loss = y && pr ? gr_sum(ctx, gr_mul(ctx, y, pr)) : NULL;
    int rc = loss == NULL || gr_backward(ctx, loss) < 0 ? -1 : 0;
    gr_attention_set_fused(old);
    if (rc < 0) {
        fprintf(stderr, "%s: %s\n", c->name, gr_ctx_error(ctx));
        return -1;
    }
    gr_tensor_to_host(y, res->out);
    for (int k = 0; k < 3; k++) {
        if (t[k]->grad) {
            gr_tensor_to_host(t[k]->grad, res->g[k]);
        } else {
            memset(res->g[k], 0, (size_t)in->n[k] * sizeof(float));
        }
    }
    return (int)(gr_attention_fused_runs() - runs0);
}

/* max |a·scale - b| / max |b| over n elements (0 when both are 0): the
 * error against the tensor's size (float sums of ~100 products round at
 * ~1e-7 of it; an element near 0 cannot be held to its own size). */
static double worst_rel(const float *a, const float *b, int64_t n,
                        double scale)
{
    double m = 0.0, w = 0.0;
    for (int64_t e = 0; e < n; e++) {
        m = fmax(m, fabs(b[e]));
        w = fmax(w, fabs((double)a[e] * scale - (double)b[e]));
    }
    return m > 0.0 ? w / m : (w > 0.0 ? INFINITY : 0.0);
}

/* The worst of output and gradients, a (scaled gradients) against b. */
static double worst_all(const struct result *a, const struct result *b,
                        const struct inputs *in, double gscale)
{
    double w = worst_rel(a->out, b->out, in->n_out, 1.0);
    for (int k = 0; k < 3; k++) {
        w = fmax(w, worst_rel(a->g[k], b->g[k], in->n[k], gscale));
    }
    return w;
}

/* The truth in double, written from the definition (attention.h), not
 * from either algorithm: out, and the gradients of sum(out ⊙ proj). */
static void truth(const struct fcase *c, const struct inputs *in,
                  struct result *res)
{
    const int64_t B = c->b, H = c->h, dk = c->dk, dv = c->dv;
    const int64_t ldq = B * H * dk, ldv = B * H * dv;
    const double scale = 1.0 / sqrt((double)dk);
    double *p = malloc((size_t)c->tk * sizeof *p);
    double *ds = malloc((size_t)c->tk * sizeof *ds);
    double *gq = calloc((size_t)in->n[0], sizeof *gq);
    double *gk = calloc((size_t)in->n[1], sizeof *gk);
    double *gv = calloc((size_t)in->n[2], sizeof *gv);
    for (int64_t b = 0; b < B; b++) {
        for (int64_t h = 0; h < H; h++) {
            const int64_t bh = b * H + h;
            for (int64_t i = 0; i < c->tq; i++) {
                int64_t lim = c->tk;
                if (c->key_len[0] >= 0 && c->key_len[b] < lim) {
                    lim = c->key_len[b];
                }
                if (c->causal && i + (c->tk - c->tq) + 1 < lim) {
                    lim = i + (c->tk - c->tq) + 1;
                }
                const float *qi = in->x[0] + i * ldq + bh * dk;
                const float *gi = in->proj + i * ldv + bh * dv;
                double mx = -INFINITY, sum = 0.0, delta = 0.0;
                for (int64_t j = 0; j < lim; j++) {
                    const float *kj = in->x[1] + j * ldq + bh * dk;
                    double z = 0.0;
                    for (int64_t e = 0; e < dk; e++) {
                        z += (double)qi[e] * kj[e];
                    }
                    p[j] = z * scale;
                    mx = fmax(mx, p[j]);
                }
                for (int64_t j = 0; j < lim; j++) {
                    p[j] = exp(p[j] - mx);
                    sum += p[j];
                }
                for (int64_t e = 0; e < dv; e++) {
                    double o = 0.0;
                    for (int64_t j = 0; j < lim; j++) {
                        o += p[j] / sum *
                             in->x[2][j * ldv + bh * dv + e];
                    }
                    res->out[i * ldv + bh * dv + e] = (float)o;
                    delta += o * gi[e];
                }
                for (int64_t j = 0; j < lim; j++) {
                    const float *vj = in->x[2] + j * ldv + bh * dv;
                    double pj = p[j] / sum, dp = 0.0;
                    for (int64_t e = 0; e < dv; e++) {
                        dp += (double)gi[e] * vj[e];
                        gv[j * ldv + bh * dv + e] += pj * gi[e];
                    }
                    ds[j] = pj * (dp - delta);
                    const float *kj = in->x[1] + j * ldq + bh * dk;
                    for (int64_t e = 0; e < dk; e++) {
                        gq[i * ldq + bh * dk + e] += scale * ds[j] * kj[e];
                        gk[j * ldq + bh * dk + e] += scale * ds[j] * qi[e];
                    }
                }
            }
        }
    }
    double *g[3] = {gq, gk, gv};
    for (int k = 0; k < 3; k++) {
        for (int64_t e = 0; e < in->n[k]; e++) {
            res->g[k][e] = (float)g[k][e];
        }
        free(g[k]);
    }
    free(p);
    free(ds);
}

/* ---- CPU: the tiled algorithm against the composition ---- */

static const double kTol = 1e-5;

static void check_case(const struct fcase *c, int ci)
{
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    CHECK(ctx != NULL);
    if (!ctx) {
        return;
    }
    struct inputs in;
    inputs_make(&in, c, 100 + (uint64_t)ci);
    struct result ref, fz, tr;
    result_alloc(&ref, &in);
    result_alloc(&fz, &in);
    result_alloc(&tr, &in);
    CHECK(run_case(ctx, c, &in, 0, 1, &ref) == 0);
    truth(c, &in, &tr);
    double w_comp = worst_all(&ref, &tr, &in, 1.0);
    CHECK_MSG(w_comp <= kTol, "%s: the composition differs from the double "
              "truth by %.3g", c->name, w_comp);
    const int tiles[3] = {32, 5, 8};
    for (int ti = 0; ti < 3; ti++) {
        tile = tiles[ti];
        int runs = run_case(ctx, c, &in, 1, 1, &fz);
        CHECK_MSG(runs == 2, "%s, tile %d: the fused path ran %d times, not "
                  "forward + backward", c->name, tile, runs);
        double w = worst_all(&fz, &ref, &in, 1.0);
        double w_tr = worst_all(&fz, &tr, &in, 1.0);
        CHECK_MSG(w <= kTol && w_tr <= kTol, "%s, tile %d: tiled differs "
                  "from the composition by %.3g, from the double truth by "
                  "%.3g", c->name, tile, w, w_tr);
        if (ti == 0) {
            printf("%-52s tiled-composed %.1e, tiled-truth %.1e, "
                   "composed-truth %.1e\n", c->name, w, w_tr, w_comp);
            /* the tolerance rejects a gradient 1.0001 times too large */
            double ws = worst_all(&fz, &ref, &in, 1.0001);
            CHECK_MSG(ws > kTol, "%s: a gradient scaled by 1.0001 passes "
                      "(%.3g)", c->name, ws);
        }
    }
    /* a query that takes no gradient: the others unchanged, its own none */
    tile = 32;
    CHECK(run_case(ctx, c, &in, 1, 0, &fz) == 2);
    for (int k = 1; k < 3; k++) {
        CHECK(worst_rel(fz.g[k], ref.g[k], in.n[k], 1.0) <= kTol);
    }
    float m = 0.0f;
    for (int64_t e = 0; e < in.n[0]; e++) {
        m = fmaxf(m, fabsf(fz.g[0][e]));
    }
    CHECK(m == 0.0f);
    result_free(&ref);
    result_free(&fz);
    result_free(&tr);
    inputs_free(&in);
    gr_ctx_free(ctx);
}

/* The checks must be able to fail: an online softmax without the rescale
 * of earlier tiles, over several key tiles. */
static void check_broken(void)
{
    const struct fcase *c = &cases[1];
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    CHECK(ctx != NULL);
    if (!ctx) {
        return;
    }
    struct inputs in;
    inputs_make(&in, c, 101);
    struct result ref, fz;
    result_alloc(&ref, &in);
    result_alloc(&fz, &in);
    CHECK(run_case(ctx, c, &in, 0, 1, &ref) == 0);
    tile = 5;
    broken = 1;
    CHECK(run_case(ctx, c, &in, 1, 1, &fz) == 2);
    broken = 0;
    tile = 32;
    double w = worst_all(&fz, &ref, &in, 1.0);
    CHECK_MSG(w > 1e-3, "an online softmax without rescaling passes (%.3g)",
              w);
    result_free(&ref);
    result_free(&fz);
    inputs_free(&in);
    gr_ctx_free(ctx);
}

/* Where the fused path may not serve a call, the composition does: a bias,
 * dropout, a head wider than 128. */
static void check_fallbacks(void)
{
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    CHECK(ctx != NULL);
    if (!ctx) {
        return;
    }
    int old = gr_attention_set_fused(1);
    const struct {
        const char *name;
        int dk, bias;
        float dropout;
        int64_t expect;
    } calls[] = {{"plain", 8, 0, 0.0f, 2}, {"bias", 8, 1, 0.0f, 0},
                 {"dropout", 8, 0, 0.1f, 0}, {"dk 129", 129, 0, 0.0f, 0},
                 {"dk 128", 128, 0, 0.0f, 2}};
    for (size_t n = 0; n < sizeof calls / sizeof calls[0]; n++) {
        gr_step_reset(ctx);
        int64_t r0 = gr_attention_fused_runs();
        struct gr_tensor *q = gr_full(ctx, gr_shape3(6, 2, 2 * calls[n].dk),
                                      0.3f);
        gr_tensor_set_requires_grad(q, 1);
        struct gr_tensor *bias = calls[n].bias
                                     ? gr_zeros(ctx, gr_shape2(6, 6)) : NULL;
        struct gr_tensor *y = gr_attention(ctx, q, q, q, 2, bias, NULL, 1,
                                           calls[n].dropout,
                                           gr_rng_make(3, 4));
        CHECK(y != NULL && gr_backward(ctx, gr_sum(ctx, y)) == 0);
        CHECK_MSG(gr_attention_fused_runs() - r0 == calls[n].expect,
                  "%s: %lld fused runs, expected %lld", calls[n].name,
                  (long long)(gr_attention_fused_runs() - r0),
                  (long long)calls[n].expect);
    }
    /* off: never */
    gr_attention_set_fused(0);
    gr_step_reset(ctx);
    int64_t r0 = gr_attention_fused_runs();
    struct gr_tensor *q = gr_full(ctx, gr_shape3(6, 2, 8), 0.3f);
    CHECK(gr_attention(ctx, q, q, q, 2, NULL, NULL, 0, 0.0f,
                       gr_rng_make(3, 4)) != NULL);
    CHECK(gr_attention_fused_runs() == r0);
    /* the environment's choice: on unless GROVE_ATTN_FUSED=0 */
    gr_attention_set_fused(-1);
    const char *env = getenv("GROVE_ATTN_FUSED");
    int env_on = !(env != NULL && strcmp(env, "0") == 0);
    gr_step_reset(ctx);
    r0 = gr_attention_fused_runs();
    q = gr_full(ctx, gr_shape3(6, 2, 8), 0.3f);
    CHECK(gr_attention(ctx, q, q, q, 2, NULL, NULL, 0, 0.0f,
                       gr_rng_make(3, 4)) != NULL);
    CHECK_MSG(gr_attention_fused_runs() - r0 == env_on,
              "default (GROVE_ATTN_FUSED %s): %lld fused runs",
              env ? env : "unset",
              (long long)(gr_attention_fused_runs() - r0));
    gr_attention_set_fused(old);
    CHECK(gr_attention_set_fused(-1) == old);
    gr_ctx_free(ctx);
}

/* q = k = v = x: the three gradients accumulate into x's one buffer. */
static void check_shared_input(void)
{
    const int t = 37, b = 2, h = 2, d = 6;
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    CHECK(ctx != NULL);
    if (!ctx) {
        return;
    }
    int64_t n = (int64_t)t * b * h * d;
    float *x = malloc((size_t)n * sizeof *x);
    float *g[2], *y[2];
    uint64_t key = gr_rng_key(gr_rng_make(7, 7));
    for (int64_t e = 0; e < n; e++) {
        x[e] = 2.0f * gr_rng_uniform(key, (uint64_t)e) - 1.0f;
    }
    const int32_t len[2] = {37, 19};
    for (int fused = 0; fused < 2; fused++) {
        g[fused] = malloc((size_t)n * sizeof(float));
        y[fused] = malloc((size_t)n * sizeof(float));
        gr_step_reset(ctx);
        int old = gr_attention_set_fused(fused);
        struct gr_tensor *xt = gr_tensor_from_host(
            ctx, GR_F32, gr_shape3(t, b, (int64_t)h * d), x);
        gr_tensor_set_requires_grad(xt, 1);
        struct gr_tensor *lt = gr_tensor_from_host(ctx, GR_I32, gr_shape1(b),
                                                   len);
        struct gr_tensor *out = gr_attention(ctx, xt, xt, xt, h, NULL, lt, 1,
                                             0.0f, gr_rng_make(1, 1));
        struct gr_tensor *loss = gr_sum(ctx, gr_mul(ctx, out, out));
        CHECK(loss != NULL && gr_backward(ctx, loss) == 0);
        gr_attention_set_fused(old);
        if (out && xt->grad) {
            gr_tensor_to_host(out, y[fused]);
            gr_tensor_to_host(xt->grad, g[fused]);
        }
    }
    double w = fmax(worst_rel(y[1], y[0], n, 1.0),
                    worst_rel(g[1], g[0], n, 1.0));
    CHECK_MSG(w <= kTol, "q = k = v: fused differs by %.3g", w);
    for (int f = 0; f < 2; f++) {
        free(g[f]);
        free(y[f]);
    }
    free(x);
    gr_ctx_free(ctx);
}

/* ---- memory: the step-arena peak of forward + backward ---- */

static size_t peak_of(enum gr_device dev, int t, int b, int h, int dk,
                      int fused, double *secs)
{
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.device = dev;
    cfg.step_chunk_bytes = 1 << 16;
    struct gr_ctx *ctx = NULL;
    if (gr_ctx_new(&ctx, &cfg) < 0) {
        return 0;
    }
    int old = gr_attention_set_fused(fused);
    int ok = 1;
    for (int rep = 0; rep < (secs ? 2 : 1) && ok; rep++) {
        /* (on a GPU the second repetition is the one timed) */
        gr_step_reset(ctx);
        struct gr_tensor *q = gr_full(ctx, gr_shape3(t, b, h * dk), 0.05f);
        struct gr_tensor *k = gr_full(ctx, gr_shape3(t, b, h * dk), 0.1f);
        struct gr_tensor *v = gr_full(ctx, gr_shape3(t, b, h * dk), 0.2f);
        gr_tensor_set_requires_grad(q, 1);
        gr_tensor_set_requires_grad(k, 1);
        gr_tensor_set_requires_grad(v, 1);
        gr_ctx_sync(ctx);
        double t0 = gr_now_seconds();
        struct gr_tensor *y = gr_attention(ctx, q, k, v, h, NULL, NULL, 1, 0,
                                           gr_rng_make(1, 1));
        ok = y && gr_backward_with(ctx, y, gr_full(ctx, gr_tensor_shape(y),
                                                   1.0f)) == 0;
        gr_ctx_sync(ctx);
        if (secs) {
            *secs = gr_now_seconds() - t0;
        }
    }
    gr_attention_set_fused(old);
    struct gr_mem_stats ms;
    gr_ctx_memory(ctx, &ms);
    gr_ctx_free(ctx);
    return ok ? ms.step_peak_bytes : 0;
}

static void check_memory(void)
{
    const int ts[3] = {256, 512, 1024};
    size_t fz[3], comp[3];
    int64_t old = gr_attention_set_scratch(1 << 14);
    printf("step-arena peak of forward + backward, B 2, H 2, dk 8, causal "
           "(composition's scratch budget 2^14 floats):\n");
    printf("| T | fused (tiled, CPU) | chunked composition |\n|---|---|---|\n");
    for (int i = 0; i < 3; i++) {
        fz[i] = peak_of(GR_DEVICE_CPU, ts[i], 2, 2, 8, 1, NULL);
        comp[i] = peak_of(GR_DEVICE_CPU, ts[i], 2, 2, 8, 0, NULL);
        printf("| %d | %.3f MiB | %.3f MiB |\n", ts[i],
               (double)fz[i] / 1048576.0, (double)comp[i] / 1048576.0);
        CHECK(fz[i] > 0 && comp[i] > 0);
        CHECK_MSG(fz[i] < comp[i], "T %d: fused peak %zu >= the "
                  "composition's %zu", ts[i], fz[i], comp[i]);
    }
    gr_attention_set_scratch(old);
    /* linear: doubling T doubles the peak, up to the arena's 64 KiB chunks */
    CHECK_MSG((double)fz[2] <= 2.0 * (double)fz[1] + 65536.0 &&
                  (double)fz[1] <= 2.0 * (double)fz[0] + 65536.0,
              "the fused peak is not linear in T: %zu, %zu, %zu bytes", fz[0],
              fz[1], fz[2]);
}

/* ---- CUDA: the fused kernels against the composition ---- */

/* CUDA against CUDA and CPU: expf, fused multiply-adds and other sum
 * orders over up to 515 keys */
static const double kTolGpu = 1e-4;

static void parity_case(struct gr_ctx *cpu, struct gr_ctx *gpu,
                        const struct fcase *c, uint64_t seed)
{
    struct inputs in;
    inputs_make(&in, c, seed);
    struct result r_cpu, r_comp, r_f1, r_f2;
    result_alloc(&r_cpu, &in);
    result_alloc(&r_comp, &in);
    result_alloc(&r_f1, &in);
    result_alloc(&r_f2, &in);
    CHECK(run_case(cpu, c, &in, 0, 1, &r_cpu) == 0);
    CHECK(run_case(gpu, c, &in, 0, 1, &r_comp) == 0);
    int runs = run_case(gpu, c, &in, 1, 1, &r_f1);
    CHECK_MSG(runs == 2, "%s: the fused path ran %d times on CUDA, not "
              "forward + backward", c->name, runs);
    CHECK(run_case(gpu, c, &in, 1, 1, &r_f2) == 2);
    struct result tr;
    result_alloc(&tr, &in);
    truth(c, &in, &tr);
    double w_comp = worst_all(&r_f1, &r_comp, &in, 1.0);
    double w_cpu = worst_all(&r_f1, &r_cpu, &in, 1.0);
    double w_tr = worst_all(&r_f1, &tr, &in, 1.0);
    double w_ctr = worst_all(&r_comp, &tr, &in, 1.0);
    printf("%-52s fused vs: composed %.1e, CPU %.1e, truth %.1e "
           "(composed vs truth %.1e)\n", c->name, w_comp, w_cpu, w_tr, w_ctr);
    /* as accurate as the composition: its error against the truth is at
     * the same float rounding (max-relative, see worst_rel) */
    CHECK_MSG(w_comp <= kTolGpu && w_cpu <= kTolGpu && w_tr <= kTolGpu,
              "%s: the fused CUDA path differs (composed %.3g, CPU %.3g, "
              "truth %.3g)", c->name, w_comp, w_cpu, w_tr);
    result_free(&tr);
    /* no atomics: two runs are the same bits */
    CHECK_MSG(memcmp(r_f1.out, r_f2.out, (size_t)in.n_out * 4) == 0 &&
                  memcmp(r_f1.g[0], r_f2.g[0], (size_t)in.n[0] * 4) == 0 &&
                  memcmp(r_f1.g[1], r_f2.g[1], (size_t)in.n[1] * 4) == 0 &&
                  memcmp(r_f1.g[2], r_f2.g[2], (size_t)in.n[2] * 4) == 0,
              "%s: two fused runs differ", c->name);
    /* q without a gradient: k and v's as before */
    CHECK(run_case(gpu, c, &in, 1, 0, &r_f2) == 2);
    CHECK(memcmp(r_f1.g[1], r_f2.g[1], (size_t)in.n[1] * 4) == 0 &&
          memcmp(r_f1.g[2], r_f2.g[2], (size_t)in.n[2] * 4) == 0);
    result_free(&r_cpu);
    result_free(&r_comp);
    result_free(&r_f1);
    result_free(&r_f2);
    inputs_free(&in);
}

static int run_parity(void)
{
    const char *name = "kernels_attention_fused_cuda_parity";
    if (!gr_cuda_compiled()) {
        return test_skip(name, NULL, "CUDA is not compiled into this build; "
                         "the fused attention parity test needs "
                         "-DGROVE_CUDA=ON and a GPU");
    }
    if (gr_cuda_device_count() == 0) {
        char why[256];
        gr_cuda_status(why, sizeof why);
        return test_skip(name, TEST_NEED_GPU, "no GPU visible (%s); the fused "
                         "attention parity test needs one", why);
    }
    struct gr_ctx *cpu = new_ctx(GR_DEVICE_CPU);
    struct gr_ctx *gpu = new_ctx(GR_DEVICE_CUDA);
    CHECK(cpu && gpu);
    for (int ci = 0; cpu && gpu && ci < N_CASES; ci++) {
        parity_case(cpu, gpu, &cases[ci], 100 + (uint64_t)ci);
    }
    for (int ci = 0; cpu && gpu && ci < N_BIG; ci++) {
        parity_case(cpu, gpu, &big_cases[ci], 200 + (uint64_t)ci);
    }
    gr_ctx_free(cpu);
    gr_ctx_free(gpu);
    /* what the fused path keeps, and one forward + backward's time (wall,
     * after a warm-up; printed, not a benchmark) */
    printf("CUDA, B 2, H 4, dk 64, causal, forward + backward:\n");
    printf("| T | fused peak | composed peak | fused s | composed s |\n");
    printf("|---|---|---|---|---|\n");
    const int ts[2] = {1024, 4096};
    for (int i = 0; i < 2; i++) {
        double sf = 0.0, sc = 0.0;
        size_t pf = peak_of(GR_DEVICE_CUDA, ts[i], 2, 4, 64, 1, &sf);
        size_t pc = peak_of(GR_DEVICE_CUDA, ts[i], 2, 4, 64, 0, &sc);
        printf("| %d | %.2f MiB | %.2f MiB | %.4f | %.4f |\n", ts[i],
               (double)pf / 1048576.0, (double)pc / 1048576.0, sf, sc);
        CHECK(pf > 0 && pc > 0 && pf <= pc);
    }
    return test_report(name);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--parity") == 0) {
        return run_parity();
    }
    gr_attn_cpu_set_fused(tiled_fwd, tiled_bwd);
    for (int i = 0; i < N_CASES; i++) {
        check_case(&cases[i], i);
    }
    check_broken();
    check_fallbacks();
    check_shared_input();
    check_memory();
    gr_attn_cpu_set_fused(NULL, NULL);
    printf("%d tiled attention cases\n", N_CASES);
    return test_report("kernels_attention_tiled");
}
