/* The input-side product of every recurrent layer is ONE matrix product
 * per layer per window (on_lstm.md §5, §13): [T·B, d_in] x [d_in, 2n+4H],
 * while only the hidden-side product runs per step ([B, H] x [H, 2n+4H]).
 *
 * This program defines cblas_sgemm itself, so the kernel layer's calls
 * (linked statically) land here; each call is counted by shape and then
 * forwarded to OpenBLAS's (dlsym RTLD_NEXT). It runs one training window
 * of a 3-layer ON-LSTM LM and of an AWD-LSTM LM, forward and backward.
 */
#define _GNU_SOURCE
#include <cblas.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/tape.h"
#include "nlp/models/onlstm.h"
#include "tests/test.h"

#ifndef OPENBLAS_CONST
#define OPENBLAS_CONST
#endif

struct call {
    int ta, tb, m, n, k;
};

static struct call calls[100000];
static int n_calls;
static int counting;

typedef void (*sgemm_fn)(OPENBLAS_CONST enum CBLAS_ORDER,
                         OPENBLAS_CONST enum CBLAS_TRANSPOSE,
                         OPENBLAS_CONST enum CBLAS_TRANSPOSE,
                         OPENBLAS_CONST blasint, OPENBLAS_CONST blasint,
                         OPENBLAS_CONST blasint, OPENBLAS_CONST float,
                         OPENBLAS_CONST float *, OPENBLAS_CONST blasint,
                         OPENBLAS_CONST float *, OPENBLAS_CONST blasint,
                         OPENBLAS_CONST float, float *,
                         OPENBLAS_CONST blasint);

void cblas_sgemm(OPENBLAS_CONST enum CBLAS_ORDER Order,
                 OPENBLAS_CONST enum CBLAS_TRANSPOSE TransA,
                 OPENBLAS_CONST enum CBLAS_TRANSPOSE TransB,
                 OPENBLAS_CONST blasint M, OPENBLAS_CONST blasint N,
                 OPENBLAS_CONST blasint K, OPENBLAS_CONST float alpha,
                 OPENBLAS_CONST float *A, OPENBLAS_CONST blasint lda,
                 OPENBLAS_CONST float *B, OPENBLAS_CONST blasint ldb,
                 OPENBLAS_CONST float beta, float *C,
                 OPENBLAS_CONST blasint ldc)
{
    static sgemm_fn real;
    if (real == NULL) {
        real = (sgemm_fn)dlsym(RTLD_NEXT, "cblas_sgemm");
        if (real == NULL) {
            fprintf(stderr, "cannot find the real cblas_sgemm\n");
            abort();
        }
    }
    if (counting && n_calls < (int)(sizeof calls / sizeof calls[0])) {
        struct call c = {TransA == CblasTrans, TransB == CblasTrans, (int)M,
                         (int)N, (int)K};
        calls[n_calls++] = c;
    }
    real(Order, TransA, TransB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* Calls whose product is (m x k) by (k x n), in either order of m, n. */
static int count_shape(int m, int n, int k)
{
    int c = 0;
    for (int i = 0; i < n_calls; i++) {
        if (calls[i].m == m && calls[i].n == n && calls[i].k == k) {
            c++;
        }
    }
    return c;
}

static void run_kind(enum nlp_lm_kind kind)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    struct gr_ctx *ctx = NULL;
    CHECK(gr_ctx_new(&ctx, &cc) == 0);
    struct nlp_lm_config cfg;
    nlp_lm_config_default(&cfg, kind, 50);
    cfg.emsize = 8;
    cfg.nhid = 12;
    cfg.chunk = 4;
    cfg.nlayers = 3;
    struct nlp_lm lm;
    CHECK(nlp_lm_init(&lm, ctx, &cfg, 1) == 0);
    const int T = 9, B = 3;
    int32_t ids[(9 + 1) * 3];
    for (int i = 0; i < (T + 1) * B; i++) {
        ids[i] = (i * 13 + 1) % 50;
    }
    struct nlp_lm_state st;
    CHECK(nlp_lm_state_init(&st, &lm, "g", B) == 0);
    gr_step_reset(ctx);
    struct gr_tensor *in = gr_tensor_from_host(ctx, GR_I32, gr_shape2(T, B),
                                               ids);
    struct gr_tensor *tg = gr_tensor_from_host(ctx, GR_I32, gr_shape1(T * B),
                                               ids + B);
    struct nlp_lm_drop drop = nlp_lm_drop_train(1, 1, 1);
    struct nlp_lm_out o;
    n_calls = 0;
    counting = 1;
    CHECK(nlp_lm_forward(&lm, &st, in, tg, &drop, &o) == 0);
    counting = 0;
    int fwd_calls = n_calls;
    const char *name = nlp_lm_kind_name(kind);
    for (int l = 0; l < cfg.nlayers; l++) {
        int din = nlp_lm_layer_in(&cfg, l), h = nlp_lm_layer_out(&cfg, l);
        int rows = 4 * h +
                   (nlp_lm_kind_ordered(kind) ? 2 * (h / cfg.chunk) : 0);
        /* x [T·B, din] times W_ihᵀ: exactly one call for the window */
        int whole = count_shape(T * B, rows, din);
        CHECK_MSG(whole == 1, "%s layer %d: %d input-side calls over the "
                  "window, want 1", name, l + 1, whole);
        (void)h;
    }
    /* Everything else is the hidden side, once per step and layer: the
     * total is L window products + L·T step products + the decoder (the
     * shapes of layers with d_in = H coincide, so count the total). */
    /* FastTrees kinds (issue 22): FFT has no per-step product at all
     * (its recurrence is the scan); CFT adds its convolution, one call per
     * kernel tap (2) and layer. */
    int want = cfg.nlayers + (kind == NLP_LM_FFT ? 0 : cfg.nlayers * T) + 1 +
               (kind == NLP_LM_CFT ? 2 * cfg.nlayers : 0);
    CHECK_MSG(fwd_calls == want, "%s: %d forward GEMM calls, want %d", name,
              fwd_calls, want);
    /* the decoder: one call over the window */
    CHECK(count_shape(T * B, cfg.vocab, cfg.emsize) == 1);
    /* backward: the input side's weight gradient is one product too
     * ([rows, T·B] x [T·B, din]) */
    n_calls = 0;
    counting = 1;
    CHECK(gr_backward(ctx, o.loss) == 0);
    counting = 0;
    for (int l = 0; l < cfg.nlayers; l++) {
        int din = nlp_lm_layer_in(&cfg, l), h = nlp_lm_layer_out(&cfg, l);
        int rows = 4 * h +
                   (nlp_lm_kind_ordered(kind) ? 2 * (h / cfg.chunk) : 0);
        int dw = count_shape(rows, din, T * B);
        CHECK_MSG(dw == 1, "%s layer %d: %d input-weight gradient calls, "
                  "want 1", name, l + 1, dw);
    }
    printf("%s: %d GEMM calls forward, %d backward (T %d, %d layers)\n",
           name, fwd_calls, n_calls, T, cfg.nlayers);
    gr_ctx_free(ctx);
}

int main(void)
{
    run_kind(NLP_LM_ONLSTM);
    run_kind(NLP_LM_LSTM);
    run_kind(NLP_LM_FT);
    run_kind(NLP_LM_CFT);
    run_kind(NLP_LM_FFT);
    run_kind(NLP_LM_FTLSTM);
    return test_report("nlp_lm_gemm");
}
