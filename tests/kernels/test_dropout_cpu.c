/* The CPU's many-at-a-time dropout masks (kernels/dropout_cpu.c) give the
 * bits of the element-by-element definition (kernels/rng.h gr_rng_keep),
 * which the CUDA backend draws: Philox blocks against gr_philox4x32_10
 * (vector groups, their tails, counters past 2^32 blocks), runs against
 * gr_rng_keep at every word offset and length around the vector and chunk
 * sizes, the integer threshold on the exact boundary u == p, and gr_dropout
 * (forward and gradient) over full, locked and row-broadcast masks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/random.h"
#include "kernels/dropout_cpu_internal.h"
#include "kernels/ops.h"
#include "kernels/rng.h"
#include "kernels/tape.h"
#include "kernels/tensor.h"
#include "tests/test.h"

static void test_blocks(void)
{
    const uint64_t key = 0x0123456789ABCDEFull;
    const uint32_t pkey[2] = {(uint32_t)key, (uint32_t)(key >> 32)};
    const uint64_t starts[] = {0, 5, 0xFFFFFFFFull - 3, (1ull << 40) + 7};
    const int64_t counts[] = {0, 1, 7, 8, 9, 16, 17, 33};
    uint32_t out[4 * 40], ref[4];
    for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            int64_t nb = counts[c];
            memset(out, 0xA5, sizeof out);
            gr_cpu_philox_blocks(key, starts[s], nb, out);
            int same = 1;
            for (int64_t b = 0; b < nb; b++) {
                uint64_t blk = starts[s] + (uint64_t)b;
                uint32_t ctr[4] = {(uint32_t)blk, (uint32_t)(blk >> 32), 0,
                                   0};
                gr_philox4x32_10(ctr, pkey, ref);
                same &= memcmp(out + 4 * b, ref, sizeof ref) == 0;
            }
            /* nothing written past the last block */
            same &= nb >= 40 || out[4 * nb] == 0xA5A5A5A5u;
            CHECK_MSG(same, "blocks from %llu, %lld of them: not "
                      "gr_philox4x32_10's", (unsigned long long)starts[s],
                      (long long)nb);
        }
    }
}

static void test_runs(void)
{
    const uint64_t key = gr_rng_key(gr_rng_make(7, 3));
    const float ps[] = {0.1f, 0.2f, 0.3f, 0.5f, 0.25f, 0.9999999f};
    const int64_t ns[] = {1, 3, 31, 32, 33, 100, 511, 512, 513, 1500};
    enum { NMAX = 1500 };
    float *x = malloc(NMAX * sizeof *x), *y = malloc(NMAX * sizeof *y);
    float *z = malloc(NMAX * sizeof *z);
    for (int i = 0; i < NMAX; i++) {
        x[i] = (float)(i % 17) - 8.5f;
    }
    int bad = 0, kept = 0, total = 0;
    for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) {
        float p = ps[pi], scale = 1.0f / (1.0f - p);
        for (uint64_t m0 = 0; m0 < 6; m0++) {
            for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
                int64_t n = ns[ni];
                uint64_t base = m0 + (pi == 5 ? (1ull << 33) : 0);
                for (int acc = 0; acc < 2; acc++) {
                    for (int64_t i = 0; i < n; i++) {
                        y[i] = z[i] = 0.5f * (float)i;
                    }
                    gr_cpu_dropout_run(key, base, n, p, scale, x, y, acc);
                    for (int64_t i = 0; i < n; i++) {
                        int k = gr_rng_keep(key, base + (uint64_t)i, p);
                        float v = k ? x[i] * scale : 0.0f;
                        float want = acc ? z[i] + v : v;
                        bad += y[i] != want;
                        kept += k;
                        total++;
                    }
                }
                /* in place (y = x), as the attention rows use it */
                memcpy(y, x, (size_t)n * sizeof *y);
                gr_cpu_dropout_run(key, base, n, p, scale, y, y, 0);
                for (int64_t i = 0; i < n; i++) {
                    int k = gr_rng_keep(key, base + (uint64_t)i, p);
                    bad += y[i] != (k ? x[i] * scale : 0.0f);
                }
            }
        }
    }
    CHECK_MSG(bad == 0, "%d elements differ from gr_rng_keep", bad);
    /* the cases must keep and drop both (not a vacuous comparison) */
    CHECK(kept > 0 && kept < total);
    free(x);
    free(y);
    free(z);
}

/* u == p exactly: gr_rng_keep keeps it, and the next float up drops it;
 * alone (the scalar tail) and first of four (the vector lanes). */
static void test_boundary(void)
{
    const uint64_t key = gr_rng_key(gr_rng_make(11, 5));
    int tried = 0;
    for (uint64_t m = 0; m < 64 && tried < 8; m++) {
        uint32_t w = gr_rng_u32(key, m);
        if ((w >> 8) == 0 || (w >> 8) >= (1u << 24) - 1) {
            continue;
        }
        tried++;
        float p = (float)(w >> 8) * (1.0f / 16777216.0f);
        float up = nextafterf(p, 1.0f);
        float one[4] = {1.0f, 1.0f, 1.0f, 1.0f}, y[2], y4[2][4];
        CHECK(gr_rng_keep(key, m, p) && !gr_rng_keep(key, m, up));
        gr_cpu_dropout_run(key, m, 1, p, 1.0f, one, &y[0], 0);
        gr_cpu_dropout_run(key, m, 1, up, 1.0f, one, &y[1], 0);
        CHECK_MSG(y[0] == 1.0f && y[1] == 0.0f, "element %llu at u == p: "
                  "kept %g, at the next p up %g",
                  (unsigned long long)m, (double)y[0], (double)y[1]);
        gr_cpu_dropout_run(key, m, 4, p, 1.0f, one, y4[0], 0);
        gr_cpu_dropout_run(key, m, 4, up, 1.0f, one, y4[1], 0);
        CHECK_MSG(y4[0][0] == 1.0f && y4[1][0] == 0.0f, "element %llu at "
                  "u == p in a vector: kept %g, at the next p up %g",
                  (unsigned long long)m, (double)y4[0][0],
                  (double)y4[1][0]);
    }
    CHECK(tried == 8);
}

/* gr_dropout_mask over tensors: the forward and the gradient are the
 * definition's, whether the mask is the tensor's own (one long run),
 * locked (runs of the trailing dimensions) or one per row (the
 * element-by-element path). */
static void test_op(void)
{
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.device = GR_DEVICE_CPU;
    struct gr_ctx *ctx = NULL;
    CHECK_MSG(gr_ctx_new(&ctx, &cfg) == 0, "%s", gr_last_error());
    if (!ctx) {
        return;
    }
    struct {
        struct gr_shape s, m;
        const char *what;
    } cases[] = {
        {gr_shape4(3, 5, 7, 8), gr_shape4(3, 5, 7, 8), "own mask"},
        {gr_shape3(4, 3, 50), gr_shape3(1, 3, 50), "locked"},
        {gr_shape4(2, 1, 9, 40), gr_shape4(2, 1, 9, 40), "size-1 dim"},
        {gr_shape2(6, 40), gr_shape2(6, 1), "one per row"},
        {gr_shape3(5, 2, 3), gr_shape3(5, 2, 3), "short"},
    };
    const float p = 0.3f, scale = 1.0f / 0.7f;
    const struct gr_rng rng = gr_rng_make(21, 4);
    const uint64_t key = gr_rng_key(rng);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        gr_step_reset(ctx);
        struct gr_shape s = cases[c].s, ms = cases[c].m;
        int64_t n = 1, d[4] = {1, 1, 1, 1}, md[4] = {1, 1, 1, 1};
        for (int i = 0; i < s.ndim; i++) {
            n *= s.d[i];
            d[4 - s.ndim + i] = s.d[i];
            md[4 - ms.ndim + i] = ms.d[i];
        }
        float *xv = malloc((size_t)n * sizeof *xv);
        float *rv = malloc((size_t)n * sizeof *rv);
        float *yv = malloc((size_t)n * sizeof *yv);
        float *gv = malloc((size_t)n * sizeof *gv);
        for (int64_t i = 0; i < n; i++) {
            xv[i] = 0.25f * (float)(i % 13) - 1.0f;
            rv[i] = 0.5f + (float)(i % 5);
        }
        struct gr_tensor *x = gr_tensor_from_host(ctx, GR_F32, s, xv);
        struct gr_tensor *r = gr_tensor_from_host(ctx, GR_F32, s, rv);
        gr_tensor_set_requires_grad(x, 1);
        struct gr_tensor *y = gr_dropout_mask(ctx, x, p, rng, ms, 0);
        int rc = gr_backward(ctx, gr_sum(ctx, gr_mul(ctx, y, r)));
        CHECK_MSG(rc == 0 && x->grad, "%s: %s", cases[c].what,
                  gr_last_error());
        if (rc == 0 && x->grad) {
            gr_tensor_to_host(y, yv);
            gr_tensor_to_host(x->grad, gv);
            int bad = 0;
            int64_t i = 0;
            for (int64_t a = 0; a < d[0]; a++) {
                for (int64_t b = 0; b < d[1]; b++) {
                    for (int64_t e = 0; e < d[2]; e++) {
                        for (int64_t f = 0; f < d[3]; f++, i++) {
                            int64_t m =
                                (((md[0] > 1 ? a : 0) * md[1] +
                                  (md[1] > 1 ? b : 0)) * md[2] +
                                 (md[2] > 1 ? e : 0)) * md[3] +
                                (md[3] > 1 ? f : 0);
                            int k = gr_rng_keep(key, (uint64_t)m, p);
                            bad += yv[i] != (k ? xv[i] * scale : 0.0f);
                            bad += gv[i] != (k ? rv[i] * scale : 0.0f);
                        }
                    }
                }
            }
            CHECK_MSG(bad == 0, "%s: %d values differ from gr_rng_keep's "
                      "mask", cases[c].what, bad);
        }
        free(xv);
        free(rv);
        free(yv);
        free(gv);
    }
    gr_ctx_free(ctx);
}

int main(void)
{
    test_blocks();
    test_runs();
    test_boundary();
    test_op();
    return test_report("kernels_dropout_cpu");
}
