/* gr_attention_gated (kernels/attention.h), StructFormer's sigmoid
 * attention times a dependency mask, in two modes:
 *
 *   test_kernels_attention_gated          (ctest kernels_attention_gated)
 *       forward against a double-precision reference written here (key
 *       padding, gates of several broadcast shapes, dropout with the same
 *       Philox decisions); the gradients of q, k, v and the gate against a
 *       4-point finite-difference stencil of a random projection, each also
 *       required to REJECT the analytic gradient scaled by 1.01; a key past
 *       key_len leaves the output unchanged when perturbed;
 *       bad shapes give NULL and a message naming the op.
 *   test_kernels_attention_gated --parity (ctest
 *       kernels_attention_gated_cuda_parity) every case CUDA against CPU,
 *       forward and gradients (exit 77 without a GPU).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/device.h"
#include "kernels/ops.h"
#include "kernels/rng.h"
#include "kernels/tape.h"
#include "kernels/tensor.h"
#include "tests/test.h"

struct gcase {
    const char *name;
    int tq, tk, b, h, dk, dv;
    int gate_nd;
    int64_t gate_shape[4];
    int key_len[3]; /* -1: no key_len */
    float dropout;
};

static const struct gcase cases[] = {
    {"self, gate [B,H,T,T], no padding", 4, 4, 2, 2, 3, 3, 4, {2, 2, 4, 4},
     {-1}, 0.0f},
    {"self, gate [B,H,T,T], key padding", 5, 5, 3, 2, 2, 3, 4, {3, 2, 5, 5},
     {5, 2, 4}, 0.0f},
    {"cross, dv != dk, gate [Tq,Tk]", 3, 5, 2, 2, 3, 2, 2, {3, 5}, {4, 5},
     0.0f},
    {"self, gate [B,1,T,T], dropout 0.3", 4, 4, 2, 3, 2, 2, 4, {2, 1, 4, 4},
     {4, 3}, 0.3f},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

struct inputs {
    float *x[4];    /* q, k, v, gate */
    int64_t n[4];
    int64_t n_out;
    float *proj;    /* random projection of the output */
};

static int64_t gate_numel(const struct gcase *c)
{
    int64_t n = 1;
    for (int d = 0; d < c->gate_nd; d++) {
        n *= c->gate_shape[d];
    }
    return n;
}

static void inputs_make(struct inputs *in, const struct gcase *c,
                        uint64_t seed)
{
    in->n[0] = (int64_t)c->tq * c->b * c->h * c->dk;
    in->n[1] = (int64_t)c->tk * c->b * c->h * c->dk;
    in->n[2] = (int64_t)c->tk * c->b * c->h * c->dv;
    in->n[3] = gate_numel(c);
    in->n_out = (int64_t)c->tq * c->b * c->h * c->dv;
    uint64_t key = gr_rng_key(gr_rng_make(seed, 1));
    uint64_t ctr = 0;
    for (int k = 0; k < 4; k++) {
        in->x[k] = malloc((size_t)in->n[k] * sizeof(float));
        for (int64_t i = 0; i < in->n[k]; i++) {
            float u = gr_rng_uniform(key, ctr++);
            in->x[k][i] = k == 3 ? u : 2.0f * u - 1.0f;
        }
    }
    in->proj = malloc((size_t)in->n_out * sizeof(float));
    for (int64_t i = 0; i < in->n_out; i++) {
        in->proj[i] = 2.0f * gr_rng_uniform(key, ctr++) - 1.0f;
    }
}

static void inputs_free(struct inputs *in)
{
    for (int k = 0; k < 4; k++) {
        free(in->x[k]);
    }
    free(in->proj);
}

static struct gr_rng drop_rng(void) { return gr_rng_make(99, 5); }

static double gate_at(const struct gcase *c, const float *g, int b, int h,
                      int i, int j)
{
    const int64_t full[4] = {b, h, i, j};
    int pad = 4 - c->gate_nd;
    int64_t idx = 0;
    for (int d = 0; d < c->gate_nd; d++) {
        int64_t sz = c->gate_shape[d];
        idx = idx * sz + (sz == 1 ? 0 : full[d + pad]);
    }
    return g[idx];
}

/* The double reference, reading the inputs through `x` (so that finite
 * differences can perturb them). */
static void ref_forward(const struct gcase *c, float *const *x, double *out)
{
    const int H = c->h, B = c->b, dk = c->dk, dv = c->dv;
    uint64_t key = gr_rng_key(drop_rng());
    for (int i = 0; i < c->tq; i++) {
        for (int b = 0; b < B; b++) {
            for (int h = 0; h < H; h++) {
                for (int e = 0; e < dv; e++) {
                    out[((int64_t)i * B + b) * H * dv + h * dv + e] = 0.0;
                }
                for (int j = 0; j < c->tk; j++) {
                    if (c->key_len[0] >= 0 && j >= c->key_len[b]) {
                        continue;
                    }
                    double s = 0.0;
                    for (int e = 0; e < dk; e++) {
                        s += (double)x[0][((int64_t)i * B + b) * H * dk +
                                         h * dk + e] *
                             x[1][((int64_t)j * B + b) * H * dk + h * dk + e];
                    }
                    s /= sqrt((double)dk);
                    double p = 1.0 / (1.0 + exp(-s)) *
                               gate_at(c, x[3], b, h, i, j);
                    if (c->dropout > 0.0f) {
                        uint64_t m = (((uint64_t)b * H + h) * c->tq + i) *
                                         c->tk + j;
                        p = gr_rng_keep(key, m, c->dropout)
                                ? p / (1.0 - c->dropout) : 0.0;
                    }
                    for (int e = 0; e < dv; e++) {
                        out[((int64_t)i * B + b) * H * dv + h * dv + e] +=
                            p * x[2][((int64_t)j * B + b) * H * dv + h * dv +
                                     e];
                    }
                }
            }
        }
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

/* Runs the op on ctx: out [n_out], g[k] the gradients of proj·out. */
static int run_case(struct gr_ctx *ctx, const struct gcase *c,
                    const struct inputs *in, float *out, float **g)
{
    gr_step_reset(ctx);
    struct gr_tensor *t[4];
    const struct gr_shape sh[4] = {
        gr_shape3(c->tq, c->b, (int64_t)c->h * c->dk),
        gr_shape3(c->tk, c->b, (int64_t)c->h * c->dk),
        gr_shape3(c->tk, c->b, (int64_t)c->h * c->dv),
        {c->gate_nd, {c->gate_shape[0], c->gate_shape[1], c->gate_shape[2],
                      c->gate_shape[3]}}};
    for (int k = 0; k < 4; k++) {
        t[k] = gr_tensor_from_host(ctx, GR_F32, sh[k], in->x[k]);
        if (t[k] == NULL) {
            return -1;
        }
        gr_tensor_set_requires_grad(t[k], 1);
    }
    struct gr_tensor *len = NULL;
    if (c->key_len[0] >= 0) {
        len = gr_tensor_from_host(ctx, GR_I32, gr_shape1(c->b), c->key_len);
    }
    struct gr_tensor *y = gr_attention_gated(ctx, t[0], t[1], t[2], c->h,
                                             t[3], len, c->dropout,
                                             drop_rng());
    struct gr_tensor *pr = gr_tensor_from_host(
        ctx, GR_F32, gr_tensor_shape(y ? y : t[0]), in->proj);
    struct gr_tensor *loss = y && pr ? gr_sum(ctx, gr_mul(ctx, y, pr)) : NULL;
    if (loss == NULL || gr_backward(ctx, loss) < 0) {
        fprintf(stderr, "%s: %s\n", c->name, gr_ctx_error(ctx));
        return -1;
    }
    gr_tensor_to_host(y, out);
    for (int k = 0; k < 4; k++) {
        if (g[k] && t[k]->grad) {
            gr_tensor_to_host(t[k]->grad, g[k]);
        } else if (g[k]) {
            memset(g[k], 0, (size_t)in->n[k] * sizeof(float));
        }
    }
    return 0;
}

static int grads_close(const float *an, const double *fd, int64_t n,
                       double tol, double scale_an, double *worst)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) {
        m = fmax(m, fabs(fd[i]));
    }
    int ok = 1;
    *worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double a = (double)an[i] * scale_an;
        double err = fabs(a - fd[i]) / (fabs(a) + 0.05 * m + 1e-12);
        *worst = fmax(*worst, err);
        ok &= err <= tol;
    }
    return ok;
}

static double ref_loss(const struct gcase *c, struct inputs *in, double *buf)
{
    ref_forward(c, in->x, buf);
    double s = 0.0;
    for (int64_t e = 0; e < in->n_out; e++) {
        s += buf[e] * in->proj[e];
    }
    return s;
}

static void check_case(const struct gcase *c, int ci)
{
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    CHECK(ctx != NULL);
    if (!ctx) {
        return;
    }
    struct inputs in;
    inputs_make(&in, c, 100 + (uint64_t)ci);
    float *out = malloc((size_t)in.n_out * sizeof *out);
    double *ref = malloc((size_t)in.n_out * sizeof *ref);
    float *g[4];
    for (int k = 0; k < 4; k++) {
        g[k] = malloc((size_t)in.n[k] * sizeof(float));
    }
    CHECK_MSG(run_case(ctx, c, &in, out, g) == 0, "%s: run", c->name);
    ref_forward(c, in.x, ref);
    double worst = 0.0;
    for (int64_t e = 0; e < in.n_out; e++) {
        worst = fmax(worst, fabs(out[e] - ref[e]) / (1e-2 + fabs(ref[e])));
    }
    CHECK_MSG(worst <= 2e-5, "%s: forward differs from the reference by %.3g",
              c->name, worst);
    /* finite differences of the double reference at the f32 inputs: the
     * reference is exact, so the stencil's error is all that remains */
    static const char *names[4] = {"q", "k", "v", "gate"};
    for (int k = 0; k < 4; k++) {
        double *fd = malloc((size_t)in.n[k] * sizeof *fd);
        const double hstep = 1e-3;
        for (int64_t e = 0; e < in.n[k]; e++) {
            float keep = in.x[k][e];
            double f[4];
            const double off[4] = {hstep, -hstep, 2 * hstep, -2 * hstep};
            for (int s = 0; s < 4; s++) {
                    in.x[k][e] = (float)(keep + off[s]);
                f[s] = ref_loss(c, &in, ref);
            }
            in.x[k][e] = keep;
            /* central differences over the steps as stored in f32,
             * combined by Richardson extrapolation */
            double d1 = (f[0] - f[1]) /
                        ((double)(float)(keep + hstep) -
                         (double)(float)(keep - hstep));
            double d2 = (f[2] - f[3]) /
                        ((double)(float)(keep + 2 * hstep) -
                         (double)(float)(keep - 2 * hstep));
            fd[e] = (4.0 * d1 - d2) / 3.0;
        }
        double w = 0.0, wbad = 0.0;
        CHECK_MSG(grads_close(g[k], fd, in.n[k], 1e-3, 1.0, &w),
                  "%s: gradient of %s differs from finite differences: worst "
                  "%.3g", c->name, names[k], w);
        CHECK_MSG(!grads_close(g[k], fd, in.n[k], 1e-3, 1.01, &wbad),
                  "%s: the check of %s's gradient cannot tell a 1%% error",
                  c->name, names[k]);
        free(fd);
    }
    for (int k = 0; k < 4; k++) {
        free(g[k]);
    }
    free(out);
    free(ref);
    inputs_free(&in);
    gr_ctx_free(ctx);
}

/* A key past key_len cannot change the output. */
static void check_masking(void)
{
    const struct gcase *c = &cases[1];
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    struct inputs in;
    inputs_make(&in, c, 7);
    float *a = malloc((size_t)in.n_out * sizeof *a);
    float *b = malloc((size_t)in.n_out * sizeof *b);
    float *g[4] = {NULL, NULL, NULL, NULL};
    run_case(ctx, c, &in, a, g);
    /* batch 1 has key_len 2: change its key and value at position 3 */
    int64_t at = ((int64_t)3 * c->b + 1) * c->h * c->dk;
    in.x[1][at] += 5.0f;
    in.x[2][((int64_t)3 * c->b + 1) * c->h * c->dv] -= 3.0f;
    run_case(ctx, c, &in, b, g);
    int same = memcmp(a, b, (size_t)in.n_out * sizeof *a) == 0;
    CHECK_MSG(same, "a key past key_len changed the output");
    free(a);
    free(b);
    inputs_free(&in);
    gr_ctx_free(ctx);
}

static void check_errors(void)
{
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    gr_step_reset(ctx);
    struct gr_tensor *q = gr_zeros(ctx, gr_shape3(4, 2, 6));
    struct gr_tensor *gate = gr_zeros(ctx, gr_shape4(2, 3, 4, 5));
    struct gr_tensor *y = gr_attention_gated(ctx, q, q, q, 3, gate, NULL, 0.0f,
                                             drop_rng());
    CHECK(y == NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "gr_attention_gated: gate");
    gr_ctx_free(ctx);
    ctx = new_ctx(GR_DEVICE_CPU);
    gr_step_reset(ctx);
    q = gr_zeros(ctx, gr_shape3(4, 2, 6));
    gate = gr_zeros(ctx, gr_shape2(4, 4));
    y = gr_attention_gated(ctx, q, q, q, 4, gate, NULL, 0.0f, drop_rng());
    CHECK(y == NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "heads do not divide");
    gr_ctx_free(ctx);
}

static int run_parity(void)
{
    const char *name = "kernels_attention_gated_cuda_parity";
    if (!gr_cuda_compiled()) {
        return test_skip(name, NULL, "CUDA is not compiled into this build; "
                         "the gated attention parity test needs "
                         "-DGROVE_CUDA=ON and a GPU");
    }
    if (gr_cuda_device_count() == 0) {
        char why[256];
        gr_cuda_status(why, sizeof why);
        return test_skip(name, TEST_NEED_GPU, "no GPU visible (%s); the gated "
                         "attention parity test needs one", why);
    }
    struct gr_ctx *cpu = new_ctx(GR_DEVICE_CPU);
    struct gr_ctx *gpu = new_ctx(GR_DEVICE_CUDA);
    CHECK(cpu && gpu);
    for (int ci = 0; cpu && gpu && ci < N_CASES; ci++) {
        const struct gcase *c = &cases[ci];
        struct inputs in;
        inputs_make(&in, c, 300 + (uint64_t)ci);
        float *o[2], *g[2][4];
        for (int d = 0; d < 2; d++) {
            o[d] = malloc((size_t)in.n_out * sizeof(float));
            for (int k = 0; k < 4; k++) {
                g[d][k] = malloc((size_t)in.n[k] * sizeof(float));
            }
        }
        CHECK(run_case(cpu, c, &in, o[0], g[0]) == 0);
        CHECK(run_case(gpu, c, &in, o[1], g[1]) == 0);
        double w = 0.0;
        for (int64_t e = 0; e < in.n_out; e++) {
            w = fmax(w, fabs(o[0][e] - o[1][e]) / (1e-2 + fabs(o[0][e])));
        }
        for (int k = 0; k < 4; k++) {
            for (int64_t e = 0; e < in.n[k]; e++) {
                w = fmax(w, fabs(g[0][k][e] - g[1][k][e]) /
                                (1e-2 + fabs(g[0][k][e])));
            }
        }
        CHECK_MSG(w <= 1e-4, "%s: CUDA differs from CPU by %.3g", c->name, w);
        for (int d = 0; d < 2; d++) {
            free(o[d]);
            for (int k = 0; k < 4; k++) {
                free(g[d][k]);
            }
        }
        inputs_free(&in);
    }
    gr_ctx_free(cpu);
    gr_ctx_free(gpu);
    return test_report(name);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--parity") == 0) {
        return run_parity();
    }
    for (int i = 0; i < N_CASES; i++) {
        check_case(&cases[i], i);
    }
    check_masking();
    check_errors();
    printf("%d gated attention cases\n", N_CASES);
    return test_report("kernels_attention_gated");
}
