/* Faster FastTrees' fused gates (gr_fft_gates, kernels/fasttrees.h):
 *   - the whole FFT layer (gr_fft_forward) with the fused gates against
 *     the composition of ops they replace (GR_FFT_PATH_UNFUSED, what
 *     GROVE_FFT_UNFUSED=1 selects) on several shapes (chunk 1, chunk = H,
 *     T = 1, odd sizes, with and without c0, with and without the tape):
 *     y, h, c, both distances and the gradients of w_ih, b_ih, x and c0 to
 *     1e-5 of each tensor's scale;
 *   - the op's gradient against a 4-point finite-difference stencil (the
 *     loss Σ wa⊙a + Σ wb⊙b + Σ wo⊙o summed in double on the host), with
 *     all three outputs used and with only some of them (the others take
 *     no gradient); the stencil must also reject the analytic gradient
 *     scaled by 1.01;
 *   - shape errors; which path the default (GROVE_FFT_UNFUSED unset, or
 *     with --env-unfused set to 1) records, by its tape length;
 *   - with --cuda: the op and the fused layer on CUDA against CPU (exit 77
 *     without a GPU).
 *
 *   test_nlp_fasttrees_fused [--cuda | --env-unfused]
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/random.h"
#include "kernels/device.h"
#include "kernels/fasttrees.h"
#include "kernels/ops.h"
#include "kernels/tape.h"
#include "tests/test.h"

static void fill(struct gr_philox_stream *ps, float *x, int64_t n, float s)
{
    for (int64_t i = 0; i < n; i++) {
        x[i] = s * (2.0f * gr_u32_to_uniform(gr_philox_next_u32(ps)) - 1.0f);
    }
}

static struct gr_ctx *new_ctx(enum gr_device dev)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = dev;
    struct gr_ctx *ctx = NULL;
    if (gr_ctx_new(&ctx, &cc) < 0) {
        fprintf(stderr, "context: %s\n", gr_last_error());
        return NULL;
    }
    return ctx;
}

static struct gr_tensor *leaf(struct gr_ctx *ctx, const float *x,
                              struct gr_shape s)
{
    struct gr_tensor *t = gr_tensor_from_host(ctx, GR_F32, s, x);
    gr_tensor_set_requires_grad(t, 1);
    return t;
}

/* t's values (or its gradient's: zeros when it has none) into out. */
static void host(const struct gr_tensor *t, int64_t n, float *out)
{
    if (t == NULL) {
        memset(out, 0, (size_t)n * sizeof *out);
        return;
    }
    CHECK(t->numel == n);
    CHECK(gr_tensor_to_host(t, out) == 0);
}

/* max |x - y| / max(max |y|, 1e-6): an error relative to the tensor's
 * scale. */
static double rel(const float *x, const float *y, int64_t n)
{
    double worst = 0.0, scale = 1e-6;
    for (int64_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs((double)x[i] - (double)y[i]));
        scale = fmax(scale, fabs((double)y[i]));
    }
    return worst / scale;
}

/* ---- the layer, fused against the composition ---- */

struct shape {
    int t, b, in, h, c;
};

/* Everything one forward and backward of the layer produces, in one host
 * buffer: y [T,B,H], h, c [B,H], df, di [T,B], then the gradients of
 * w_ih, b_ih, x and c0. */
struct layer_out {
    float *v;
    int64_t len[9];
    int64_t total;
};

static const char *const part_names[9] = {"y",    "h",    "c",
                                          "df",   "di",   "grad.w_ih",
                                          "grad.b_ih", "grad.x", "grad.c0"};

static int run_layer(enum gr_device dev, struct shape s, enum gr_fft_path p,
                     int with_c0, int grad, struct layer_out *o)
{
    struct gr_ctx *ctx = new_ctx(dev);
    if (ctx == NULL) {
        return -1;
    }
    const int64_t g = 2 * (s.h / s.c) + 4 * s.h;
    const int64_t n_x = (int64_t)s.t * s.b * s.in, n_y = (int64_t)s.t * s.b * s.h;
    const int64_t n_bh = (int64_t)s.b * s.h, n_tb = (int64_t)s.t * s.b;
    const int64_t len[9] = {n_y, n_bh, n_bh, n_tb, n_tb, g * s.in, g, n_x, n_bh};
    o->total = 0;
    for (int k = 0; k < 9; k++) {
        o->len[k] = len[k];
        o->total += len[k];
    }
    o->v = calloc((size_t)o->total, sizeof *o->v);
    struct gr_fft l;
    int rc = gr_fft_init(&l, ctx, "fft", s.in, s.h, s.c, gr_rng_make(7, 1));
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    l.path = p;
    float *xs = malloc((size_t)n_x * sizeof *xs);
    float *c0s = malloc((size_t)n_bh * sizeof *c0s);
    float *wy = malloc((size_t)n_y * sizeof *wy);
    float *wh = malloc((size_t)n_bh * 2 * sizeof *wh);
    struct gr_philox_stream ps = gr_philox_stream_init(
        (uint64_t)(s.t * 1000003 + s.b * 1009 + s.h * 31 + s.c), 2);
    fill(&ps, xs, n_x, 1.5f);
    fill(&ps, c0s, n_bh, 1.0f);
    fill(&ps, wy, n_y, 1.0f);
    fill(&ps, wh, 2 * n_bh, 1.0f);
    gr_set_grad_enabled(ctx, grad);
    gr_step_reset(ctx);
    gr_zero_grad(ctx);
    struct gr_tensor *x = leaf(ctx, xs, gr_shape3(s.t, s.b, s.in));
    struct gr_tensor *c0 = with_c0 ? leaf(ctx, c0s, gr_shape2(s.b, s.h))
                                   : NULL;
    struct gr_rnn_out r;
    rc = rc < 0 ? rc : gr_fft_forward(ctx, &l, x, c0, &r);
    CHECK_MSG(rc == 0, "forward: %s", gr_ctx_error(ctx));
    if (rc == 0) {
        struct gr_tensor *by = gr_tensor_from_host(
            ctx, GR_F32, gr_shape3(s.t, s.b, s.h), wy);
        struct gr_tensor *bh = gr_tensor_from_host(
            ctx, GR_F32, gr_shape2(s.b, s.h), wh);
        struct gr_tensor *bc = gr_tensor_from_host(
            ctx, GR_F32, gr_shape2(s.b, s.h), wh + n_bh);
        struct gr_tensor *loss = gr_add(
            ctx,
            gr_add(ctx, gr_sum(ctx, gr_mul(ctx, r.y, by)),
                   gr_sum(ctx, gr_mul(ctx, r.h, bh))),
            gr_sum(ctx, gr_mul(ctx, r.c, bc)));
        CHECK_MSG(loss != NULL, "loss: %s", gr_ctx_error(ctx));
        if (grad && loss != NULL) {
            rc = gr_backward(ctx, loss);
            CHECK_MSG(rc == 0, "backward: %s", gr_ctx_error(ctx));
        }
        const struct gr_tensor *parts[9] = {
            r.y, r.h, r.c, r.df, r.di, grad ? l.w_ih->grad : NULL,
            grad ? l.b_ih->grad : NULL, grad ? x->grad : NULL,
            grad && c0 ? c0->grad : NULL};
        float *at = o->v;
        for (int k = 0; k < 9; k++) {
            host(parts[k], len[k], at);
            at += len[k];
        }
    }
    free(xs);
    free(c0s);
    free(wy);
    free(wh);
    gr_ctx_free(ctx);
    return rc;
}

/* The worst part error of a against b (reference); prints each part over
 * tol. */
static double compare_layers(const struct layer_out *a,
                             const struct layer_out *b, double tol,
                             const char *what)
{
    double worst = 0.0;
    int64_t off = 0;
    for (int k = 0; k < 9; k++) {
        double e = rel(a->v + off, b->v + off, a->len[k]);
        if (e > tol) {
            fprintf(stderr, "%s: %s differs by %.3g of its scale\n", what,
                    part_names[k], e);
        }
        worst = fmax(worst, e);
        off += a->len[k];
    }
    return worst;
}

static const struct shape shapes[] = {
    {1, 1, 3, 2, 1},   /* T = 1, one lane per chunk */
    {5, 3, 10, 8, 2},  /* the fixture's size */
    {7, 2, 6, 12, 4},  /* odd sizes */
    {4, 5, 9, 30, 10}, /* the LM's chunk of 10 */
    {3, 2, 5, 8, 8},   /* one chunk (n = 1) */
    {33, 3, 7, 20, 5}, /* a longer window */
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static void test_fused_vs_unfused(void)
{
    double worst = 0.0;
    for (int i = 0; i < N_SHAPES; i++) {
        for (int grad = 0; grad < 2; grad++) {
            /* with one chunk f̂ = 1 and î = 0 (the dead top chunk): c is
             * c0 throughout, and without c0 every gradient is zero */
            int with_c0 = (i + grad) % 2 == 0 || shapes[i].h == shapes[i].c;
            struct layer_out f = {0}, u = {0};
            int rc = run_layer(GR_DEVICE_CPU, shapes[i], GR_FFT_PATH_FUSED,
                               with_c0, grad, &f);
            rc |= run_layer(GR_DEVICE_CPU, shapes[i], GR_FFT_PATH_UNFUSED,
                            with_c0, grad, &u);
            if (rc == 0) {
                char what[96];
                snprintf(what, sizeof what, "shape %d (c0 %d, grad %d)", i,
                         with_c0, grad);
                double e = compare_layers(&f, &u, 1e-5, what);
                CHECK_MSG(e < 1e-5, "%s: fused vs unfused %.3g", what, e);
                worst = fmax(worst, e);
                /* a gradient that is all zeros would pass trivially */
                if (grad) {
                    int64_t off = 0;
                    for (int k = 0; k < 5; k++) {
                        off += f.len[k];
                    }
                    double s = 0.0;
                    for (int64_t j = off; j < f.total; j++) {
                        s += fabs(f.v[j]);
                    }
                    CHECK_MSG(s > 0.0, "shape %d: every gradient is zero",
                              i);
                }
            }
            free(f.v);
            free(u.v);
        }
    }
    printf("fused vs unfused layer: worst %.3g of a tensor's scale over %d "
           "shapes\n", worst, N_SHAPES);
}

/* ---- the op against finite differences ---- */

struct gates_case {
    int lead0, lead1, h, c;
    unsigned use; /* bit 0: a, bit 1: b, bit 2: o in the loss */
};

/* Σ wa⊙a + Σ wb⊙b + Σ wo⊙o over the used outputs, in double. */
static double gates_loss(struct gr_ctx *ctx, const struct gates_case *gc,
                         const float *zs, const float *w, int64_t nz,
                         int64_t nu, float *tmp)
{
    gr_step_reset(ctx);
    struct gr_tensor *z = gr_tensor_from_host(
        ctx, GR_F32, gr_shape3(gc->lead0, gc->lead1, nz / (gc->lead0 * gc->lead1)),
        zs);
    struct gr_fft_gates g;
    if (gr_fft_gates(ctx, z, gc->h, gc->c, &g) < 0) {
        return NAN;
    }
    const struct gr_tensor *outs[3] = {g.a, g.b, g.o};
    double loss = 0.0;
    for (int k = 0; k < 3; k++) {
        if (!(gc->use & (1u << k))) {
            continue;
        }
        host(outs[k], nu, tmp);
        for (int64_t i = 0; i < nu; i++) {
            loss += (double)w[k * nu + i] * (double)tmp[i];
        }
    }
    return loss;
}

static void test_finite_differences(void)
{
    const struct gates_case cases[] = {
        {2, 3, 6, 2, 7}, /* all three outputs */
        {1, 4, 4, 4, 7}, /* n = 1 */
        {3, 1, 5, 1, 7}, /* chunk 1 */
        {2, 2, 6, 3, 4}, /* only o: a and b take no gradient */
        {2, 2, 6, 3, 1}, /* only a */
        {2, 2, 6, 3, 2}, /* only b */
    };
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    if (ctx == NULL) {
        CHECK(0);
        return;
    }
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const struct gates_case *gc = &cases[ci];
        const int64_t rows = (int64_t)gc->lead0 * gc->lead1;
        const int64_t width = 2 * (gc->h / gc->c) + 4 * gc->h;
        const int64_t nz = rows * width, nu = rows * gc->h;
        float *zs = malloc((size_t)nz * sizeof *zs);
        float *w = malloc((size_t)(3 * nu) * sizeof *w);
        float *an = malloc((size_t)nz * sizeof *an);
        float *tmp = malloc((size_t)nu * sizeof *tmp);
        double *fd = malloc((size_t)nz * sizeof *fd);
        struct gr_philox_stream ps = gr_philox_stream_init(31 + ci, 4);
        fill(&ps, zs, nz, 2.0f);
        fill(&ps, w, 3 * nu, 1.0f);
        /* the analytic gradient through the tape */
        gr_set_grad_enabled(ctx, 1);
        gr_step_reset(ctx);
        struct gr_tensor *z = leaf(ctx, zs, gr_shape3(gc->lead0, gc->lead1,
                                                      width));
        struct gr_fft_gates g;
        int rc = gr_fft_gates(ctx, z, gc->h, gc->c, &g);
        CHECK_MSG(rc == 0, "%s", gr_ctx_error(ctx));
        struct gr_tensor *outs[3] = {g.a, g.b, g.o};
        struct gr_tensor *loss = NULL;
        for (int k = 0; rc == 0 && k < 3; k++) {
            if (!(gc->use & (1u << k))) {
                continue;
            }
            struct gr_tensor *wk = gr_tensor_from_host(
                ctx, GR_F32, gr_shape3(gc->lead0, gc->lead1, gc->h),
                w + k * nu);
            struct gr_tensor *term = gr_sum(ctx, gr_mul(ctx, outs[k], wk));
            loss = loss ? gr_add(ctx, loss, term) : term;
        }
        CHECK_MSG(loss != NULL && gr_backward(ctx, loss) == 0, "%s",
                  gr_ctx_error(ctx));
        if (loss == NULL) {
            free(zs);
            free(w);
            free(an);
            free(tmp);
            free(fd);
            continue;
        }
        for (int k = 0; k < 3; k++) {
            /* an output outside the loss has no gradient buffer */
            CHECK((outs[k]->grad != NULL) == (int)((gc->use >> k) & 1u));
        }
        host(z->grad, nz, an);
        /* the stencil, without the tape */
        gr_set_grad_enabled(ctx, 0);
        const float hstep = 1e-2f;
        for (int64_t i = 0; i < nz; i++) {
            const float z0 = zs[i];
            double f[4];
            const float off[4] = {2.0f, 1.0f, -1.0f, -2.0f};
            for (int j = 0; j < 4; j++) {
                zs[i] = z0 + off[j] * hstep;
                f[j] = gates_loss(ctx, gc, zs, w, nz, nu, tmp);
            }
            zs[i] = z0;
            fd[i] = (-f[0] + 8.0 * f[1] - 8.0 * f[2] + f[3]) /
                    (12.0 * (double)hstep);
        }
        double num = 0.0, num_scaled = 0.0, den = 0.0;
        for (int64_t i = 0; i < nz; i++) {
            num += (fd[i] - an[i]) * (fd[i] - an[i]);
            num_scaled += (fd[i] - 1.01 * an[i]) * (fd[i] - 1.01 * an[i]);
            den += fd[i] * fd[i];
        }
        double err = sqrt(num / den), err_scaled = sqrt(num_scaled / den);
        CHECK_MSG(den > 0.0, "case %zu: the gradient is zero", ci);
        CHECK_MSG(err < 1e-3, "case %zu: analytic vs finite differences "
                  "%.3g", ci, err);
        CHECK_MSG(err_scaled > 5e-3, "case %zu: the stencil cannot tell a "
                  "1%% error (%.3g)", ci, err_scaled);
        printf("finite differences case %zu: error %.3g (1.01x: %.3g)\n", ci,
               err, err_scaled);
        free(zs);
        free(w);
        free(an);
        free(tmp);
        free(fd);
    }
    gr_ctx_free(ctx);
}

static void test_errors(void)
{
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    if (ctx == NULL) {
        CHECK(0);
        return;
    }
    gr_step_reset(ctx);
    struct gr_tensor *z = gr_zeros(ctx, gr_shape2(3, 25)); /* H 4, C 2: 20 */
    struct gr_fft_gates g;
    CHECK(gr_fft_gates(ctx, z, 4, 2, &g) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "gr_fft_gates: z [3, 25]");
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "[..., 20]");
    CHECK(g.a == NULL && g.df == NULL);
    gr_step_reset(ctx);
    z = gr_zeros(ctx, gr_shape2(3, 20));
    CHECK(gr_fft_gates(ctx, z, 4, 3, &g) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "multiple of the chunk size 3");
    gr_ctx_free(ctx);
}

/* ---- which path GROVE_FFT_UNFUSED selects ---- */

/* The tape length of one FFT forward on `path`. */
static int tape_of(enum gr_fft_path path)
{
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    if (ctx == NULL) {
        return -1;
    }
    struct gr_fft l;
    int n = -1;
    if (gr_fft_init(&l, ctx, "fft", 4, 6, 2, gr_rng_make(3, 1)) == 0) {
        l.path = path;
        gr_step_reset(ctx);
        struct gr_tensor *x = gr_zeros(ctx, gr_shape3(3, 2, 4));
        struct gr_rnn_out o;
        if (gr_fft_forward(ctx, &l, x, NULL, &o) == 0) {
            n = gr_tape_length(ctx);
        }
    }
    gr_ctx_free(ctx);
    return n;
}

/* GR_FFT_PATH_ENV (what init leaves) records the fused op's tape unless
 * GROVE_FFT_UNFUSED is set, the composition's when it is; `want_unfused`:
 * what this run's environment must say (-1: either). */
static void test_env_path(int want_unfused)
{
    const char *e = getenv("GROVE_FFT_UNFUSED");
    int set = e != NULL && e[0] != '\0' && strcmp(e, "0") != 0;
    CHECK(gr_fft_unfused_env() == set);
    if (want_unfused >= 0) {
        CHECK_MSG(set == want_unfused, "run this with GROVE_FFT_UNFUSED%s",
                  want_unfused ? "=1" : " unset");
    }
    int fused = tape_of(GR_FFT_PATH_FUSED);
    int unfused = tape_of(GR_FFT_PATH_UNFUSED);
    int env = tape_of(GR_FFT_PATH_ENV);
    CHECK_MSG(fused > 0 && unfused > fused, "tape nodes: fused %d, "
              "unfused %d", fused, unfused);
    CHECK_MSG(env == (set ? unfused : fused), "GROVE_FFT_UNFUSED %s: the "
              "default path recorded %d tape nodes (fused %d, unfused %d)",
              set ? "set" : "unset", env, fused, unfused);
    printf("default path with GROVE_FFT_UNFUSED %s: %s (%d tape nodes; "
           "fused %d, unfused %d)\n", set ? "set" : "unset",
           env == fused ? "fused" : "unfused", env, fused, unfused);
}

/* ---- CUDA against CPU ---- */

static void gates_run(enum gr_device dev, const struct gates_case *gc,
                      float *out /* a, b, o, df, di, gz */)
{
    const int64_t rows = (int64_t)gc->lead0 * gc->lead1;
    const int64_t width = 2 * (gc->h / gc->c) + 4 * gc->h;
    const int64_t nz = rows * width, nu = rows * gc->h;
    float *zs = malloc((size_t)nz * sizeof *zs);
    float *w = malloc((size_t)(3 * nu) * sizeof *w);
    struct gr_philox_stream ps = gr_philox_stream_init(77, 5);
    fill(&ps, zs, nz, 2.0f);
    fill(&ps, w, 3 * nu, 1.0f);
    struct gr_ctx *ctx = new_ctx(dev);
    CHECK(ctx != NULL);
    if (ctx != NULL) {
        gr_step_reset(ctx);
        struct gr_tensor *z = leaf(ctx, zs, gr_shape2(rows, width));
        struct gr_fft_gates g;
        int rc = gr_fft_gates(ctx, z, gc->h, gc->c, &g);
        CHECK_MSG(rc == 0, "%s", gr_ctx_error(ctx));
        struct gr_tensor *outs[3] = {g.a, g.b, g.o};
        struct gr_tensor *loss = NULL;
        for (int k = 0; rc == 0 && k < 3; k++) {
            if (gc->use & (1u << k)) {
                struct gr_tensor *wk = gr_tensor_from_host(
                    ctx, GR_F32, gr_shape2(rows, gc->h), w + k * nu);
                struct gr_tensor *term = gr_sum(ctx, gr_mul(ctx, outs[k], wk));
                loss = loss ? gr_add(ctx, loss, term) : term;
            }
        }
        CHECK_MSG(loss != NULL && gr_backward(ctx, loss) == 0, "%s",
                  gr_ctx_error(ctx));
        if (loss != NULL) {
            host(g.a, nu, out);
            host(g.b, nu, out + nu);
            host(g.o, nu, out + 2 * nu);
            host(g.df, rows, out + 3 * nu);
            host(g.di, rows, out + 3 * nu + rows);
            host(z->grad, nz, out + 3 * nu + 2 * rows);
        }
        gr_ctx_free(ctx);
    }
    free(zs);
    free(w);
}

static int cuda_parity(void)
{
    const char *name = "nlp_fasttrees_fused_cuda";
    if (!gr_cuda_compiled()) {
        return test_skip(name, NULL,
                         "CUDA is not compiled in (-DGROVE_CUDA=ON)");
    }
    if (gr_cuda_device_count() < 1) {
        return test_skip(name, TEST_NEED_GPU, "no GPU visible");
    }
    const struct gates_case cases[] = {
        {7, 9, 40, 10, 7}, {3, 5, 12, 1, 7}, {4, 4, 8, 8, 5}, {5, 3, 30, 6, 2},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const struct gates_case *gc = &cases[ci];
        const int64_t rows = (int64_t)gc->lead0 * gc->lead1;
        const int64_t width = 2 * (gc->h / gc->c) + 4 * gc->h;
        const int64_t len = 3 * rows * gc->h + 2 * rows + rows * width;
        float *c = calloc((size_t)len, sizeof *c);
        float *g = calloc((size_t)len, sizeof *g);
        gates_run(GR_DEVICE_CPU, gc, c);
        gates_run(GR_DEVICE_CUDA, gc, g);
        double e = rel(g, c, len);
        CHECK_MSG(e < 1e-4, "gr_fft_gates case %zu: CUDA vs CPU %.3g", ci, e);
        free(c);
        free(g);
    }
    for (int i = 0; i < N_SHAPES; i += 2) {
        struct layer_out c = {0}, g = {0};
        int rc = run_layer(GR_DEVICE_CPU, shapes[i], GR_FFT_PATH_FUSED, 1, 1,
                           &c);
        rc |= run_layer(GR_DEVICE_CUDA, shapes[i], GR_FFT_PATH_FUSED, 1, 1,
                        &g);
        if (rc == 0) {
            double e = compare_layers(&g, &c, 1e-4, "CUDA vs CPU");
            CHECK_MSG(e < 1e-4, "fused layer, shape %d: CUDA vs CPU %.3g", i,
                      e);
        }
        free(c.v);
        free(g.v);
    }
    return test_report(name);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--cuda") == 0) {
        return cuda_parity();
    }
    if (argc > 1 && strcmp(argv[1], "--env-unfused") == 0) {
        test_env_path(1);
        return test_report("nlp_fasttrees_fused_env");
    }
    test_env_path(-1);
    test_fused_vs_unfused();
    test_finite_differences();
    test_errors();
    return test_report("nlp_fasttrees_fused");
}
