/* The kernel-layer benchmark: grove against PyTorch in the same run.
 * See bench_kernels.h for what is measured and how. */
#define _POSIX_C_SOURCE 200809L
#include "bench/kernels/bench_kernels.h"
#include "bench/bench_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/progress.h"
#include "kernels/device.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "kernels/tape.h"
#include "kernels/tensor.h"

#ifndef GROVE_BENCH_TORCH_SCRIPT
#define GROVE_BENCH_TORCH_SCRIPT "bench/kernels/bench_torch.py"
#endif

enum { K_SGEMM, K_LSTM, K_ONLSTM, K_GEMM };

struct bcase {
    int kind;
    char label[96];
    char id[96]; /* the case string shared with bench_torch.py */
    int n, k;    /* sgemm: size, products per call */
    int gm, gn, gk, gtb; /* gemm: one skinny product's M, N, K, B^T */
    int b, t, in, h, chunk;
    int reps, warm;
    double g_s, t_s;       /* seconds per call (median) */
    double g_peak, t_peak; /* bytes, < 0 unknown */
    int have_g, have_t;
    /* speeds (1 / seconds per call) of each round; t < 0: no baseline */
    double g_speed[BENCH_MAX_ROUNDS], t_speed[BENCH_MAX_ROUNDS];
};

struct bench_kernels_opts bench_kernels_defaults(void)
{
    struct bench_kernels_opts o;
    memset(&o, 0, sizeof o);
    o.device = GR_DEVICE_AUTO;
    o.python = "/usr/bin/python3";
    o.script = GROVE_BENCH_TORCH_SCRIPT;
    o.build = "";
    o.rounds = 3;
    return o;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : (x > y ? 1 : 0);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int new_ctx(struct gr_ctx **ctx, enum gr_device dev, int threads)
{
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.device = dev;
    cfg.threads = threads;
    return gr_ctx_new(ctx, &cfg);
}

/* ---- grove side ---- */

static int run_sgemm(struct bcase *c, enum gr_device dev, int threads)
{
    struct gr_ctx *ctx;
    int rc = new_ctx(&ctx, dev, threads);
    if (rc < 0) {
        return rc;
    }
    gr_set_grad_enabled(ctx, 0);
    struct gr_tensor *a = gr_buffer_new(ctx, "a", GR_F32,
                                        gr_shape2(c->n, c->n));
    struct gr_tensor *b = gr_buffer_new(ctx, "b", GR_F32,
                                        gr_shape2(c->n, c->n));
    if (!a || !b) {
        gr_ctx_free(ctx);
        return GR_ENOMEM;
    }
    gr_tensor_rand_uniform(a, 0, 1, gr_rng_make(1, 1));
    gr_tensor_rand_uniform(b, 0, 1, gr_rng_make(1, 2));
    double ts[32];
    for (int r = -c->warm; r < c->reps; r++) {
        gr_ctx_sync(ctx);
        double t0 = gr_now_seconds();
        for (int i = 0; i < c->k; i++) {
            gr_step_reset(ctx);
            if (!gr_matmul(ctx, a, b, 0, 0)) {
                rc = gr_ctx_status(ctx);
                gr_error(rc, "%s", gr_ctx_error(ctx));
                gr_ctx_free(ctx);
                return rc;
            }
        }
        gr_ctx_sync(ctx);
        if (r >= 0) {
            ts[r] = gr_now_seconds() - t0;
        }
    }
    c->g_s = median(ts, c->reps);
    c->g_peak = -1;
    c->have_g = 1;
    gr_ctx_free(ctx);
    return 0;
}

/* One product of the recurrent layers' per-step shape (few rows), k
 * times per call: C [M, N] = A [M, K] · B (B^T when gtb) */
static int run_gemm(struct bcase *c, enum gr_device dev, int threads)
{
    struct gr_ctx *ctx;
    int rc = new_ctx(&ctx, dev, threads);
    if (rc < 0) {
        return rc;
    }
    gr_set_grad_enabled(ctx, 0);
    struct gr_tensor *a = gr_buffer_new(ctx, "a", GR_F32,
                                        gr_shape2(c->gm, c->gk));
    struct gr_tensor *b = gr_buffer_new(
        ctx, "b", GR_F32,
        c->gtb ? gr_shape2(c->gn, c->gk) : gr_shape2(c->gk, c->gn));
    if (!a || !b) {
        gr_ctx_free(ctx);
        return GR_ENOMEM;
    }
    gr_tensor_rand_uniform(a, -1, 1, gr_rng_make(1, 1));
    gr_tensor_rand_uniform(b, -1, 1, gr_rng_make(1, 2));
    double ts[32];
    for (int r = -c->warm; r < c->reps; r++) {
        gr_ctx_sync(ctx);
        double t0 = gr_now_seconds();
        gr_step_reset(ctx);
        for (int i = 0; i < c->k; i++) {
            if (!gr_matmul(ctx, a, b, 0, c->gtb)) {
                rc = gr_ctx_status(ctx);
                gr_error(rc, "%s", gr_ctx_error(ctx));
                gr_ctx_free(ctx);
                return rc;
            }
        }
        gr_ctx_sync(ctx);
        if (r >= 0) {
            ts[r] = gr_now_seconds() - t0;
        }
    }
    c->g_s = median(ts, c->reps);
    c->g_peak = -1;
    c->have_g = 1;
    gr_ctx_free(ctx);
    return 0;
}

static int run_rnn(struct bcase *c, enum gr_device dev, int threads)
{
    struct gr_ctx *ctx;
    int rc = new_ctx(&ctx, dev, threads);
    if (rc < 0) {
        return rc;
    }
    struct gr_lstm lstm;
    struct gr_onlstm on;
    if (c->kind == K_LSTM) {
        rc = gr_lstm_init(&lstm, ctx, "rnn", c->in, c->h, gr_rng_make(1, 0));
    } else {
        rc = gr_onlstm_init(&on, ctx, "rnn", c->in, c->h, c->chunk,
                            gr_rng_make(1, 0));
    }
    struct gr_tensor *x = gr_buffer_new(ctx, "x", GR_F32,
                                        gr_shape3(c->t, c->b, c->in));
    struct gr_optim *opt = NULL;
    struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
    if (rc == 0 && x) {
        gr_tensor_rand_uniform(x, 0, 1, gr_rng_make(1, 9));
        rc = gr_optim_new(&opt, ctx, "adam", &oc);
    } else if (rc == 0) {
        rc = GR_ENOMEM;
    }
    double ts[32];
    for (int r = -c->warm; rc == 0 && r < c->reps; r++) {
        gr_ctx_sync(ctx);
        double t0 = gr_now_seconds();
        gr_step_reset(ctx);
        struct gr_rnn_out o;
        rc = c->kind == K_LSTM
                 ? gr_lstm_forward(ctx, &lstm, x, NULL, NULL, NULL, &o)
                 : gr_onlstm_forward(ctx, &on, x, NULL, NULL, NULL, &o);
        if (rc == 0) {
            rc = gr_backward(ctx, gr_mean(ctx, o.y));
        }
        if (rc == 0) {
            rc = gr_optim_step(opt);
        }
        if (rc == 0) {
            rc = gr_zero_grad(ctx);
        }
        gr_ctx_sync(ctx);
        if (r >= 0) {
            ts[r] = gr_now_seconds() - t0;
        }
    }
    if (rc == 0) {
        struct gr_mem_stats m;
        gr_ctx_memory(ctx, &m);
        c->g_s = median(ts, c->reps);
        /* in use at the peak (the arena reserves whole chunks) */
        c->g_peak = (double)(m.param_bytes + m.state_bytes +
                             m.step_peak_bytes);
        c->have_g = 1;
    } else if (gr_ctx_status(ctx) < 0) {
        gr_error(rc, "%s: %s", c->label, gr_ctx_error(ctx));
    }
    gr_optim_free(opt);
    gr_ctx_free(ctx);
    return rc;
}

/* ---- PyTorch side ---- */

/* Appends `s` single-quoted for the shell. */
static void shell_quote(char *out, size_t cap, const char *s)
{
    size_t n = strlen(out);
    if (n + 1 < cap) {
        out[n++] = '\'';
    }
    for (; *s && n + 5 < cap; s++) {
        if (*s == '\'') {
            memcpy(out + n, "'\\''", 4);
            n += 4;
        } else {
            out[n++] = *s;
        }
    }
    if (n + 1 < cap) {
        out[n++] = '\'';
    }
    out[n] = '\0';
}

static void run_torch(struct bcase *cs, int nc, const char *device,
                      int threads, const struct bench_kernels_opts *o,
                      char *info, size_t info_cap, char *blas,
                      size_t blas_cap)
{
    if (access(o->python, X_OK) != 0) {
        snprintf(info, info_cap, "not run: %s is not an executable "
                 "(install Debian's python3-torch)", o->python);
        return;
    }
    if (access(o->script, R_OK) != 0) {
        snprintf(info, info_cap, "not run: cannot read %s", o->script);
        return;
    }
    /* The BLAS under torch (OpenBLAS here) does not obey
     * torch.set_num_threads: pin every pool through the environment. */
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=%d OPENBLAS_NUM_THREADS=%d "
             "MKL_NUM_THREADS=%d ", threads, threads, threads);
    shell_quote(cmd, sizeof cmd, o->python);
    strcat(cmd, " ");
    shell_quote(cmd, sizeof cmd, o->script);
    size_t n = strlen(cmd);
    n += (size_t)snprintf(cmd + n, sizeof cmd - n,
                          " --device %s --threads %d --cases ", device,
                          threads);
    for (int i = 0; i < nc && n < sizeof cmd; i++) {
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, "%s%s:%d:%d",
                              i ? "," : "", cs[i].id, cs[i].reps,
                              cs[i].warm);
    }
    if (n < sizeof cmd) {
        snprintf(cmd + n, sizeof cmd - n, " 2>&1");
    }
    FILE *p = popen(cmd, "r");
    if (!p) {
        snprintf(info, info_cap, "not run: cannot start %s", o->python);
        return;
    }
    char line[1024], last[256] = "";
    int seen = 0;
    while (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "NO_TORCH ", 9) == 0) {
            snprintf(info, info_cap, "not available: %.300s", line + 9);
            seen = 1;
        } else if (strncmp(line, "INFO ", 5) == 0) {
            char ver[64] = "?", dev[16] = "?";
            int th = 0;
            sscanf(line + 5, "%63s %15s %d", ver, dev, &th);
            snprintf(info, info_cap, "PyTorch %s (%s, %s, %d threads)", ver,
                     o->python, dev, th);
            seen = 1;
        } else if (bench_baseline_blas_line(line)[0]) {
            snprintf(blas, blas_cap, "%s", bench_baseline_blas_line(line));
        } else if (strncmp(line, "RESULT ", 7) == 0) {
            char id[128];
            double secs = 0, peak = -1;
            if (sscanf(line + 7, "%127s %lf %lf", id, &secs, &peak) == 3) {
                for (int i = 0; i < nc; i++) {
                    char full[160];
                    snprintf(full, sizeof full, "%s:%d:%d", cs[i].id,
                             cs[i].reps, cs[i].warm);
                    if (strcmp(full, id) == 0) {
                        cs[i].t_s = secs;
                        cs[i].t_peak = peak;
                        cs[i].have_t = 1;
                    }
                }
            }
        } else if (line[0]) {
            snprintf(last, sizeof last, "%.200s", line);
        }
    }
    int st = pclose(p);
    if (!seen) {
        snprintf(info, info_cap, "not run: %s exited with status %d%s%s",
                 o->script, st, last[0] ? ": " : "", last);
    }
}

/* ---- the table ---- */

static void cpu_model(char *out, size_t cap)
{
    snprintf(out, cap, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) {
        return;
    }
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ') {
                    c++;
                }
                c[strcspn(c, "\n")] = '\0';
                snprintf(out, cap, "%s", c);
            }
            break;
        }
    }
    fclose(f);
}

static void add_sgemm(struct bcase *c, int n, int quick)
{
    memset(c, 0, sizeof *c);
    c->kind = K_SGEMM;
    c->n = n;
    double flop = 2.0 * n * (double)n * n;
    c->k = (int)(2e8 / flop);
    if (c->k < 1) {
        c->k = 1;
    }
    c->reps = quick ? 3 : 7;
    c->warm = 1;
    snprintf(c->label, sizeof c->label, "SGEMM %dx%dx%d (GFLOP/s)", n, n, n);
    snprintf(c->id, sizeof c->id, "sgemm:%d:%d", n, c->k);
}

static void add_gemm(struct bcase *c, int m, int n, int k, int tb,
                     int quick)
{
    memset(c, 0, sizeof *c);
    c->kind = K_GEMM;
    c->gm = m;
    c->gn = n;
    c->gk = k;
    c->gtb = tb;
    c->k = 200; /* products per call: launch costs show, as in a layer */
    c->reps = quick ? 3 : 7;
    c->warm = 1;
    snprintf(c->label, sizeof c->label, "GEMM %dx%dx%d%s (us per product)",
             m, n, k, tb ? " B^T" : "");
    snprintf(c->id, sizeof c->id, "gemm:%d:%d:%d:%d:%d", m, n, k, tb, c->k);
}

static void add_rnn(struct bcase *c, int kind, int b, int t, int in, int h,
                    int chunk, int quick)
{
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->b = b;
    c->t = t;
    c->in = in;
    c->h = h;
    c->chunk = kind == K_LSTM ? 0 : chunk;
    int big = (int64_t)b * t * h > 500000;
    c->reps = big ? (quick ? 1 : 5) : (quick ? 3 : 7);
    c->warm = 1;
    if (kind == K_LSTM) {
        snprintf(c->label, sizeof c->label,
                 "LSTM step B%d T%d %d->%d (ms)", b, t, in, h);
    } else {
        snprintf(c->label, sizeof c->label,
                 "ON-LSTM step B%d T%d %d->%d C%d (ms)", b, t, in, h, chunk);
    }
    snprintf(c->id, sizeof c->id, "%s:%d:%d:%d:%d:%d",
             kind == K_LSTM ? "lstm" : "onlstm", b, t, in, h, c->chunk);
}

static void fmt_num(char *out, size_t cap, int have, double v, int digits)
{
    if (!have) {
        snprintf(out, cap, "—");
    } else {
        snprintf(out, cap, "%.*f", digits, v);
    }
}

/* Matrix-product FLOPs of one training step of a recurrent case: forward
 * X W_ih^T and h_{t-1} U^T; backward dW_ih, dU and dh_{t-1} = dG U (the
 * input has no gradient here). Gate width 4H, plus 2H/C for the ON-LSTM's
 * master gates. */
static double rnn_step_flop(const struct bcase *c)
{
    double w = 4.0 * c->h + (c->kind == K_ONLSTM ? 2.0 * c->h / c->chunk : 0);
    double rows = (double)c->t * c->b;
    double input_side = 2.0 * rows * c->in * w;            /* fwd, dW_ih */
    double hidden_side = 2.0 * rows * c->h * w;            /* fwd, dU */
    double dh = 2.0 * (double)(c->t - 1) * c->b * c->h * w; /* dh_{t-1} */
    return 2.0 * input_side + 2.0 * hidden_side + dh;
}

/* The roofline of the training steps: no implementation can run a step
 * faster than its matrix products at the best SGEMM rate this run
 * measured (large square products, so the bound is generous), and so no
 * speed-up over the baseline can exceed baseline time / that floor. */
static void print_floor(FILE *out, const struct bcase *cs, int nc,
                        int threads)
{
    double best = 0;
    int best_n = 0;
    for (int i = 0; i < nc; i++) {
        const struct bcase *c = &cs[i];
        if (c->kind == K_SGEMM && c->have_g) {
            double r = 2.0 * c->n * (double)c->n * c->n * c->k / c->g_s;
            if (r > best) {
                best = r;
                best_n = c->n;
            }
        }
    }
    if (best <= 0) {
        return;
    }
    fprintf(out, "\n### Matrix-product floor (%d thread%s)\n\n"
            "A step's matrix products (forward X W_ih^T and h U^T; backward "
            "dW_ih, dU, dh) at the best SGEMM rate above (%.1f GFLOP/s, "
            "%dx%dx%d): no step can be faster than the floor, so no ratio "
            "can exceed baseline / floor.\n\n",
            threads, threads == 1 ? "" : "s", best / 1e9, best_n, best_n,
            best_n);
    fprintf(out, "| case | GFLOP per step | floor (ms) | grove / floor | "
            "largest possible ratio |\n|---|---|---|---|---|\n");
    for (int i = 0; i < nc; i++) {
        const struct bcase *c = &cs[i];
        if (c->kind == K_SGEMM || c->kind == K_GEMM) {
            continue;
        }
        double flop = rnn_step_flop(c), floor_s = flop / best;
        char g[32], m[32];
        fmt_num(g, sizeof g, c->have_g, c->g_s / floor_s, 2);
        fmt_num(m, sizeof m, c->have_t, c->t_s / floor_s, 2);
        fprintf(out, "| %.*s | %.3f | %.2f | %s | %s |\n",
                (int)(strlen(c->label) - 5), c->label, flop / 1e9,
                floor_s * 1e3, g, m);
    }
}

int bench_kernels_run(const struct bench_kernels_opts *o, FILE *out)
{
    int threads = o->threads;
    if (threads <= 0) {
        long nc = sysconf(_SC_NPROCESSORS_ONLN);
        threads = nc > 0 ? (int)nc : 1;
    }
    enum gr_device dev = o->device;
    if (dev == GR_DEVICE_AUTO) {
        dev = gr_cuda_device_count() > 0 ? GR_DEVICE_CUDA : GR_DEVICE_CPU;
    }
    struct bcase cs[24];
    int nc = 0;
    const int sizes[4] = {256, 512, 1024, 2048};
    for (int i = 0; i < (o->quick ? 3 : 4); i++) {
        add_sgemm(&cs[nc++], sizes[i], o->quick);
    }
    /* the per-step products of the agents' recurrent layers (H = 128,
     * 4H = 512): forward h U^T, backward dG U */
    const int gemm_rows[2] = {16, 256};
    for (int i = 0; i < 2; i++) {
        add_gemm(&cs[nc++], gemm_rows[i], 512, 128, 1, o->quick);
        add_gemm(&cs[nc++], gemm_rows[i], 128, 512, 0, o->quick);
    }
    for (int kind = K_LSTM; kind <= K_ONLSTM; kind++) {
        add_rnn(&cs[nc++], kind, 20, 70, 400, 1150, 10, o->quick);
        const int batches[3] = {1, 16, 256};
        for (int i = 0; i < 3; i++) {
            add_rnn(&cs[nc++], kind, batches[i], 64, 128, 128, 8, o->quick);
        }
    }
    /* grove, baseline, grove, baseline, ...: every case of one side,
     * then every case of the other, `rounds` times */
    const int rounds = o->rounds < 1                  ? 1
                       : o->rounds > BENCH_MAX_ROUNDS ? BENCH_MAX_ROUNDS
                                                      : o->rounds;
    char tinfo[512] = "", tblas[1024] = "";
    for (int r = 0; r < rounds; r++) {
        struct gr_progress pr;
        char what[96];
        snprintf(what, sizeof what, "bench kernels (grove, round %d of %d)",
                 r + 1, rounds);
        gr_progress_start(&pr, what, (uint64_t)nc, "cases", o->quiet);
        for (int i = 0; i < nc; i++) {
            gr_progress_set_extra(&pr, cs[i].label);
            cs[i].have_g = cs[i].have_t = 0;
            int rc = cs[i].kind == K_SGEMM  ? run_sgemm(&cs[i], dev, threads)
                     : cs[i].kind == K_GEMM ? run_gemm(&cs[i], dev, threads)
                                            : run_rnn(&cs[i], dev, threads);
            if (rc < 0) {
                gr_progress_finish(&pr);
                return gr_error_wrap(rc, "bench kernels: %s", cs[i].label);
            }
            gr_progress_update(&pr, (uint64_t)i + 1);
        }
        gr_progress_finish(&pr);
        if (o->no_torch) {
            snprintf(tinfo, sizeof tinfo, "not run (--no-baseline)");
        } else {
            if (!o->quiet) {
                fprintf(stderr, "bench kernels: running the PyTorch baseline "
                        "(%s), round %d of %d...\n", o->python, r + 1,
                        rounds);
            }
            run_torch(cs, nc, gr_device_name(dev), threads, o, tinfo,
                      sizeof tinfo, tblas, sizeof tblas);
        }
        for (int i = 0; i < nc; i++) {
            cs[i].g_speed[r] = cs[i].have_g ? 1.0 / cs[i].g_s : -1.0;
            cs[i].t_speed[r] = cs[i].have_t ? 1.0 / cs[i].t_s : -1.0;
        }
    }
    /* the medians over the rounds; a side missing in any round is n/a */
    struct bench_pair pairs[24];
    for (int i = 0; i < nc; i++) {
        struct bench_pair *p = &pairs[i];
        *p = bench_pair_summary(cs[i].g_speed, cs[i].t_speed, rounds);
        cs[i].g_s = 1.0 / p->grove;
        cs[i].have_t = p->baseline > 0;
        cs[i].t_s = cs[i].have_t ? 1.0 / p->baseline : 0.0;
    }
    char cpu[256], gpu[256] = "";
    cpu_model(cpu, sizeof cpu);
    if (dev == GR_DEVICE_CUDA) {
        gr_cuda_device_describe(0, gpu, sizeof gpu);
    }
    fprintf(out, "## grove bench kernels%s — device %s, %d thread%s\n\n",
            o->quick ? " --quick" : "", gr_device_name(dev), threads,
            threads == 1 ? "" : "s");
    fprintf(out, "- host: %s, %ld cores online%s%s\n", cpu,
            sysconf(_SC_NPROCESSORS_ONLN), gpu[0] ? "; GPU: " : "", gpu);
    char gblas[1024];
    bench_process_blas(gblas, sizeof gblas);
    fprintf(out, "- grove: %s; BLAS: %s\n",
            o->build && o->build[0] ? o->build : "?", gblas);
    fprintf(out, "- baseline: %s\n", tinfo);
    if (!o->no_torch) {
        fprintf(out, "- baseline BLAS: %s\n",
                tblas[0] ? tblas : "not reported (the baseline did not run)");
    }
    fprintf(out, "- the sides alternate: all cases on grove, then all on "
            "PyTorch, %d round%s; each cell is the median over the rounds, "
            "the ratio the median of the rounds' ratios, the spread their "
            "range\n", rounds, rounds == 1 ? "" : "s");
    fprintf(out, "- each number: the median of k calls after a warm-up "
            "(SGEMM: k = 3-7 calls of ~0.2 GFLOP; training steps: k = 1-7, 1 for "
            "the PTB size with --quick); "
            "a step is forward + backward of mean(y) + Adam + zero_grad on "
            "one layer, input [T, B, IN] held on the device\n");
    fprintf(out, "- ratio: grove speed / PyTorch speed (> 1: grove faster); "
            "memory rows: PyTorch / grove\n");
    fprintf(out, "- peak memory (grove): parameters, gradients, Adam state "
            "and the step arena's high-water mark; PyTorch's "
            "(max_memory_allocated) is reported on CUDA only\n\n");
    fprintf(out, "| case | grove | baseline | ratio | spread |\n"
            "|---|---|---|---|---|\n");
    for (int i = 0; i < nc; i++) {
        struct bcase *c = &cs[i];
        char g[32], t[32], r[32], spread[160];
        bench_spread_cell(&pairs[i], spread, sizeof spread);
        if (c->kind == K_SGEMM) {
            double flop = 2.0 * c->n * (double)c->n * c->n * c->k;
            double gg = c->have_g ? flop / c->g_s / 1e9 : 0;
            double tt = c->have_t ? flop / c->t_s / 1e9 : 0;
            fmt_num(g, sizeof g, c->have_g, gg, 1);
            fmt_num(t, sizeof t, c->have_t, tt, 1);
        } else if (c->kind == K_GEMM) {
            fmt_num(g, sizeof g, c->have_g, c->g_s / c->k * 1e6, 2);
            fmt_num(t, sizeof t, c->have_t, c->t_s / c->k * 1e6, 2);
        } else {
            fmt_num(g, sizeof g, c->have_g, c->g_s * 1e3, 2);
            fmt_num(t, sizeof t, c->have_t, c->t_s * 1e3, 2);
        }
        fmt_num(r, sizeof r, c->have_g && c->have_t, pairs[i].ratio, 2);
        fprintf(out, "| %s | %s | %s | %s | %s |\n", c->label, g, t, r,
                spread);
    }
    for (int i = 0; i < nc; i++) {
        struct bcase *c = &cs[i];
        if (c->kind == K_SGEMM || c->kind == K_GEMM) {
            continue;
        }
        char g[32], t[32], r[32], label[128];
        snprintf(label, sizeof label, "%.*s peak memory (MiB)",
                 (int)(strlen(c->label) - 5), c->label);
        fmt_num(g, sizeof g, c->have_g && c->g_peak >= 0,
                c->g_peak / 1048576.0, 1);
        fmt_num(t, sizeof t, c->have_t && c->t_peak >= 0,
                c->t_peak / 1048576.0, 1);
        fmt_num(r, sizeof r,
                c->have_g && c->have_t && c->t_peak >= 0 && c->g_peak > 0,
                c->t_peak / c->g_peak, 2);
        fprintf(out, "| %s | %s | %s | %s | last round |\n", label, g, t,
                r);
    }
    print_floor(out, cs, nc, threads);
    fflush(out);
    return 0;
}
