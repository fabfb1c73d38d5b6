/* Contexts, arenas, named tensors, the sticky error, the tape (accumulation,
 * freezing, no-grad mode, views, detach) and the random numbers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/random.h"
#include "kernels/backend.h"
#include "kernels/device.h"
#include "kernels/ops.h"
#include "kernels/rng.h"
#include "kernels/tape.h"
#include "kernels/tensor.h"
#include "tests/test.h"

static struct gr_ctx *cpu_ctx(void)
{
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.device = GR_DEVICE_CPU;
    cfg.step_chunk_bytes = 1 << 16;
    struct gr_ctx *ctx = NULL;
    int rc = gr_ctx_new(&ctx, &cfg);
    CHECK_MSG(rc == 0, "gr_ctx_new: %s", gr_last_error());
    return ctx;
}

static void test_devices(void)
{
    enum gr_device d;
    CHECK(gr_device_parse("cpu", &d) == 0 && d == GR_DEVICE_CPU);
    CHECK(gr_device_parse("cuda", &d) == 0 && d == GR_DEVICE_CUDA);
    CHECK(gr_device_parse("auto", &d) == 0 && d == GR_DEVICE_AUTO);
    CHECK(gr_device_parse("gpu", &d) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "'gpu'");
    struct gr_ctx_config cfg = gr_ctx_config_default();
    struct gr_ctx *ctx = NULL;
    if (gr_cuda_device_count() == 0) {
        cfg.device = GR_DEVICE_CUDA;
        int rc = gr_ctx_new(&ctx, &cfg);
        CHECK(rc == GR_EUNSUPPORTED && ctx == NULL);
        CHECK_STR_CONTAINS(gr_last_error(), "cuda");
        cfg.device = GR_DEVICE_AUTO; /* falls back to the CPU, by design */
        CHECK(gr_ctx_new(&ctx, &cfg) == 0);
        CHECK(gr_ctx_device(ctx) == GR_DEVICE_CPU);
        gr_ctx_free(ctx);
    }
}

static void test_arena(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct gr_mem_stats m;
    /* The first step grows the arena past its 64 KiB chunk... */
    for (int i = 0; i < 40; i++) {
        CHECK(gr_zeros(ctx, gr_shape2(64, 64)) != NULL); /* 16 KiB each */
    }
    gr_ctx_memory(ctx, &m);
    CHECK(m.step_capacity >= 40 * 16384);
    size_t cap = m.step_capacity;
    /* ...then every later step of the same size allocates nothing. */
    for (int step = 0; step < 5; step++) {
        gr_step_reset(ctx);
        for (int i = 0; i < 40; i++) {
            struct gr_tensor *t = gr_zeros(ctx, gr_shape2(64, 64));
            CHECK(t != NULL);
        }
        gr_ctx_memory(ctx, &m);
        CHECK_MSG(m.step_capacity == cap, "arena grew from %zu to %zu at "
                  "step %d", cap, m.step_capacity, step);
    }
    CHECK(m.step_peak_bytes >= 40 * 16384 && m.step_peak_bytes <= cap);
    /* zero-initialised, and shapes as asked */
    struct gr_tensor *t = gr_tensor_new(ctx, GR_I32, gr_shape3(2, 3, 4));
    CHECK(t && t->numel == 24 && t->ndim == 3 && t->shape[3] == 1);
    int32_t iv[24];
    gr_tensor_to_host(t, iv);
    int zero = 1;
    for (int i = 0; i < 24; i++) {
        zero &= iv[i] == 0;
    }
    CHECK(zero);
    CHECK(gr_zeros(ctx, gr_shape2(0, 3)) == NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "bad tensor shape [0, 3]");
    gr_ctx_free(ctx);
}

static void test_named(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct gr_tensor *w = gr_param_new(ctx, "enc.weight", gr_shape2(3, 4));
    struct gr_tensor *b = gr_param_new(ctx, "enc.bias", gr_shape1(3));
    struct gr_tensor *c = gr_param_new(ctx, "ctrl.weight", gr_shape2(2, 2));
    struct gr_tensor *s = gr_buffer_new(ctx, "state.h", GR_F32, gr_shape1(5));
    CHECK(w && b && c && s);
    CHECK(w->grad && w->requires_grad && w->kind == GR_KIND_PARAM);
    CHECK(s->grad == NULL && !s->requires_grad && s->kind == GR_KIND_BUFFER);
    CHECK(gr_param_new(ctx, "enc.weight", gr_shape1(1)) == NULL);
    CHECK_STR_CONTAINS(gr_last_error(), "'enc.weight' is already used");
    CHECK(gr_param_new(ctx, "has space", gr_shape1(1)) == NULL);
    CHECK(gr_ctx_find(ctx, "enc.bias") == b);
    CHECK(gr_ctx_find(ctx, "nope") == NULL);
    CHECK(gr_ctx_n_named(ctx) == 4 && gr_ctx_named(ctx, 2) == c);
    CHECK(gr_param_count(ctx, NULL) == 12 + 3 + 4);
    CHECK(gr_param_count(ctx, "enc.") == 15);
    CHECK(gr_param_set_trainable(ctx, "enc.", 0) == 2);
    CHECK(!w->requires_grad && !b->requires_grad && c->requires_grad);
    CHECK(gr_param_set_trainable(ctx, NULL, 1) == 3);
    /* host round trip, copy, fill, item */
    float v[5] = {1, 2, 3, 4, 5}, o[5];
    CHECK(gr_tensor_set_host(s, v) == 0 && gr_tensor_to_host(s, o) == 0);
    CHECK(memcmp(v, o, sizeof v) == 0);
    struct gr_tensor *t = gr_zeros(ctx, gr_shape1(5));
    CHECK(gr_tensor_copy(t, s) == 0);
    gr_tensor_to_host(t, o);
    CHECK(o[4] == 5.0f);
    CHECK(gr_tensor_copy(b, s) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "gr_tensor_copy");
    CHECK(gr_tensor_fill(t, 2.5f) == 0);
    gr_tensor_to_host(t, o);
    CHECK(o[0] == 2.5f && o[4] == 2.5f);
    CHECK(isnan(gr_tensor_item(t)));
    CHECK(gr_tensor_item(gr_sum(ctx, t)) == 12.5f);
    gr_ctx_free(ctx);
}

static void test_errors(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct gr_ctx *other = cpu_ctx();
    struct gr_tensor *a = gr_zeros(ctx, gr_shape2(3, 4));
    struct gr_tensor *b = gr_zeros(ctx, gr_shape2(5, 2));
    CHECK(gr_ctx_status(ctx) == 0);
    struct gr_tensor *y = gr_matmul(ctx, a, b, 0, 0);
    CHECK(y == NULL);
    CHECK(gr_ctx_status(ctx) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "gr_matmul: inner dimensions "
                       "differ: a [3, 4] vs b [5, 2]");
    /* NULL propagates without replacing the first message */
    struct gr_tensor *z = gr_tanh(ctx, gr_add(ctx, y, a));
    CHECK(z == NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "gr_matmul");
    CHECK(gr_backward(ctx, z) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "inner dimensions differ");
    gr_step_reset(ctx);
    CHECK(gr_ctx_status(ctx) == 0 && gr_ctx_error(ctx)[0] == '\0');
    /* another context's tensor */
    struct gr_tensor *a2 = gr_zeros(ctx, gr_shape1(3));
    struct gr_tensor *foreign = gr_zeros(other, gr_shape1(3));
    CHECK(gr_add(ctx, a2, foreign) == NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "belongs to another context");
    gr_step_reset(ctx);
    /* broadcasting, dtype, range */
    struct gr_tensor *x = gr_zeros(ctx, gr_shape2(3, 4));
    CHECK(gr_add(ctx, x, gr_zeros(ctx, gr_shape1(3))) == NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "b [3] does not broadcast to "
                       "[3, 4]");
    gr_step_reset(ctx);
    struct gr_tensor *table = gr_zeros(ctx, gr_shape2(5, 2));
    CHECK(gr_embedding(ctx, table, gr_zeros(ctx, gr_shape1(2))) == NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "'ids' must be i32");
    gr_step_reset(ctx);
    int32_t ids[3] = {1, 7, 2};
    struct gr_tensor *it = gr_tensor_from_host(ctx, GR_I32, gr_shape1(3), ids);
    CHECK(gr_embedding(ctx, gr_zeros(ctx, gr_shape2(5, 2)), it) == NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "ids[1] = 7 is outside [0, 4]");
    gr_step_reset(ctx);
    int32_t tg[2] = {0, 9};
    struct gr_tensor *tt = gr_tensor_from_host(ctx, GR_I32, gr_shape1(2), tg);
    CHECK(gr_cross_entropy(ctx, gr_zeros(ctx, gr_shape2(2, 4)), tt, -100) ==
          NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "targets[1] = 9 is outside [0, 4)");
    gr_step_reset(ctx);
    CHECK(gr_linear(ctx, gr_zeros(ctx, gr_shape2(2, 3)),
                    gr_zeros(ctx, gr_shape2(4, 5)), NULL) == NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "x [2, 3] does not match w [4, 5]");
    gr_step_reset(ctx);
    CHECK(gr_dropout(ctx, x = gr_zeros(ctx, gr_shape1(3)), 1.0f,
                     gr_rng_make(1, 2)) == NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "p = 1 outside [0, 1)");
    gr_step_reset(ctx);
    /* backward on a non-scalar, and twice */
    struct gr_tensor *p = gr_param_new(ctx, "p", gr_shape1(3));
    struct gr_tensor *v = gr_tanh(ctx, p);
    CHECK(gr_backward(ctx, v) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "one element needed");
    struct gr_tensor *l = gr_sum(ctx, v);
    CHECK(gr_backward(ctx, l) == 0);
    CHECK(gr_backward(ctx, l) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "already called in this step");
    gr_ctx_free(other);
    gr_ctx_free(ctx);
}

static void grad_of(struct gr_tensor *t, float *out)
{
    gr_tensor_to_host(t->grad, out);
}

static void test_tape(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct gr_tensor *p = gr_param_new(ctx, "a.p", gr_shape1(3));
    struct gr_tensor *q = gr_param_new(ctx, "b.q", gr_shape1(3));
    float pv[3] = {1, 2, 3}, qv[3] = {0.5f, -1, 2}, g[3];
    gr_tensor_set_host(p, pv);
    gr_tensor_set_host(q, qv);
    /* loss = Σ p·q: d/dp = q, d/dq = p; twice without zeroing: 2q */
    for (int i = 0; i < 2; i++) {
        gr_step_reset(ctx);
        struct gr_tensor *l = gr_sum(ctx, gr_mul(ctx, p, q));
        CHECK(gr_backward(ctx, l) == 0);
    }
    grad_of(p, g);
    CHECK(g[0] == 1.0f && g[1] == -2.0f && g[2] == 4.0f);
    gr_zero_grad(ctx);
    grad_of(p, g);
    CHECK(g[0] == 0.0f && g[2] == 0.0f);
    /* frozen: no gradient into b.q */
    gr_param_set_trainable(ctx, "b.", 0);
    gr_step_reset(ctx);
    CHECK(gr_backward(ctx, gr_sum(ctx, gr_mul(ctx, p, q))) == 0);
    grad_of(q, g);
    CHECK(g[0] == 0.0f && g[1] == 0.0f && g[2] == 0.0f);
    grad_of(p, g);
    CHECK(g[0] == 0.5f && g[1] == -1.0f);
    /* everything frozen: nothing recorded, backward is a no-op */
    gr_param_set_trainable(ctx, NULL, 0);
    gr_step_reset(ctx);
    struct gr_tensor *l = gr_sum(ctx, gr_mul(ctx, p, q));
    CHECK(gr_tape_length(ctx) == 0 && !l->requires_grad);
    CHECK(gr_backward(ctx, l) == 0);
    gr_param_set_trainable(ctx, NULL, 1);
    gr_zero_grad(ctx);
    /* no-grad mode */
    gr_step_reset(ctx);
    int was = gr_set_grad_enabled(ctx, 0);
    CHECK(was == 1);
    l = gr_sum(ctx, gr_mul(ctx, p, q));
    CHECK(gr_tape_length(ctx) == 0 && !l->requires_grad);
    gr_set_grad_enabled(ctx, 1);
    /* detach: y = Σ p · detach(p) has gradient p, not 2p */
    gr_step_reset(ctx);
    CHECK(gr_backward(ctx, gr_sum(ctx, gr_mul(ctx, p, gr_detach(ctx, p)))) ==
          0);
    grad_of(p, g);
    CHECK(g[0] == 1.0f && g[1] == 2.0f && g[2] == 3.0f);
    gr_zero_grad(ctx);
    /* views of a parameter: the gradient lands in the selected row */
    struct gr_tensor *m = gr_param_new(ctx, "m", gr_shape2(3, 2));
    gr_step_reset(ctx);
    struct gr_tensor *row = gr_select(ctx, m, 2);
    CHECK(row && row->ndim == 1 && row->shape[0] == 2);
    CHECK(gr_backward(ctx, gr_sum(ctx, gr_scale(ctx, row, 3.0f))) == 0);
    float mg[6];
    grad_of(m, mg);
    CHECK(mg[0] == 0 && mg[3] == 0 && mg[4] == 3.0f && mg[5] == 3.0f);
    /* ops after backward in the same step are not recorded */
    struct gr_tensor *after = gr_tanh(ctx, m);
    CHECK(after && !after->requires_grad);
    /* a step input can ask for its gradient */
    gr_step_reset(ctx);
    float xv[2] = {3, 4};
    struct gr_tensor *x = gr_tensor_from_host(ctx, GR_F32, gr_shape1(2), xv);
    gr_tensor_set_requires_grad(x, 1);
    CHECK(gr_backward(ctx, gr_sum(ctx, gr_square(ctx, x))) == 0);
    float xg[2];
    gr_tensor_to_host(x->grad, xg);
    CHECK(xg[0] == 6.0f && xg[1] == 8.0f);
    gr_ctx_free(ctx);
}

static void test_random(void)
{
    /* the device-side word is core/random.h's Philox word of the key */
    uint64_t key = gr_rng_key(gr_rng_make(7, 3));
    CHECK(gr_rng_u32(key, 13) == gr_philox_word_at(key, 13));
    CHECK(gr_rng_key(gr_rng_make(7, 3)) != gr_rng_key(gr_rng_make(7, 4)));
    CHECK(gr_rng_key(gr_rng_make(7, 3)) != gr_rng_key(gr_rng_make(8, 3)));
    CHECK(gr_rng_stream(1, 2, 3, 4) != gr_rng_stream(1, 2, 4, 3));
    struct gr_ctx *ctx = cpu_ctx();
    struct gr_tensor *t = gr_param_new(ctx, "t", gr_shape1(1000));
    CHECK(gr_tensor_rand_uniform(t, -2.0f, 3.0f, gr_rng_make(5, 6)) == 0);
    float *v = malloc(1000 * sizeof *v);
    gr_tensor_to_host(t, v);
    uint64_t k = gr_rng_key(gr_rng_make(5, 6));
    int exact = 1;
    double mean = 0;
    for (int i = 0; i < 1000; i++) {
        exact &= v[i] == -2.0f + 5.0f * gr_rng_uniform(k, (uint64_t)i);
        mean += v[i];
    }
    CHECK(exact);
    CHECK(fabs(mean / 1000 - 0.5) < 0.15);
    CHECK(gr_tensor_rand_normal(t, 1.0f, 2.0f, gr_rng_make(5, 7)) == 0);
    gr_tensor_to_host(t, v);
    double m1 = 0, m2 = 0;
    for (int i = 0; i < 1000; i++) {
        m1 += v[i];
        m2 += (double)v[i] * v[i];
    }
    m1 /= 1000;
    double sd = sqrt(m2 / 1000 - m1 * m1);
    CHECK_MSG(fabs(m1 - 1.0) < 0.2 && fabs(sd - 2.0) < 0.2, "normal: mean "
              "%.3f sd %.3f", m1, sd);
    /* dropout: keep rate, scale, determinism, locked masks */
    struct gr_tensor *ones = gr_full(ctx, gr_shape3(4, 50, 100), 1.0f);
    struct gr_tensor *d1 = gr_dropout(ctx, ones, 0.3f, gr_rng_make(9, 1));
    struct gr_tensor *d2 = gr_dropout(ctx, ones, 0.3f, gr_rng_make(9, 1));
    struct gr_tensor *d3 = gr_dropout(ctx, ones, 0.3f, gr_rng_make(9, 2));
    struct gr_tensor *lk = gr_locked_dropout(ctx, ones, 0.5f,
                                             gr_rng_make(9, 1));
    float *a = malloc(20000 * sizeof *a), *b = malloc(20000 * sizeof *b);
    float *c = malloc(20000 * sizeof *c);
    gr_tensor_to_host(d1, a);
    gr_tensor_to_host(d2, b);
    gr_tensor_to_host(d3, c);
    int kept = 0, same = 1, differ = 0, scaled = 1;
    for (int i = 0; i < 20000; i++) {
        kept += a[i] != 0.0f;
        same &= a[i] == b[i];
        differ += a[i] != c[i];
        scaled &= a[i] == 0.0f || fabsf(a[i] - 1.0f / 0.7f) < 1e-6f;
    }
    CHECK_MSG(abs(kept - 14000) < 400, "kept %d of 20000 at p = 0.3", kept);
    CHECK(same && differ > 1000 && scaled);
    gr_tensor_to_host(lk, a);
    int locked = 1, lkept = 0;
    for (int s = 1; s < 4; s++) {
        for (int i = 0; i < 5000; i++) {
            locked &= a[s * 5000 + i] == a[i];
        }
    }
    for (int i = 0; i < 5000; i++) {
        lkept += a[i] != 0.0f;
    }
    CHECK(locked);
    CHECK_MSG(abs(lkept - 2500) < 200, "locked kept %d of 5000", lkept);
    /* the mask of element m is exactly gr_rng_keep(key, m, p) */
    uint64_t k9 = gr_rng_key(gr_rng_make(9, 1));
    gr_tensor_to_host(d1, a);
    int exact_mask = 1;
    for (int i = 0; i < 20000; i++) {
        exact_mask &= (a[i] != 0.0f) == gr_rng_keep(k9, (uint64_t)i, 0.3f);
    }
    CHECK(exact_mask);
    free(a);
    free(b);
    free(c);
    free(v);
    gr_ctx_free(ctx);
}

/* The CPU backend's gemm on one-row and one-column shapes (run as sgemv)
 * with leading dimensions wider than the matrices, every transpose, a
 * shared and a strided B, beta 0 over NaN and beta 0.5: against a plain
 * double loop. gr_matmul only passes packed operands, so the strides are
 * checked here, on the backend itself. */
static void test_cpu_gemm_vector_shapes(void)
{
    const struct gr_backend *be = gr_backend_cpu();
    struct gr_rng_state { uint64_t s; } r = {12345};
    enum { PAD = 3, BATCH = 2 };
    const int shapes[][3] = {{1, 7, 5}, {6, 1, 5}, {1, 1, 4}, {1, 9, 1}};
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        int m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
        for (int ta = 0; ta < 2; ta++) {
            for (int tb = 0; tb < 2; tb++) {
                for (int bi = 0; bi < 2; bi++) {
                    float beta = bi ? 0.5f : 0.0f;
                    int ar = ta ? k : m, ac = ta ? m : k; /* stored A */
                    int br = tb ? n : k, bc = tb ? k : n; /* stored B */
                    int lda = ac + PAD, ldb = bc + PAD, ldc = n + PAD;
                    int64_t sa = (int64_t)ar * lda, sc = (int64_t)m * ldc;
                    float a[BATCH * 64], b[64], c[BATCH * 64], c0[BATCH * 64];
                    for (size_t i = 0; i < 64; i++) {
                        r.s = r.s * 6364136223846793005ULL + 1442695040888963407ULL;
                        b[i] = (float)((r.s >> 40) % 2001) / 1000.0f - 1.0f;
                    }
                    for (size_t i = 0; i < BATCH * 64; i++) {
                        r.s = r.s * 6364136223846793005ULL + 1442695040888963407ULL;
                        a[i] = (float)((r.s >> 40) % 2001) / 1000.0f - 1.0f;
                        c0[i] = bi ? (float)((r.s >> 20) % 2001) / 1000.0f : NAN;
                        c[i] = c0[i];
                    }
                    CHECK(sa * BATCH <= 64 * BATCH && sc * BATCH <= 64 * BATCH &&
                          (int64_t)br * ldb <= 64);
                    be->gemm(NULL, ta, tb, m, n, k, 1.5f, a, lda, sa, b, ldb,
                             0, beta, c, ldc, sc, BATCH);
                    for (int q = 0; q < BATCH; q++) {
                        for (int i = 0; i < m; i++) {
                            for (int j = 0; j < n; j++) {
                                double acc = 0.0;
                                for (int t = 0; t < k; t++) {
                                    double av = ta ? a[q * sa + t * lda + i]
                                                   : a[q * sa + i * lda + t];
                                    double bv = tb ? b[j * ldb + t]
                                                   : b[t * ldb + j];
                                    acc += av * bv;
                                }
                                double want = 1.5 * acc;
                                if (bi) {
                                    want += 0.5 * c0[q * sc + i * ldc + j];
                                }
                                float got = c[q * sc + i * ldc + j];
                                CHECK_MSG(fabs(got - want) <= 1e-4,
                                          "gemm %dx%dx%d ta %d tb %d beta "
                                          "%.1f item %d [%d,%d]: %g, want %g",
                                          m, n, k, ta, tb, beta, q, i, j,
                                          got, want);
                            }
                        }
                        /* the padding between rows is left alone */
                        for (int i = 0; i < m; i++) {
                            for (int j = n; j < ldc && q * sc + i * ldc + j < sc * BATCH; j++) {
                                float got = c[q * sc + i * ldc + j];
                                float was = c0[q * sc + i * ldc + j];
                                CHECK_MSG((isnan(got) && isnan(was)) ||
                                              got == was,
                                          "gemm %dx%dx%d wrote padding",
                                          m, n, k);
                            }
                        }
                    }
                }
            }
        }
    }
}

int main(void)
{
    test_devices();
    test_arena();
    test_named();
    test_errors();
    test_tape();
    test_random();
    test_cpu_gemm_vector_shapes();
    return test_report("kernels_tensor");
}
