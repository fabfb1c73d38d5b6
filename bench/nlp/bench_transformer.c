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
 * transformer_tiny: 128, 2, 4, 512, dropout 0.1, B 64, T 32). */
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
};

static int grove_side(void *arg, double rate[2])
{
    struct sides *s = arg;
    double sec = 0.0;
    int rc = run_grove(s->c, s->o, &sec);
    if (rc == 0) {
        rate[0] = rate[1] = (double)s->c->batch * s->c->seq / sec;
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
        /* grove, PyTorch, grove, ...; no PyTorch after one fails */
        double g[2][BENCH_MAX_ROUNDS], b[2][BENCH_MAX_ROUNDS];
        struct sides sd = {c, o, why, base_blas, sizeof why,
                           sizeof base_blas};
        int rc = bench_alternate(o->rounds, grove_side,
                                 o->baseline ? torch_side : NULL, &sd, 1, g,
                                 b);
        if (rc < 0) {
            return gr_error_wrap(rc, "case %s", c->name);
        }
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
    if (why[0] && o->baseline) {
        fprintf(out, "\nbaseline: %s\n", why);
    }
    if (base_blas[0]) {
        fprintf(out, "\nbaseline BLAS: %s\n", base_blas);
    }
    return 0;
}
