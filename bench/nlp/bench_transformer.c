/* grove bench nlp --model transformer: training steps of a Transformer
 * encoder classifier (nlp/models/transformer.h) against the same model
 * built from torch.nn.TransformerEncoderLayer (bench/nlp/transformer_ref.py)
 * in the same run, the sides alternating (bench/bench_util.h).
 *
 * One step: embedding scaled by √D plus sinusoidal positions, dropout,
 * L pre-norm encoder layers and the final layer norm, a linear head on
 * position 0, cross entropy, backward, Adam. tokens/s = B·T / the median
 * step time. Cases: classifier (the transformer row's logic size: D 256,
 * 2 layers, 4 heads, FFN 1024, dropout 0.2, B 128, T 32) and tiny (T2T's
 * transformer_tiny: 128, 2, 4, 512, dropout 0.1, B 64, T 32).
 *
 * The matrix-product floor (issue 23 §5: ">= 2x PyTorch, or within 1.25x
 * of the floor where the GEMMs bound every implementation"): the products
 * a training step of the same model cannot avoid, alone, through the same
 * kernel-layer GEMM (gr_matmul: CBLAS on the CPU, cuBLAS on CUDA) with the
 * same threads, timed in the same rounds as the full step (grove, floor,
 * baseline, grove, ...). Per layer, forward: the q/k/v projection, the
 * score and value products of every head, the output projection, the two
 * FFN linears; backward: both products (input and weight gradients) of
 * each linear and the four per-head products of attention (dP, dV, dQ,
 * dK); plus the head on position 0 (forward, both gradients). The score
 * product that grove's attention recomputes in its backward (it keeps no
 * [T, T] matrix) is not in the floor: the floor is what any
 * implementation must compute. Operand buffers are shared between layers
 * and between a product and its gradients (the FLOPs are the step's; the
 * data are not). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "bench/nlp/bench_nlp.h"
#include "core/error.h"
#include "core/files.h"
#include "kernels/attention.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "kernels/tape.h"
#include "nlp/models/transformer.h"

struct tf_case {
    const char *name, *what;
    int d, layers, heads, ffn, batch, seq;
    float dropout;
};

static const struct tf_case tf_cases[] = {
    {"classifier", "D 256, 2 layers, 4 heads, FFN 1024, B 128, T 32", 256, 2,
     4, 1024, 128, 32, 0.2f},
    {"tiny", "T2T tiny: D 128, 2 layers, 4 heads, FFN 512, B 64, T 32", 128,
     2, 4, 512, 64, 32, 0.1f},
};
static const struct tf_case tf_quick[] = {
    {"classifier", "quick: D 32, 1 layer, B 8, T 8", 32, 1, 4, 64, 8, 8,
     0.2f},
    {"tiny", "quick: D 16, 1 layer, B 4, T 8", 16, 1, 4, 32, 4, 8, 0.1f},
};
enum { TF_CASES = 2, TF_VOCAB = 1000, TF_CLASSES = 10 };

/* grove's median seconds per step. */
static int run_grove(const struct tf_case *c,
                     const struct bench_nlp_options *o, double *sec)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = o->device;
    cc.threads = o->threads;
    struct gr_ctx *ctx = NULL;
    int rc = gr_ctx_new(&ctx, &cc);
    if (rc < 0) {
        return rc;
    }
    struct nlp_transformer_config tc = nlp_transformer_config_default(c->d);
    tc.layers = c->layers;
    tc.heads = c->heads;
    tc.ffn = c->ffn;
    tc.dropout = tc.dropout_ffn = tc.dropout_attn = c->dropout;
    struct nlp_transformer t;
    memset(&t, 0, sizeof t);
    rc = nlp_transformer_init(&t, ctx, "enc", &tc, gr_rng_make(1, 0));
    struct gr_tensor *emb = gr_param_new(ctx, "emb", gr_shape2(TF_VOCAB,
                                                               c->d));
    struct gr_tensor *hw = gr_param_new(ctx, "head.weight",
                                        gr_shape2(TF_CLASSES, c->d));
    struct gr_tensor *hb = gr_param_new(ctx, "head.bias",
                                        gr_shape1(TF_CLASSES));
    if (rc == 0 && (!emb || !hw || !hb)) {
        rc = gr_error(GR_EINVAL, "bench transformer: %s", gr_ctx_error(ctx));
    }
    if (rc == 0) {
        gr_tensor_rand_normal(emb, 0.0f, 1.0f / sqrtf((float)c->d),
                              gr_rng_make(1, 1));
        gr_tensor_rand_normal(hw, 0.0f, 0.05f, gr_rng_make(1, 2));
        gr_tensor_fill(hb, 0.0f);
    }
    struct gr_optim *opt = NULL;
    if (rc == 0) {
        struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
        oc.lr = 1e-4f;
        oc.beta2 = 0.98f;
        oc.eps = 1e-9f;
        rc = gr_optim_new(&opt, ctx, "adam", &oc);
    }
    const int64_t n = (int64_t)c->seq * c->batch;
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    int32_t *y = malloc((size_t)c->batch * sizeof *y);
    double *times = malloc((size_t)(o->windows + o->warmup) * sizeof *times);
    if (rc == 0 && (!ids || !y || !times)) {
        rc = gr_error(GR_ENOMEM, "bench transformer: out of memory");
    }
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        ids[i] = (int32_t)(gr_rng_u32(7, (uint64_t)i) % TF_VOCAB);
    }
    for (int i = 0; rc == 0 && i < c->batch; i++) {
        y[i] = (int32_t)(gr_rng_u32(8, (uint64_t)i) % TF_CLASSES);
    }
    for (int w = 0; rc == 0 && w < o->warmup + o->windows; w++) {
        double t0 = bench_wall_seconds();
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct gr_rng rng = gr_rng_make(3, (uint64_t)w);
        struct gr_tensor *it = gr_tensor_from_host(
            ctx, GR_I32, gr_shape2(c->seq, c->batch), ids);
        struct gr_tensor *yt = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape1(c->batch), y);
        struct gr_tensor *x = gr_scale(ctx, gr_embedding(ctx, emb, it),
                                       sqrtf((float)c->d));
        x = gr_add(ctx, x, gr_positions_sinusoidal(ctx, c->seq, c->d, 0));
        x = gr_dropout(ctx, x, c->dropout, gr_rng_make(4, (uint64_t)w));
        x = nlp_transformer_forward(ctx, &t, x, NULL, 0, 1, rng);
        x = x ? gr_reshape(ctx, gr_slice(ctx, x, 0, 0, 1),
                           gr_shape2(c->batch, c->d))
              : NULL;
        struct gr_tensor *loss = gr_cross_entropy(
            ctx, gr_linear(ctx, x, hw, hb), yt, -1);
        if (loss == NULL || gr_backward(ctx, loss) < 0) {
            rc = gr_error(GR_EINVAL, "bench transformer: %s",
                          gr_ctx_error(ctx));
            break;
        }
        gr_optim_step(opt);
        (void)gr_tensor_item(loss); /* synchronises a GPU */
        times[w] = bench_wall_seconds() - t0;
    }
    if (rc == 0) {
        *sec = bench_median(times + o->warmup, o->windows);
    }
    free(ids);
    free(y);
    free(times);
    gr_optim_free(opt);
    nlp_transformer_free(&t);
    gr_ctx_free(ctx);
    return rc;
}

/* The PyTorch side's result line: its median seconds per step. */
static int parse_result(const char *line, void *arg)
{
    double tps = 0.0, s = 0.0;
    if (sscanf(line, "tokens_per_s %lf seconds_per_window %lf", &tps, &s) !=
        2) {
        return 0;
    }
    *(double *)arg = s;
    return 1;
}

/* ---- the matrix-product floor ---- */

/* The floor's operand buffers: [batch, rows, cols] (batch 1: 2-D). */
enum {
    FL_X,    /* [N, D]: layer inputs, attention outputs, their gradients */
    FL_QKV,  /* [N, 3D]: the q/k/v projection's output gradient */
    FL_H,    /* [N, F]: the FFN's hidden layer and its gradient */
    FL_WIN,  /* [3D, D] */
    FL_WOUT, /* [D, D] */
    FL_W1,   /* [F, D] */
    FL_W2,   /* [D, F] */
    FL_Q,    /* [B·H, T, dk]: q, and dO per head */
    FL_K,    /* [B·H, T, dk]: k and v per head */
    FL_P,    /* [B·H, T, T]: the attention weights and dS */
    FL_HX,   /* [B, D]: position 0 */
    FL_HW,   /* [C, D] */
    FL_DL,   /* [B, C]: the logits' gradient */
    FL_BUFS
};

/* C = op(A) op(B) with gr_matmul's transposes. */
struct fl_prod {
    unsigned char a, b, ta, tb;
};

static const struct fl_prod fl_fwd[] = {
    {FL_X, FL_WIN, 0, 1},  /* q, k, v = LN(x) W_in^T          [N, 3D] */
    {FL_Q, FL_K, 0, 1},    /* scores q k^T per head           [BH, T, T] */
    {FL_P, FL_K, 0, 0},    /* P v per head                    [BH, T, dk] */
    {FL_X, FL_WOUT, 0, 1}, /* output projection               [N, D] */
    {FL_X, FL_W1, 0, 1},   /* FFN in                          [N, F] */
    {FL_H, FL_W2, 0, 1},   /* FFN out                         [N, D] */
};
static const struct fl_prod fl_head[] = {
    {FL_HX, FL_HW, 0, 1}, /* logits                           [B, C] */
    {FL_DL, FL_HW, 0, 0}, /* d position 0 = dlogits W         [B, D] */
    {FL_DL, FL_HX, 1, 0}, /* dW = dlogits^T x0                [C, D] */
};
static const struct fl_prod fl_bwd[] = {
    {FL_X, FL_W2, 0, 0},    /* dH = dY W2                     [N, F] */
    {FL_X, FL_H, 1, 0},     /* dW2 = dY^T H                   [D, F] */
    {FL_H, FL_W1, 0, 0},    /* dX = dH W1                     [N, D] */
    {FL_H, FL_X, 1, 0},     /* dW1 = dH^T X                   [F, D] */
    {FL_X, FL_WOUT, 0, 0},  /* dA = dY W_out                  [N, D] */
    {FL_X, FL_X, 1, 0},     /* dW_out = dY^T A                [D, D] */
    {FL_Q, FL_K, 0, 1},     /* dP = dO v^T per head           [BH, T, T] */
    {FL_P, FL_Q, 1, 0},     /* dv = P^T dO                    [BH, T, dk] */
    {FL_P, FL_K, 0, 0},     /* dq = dS k                      [BH, T, dk] */
    {FL_P, FL_Q, 1, 0},     /* dk = dS^T q                    [BH, T, dk] */
    {FL_QKV, FL_WIN, 0, 0}, /* dX = dQKV W_in                 [N, D] */
    {FL_QKV, FL_X, 1, 0},   /* dW_in = dQKV^T X               [3D, D] */
};
#define FL_N(a) ((int)(sizeof a / sizeof a[0]))

static void fl_shapes(const struct tf_case *c, int64_t s[FL_BUFS][3])
{
    const int64_t n = (int64_t)c->seq * c->batch, d = c->d, f = c->ffn;
    const int64_t bh = (int64_t)c->batch * c->heads, dk = d / c->heads;
    const int64_t t = c->seq;
    const int64_t v[FL_BUFS][3] = {
        {1, n, d},  {1, n, 3 * d}, {1, n, f},   {1, 3 * d, d},
        {1, d, d},  {1, f, d},     {1, d, f},   {bh, t, dk},
        {bh, t, dk}, {bh, t, t},   {1, c->batch, d},
        {1, TF_CLASSES, d},        {1, c->batch, TF_CLASSES},
    };
    memcpy(s, v, sizeof v);
}

/* The product's output elements and FLOPs (2·M·N·K per item). */
static void fl_cost(int64_t s[FL_BUFS][3], const struct fl_prod *p,
                    double *out_elems, double *flop)
{
    const int64_t *a = s[p->a], *b = s[p->b];
    double m = (double)(p->ta ? a[2] : a[1]);
    double k = (double)(p->ta ? a[1] : a[2]);
    double n = (double)(p->tb ? b[1] : b[2]);
    *out_elems = (double)a[0] * m * n;
    *flop = 2.0 * (double)a[0] * m * n * k;
}

/* One step's products in the step's order: the layers forward, the head,
 * the layers backward. */
static int fl_step(struct gr_ctx *ctx, struct gr_tensor *const *buf,
                   int layers)
{
    for (int l = 0; l < layers; l++) {
        for (int i = 0; i < FL_N(fl_fwd); i++) {
            const struct fl_prod *p = &fl_fwd[i];
            if (!gr_matmul(ctx, buf[p->a], buf[p->b], p->ta, p->tb)) {
                return -1;
            }
        }
    }
    for (int i = 0; i < FL_N(fl_head); i++) {
        const struct fl_prod *p = &fl_head[i];
        if (!gr_matmul(ctx, buf[p->a], buf[p->b], p->ta, p->tb)) {
            return -1;
        }
    }
    for (int l = 0; l < layers; l++) {
        for (int i = 0; i < FL_N(fl_bwd); i++) {
            const struct fl_prod *p = &fl_bwd[i];
            if (!gr_matmul(ctx, buf[p->a], buf[p->b], p->ta, p->tb)) {
                return -1;
            }
        }
    }
    return 0;
}

/* FLOPs of one step's products, and the floats their outputs take. */
static double fl_step_flop(const struct tf_case *c, double *out_elems)
{
    int64_t s[FL_BUFS][3];
    fl_shapes(c, s);
    double flop = 0.0, elems = 0.0, e, f;
    for (int i = 0; i < FL_N(fl_fwd); i++) {
        fl_cost(s, &fl_fwd[i], &e, &f);
        flop += c->layers * f;
        elems += c->layers * e;
    }
    for (int i = 0; i < FL_N(fl_bwd); i++) {
        fl_cost(s, &fl_bwd[i], &e, &f);
        flop += c->layers * f;
        elems += c->layers * e;
    }
    for (int i = 0; i < FL_N(fl_head); i++) {
        fl_cost(s, &fl_head[i], &e, &f);
        flop += f;
        elems += e;
    }
    *out_elems = elems;
    return flop;
}

/* The floor's median seconds per step: the step's products alone, on the
 * device and threads grove's side uses; the step arena sized to hold them
 * all, so that no timed step grows it. */
static int run_floor(const struct tf_case *c,
                     const struct bench_nlp_options *o, double *sec)
{
    double elems = 0.0;
    (void)fl_step_flop(c, &elems);
    const int n_prod = c->layers * (FL_N(fl_fwd) + FL_N(fl_bwd)) +
                       FL_N(fl_head);
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = o->device;
    cc.threads = o->threads;
    cc.step_chunk_bytes = (size_t)(4.0 * elems) + (size_t)n_prod * 4096 +
                          ((size_t)1 << 20);
    struct gr_ctx *ctx = NULL;
    int rc = gr_ctx_new(&ctx, &cc);
    if (rc < 0) {
        return rc;
    }
    gr_set_grad_enabled(ctx, 0);
    int64_t s[FL_BUFS][3];
    fl_shapes(c, s);
    struct gr_tensor *buf[FL_BUFS];
    for (int i = 0; rc == 0 && i < FL_BUFS; i++) {
        char name[32];
        snprintf(name, sizeof name, "floor.%d", i);
        buf[i] = gr_buffer_new(ctx, name, GR_F32,
                               s[i][0] > 1 ? gr_shape3(s[i][0], s[i][1],
                                                       s[i][2])
                                           : gr_shape2(s[i][1], s[i][2]));
        if (buf[i] == NULL) {
            rc = gr_error(GR_ENOMEM, "bench transformer floor: %s",
                          gr_ctx_error(ctx));
        } else {
            gr_tensor_rand_uniform(buf[i], -1.0f, 1.0f,
                                   gr_rng_make(5, (uint64_t)i));
        }
    }
    double *times = malloc((size_t)(o->windows + o->warmup) * sizeof *times);
    if (rc == 0 && times == NULL) {
        rc = gr_error(GR_ENOMEM, "bench transformer floor: out of memory");
    }
    for (int w = 0; rc == 0 && w < o->warmup + o->windows; w++) {
        gr_ctx_sync(ctx);
        double t0 = bench_wall_seconds();
        gr_step_reset(ctx);
        if (fl_step(ctx, buf, c->layers) < 0 || gr_ctx_sync(ctx) < 0) {
            rc = gr_error(GR_EINVAL, "bench transformer floor: %s",
                          gr_ctx_error(ctx));
            break;
        }
        times[w] = bench_wall_seconds() - t0;
    }
    if (rc == 0) {
        *sec = bench_median(times + o->warmup, o->windows);
    }
    free(times);
    gr_ctx_free(ctx);
    return rc;
}

static int run_torch(const struct tf_case *c,
                     const struct bench_nlp_options *o, double *sec,
                     char *why, size_t cap, char *blas, size_t blas_cap)
{
    const char *script = GROVE_SOURCE_DIR "/bench/nlp/transformer_ref.py";
    if (!gr_path_exists(script)) {
        snprintf(why, cap, "%.300s not found", script);
        return -1;
    }
    char env[96];
    bench_thread_env(o->threads, env, sizeof env);
    char cmd[GR_PATH_MAX * 2 + 640];
    snprintf(cmd, sizeof cmd,
             "%s'%s' '%s' --vocab %d --d %d --layers %d --heads %d --ffn %d "
             "--dropout %g --classes %d --batch %d --seq %d --windows %d "
             "--warmup %d --threads %d --device %s 2>&1",
             env, o->python, script, TF_VOCAB, c->d, c->layers, c->heads,
             c->ffn, (double)c->dropout, TF_CLASSES, c->batch, c->seq,
             o->windows, o->warmup, o->threads,
             o->device == GR_DEVICE_CUDA ? "cuda" : "cpu");
    return bench_run_baseline(cmd, o->python, "the PyTorch side",
                              parse_result, sec, blas, blas_cap, why, cap);
}

/* The two sides of a round of one case (bench_alternate): tokens/s of
 * the median step. */
struct sides {
    const struct tf_case *c;
    const struct bench_nlp_options *o;
    char *why, *blas;
    size_t cap, blas_cap;
    double *floor_rate; /* [rounds]: the floor's tokens/s, round by round */
    int round;
};

/* grove's step, then the floor right after it (the same round) */
static int grove_side(void *arg, double rate[2])
{
    struct sides *s = arg;
    const double tokens = (double)s->c->batch * s->c->seq;
    double sec = 0.0, fs = 0.0;
    int rc = run_grove(s->c, s->o, &sec);
    if (rc == 0) {
        rc = run_floor(s->c, s->o, &fs);
    }
    if (rc == 0) {
        rate[0] = rate[1] = tokens / sec;
        s->floor_rate[s->round++] = tokens / fs;
    }
    return rc;
}

static int torch_side(void *arg, double rate[2])
{
    struct sides *s = arg;
    double sec = 0.0;
    if (run_torch(s->c, s->o, &sec, s->why, s->cap, s->blas, s->blas_cap) <
        0) {
        return -1;
    }
    rate[0] = rate[1] = (double)s->c->batch * s->c->seq / sec;
    return 0;
}

/* The floor's table: per case, the products' GFLOP per step, the floor's
 * median step time and rate, grove's step time, and the medians over the
 * rounds of grove step / floor and baseline step / floor (each round's
 * sides measured back to back), with the range of grove / floor. */
static void print_floor(FILE *out, const struct bench_nlp_options *o,
                        const struct tf_case *const *cs,
                        double (*floor_rate)[BENCH_MAX_ROUNDS],
                        double (*grove)[BENCH_MAX_ROUNDS],
                        double (*base)[BENCH_MAX_ROUNDS], int n)
{
    if (n == 0) {
        return;
    }
    char thr[48];
    if (o->threads > 0) {
        snprintf(thr, sizeof thr, "%d thread%s", o->threads,
                 o->threads == 1 ? "" : "s");
    } else {
        snprintf(thr, sizeof thr, "the BLAS's default threads");
    }
    fprintf(out, "\n### Matrix-product floor\n\n"
            "The step's matrix products alone (forward and backward: q/k/v "
            "and output projections, the score and value products of every "
            "head, the FFN, the head), gr_matmul with %s on %s as grove's "
            "side, timed in the same rounds. Issue 23 §5's target: grove / "
            "floor <= 1.25, or grove >= 2x the baseline.\n\n",
            thr, gr_device_name(o->device));
    fprintf(out, "| case | GFLOP per step | floor | grove step | "
                 "grove / floor | baseline / floor | spread |\n"
                 "|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < n; i++) {
        const struct tf_case *c = cs[i];
        const double tokens = (double)c->batch * c->seq;
        double elems = 0.0, flop = fl_step_flop(c, &elems);
        /* rates: floor vs grove gives grove's time / the floor's */
        struct bench_pair pg = bench_pair_summary(floor_rate[i], grove[i],
                                                  o->rounds);
        struct bench_pair pb = bench_pair_summary(floor_rate[i], base[i],
                                                  o->rounds);
        double floor_s = tokens / pg.grove, grove_s = tokens / pg.baseline;
        char bcell[32];
        if (pb.baseline > 0) {
            snprintf(bcell, sizeof bcell, "%.2fx", pb.ratio);
        } else {
            snprintf(bcell, sizeof bcell, "n/a");
        }
        fprintf(out, "| %s (%s) | %.3g | %.2f ms (%.1f GFLOP/s) | %.2f ms | "
                "%.2fx | %s | %.2f-%.2fx over %d round%s (floor ±%.0f%%) "
                "|\n", c->name, c->what, flop / 1e9, floor_s * 1e3,
                flop / floor_s / 1e9, grove_s * 1e3, pg.ratio, bcell,
                pg.ratio_lo, pg.ratio_hi, pg.rounds,
                pg.rounds == 1 ? "" : "s", 50 * pg.grove_spread);
    }
}

int bench_nlp_transformer_run(const struct bench_nlp_options *o, FILE *out)
{
    const struct tf_case *cases = o->quick ? tf_quick : tf_cases;
    const char *list = o->cases;
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int ok = 0;
        for (int i = 0; i < TF_CASES; i++) {
            ok |= strlen(cases[i].name) == len &&
                  strncmp(cases[i].name, p, len) == 0;
        }
        if (!ok) {
            return gr_error(GR_EINVAL, "unknown case '%.*s' for --model "
                            "transformer (cases: classifier,tiny)", (int)len,
                            p);
        }
        p += len + (comma ? 1 : 0);
    }
    char blas[1024], base_blas[1024] = "", why[512] = "";
    bench_process_blas(blas, sizeof blas);
    fprintf(out, "# Transformer encoder classifier training throughput "
                 "(tokens/s: forward, backward, Adam step) against "
                 "torch.nn.TransformerEncoderLayer\n");
    fprintf(out, "threads: %d; device: %s; build: %s; commit: %s\n",
            o->threads, gr_device_name(o->device), o->build, o->commit);
    fprintf(out, "grove BLAS: %s\n", blas);
    fprintf(out, "median of %d steps after %d, %d round%s alternating\n\n",
            o->windows, o->warmup, o->rounds, o->rounds == 1 ? "" : "s");
    fprintf(out, "| case | grove | baseline | ratio | spread |\n"
                 "|---|---|---|---|---|\n");
    /* per case run: the rates of each round, for the floor's table */
    const struct tf_case *floor_case[TF_CASES];
    double floor_rate[TF_CASES][BENCH_MAX_ROUNDS];
    double floor_grove[TF_CASES][BENCH_MAX_ROUNDS];
    double floor_base[TF_CASES][BENCH_MAX_ROUNDS];
    int n_floor = 0;
    for (int i = 0; i < TF_CASES; i++) {
        const struct tf_case *c = &cases[i];
        if (list != NULL && list[0] != '\0') {
            int sel = 0;
            for (const char *p = list; *p;) {
                const char *comma = strchr(p, ',');
                size_t len = comma ? (size_t)(comma - p) : strlen(p);
                sel |= strlen(c->name) == len &&
                       strncmp(c->name, p, len) == 0;
                p += len + (comma ? 1 : 0);
            }
            if (!sel) {
                continue;
            }
        }
        /* grove (then the floor), PyTorch, grove, ...; no PyTorch after
         * one fails */
        double g[2][BENCH_MAX_ROUNDS], b[2][BENCH_MAX_ROUNDS];
        struct sides sd = {c, o, why, base_blas, sizeof why,
                           sizeof base_blas, floor_rate[n_floor], 0};
        int rc = bench_alternate(o->rounds, grove_side,
                                 o->baseline ? torch_side : NULL, &sd, 1, g,
                                 b);
        if (rc < 0) {
            return gr_error_wrap(rc, "case %s", c->name);
        }
        floor_case[n_floor] = c;
        for (int r = 0; r < o->rounds; r++) {
            floor_grove[n_floor][r] = g[0][r];
            floor_base[n_floor][r] = b[0][r];
        }
        n_floor++;
        struct bench_pair p = bench_pair_summary(g[0], b[0], o->rounds);
        /* a PyTorch number in every round */
        int have_b = p.baseline > 0;
        char spread[160];
        bench_spread_cell(&p, spread, sizeof spread);
        if (have_b) {
            fprintf(out, "| %s (%s) | %.0f tok/s | %.0f tok/s | %.2fx | %s "
                    "|\n", c->name, c->what, p.grove, p.baseline, p.ratio,
                    spread);
        } else {
            fprintf(out, "| %s (%s) | %.0f tok/s | n/a | n/a | %s |\n",
                    c->name, c->what, p.grove, spread);
        }
        fflush(out);
    }
    print_floor(out, o, floor_case, floor_rate, floor_grove, floor_base,
                n_floor);
    if (why[0] && o->baseline) {
        fprintf(out, "\nbaseline: %s\n", why);
    }
    if (base_blas[0]) {
        fprintf(out, "\nbaseline BLAS: %s\n", base_blas);
    }
    return 0;
}
