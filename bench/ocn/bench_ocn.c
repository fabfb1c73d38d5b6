/* grove bench ocn: BC updates per second, grove vs PyTorch (see
 * bench/ocn/bench_ocn.h). */
#define _POSIX_C_SOURCE 200809L
#include "bench/ocn/bench_ocn.h"
#include "bench/bench_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents/bc.h"
#include "agents/demos.h"
#include "agents/ocn.h"
#include "core/error.h"
#include "core/progress.h"
#include "kernels/ops.h"
#include "kernels/tape.h"

#ifndef GROVE_BENCH_OCN_SCRIPT
#define GROVE_BENCH_OCN_SCRIPT "bench/ocn/ocn_torch.py"
#endif

#define N_BATCHES 2

void bench_ocn_options_default(struct bench_ocn_options *o)
{
    memset(o, 0, sizeof *o);
    o->batch = 512;
    o->updates = 5;
    o->runs = 3;
    o->threads = 2;
    o->python = "/usr/bin/python3";
    o->script = GROVE_BENCH_OCN_SCRIPT;
}

static void cpu_name(char *buf, size_t cap)
{
    snprintf(buf, cap, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) {
        return;
    }
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *colon = strchr(line, ':');
            if (colon != NULL) {
                colon++;
                while (*colon == ' ') {
                    colon++;
                }
                colon[strcspn(colon, "\n")] = '\0';
                snprintf(buf, cap, "%s", colon);
            }
            break;
        }
    }
    fclose(f);
}

/* Writes the batches for the PyTorch script (format in ocn_torch.py). */
static int write_batches(const char *path, const struct demo_set *ds,
                         struct demo_batch *const *bs, int n)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        return gr_error(GR_EIO, "%s: cannot write the benchmark batches",
                        path);
    }
    int32_t head[4] = {0x4F434E42, n, CRAFT_OBS_SIZE, ds->n_tasks};
    fwrite(head, sizeof head, 1, f);
    uint8_t *obs = malloc(CRAFT_OBS_SIZE);
    int rc = obs == NULL ? GR_ENOMEM : 0;
    for (int k = 0; rc == 0 && k < n; k++) {
        const struct demo_batch *b = bs[k];
        int32_t bt[2] = {b->B, b->T};
        fwrite(bt, sizeof bt, 1, f);
        fwrite(b->len, sizeof(int32_t), (size_t)b->B, f);
        fwrite(b->task, sizeof(int32_t), (size_t)b->B, f);
        for (int t = 0; t < b->T; t++) {
            for (int i = 0; i < b->B; i++) {
                int32_t a = i < b->active[t] ? b->action[b->row_off[t] + i] : 0;
                fwrite(&a, sizeof a, 1, f);
            }
        }
        for (int t = 0; t < b->T; t++) {
            for (int i = 0; i < b->B; i++) {
                memset(obs, 0, CRAFT_OBS_SIZE);
                if (i < b->active[t]) {
                    int64_t r = b->row_off[t] + i;
                    for (int j = 0; j < b->nz; j++) {
                        int32_t c = b->idx[r * b->nz + j];
                        if (c >= 0) {
                            obs[c] = (uint8_t)b->val[r * b->nz + j];
                        }
                    }
                }
                fwrite(obs, 1, CRAFT_OBS_SIZE, f);
            }
        }
    }
    free(obs);
    if (fclose(f) != 0 && rc == 0) {
        rc = gr_error(GR_EIO, "%s: write failed", path);
    }
    return rc;
}

struct phase_times {
    double fwd, bwd, opt;
};

/* One BC update on batch b; adds phase times when pt is not NULL. */
static int one_update(struct ocn_model *m, struct gr_optim *opt,
                      const struct demo_batch *b, struct phase_times *pt)
{
    struct gr_ctx *ctx = m->ctx;
    double t0 = pt ? gr_now_seconds() : 0;
    gr_step_reset(ctx);
    struct ocn_forward_out fo;
    memset(&fo, 0, sizeof fo);
    int rc = ocn_forward(m, b, &fo);
    if (pt) {
        gr_ctx_sync(ctx);
    }
    double t1 = pt ? gr_now_seconds() : 0;
    if (rc == 0) {
        rc = gr_backward(ctx, fo.loss);
    }
    if (pt) {
        gr_ctx_sync(ctx);
    }
    double t2 = pt ? gr_now_seconds() : 0;
    if (rc == 0) {
        rc = gr_clip_grad_norm(ctx, NULL, 0.2f, NULL);
    }
    if (rc == 0) {
        rc = gr_optim_step(opt);
    }
    if (rc == 0) {
        rc = gr_zero_grad(ctx);
    }
    if (pt) {
        gr_ctx_sync(ctx);
        double t3 = gr_now_seconds();
        pt->fwd += t1 - t0;
        pt->bwd += t2 - t1;
        pt->opt += t3 - t2;
    }
    return rc;
}

/* Runs the PyTorch baseline; *rate = its median updates/s, or -1 with
 * `why` filled when it could not run. */
static void run_torch(const struct bench_ocn_options *o, const char *batches,
                      int updates, int runs, double *rate, char *version,
                      size_t vcap, char *why, size_t cap, char *blas,
                      size_t blas_cap)
{
    *rate = -1.0;
    if (o->python == NULL) {
        snprintf(why, cap, "skipped (--no-baseline)");
        return;
    }
    if (access(o->python, X_OK) != 0) {
        snprintf(why, cap, "%s not found", o->python);
        return;
    }
    if (access(o->script, R_OK) != 0) {
        snprintf(why, cap, "%s not found", o->script);
        return;
    }
    /* torch.set_num_threads does not reach the BLAS under torch (OpenBLAS
     * in Debian's build): pin every thread pool through the environment,
     * so both sides use the same number of threads. Passive OpenMP waiting
     * keeps the baseline from collapsing when the cores are shared (its
     * spinning threads otherwise wait a time slice at every barrier). */
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "OMP_WAIT_POLICY=PASSIVE "
             "OMP_NUM_THREADS=%d OPENBLAS_NUM_THREADS=%d MKL_NUM_THREADS=%d "
             "'%s' '%s' '%s' --threads %d --updates %d --runs %d --device %s "
             "2>&1",
             o->threads, o->threads, o->threads, o->python, o->script,
             batches, o->threads, updates, runs, o->cuda ? "cuda" : "cpu");
    FILE *p = popen(cmd, "r");
    if (p == NULL) {
        snprintf(why, cap, "could not start %s", o->python);
        return;
    }
    char line[1024], last[1024] = "";
    while (fgets(line, sizeof line, p) != NULL) {
        if (strncmp(line, "updates_per_s ", 14) == 0) {
            *rate = strtod(line + 14, NULL);
        } else if (bench_baseline_blas_line(line)[0]) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(blas, blas_cap, "%s", bench_baseline_blas_line(line));
        } else if (strncmp(line, "torch_version ", 14) == 0) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(version, vcap, "%.60s", line + 14);
        } else {
            snprintf(last, sizeof last, "%s", line);
            last[strcspn(last, "\n")] = '\0';
            if (!o->quiet) {
                fprintf(stderr, "bench ocn: pytorch: %s\n", last);
            }
        }
    }
    int status = pclose(p);
    if (*rate <= 0.0) {
        *rate = -1.0;
        snprintf(why, cap, "the PyTorch script failed (status %d): %s", status,
                 last);
    }
}

int bench_ocn_run(const struct bench_ocn_options *o, FILE *out)
{
    int batch = o->quick ? 16 : o->batch;
    int updates = o->quick ? 1 : (o->updates < 1 ? 1 : o->updates);
    int runs = o->quick ? 1 : (o->runs < 1 ? 1 : o->runs);
    int per_task = batch * N_BATCHES;
    struct craft_config cc;
    craft_config_default(&cc);
    struct craft_task tasks[2];
    craft_task_parse("AC", &tasks[0]);
    craft_task_parse("CD", &tasks[1]);
    struct demo_set ds;
    if (!o->quiet) {
        fprintf(stderr, "bench ocn: %d expert demonstrations...\n",
                2 * per_task);
    }
    int rc = demo_set_generate(&ds, &cc, tasks, 2, per_task, 1, NULL, NULL);
    if (rc < 0) {
        return rc;
    }
    /* batches: demonstrations interleaved across the two tasks */
    struct demo_batch bb[N_BATCHES];
    struct demo_batch *bs[N_BATCHES];
    memset(bb, 0, sizeof bb);
    int64_t *ids = malloc((size_t)batch * sizeof *ids);
    if (ids == NULL) {
        demo_set_free(&ds);
        return gr_error(GR_ENOMEM, "bench ocn: out of memory");
    }
    int64_t rows = 0;
    int T = 0;
    for (int k = 0; k < N_BATCHES && rc == 0; k++) {
        for (int j = 0; j < batch; j++) {
            int64_t i = (int64_t)k * batch + j;
            ids[j] = (i % 2) * per_task + i / 2;
        }
        rc = demo_batch_build(&bb[k], &ds, ids, batch);
        bs[k] = &bb[k];
        rows += bb[k].rows;
        T = bb[k].T > T ? bb[k].T : T;
    }
    free(ids);
    struct gr_ctx *ctx = NULL;
    struct gr_optim *opt = NULL;
    struct ocn_model m;
    if (rc == 0) {
        struct gr_ctx_config c = gr_ctx_config_default();
        c.device = o->cuda ? GR_DEVICE_CUDA : GR_DEVICE_CPU;
        c.threads = o->threads;
        rc = gr_ctx_new(&ctx, &c);
    }
    if (rc == 0) {
        struct ocn_config cfg;
        ocn_config_default(&cfg);
        cfg.n_tasks = 2;
        strcpy(cfg.task_names[0], "AC");
        strcpy(cfg.task_names[1], "CD");
        rc = ocn_model_init(&m, ctx, &cfg, 1);
    }
    if (rc == 0) {
        rc = bc_optimizer_new(&opt, &m, 1e-3f);
    }
    /* grove: warm-up; then timed runs alternating with the PyTorch
     * baseline's (grove, PyTorch, grove, PyTorch, ...; each PyTorch run a
     * child process with its own warm-up on the same batches); then one
     * grove run split into phases */
    char path[128];
    snprintf(path, sizeof path, "/tmp/grove_bench_ocn_%ld.bin", (long)getpid());
    char why[512] = "", version[64] = "?", tblas[1024] = "";
    int have_torch = 0, wrote = 0;
    double rates[64], trates[64];
    const int nr = runs > 64 ? 64 : runs;
    struct phase_times pt = {0, 0, 0};
    if (rc == 0) {
        if (write_batches(path, &ds, bs, N_BATCHES) == 0) {
            wrote = 1;
            have_torch = o->python != NULL;
            if (!have_torch) {
                snprintf(why, sizeof why, "skipped (--no-baseline)");
            }
        } else {
            snprintf(why, sizeof why, "%s", gr_last_error());
        }
        if (!o->quiet) {
            fprintf(stderr, "bench ocn: %d runs of %d updates, grove%s in "
                    "turn...\n", runs, updates,
                    have_torch ? " and PyTorch" : "");
        }
        for (int k = 0; k < N_BATCHES && rc == 0; k++) {
            rc = one_update(&m, opt, bs[k], NULL);
        }
        gr_ctx_sync(ctx);
        for (int r = 0; r < nr && rc == 0; r++) {
            double t0 = gr_now_seconds();
            for (int u = 0; u < updates && rc == 0; u++) {
                rc = one_update(&m, opt, bs[u % N_BATCHES], NULL);
            }
            gr_ctx_sync(ctx);
            rates[r] = updates / (gr_now_seconds() - t0);
            trates[r] = -1.0;
            if (have_torch && rc == 0) {
                run_torch(o, path, updates, 1, &trates[r], version,
                          sizeof version, why, sizeof why, tblas,
                          sizeof tblas);
                have_torch = trates[r] > 0;
            }
        }
        if (rc == 0) {
            for (int u = 0; u < updates && rc == 0; u++) {
                rc = one_update(&m, opt, bs[u % N_BATCHES], &pt);
            }
        }
    }
    if (wrote) {
        unlink(path);
    }
    if (rc < 0) {
        gr_optim_free(opt);
        gr_ctx_free(ctx);
        for (int k = 0; k < N_BATCHES; k++) {
            demo_batch_free(&bb[k]);
        }
        demo_set_free(&ds);
        return rc;
    }
    if (!have_torch) {
        for (int r = 0; r < nr; r++) {
            trates[r] = -1.0;
        }
    }
    struct bench_pair pair = bench_pair_summary(rates, trates, nr);
    const double rate = pair.grove, torch_rate = pair.baseline;

    char cpu[128], gblas[1024];
    cpu_name(cpu, sizeof cpu);
    bench_process_blas(gblas, sizeof gblas);
    fprintf(out,
            "# grove bench ocn\n\ncpu: %s, %ld online cores; threads: %d; "
            "device: %s; build: %s\nS1 shapes: tasks AC, CD; K = 3, d = w = "
            "128, tau = 10; batch %d (mean %.1f steps, longest %d); median "
            "of %d runs of %d updates after a warm-up%s; grove's and "
            "PyTorch's runs alternate\ngrove BLAS: %s\n",
            cpu, sysconf(_SC_NPROCESSORS_ONLN), o->threads,
            o->cuda ? "cuda" : "cpu", o->build ? o->build : "?", batch,
            (double)rows / (N_BATCHES * batch), T, runs, updates,
            o->quick ? " (--quick)" : "", gblas);
    if (o->python != NULL) {
        fprintf(out, "baseline BLAS: %s\n",
                tblas[0] ? tblas : "not reported (the baseline did not run)");
    }
    fprintf(out, "\n| case | grove | baseline | ratio | spread |\n"
            "|---|---|---|---|---|\n");
    char base[64] = "n/a", ratio[64] = "n/a", spread[160];
    bench_spread_cell(&pair, spread, sizeof spread);
    if (torch_rate > 0) {
        snprintf(base, sizeof base, "%.3g", torch_rate);
        snprintf(ratio, sizeof ratio, "%.2fx", pair.ratio);
    }
    fprintf(out,
            "| BC updates/s, batch %d, %s (baseline: PyTorch %s, dense "
            "input, nn.Linear, autograd) | %.3g | %s | %s | %s |\n",
            batch, o->cuda ? "CUDA" : "CPU", version, rate, base,
            ratio, spread);
    if (torch_rate <= 0) {
        fprintf(out, "\nbaseline not measured: %s\n", why);
    }
    double tot = pt.fwd + pt.bwd + pt.opt;
    if (tot > 0) {
        fprintf(out,
                "\nwhere grove's update goes (%d updates, synchronised "
                "phases):\n\n| phase | ms per update | share |\n|---|---|---|\n"
                "| forward (sparse first layer, %d steps) | %.1f | %.0f%% |\n"
                "| backward | %.1f | %.0f%% |\n"
                "| clip + Adam | %.1f | %.0f%% |\n",
                updates, T, 1e3 * pt.fwd / updates, 100 * pt.fwd / tot,
                1e3 * pt.bwd / updates, 100 * pt.bwd / tot,
                1e3 * pt.opt / updates, 100 * pt.opt / tot);
    }
    gr_optim_free(opt);
    gr_ctx_free(ctx);
    for (int k = 0; k < N_BATCHES; k++) {
        demo_batch_free(&bb[k]);
    }
    demo_set_free(&ds);
    return rc;
}
