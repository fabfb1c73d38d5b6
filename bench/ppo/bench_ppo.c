/* grove bench ppo: PPO training frames per second, grove vs PyTorch (see
 * bench/ppo/bench_ppo.h). */
#define _XOPEN_SOURCE 700 /* setitimer */
#include "bench/ppo/bench_ppo.h"
#include "bench/bench_util.h"

#include <math.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents/bc.h"
#include "agents/ocn.h"
#include "agents/ppo.h"
#include "core/error.h"
#include "core/progress.h"
#include "kernels/checkpoint.h"
#include "kernels/ops.h"
#include "kernels/tape.h"

#ifndef GROVE_BENCH_PPO_SCRIPT
#define GROVE_BENCH_PPO_SCRIPT "bench/ppo/ppo_torch.py"
#endif
#ifndef GROVE_BENCH_PPO_LIB
#define GROVE_BENCH_PPO_LIB ""
#endif

#define TASK "DCA"

void bench_ppo_options_default(struct bench_ppo_options *o)
{
    memset(o, 0, sizeof *o);
    o->num_envs = 16;
    o->num_steps = 64;
    o->iterations = 3;
    o->runs = 3;
    o->threads = 1;
    o->python = "/usr/bin/python3";
    o->script = GROVE_BENCH_PPO_SCRIPT;
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

/* Fresh options at S1 shapes (K = 3, tasks AC and CD, the four-copy
 * world; d = w = `size`), parameters only, into path. */
static int write_options(const char *path, int size)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    struct gr_ctx *ctx = NULL;
    int rc = gr_ctx_new(&ctx, &cc);
    if (rc < 0) {
        return rc;
    }
    struct ocn_config c;
    ocn_config_default(&c);
    c.hidden = size;
    c.width = size;
    c.n_tasks = 2;
    snprintf(c.task_names[0], sizeof c.task_names[0], "AC");
    snprintf(c.task_names[1], sizeof c.task_names[1], "CD");
    struct ocn_model m;
    rc = ocn_model_init(&m, ctx, &c, 1);
    char text[4096];
    int n = rc == 0 ? ocn_config_format(&c, text, sizeof text) : rc;
    struct craft_config w;
    craft_config_default(&w);
    w.n_each = 4;
    if (n < 0) {
        rc = n;
    } else if ((rc = bc_world_format(&w, text + n, sizeof text - (size_t)n)) >=
               0) {
        rc = gr_checkpoint_save(ctx, path, text, GR_CKPT_PARAMS, 1);
    }
    gr_ctx_free(ctx);
    return rc;
}

/* Seconds per iteration of each part (grove: from ppo_stats). */
struct parts {
    double env, options, ctrl, other, update;
    double frames, decisions; /* per iteration */
};

struct torch_round {
    double fps, ips; /* frames/s, iterations/s; <= 0: did not run */
    double cfps;     /* frames per CPU-second of the process */
    struct parts p;
};

/* One PyTorch round (a child process: warm-up iteration, then
 * `iterations` timed ones); r->fps = -1 with `why` filled when it failed. */
static void run_torch(const struct bench_ppo_options *o, const char *ckpt,
                      int envs, int steps, int iterations,
                      struct torch_round *r, char *version, size_t vcap,
                      char *why, size_t cap, char *blas, size_t blas_cap)
{
    memset(r, 0, sizeof *r);
    r->fps = -1.0;
    if (access(o->python, X_OK) != 0) {
        snprintf(why, cap, "%s not found", o->python);
        return;
    }
    if (access(o->script, R_OK) != 0) {
        snprintf(why, cap, "%s not found", o->script);
        return;
    }
    /* the same thread pools pinned as in bench ocn (passive OpenMP waiting
     * keeps a shared machine from stalling the baseline at barriers); the
     * library the Python bindings load is this build's, when it has one */
    char lib[1200] = "";
    if (GROVE_BENCH_PPO_LIB[0] && access(GROVE_BENCH_PPO_LIB, R_OK) == 0) {
        snprintf(lib, sizeof lib, "GROVE_LIB='%s' ", GROVE_BENCH_PPO_LIB);
    }
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "%sOMP_WAIT_POLICY=PASSIVE "
             "OMP_NUM_THREADS=%d OPENBLAS_NUM_THREADS=%d MKL_NUM_THREADS=%d "
             "'%s' '%s' '%s' --task %s --num-envs %d --num-steps %d "
             "--iterations %d --threads %d --device %s 2>&1",
             lib, o->threads, o->threads, o->threads, o->python, o->script,
             ckpt, TASK, envs, steps, iterations, o->threads,
             o->cuda ? "cuda" : "cpu");
    FILE *p = popen(cmd, "r");
    if (p == NULL) {
        snprintf(why, cap, "could not start %s", o->python);
        return;
    }
    char line[1024], last[1024] = "";
    double fps = -1.0;
    while (fgets(line, sizeof line, p) != NULL) {
        double v;
        char key[64];
        if (sscanf(line, "frames_per_s %lf", &v) == 1) {
            fps = v;
        } else if (sscanf(line, "frames_per_cpu_s %lf", &v) == 1) {
            r->cfps = v;
        } else if (sscanf(line, "iterations_per_s %lf", &v) == 1) {
            r->ips = v;
        } else if (sscanf(line, "frames_per_iteration %lf", &v) == 1) {
            r->p.frames = v;
        } else if (sscanf(line, "decisions_per_iteration %lf", &v) == 1) {
            r->p.decisions = v;
        } else if (sscanf(line, "part_s %63s %lf", key, &v) == 2) {
            if (strcmp(key, "env") == 0) {
                r->p.env = v;
            } else if (strcmp(key, "options") == 0) {
                r->p.options = v;
            } else if (strcmp(key, "ctrl") == 0) {
                r->p.ctrl = v;
            } else if (strcmp(key, "other") == 0) {
                r->p.other = v;
            } else if (strcmp(key, "update") == 0) {
                r->p.update = v;
            }
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
                fprintf(stderr, "bench ppo: pytorch: %s\n", last);
            }
        }
    }
    int status = pclose(p);
    if (fps <= 0.0 || status != 0) {
        snprintf(why, cap, "the PyTorch script failed (status %d): %s", status,
                 last);
        return;
    }
    r->fps = fps;
}

/* The sampling profiler of grove's side: the trainer stores the part it
 * is in (ppo_set_profile), SIGPROF (every millisecond of this process's
 * CPU time, as the kernel's tick allows) counts it. */
static volatile sig_atomic_t prof_part;
static volatile long prof_samples[PPO_PART_N];

static void on_sigprof(int sig)
{
    (void)sig;
    int p = prof_part;
    if (p >= 0 && p < PPO_PART_N) {
        prof_samples[p]++;
    }
}

static void profiler_arm(int on)
{
    struct itimerval it;
    memset(&it, 0, sizeof it);
    if (on) {
        it.it_interval.tv_usec = 1000;
        it.it_value.tv_usec = 1000;
    }
    setitimer(ITIMER_PROF, &it, NULL);
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* `n` iterations of t (profiled); frames/s and iterations/s of their wall
 * time, frames per CPU-second of the process; frames and decisions summed
 * into *p. */
static int grove_round(struct ppo_trainer *t, struct gr_ctx *ctx, int n,
                       double *fps, double *ips, double *cfps,
                       struct parts *p)
{
    double frames = 0.0;
    int rc = 0;
    profiler_arm(1);
    double c0 = cpu_seconds();
    double t0 = gr_now_seconds();
    for (int i = 0; i < n && rc == 0; i++) {
        struct ppo_stats st;
        rc = ppo_iteration(t, &st);
        frames += (double)st.frames;
        p->frames += (double)st.frames;
        p->decisions += (double)st.decisions;
    }
    gr_ctx_sync(ctx);
    double s = gr_now_seconds() - t0;
    double c = cpu_seconds() - c0;
    profiler_arm(0);
    *fps = frames / s;
    *ips = n / s;
    *cfps = c > 0 ? frames / c : 0.0;
    return rc;
}

static void parts_scale(struct parts *p, double f)
{
    p->env *= f;
    p->options *= f;
    p->ctrl *= f;
    p->other *= f;
    p->update *= f;
    p->frames *= f;
    p->decisions *= f;
}

/* A row of the breakdown: seconds g of grove's gt, b of the baseline's bt
 * (a side whose total is 0 reads n/a). */
static void part_row(FILE *out, const char *name, double g, double gt,
                     double b, double bt)
{
    char gc[64] = "n/a | ", bc[64] = "n/a | ";
    if (gt > 0) {
        snprintf(gc, sizeof gc, "%.2f | %.0f%%", 1e3 * g, 100 * g / gt);
    }
    if (bt > 0) {
        snprintf(bc, sizeof bc, "%.2f | %.0f%%", 1e3 * b, 100 * b / bt);
    }
    fprintf(out, "| %s | %s | %s |\n", name, gc, bc);
}

int bench_ppo_run(const struct bench_ppo_options *o, FILE *out)
{
    const int envs = o->quick ? 4 : o->num_envs;
    const int steps = o->quick ? 4 : o->num_steps;
    const int iters = o->quick ? 1 : (o->iterations < 1 ? 1 : o->iterations);
    int runs = o->quick ? 1 : (o->runs < 1 ? 1 : o->runs);
    runs = runs > BENCH_MAX_ROUNDS ? BENCH_MAX_ROUNDS : runs;
    char ckpt[128] = "";
    const char *opts = o->options;
    int rc = 0;
    if (opts == NULL) {
        snprintf(ckpt, sizeof ckpt, "/tmp/grove_bench_ppo_%ld.ckpt",
                 (long)getpid());
        rc = write_options(ckpt, o->quick ? 32 : 128);
        opts = ckpt;
    }
    struct gr_ctx *ctx = NULL;
    struct ppo_trainer *t = NULL;
    struct ppo_config c;
    ppo_config_default(&c);
    snprintf(c.task, sizeof c.task, TASK);
    c.world.reward = CRAFT_REWARD_SPARSE;
    c.num_envs = envs;
    c.num_steps = steps;
    c.total_timesteps = INT64_C(1) << 40; /* the lr hardly decays */
    if (rc == 0) {
        struct gr_ctx_config cc = gr_ctx_config_default();
        cc.device = o->cuda ? GR_DEVICE_CUDA : GR_DEVICE_CPU;
        cc.threads = o->threads;
        rc = gr_ctx_new(&ctx, &cc);
    }
    if (rc == 0) {
        rc = ppo_trainer_new(&t, ctx, &c, &opts, 1);
    }
    if (rc == 0) {
        rc = ppo_set_acting_threads(t, o->threads); /* as train ppo does */
    }
    const struct ocn_config *mc = rc == 0 ? &ppo_model(t)->cfg : NULL;
    int K = mc ? mc->n_options : 0, d = mc ? mc->hidden : 0;
    int w = mc ? mc->width : 0;
    double g_fps[BENCH_MAX_ROUNDS], g_ips[BENCH_MAX_ROUNDS];
    double b_fps[BENCH_MAX_ROUNDS], b_ips[BENCH_MAX_ROUNDS];
    double g_cfps[BENCH_MAX_ROUNDS], b_cfps[BENCH_MAX_ROUNDS];
    struct parts tp_sum = {0};
    int tp_n = 0;
    char why[512] = "", version[64] = "?", tblas[1024] = "";
    int have_torch = o->python != NULL;
    if (!have_torch) {
        snprintf(why, sizeof why, "skipped (--no-baseline)");
    }
    if (rc == 0 && !o->quiet) {
        fprintf(stderr, "bench ppo: %d rounds of %d iterations (%d worlds x "
                "%d decisions), grove%s in turn...\n", runs, iters, envs,
                steps, have_torch ? " and PyTorch" : "");
    }
    double dummy_f, dummy_i, dummy_c;
    struct parts gp = {0};
    struct sigaction sa, old_sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigprof;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, &old_sa);
    for (int k = 0; k < PPO_PART_N; k++) {
        prof_samples[k] = 0;
    }
    prof_part = PPO_PART_OTHER;
    if (rc == 0) { /* warm-up */
        struct parts warm = {0};
        rc = grove_round(t, ctx, 1, &dummy_f, &dummy_i, &dummy_c, &warm);
        for (int k = 0; k < PPO_PART_N; k++) {
            prof_samples[k] = 0;
        }
        ppo_set_profile(t, &prof_part);
    }
    for (int r = 0; r < runs && rc == 0; r++) {
        rc = grove_round(t, ctx, iters, &g_fps[r], &g_ips[r], &g_cfps[r],
                         &gp);
        b_fps[r] = b_ips[r] = b_cfps[r] = -1.0;
        if (rc == 0 && have_torch) {
            struct torch_round tr;
            run_torch(o, opts, envs, steps, iters, &tr, version,
                      sizeof version, why, sizeof why, tblas, sizeof tblas);
            have_torch = tr.fps > 0;
            if (have_torch) {
                b_fps[r] = tr.fps;
                b_ips[r] = tr.ips;
                b_cfps[r] = tr.cfps > 0 ? tr.cfps : -1.0;
                tp_sum.env += tr.p.env;
                tp_sum.options += tr.p.options;
                tp_sum.ctrl += tr.p.ctrl;
                tp_sum.other += tr.p.other;
                tp_sum.update += tr.p.update;
                tp_sum.frames += tr.p.frames;
                tp_sum.decisions += tr.p.decisions;
                tp_n++;
            }
        }
    }
    profiler_arm(0);
    sigaction(SIGPROF, &old_sa, NULL);
    double storage = t != NULL ? (double)ppo_storage_bytes(t) : 0.0;
    ppo_trainer_free(t);
    gr_ctx_free(ctx);
    if (ckpt[0]) {
        unlink(ckpt);
    }
    if (rc < 0) {
        return rc;
    }
    if (!have_torch) {
        for (int r = 0; r < runs; r++) {
            b_fps[r] = b_ips[r] = b_cfps[r] = -1.0;
        }
        tp_n = 0;
    }
    struct parts tp = tp_sum;
    if (tp_n > 0) {
        parts_scale(&tp, 1.0 / tp_n);
    }
    struct bench_pair pf = bench_pair_summary(g_fps, b_fps, runs);
    struct bench_pair pi = bench_pair_summary(g_ips, b_ips, runs);
    struct bench_pair pc = bench_pair_summary(g_cfps, b_cfps, runs);
    /* grove's parts: the samples' shares of its median iteration time */
    long n_samples = 0;
    for (int k = PPO_PART_ROLLOUT; k < PPO_PART_N; k++) {
        n_samples += prof_samples[k];
    }
    parts_scale(&gp, 1.0 / ((double)runs * iters));
    if (n_samples > 0 && pi.grove > 0) {
        double it_s = 1.0 / pi.grove, f = it_s / (double)n_samples;
        gp.env = f * (double)prof_samples[PPO_PART_ENV];
        gp.options = f * (double)prof_samples[PPO_PART_OPTIONS];
        gp.ctrl = f * (double)prof_samples[PPO_PART_CTRL];
        gp.other = f * (double)prof_samples[PPO_PART_ROLLOUT];
        gp.update = f * (double)prof_samples[PPO_PART_UPDATE];
    }

    char cpu[128], gblas[1024];
    cpu_name(cpu, sizeof cpu);
    bench_process_blas(gblas, sizeof gblas);
    fprintf(out,
            "# grove bench ppo\n\ncpu: %s, %ld online cores; threads: %d; "
            "device: %s (the update; acting runs on the host); build: %s\n"
            "S1 shapes: policy ocn, task %s, sparse reward, four-copy world; "
            "K = %d frozen options (%s), d = %d, w = %d, tau_C = 10; %d "
            "worlds x %d decisions per rollout, 4 minibatches, 4 epochs; "
            "median of %d round%s of %d iteration%s after a warm-up "
            "iteration%s; grove's and PyTorch's rounds alternate\n"
            "grove's rollout storage: %.0f bytes a decision "
            "(ppo_storage_bytes)\n"
            "grove BLAS: %s\n",
            cpu, sysconf(_SC_NPROCESSORS_ONLN), o->threads,
            o->cuda ? "cuda" : "cpu", o->build ? o->build : "?", TASK, K,
            o->options ? o->options : "fresh, seed 1", d, w, envs, steps,
            runs, runs == 1 ? "" : "s", iters, iters == 1 ? "" : "s",
            o->quick ? " (--quick)" : "",
            storage / ((double)envs * steps), gblas);
    if (o->python != NULL) {
        fprintf(out, "baseline BLAS: %s\n",
                tblas[0] ? tblas : "not reported (the baseline did not run)");
    }
    fprintf(out, "\n| case | grove | baseline | ratio | spread |\n"
                 "|---|---|---|---|---|\n");
    const struct bench_pair *pairs[3] = {&pf, &pc, &pi};
    static const char *const what[3] = {
        "training frames/s", "training frames per CPU-second (all threads)",
        "iterations/s"};
    for (int k = 0; k < 3; k++) {
        char base[64] = "n/a", ratio[64] = "n/a", spread[160];
        bench_spread_cell(pairs[k], spread, sizeof spread);
        if (pairs[k]->baseline > 0) {
            snprintf(base, sizeof base, "%.4g", pairs[k]->baseline);
            snprintf(ratio, sizeof ratio, "%.2fx", pairs[k]->ratio);
        }
        fprintf(out,
                "| PPO %s, %s, %d worlds (baseline: PyTorch%s%s, cleanrl-style, "
                "the same env through grove's Python bindings) | %.4g | %s | "
                "%s | %s |\n",
                what[k],
                o->cuda ? "CUDA update" : "CPU", envs,
                strcmp(version, "?") ? " " : "",
                strcmp(version, "?") ? version : "",
                pairs[k]->grove, base, ratio, spread);
    }
    if (pf.baseline <= 0) {
        fprintf(out, "\nbaseline not measured: %s\n", why);
    }
    double gt = gp.env + gp.options + gp.ctrl + gp.other + gp.update;
    double bt = tp_n > 0 ? tp.env + tp.options + tp.ctrl + tp.other +
                               tp.update
                         : 0.0;
    if (gt <= 0 && bt <= 0) {
        fprintf(out, "\nwhere the time goes: no CPU-time sample of grove's "
                     "rounds (too short) and no baseline\n");
    } else {
        if (gt <= 0) {
            fprintf(out, "\n(grove's rounds were too short for a CPU-time "
                         "sample: its parts read n/a)\n");
        }
        if (o->threads > 1) {
            fprintf(out, "\n(grove acts on %d threads: its rollout is "
                         "not split into parts, all of it reads as the rest "
                         "of the rollout)\n",
                    o->threads);
        }
        fprintf(out,
                "\nwhere the time goes, ms per iteration (grove: its median "
                "iteration time split by %ld CPU-time samples of the timed "
                "rounds; PyTorch: timers, mean over its rounds):\n\n"
                "| part | grove | share | PyTorch | share |\n"
                "|---|---|---|---|---|\n", n_samples);
        part_row(out, "environment (Craft steps, truncation copies)", gp.env,
                 gt, tp.env, bt);
        part_row(out, "options' forward (every frame)", gp.options, gt,
                 tp.options, bt);
        part_row(out, "controller (forward, sampling, storage)", gp.ctrl, gt,
                 tp.ctrl, bt);
        part_row(out, "rest of the rollout", gp.other, gt, tp.other, bt);
        part_row(out, "update (GAE, 4 epochs x 4 minibatches, Adam)",
                 gp.update, gt, tp.update, bt);
        part_row(out, "total", gt, gt, bt, bt);
        if (tp_n > 0) {
            fprintf(out, "| frames / decisions per iteration | %.0f / %.0f "
                    "| | %.0f / %.0f | |\n", gp.frames, gp.decisions,
                    tp.frames, tp.decisions);
        } else {
            fprintf(out, "| frames / decisions per iteration | %.0f / %.0f "
                    "| | n/a | |\n", gp.frames, gp.decisions);
        }
    }
    return 0;
}
