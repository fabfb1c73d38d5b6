/* Craft benchmark: see bench_craft.h. */
#define _GNU_SOURCE
#include "bench/craft/bench_craft.h"
#include "bench/bench_util.h"

#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/progress.h"
#include "core/random.h"
#include "envs/craft.h"
#include "envs/expert.h"

extern char **environ;

#define BATCH 256
#define ACTION_ROWS 64 /* pre-sampled action rows, cycled */

/* Keeps the compiler from dropping stores into `p` as dead. */
static inline void escape(void *p)
{
    __asm__ volatile("" : : "r"(p) : "memory");
}

/* CPU time of the calling thread: on a machine shared with other work it
 * leaves out the time the thread spends descheduled. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- cases; each does `work` units and times them -------------------------- */

enum bench_case {
    CASE_OBS_LIMIT,
    CASE_BATCH_OBS,
    CASE_BATCH_NOOBS,
    CASE_SINGLE_OBS,
    CASE_SINGLE_NOOBS,
    CASE_EXPERT,
};

struct job {
    enum bench_case kind;
    uint64_t work;   /* steps (or observations, or demonstrations) */
    uint64_t seed;
    double seconds;  /* out: wall clock */
    double cpu_seconds; /* out: this thread's CPU time */
    uint64_t done;   /* out: units actually done */
    int rc;          /* out */
    pthread_barrier_t *start;
};

static void sample_actions(uint8_t *a, size_t n, uint64_t seed)
{
    struct gr_philox_stream s = gr_philox_stream_init(seed, 1ull << 40);
    for (size_t i = 0; i < n; i++) {
        a[i] = (uint8_t)(((uint64_t)gr_philox_next_u32(&s) * 5u) >> 32);
    }
}

/* The limit: clear one observation of a batch-256 buffer and set the ~50
 * non-zeros a Craft observation has (45..55 indices, spread like one). */
static void run_obs_limit(struct job *jb, float *obs)
{
    enum { NZ = 50 };
    static uint16_t idx[BATCH][NZ];
    struct gr_philox_stream s = gr_philox_stream_init(jb->seed, 0);
    for (int j = 0; j < BATCH; j++) {
        for (int i = 0; i < NZ; i++) {
            idx[j][i] = (uint16_t)(((uint64_t)gr_philox_next_u32(&s) *
                                    CRAFT_OBS_SIZE) >> 32);
        }
    }
    if (jb->start) {
        pthread_barrier_wait(jb->start);
    }
    double t0 = gr_now_seconds(), c0 = cpu_now();
    for (uint64_t it = 0; it < jb->work; it++) {
        int j = (int)(it & (BATCH - 1));
        float *o = obs + (size_t)j * CRAFT_OBS_SIZE;
        memset(o, 0, sizeof(float) * CRAFT_OBS_SIZE);
        for (int i = 0; i < NZ; i++) {
            o[idx[j][i]] = 1.0f;
        }
        escape(o);
    }
    jb->seconds = gr_now_seconds() - t0;
    jb->cpu_seconds = cpu_now() - c0;
    jb->done = jb->work;
}

static void run_batch(struct job *jb, float *obs, const uint8_t *actions)
{
    struct craft_config c;
    craft_config_default(&c);
    struct craft_task t[2];
    craft_task_parse("AC", &t[0]);
    craft_task_parse("CD", &t[1]);
    struct craft_batch b;
    jb->rc = craft_batch_init(&b, &c, t, 2, BATCH, jb->seed, obs);
    if (jb->rc < 0) {
        if (jb->start) {
            pthread_barrier_wait(jb->start);
        }
        return;
    }
    static __thread float reward[BATCH];
    static __thread uint8_t term[BATCH], trunc[BATCH];
    struct craft_batch_out out = {jb->kind == CASE_BATCH_OBS ? obs : NULL,
                                  reward, term, trunc, NULL, NULL};
    struct craft_log log = {0, 0, 0, 0.0};
    uint64_t iters = (jb->work + BATCH - 1) / BATCH;
    if (jb->start) {
        pthread_barrier_wait(jb->start);
    }
    double t0 = gr_now_seconds(), c0 = cpu_now();
    for (uint64_t it = 0; it < iters; it++) {
        craft_batch_step(&b, actions + (it % ACTION_ROWS) * BATCH, &out, &log);
    }
    jb->seconds = gr_now_seconds() - t0;
    jb->cpu_seconds = cpu_now() - c0;
    jb->done = iters * BATCH;
    escape(obs);
    craft_batch_free(&b);
}

static void run_single(struct job *jb, float *obs, const uint8_t *actions)
{
    struct craft_config c;
    craft_config_default(&c);
    struct craft_task t[2];
    craft_task_parse("AC", &t[0]);
    craft_task_parse("CD", &t[1]);
    struct craft_world *w = malloc(sizeof(struct craft_world) * BATCH);
    uint64_t episode[BATCH] = {0};
    if (w == NULL) {
        jb->rc = gr_error(GR_ENOMEM, "bench: out of memory");
        if (jb->start) {
            pthread_barrier_wait(jb->start);
        }
        return;
    }
    for (int j = 0; j < BATCH; j++) {
        craft_world_reset(&w[j], &c, craft_episode_seed(jb->seed, j, 0),
                          &t[j & 1]);
    }
    int with_obs = jb->kind == CASE_SINGLE_OBS;
    uint64_t iters = (jb->work + BATCH - 1) / BATCH;
    if (jb->start) {
        pthread_barrier_wait(jb->start);
    }
    double t0 = gr_now_seconds(), c0 = cpu_now();
    for (uint64_t it = 0; it < iters; it++) {
        const uint8_t *a = actions + (it % ACTION_ROWS) * BATCH;
        for (int j = 0; j < BATCH; j++) {
            struct craft_step st;
            craft_world_step(&w[j], a[j], &st);
            if (st.terminated | st.truncated) {
                episode[j]++;
                craft_world_reset(&w[j], &c,
                                  craft_episode_seed(jb->seed, j, episode[j]),
                                  &t[j & 1]);
            }
            if (with_obs) {
                craft_world_observe(&w[j], obs + (size_t)j * CRAFT_OBS_SIZE);
            }
        }
    }
    jb->seconds = gr_now_seconds() - t0;
    jb->cpu_seconds = cpu_now() - c0;
    jb->done = iters * BATCH;
    escape(obs);
    escape(w);
    free(w);
}

/* Expert demonstrations of AC as `grove craft demos` makes them: reset,
 * then observe + expert + step until the task is done. */
static void run_expert(struct job *jb, float *obs)
{
    struct craft_config c;
    craft_config_default(&c);
    struct craft_task t;
    craft_task_parse("AC", &t);
    if (jb->start) {
        pthread_barrier_wait(jb->start);
    }
    double t0 = gr_now_seconds(), c0 = cpu_now();
    uint64_t demos = 0;
    for (uint64_t n = 0; demos < jb->work; n++) {
        struct craft_world w;
        craft_world_reset(&w, &c, craft_demo_seed(jb->seed, t.name, n), &t);
        int ok = 1;
        while (!craft_world_done(&w)) {
            int a = -1;
            craft_world_observe(&w, obs);
            if (craft_expert_act(&w, &a, NULL) != CRAFT_EXPERT_OK) {
                ok = 0;
                break;
            }
            struct craft_step st;
            craft_world_step(&w, a, &st);
        }
        escape(obs);
        demos += (uint64_t)ok;
    }
    jb->seconds = gr_now_seconds() - t0;
    jb->cpu_seconds = cpu_now() - c0;
    jb->done = demos;
}

struct thread_arg {
    struct job job;
    float *obs;
    uint8_t *actions;
};

static void *thread_main(void *p)
{
    struct thread_arg *ta = p;
    struct job *jb = &ta->job;
    switch (jb->kind) {
    case CASE_OBS_LIMIT:
        run_obs_limit(jb, ta->obs);
        break;
    case CASE_BATCH_OBS:
    case CASE_BATCH_NOOBS:
        run_batch(jb, ta->obs, ta->actions);
        break;
    case CASE_SINGLE_OBS:
    case CASE_SINGLE_NOOBS:
        run_single(jb, ta->obs, ta->actions);
        break;
    case CASE_EXPERT:
        run_expert(jb, ta->obs);
        break;
    }
    return NULL;
}

struct rate {
    double cpu;  /* sum over threads of units / the thread's CPU time */
    double wall; /* all units / the slowest thread's wall-clock time */
};

/* One timed run of `kind` on `threads` threads, each doing `work` units on
 * its own buffers; negative rates on failure. */
static struct rate run_case(enum bench_case kind, int threads, uint64_t work,
                            uint64_t seed)
{
    struct thread_arg *ta = calloc((size_t)threads, sizeof *ta);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    pthread_barrier_t start;
    int barrier_ready = 0;
    struct rate rate = {-1.0, -1.0};
    int made = 0;
    if (ta == NULL || tid == NULL) {
        goto done;
    }
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    barrier_ready = 1;
    for (int i = 0; i < threads; i++) {
        ta[i].obs = aligned_alloc(64, sizeof(float) * CRAFT_OBS_SIZE * BATCH);
        ta[i].actions = malloc(BATCH * ACTION_ROWS);
        if (ta[i].obs == NULL || ta[i].actions == NULL) {
            goto done;
        }
        memset(ta[i].obs, 0, sizeof(float) * CRAFT_OBS_SIZE * BATCH);
        sample_actions(ta[i].actions, BATCH * ACTION_ROWS, seed + (uint64_t)i);
        ta[i].job.kind = kind;
        ta[i].job.work = work;
        ta[i].job.seed = seed * 1000 + (uint64_t)i;
        ta[i].job.start = threads > 1 ? &start : NULL;
    }
    if (threads == 1) {
        thread_main(&ta[0]);
        made = 0;
    } else {
        for (; made < threads; made++) {
            if (pthread_create(&tid[made], NULL, thread_main, &ta[made]) != 0) {
                break;
            }
        }
        for (int i = 0; i < made; i++) {
            pthread_join(tid[i], NULL);
        }
        if (made < threads) {
            goto done; /* cannot happen quietly: the barrier would hang */
        }
    }
    {
        double slowest = 0.0, cpu_rate = 0.0;
        uint64_t total = 0;
        for (int i = 0; i < threads; i++) {
            if (ta[i].job.rc < 0 || ta[i].job.cpu_seconds <= 0) {
                goto done;
            }
            slowest = ta[i].job.seconds > slowest ? ta[i].job.seconds : slowest;
            total += ta[i].job.done;
            cpu_rate += (double)ta[i].job.done / ta[i].job.cpu_seconds;
        }
        rate.cpu = cpu_rate;
        rate.wall = slowest > 0 ? (double)total / slowest : -1.0;
    }
done:
    if (barrier_ready) {
        pthread_barrier_destroy(&start);
    }
    if (ta != NULL) {
        for (int i = 0; i < threads; i++) {
            free(ta[i].obs);
            free(ta[i].actions);
        }
    }
    free(ta);
    free(tid);
    return rate;
}


/* Two cases measured in turn: a warm-up of each, then `runs` rounds of
 * one timed run of A and one of B (A, B, A, B, ...), so that a load that
 * comes and goes on a shared machine weighs on both alike. *a, *b get the
 * medians; pa (pair A against B) and pb (B alone) their spreads over the
 * rounds (bench/bench_util.h). kind_b < 0: A alone. */
static void measure(enum bench_case kind_a, int threads_a, uint64_t work_a,
                    int kind_b, int threads_b, uint64_t work_b, int runs,
                    struct rate *a, struct rate *b, struct bench_pair *pa,
                    struct bench_pair *pb)
{
    double ac[BENCH_MAX_ROUNDS], aw[BENCH_MAX_ROUNDS], bc[BENCH_MAX_ROUNDS],
        bw[BENCH_MAX_ROUNDS], none[BENCH_MAX_ROUNDS];
    const struct rate bad = {-1.0, -1.0};
    *a = *b = bad;
    if (runs > BENCH_MAX_ROUNDS) {
        runs = BENCH_MAX_ROUNDS;
    }
    run_case(kind_a, threads_a, work_a / 4 + 1, 999);
    if (kind_b >= 0) {
        run_case((enum bench_case)kind_b, threads_b, work_b / 4 + 1, 999);
    }
    int ok_a = 1, ok_b = kind_b >= 0;
    for (int i = 0; i < runs; i++) {
        struct rate r = run_case(kind_a, threads_a, work_a, (uint64_t)i + 1);
        ok_a &= r.cpu > 0 && r.wall > 0;
        ac[i] = r.cpu;
        aw[i] = r.wall;
        bc[i] = bw[i] = none[i] = -1.0;
        if (kind_b >= 0) {
            r = run_case((enum bench_case)kind_b, threads_b, work_b,
                         (uint64_t)i + 1);
            ok_b &= r.cpu > 0 && r.wall > 0;
            bc[i] = r.cpu;
            bw[i] = r.wall;
        }
    }
    if (ok_b) {
        *pa = bench_pair_summary(ac, bc, runs);
        *pb = bench_pair_summary(bc, none, runs);
        b->cpu = pb->grove;
        b->wall = bench_median(bw, runs);
    } else {
        *pa = bench_pair_summary(ac, none, runs);
        memset(pb, 0, sizeof *pb);
    }
    if (ok_a) {
        a->cpu = pa->grove;
        a->wall = bench_median(aw, runs);
    }
}

/* ---- the whole process ---------------------------------------------------- */

/* Runs `grove craft run --agent random --tasks AC --n-each 1 --episodes E
 * --quiet`, returns its steps per second by the wall clock around the
 * whole child process (start-up and summary included); *steps gets the
 * steps it reports. */
static double whole_process(const char *grove, uint64_t episodes,
                            uint64_t *steps, double *cpu_rate)
{
    *cpu_rate = -1.0;
    char ep[32];
    snprintf(ep, sizeof ep, "%llu", (unsigned long long)episodes);
    /* --n-each 1: the world of the in-process cases (craft run's default
     * for AC is the S1 world, n_each 4) */
    char *argv[] = {(char *)grove, "craft", "run", "--agent", "random",
                    "--tasks", "AC", "--n-each", "1", "--episodes", ep,
                    "--quiet", NULL};
    int fds[2];
    if (pipe(fds) != 0) {
        return -1.0;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    pid_t pid;
    double t0 = gr_now_seconds();
    int rc = posix_spawn(&pid, grove, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return -1.0;
    }
    char text[8192];
    size_t n = 0;
    ssize_t got;
    while ((got = read(fds[0], text + n, sizeof text - 1 - n)) > 0) {
        n += (size_t)got;
        if (n == sizeof text - 1) {
            break;
        }
    }
    text[n] = '\0';
    close(fds[0]);
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    wait4(pid, &status, 0, &ru);
    double secs = gr_now_seconds() - t0;
    double cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                 (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        return -1.0;
    }
    const char *total = strstr(text, "total: ");
    unsigned long long eps = 0, st = 0;
    if (total == NULL ||
        sscanf(total, "total: %llu episodes, %llu steps", &eps, &st) != 2) {
        return -1.0;
    }
    *steps = st;
    *cpu_rate = cpu > 0 ? (double)st / cpu : -1.0;
    return (double)st / secs;
}

/* ---- table ------------------------------------------------------------------ */

static void fmt_rate(double r, char *buf, size_t cap)
{
    if (r < 0) {
        snprintf(buf, cap, "failed");
    } else if (r >= 1e6) {
        snprintf(buf, cap, "%.2f M/s", r / 1e6);
    } else if (r >= 1e3) {
        snprintf(buf, cap, "%.1f k/s", r / 1e3);
    } else {
        snprintf(buf, cap, "%.0f /s", r);
    }
}

/* One table row: grove's figure (CPU-time based), its baseline, the ratio
 * (the median of the rounds' ratios, when measured in turn), the target,
 * grove's figure by the wall clock, and the spread over the rounds. */
static void row(FILE *out, const char *name, struct rate grove,
                struct rate base, const char *base_note, const char *target,
                const struct bench_pair *p)
{
    char g[32], b[64], ratio[32], wall[32], spread[160] = "-";
    if (p != NULL && p->rounds > 0) {
        bench_spread_cell(p, spread, sizeof spread);
    }
    fmt_rate(grove.cpu, g, sizeof g);
    fmt_rate(grove.wall, wall, sizeof wall);
    if (base.cpu > 0) {
        char r[32];
        fmt_rate(base.cpu, r, sizeof r);
        snprintf(b, sizeof b, "%s (%s)", r, base_note);
        snprintf(ratio, sizeof ratio, "%.2f",
                 p != NULL && p->baseline > 0 ? p->ratio
                 : grove.cpu > 0              ? grove.cpu / base.cpu
                                              : 0.0);
    } else {
        snprintf(b, sizeof b, "%s", base_note);
        snprintf(ratio, sizeof ratio, "-");
    }
    fprintf(out, "| %s | %s | %s | %s | %s | %s | %s |\n", name, g, b, ratio,
            target, wall, spread);
    fflush(out);
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

int bench_craft_run(const struct bench_craft_options *o, FILE *out)
{
    int runs = o->runs < 1 ? 1 : o->runs;
    int threads = o->threads < 2 ? 2 : o->threads;
    uint64_t steps = o->quick ? 20000 : 2000000;
    uint64_t demos = o->quick ? 200 : 20000;
    uint64_t episodes = o->quick ? 500 : 50000;
    char cpu[128];
    cpu_name(cpu, sizeof cpu);
    fprintf(out,
            "# grove bench craft\n\ncpu: %s, %ld online cores; threads for "
            "the multi-core rows: %d; build: %s\nmedian of %d runs after a "
            "warm-up; batch %d; %llu steps per run%s\n\n",
            cpu, sysconf(_SC_NPROCESSORS_ONLN), threads,
            o->build ? o->build : "?", runs, BATCH,
            (unsigned long long)steps, o->quick ? " (--quick)" : "");
    char gblas[1024];
    bench_process_blas(gblas, sizeof gblas);
    fprintf(out, "grove BLAS: %s (not used by these cases)\nbaseline BLAS: "
                 "none (no PyTorch side: each row's baseline is another row, "
                 "measured in turn with it on the threads its row names, or "
                 "a quoted figure)\n\n", gblas);
    fprintf(out, "| case | grove | baseline | ratio | target | grove, wall "
                 "clock | spread |\n|---|---|---|---|---|---|---|\n");
    char tn[192];
    const struct rate none = {-1.0, -1.0};
    struct bench_pair p1, p1b, p2, p2b, p3, p3b, p4, p4b, p5, p5b, p6, p6b;
    struct rate limit1, b_obs1, s_obs1, limit1b, b_no1, s_no1, limitT, b_obsT,
        b_noT, b_no1b, ex1, exT;
    if (!o->quiet) {
        fprintf(stderr, "bench craft: one core...\n");
    }
    /* each pair alternates its two cases (bench_util.h); a row without a
     * baseline shows the second case of a pair, with its own spread */
    measure(CASE_BATCH_OBS, 1, steps, CASE_OBS_LIMIT, 1, steps, runs,
            &b_obs1, &limit1, &p1, &p1b);
    row(out, "observation write alone (clear 4.3 KB + 50 non-zeros), 1 core",
        limit1, none, "the limit", "~12 M/s", &p1b);
    row(out, "batch 256, step + observation, 1 core", b_obs1, limit1,
        "obs limit", ">= 5 M/s", &p1);
    measure(CASE_SINGLE_OBS, 1, steps, CASE_OBS_LIMIT, 1, steps, runs,
            &s_obs1, &limit1b, &p2, &p2b);
    row(out, "single world, step + observation, 1 core", s_obs1, limit1b,
        "obs limit", "-", &p2);
    measure(CASE_BATCH_NOOBS, 1, steps * 4, CASE_SINGLE_NOOBS, 1, steps * 4,
            runs, &b_no1, &s_no1, &p3, &p3b);
    row(out, "batch 256, step only, 1 core", b_no1, s_no1, "single world",
        ">= 50 M/s", &p3);
    row(out, "single world, step only, 1 core", s_no1, none, "-", "-", &p3b);
    if (!o->quiet) {
        fprintf(stderr, "bench craft: %d threads...\n", threads);
    }
    measure(CASE_BATCH_OBS, threads, steps, CASE_OBS_LIMIT, threads, steps,
            runs, &b_obsT, &limitT, &p4, &p4b);
    snprintf(tn, sizeof tn, "observation write alone, %d threads", threads);
    row(out, tn, limitT, none, "the limit", "-", &p4b);
    snprintf(tn, sizeof tn,
             "batch 256 per thread, step + observation, %d threads", threads);
    row(out, tn, b_obsT, limitT, "obs limit", "-", &p4);
    measure(CASE_BATCH_NOOBS, threads, steps * 4, CASE_BATCH_NOOBS, 1,
            steps * 4, runs, &b_noT, &b_no1b, &p5, &p5b);
    snprintf(tn, sizeof tn, "batch 256 per thread, step only, %d threads",
             threads);
    row(out, tn, b_noT, b_no1b, "1 core", "-", &p5);
    if (!o->quiet) {
        fprintf(stderr, "bench craft: expert...\n");
    }
    measure(CASE_EXPERT, threads, demos, CASE_EXPERT, 1, demos, runs, &exT,
            &ex1, &p6, &p6b);
    row(out, "expert demonstrations of AC (with observations), 1 core", ex1,
        none, "-", "-", &p6b);
    snprintf(tn, sizeof tn, "expert demonstrations of AC, %d threads",
             threads);
    row(out, tn, exT, ex1, "1 core", "-", &p6);
    int process_failed = 0;
    if (o->grove_path != NULL) {
        if (!o->quiet) {
            fprintf(stderr, "bench craft: whole process...\n");
        }
        double w[64], c[64];
        uint64_t st = 0;
        int n = runs < 64 ? runs : 64;
        for (int i = 0; i < n; i++) {
            w[i] = whole_process(o->grove_path, episodes, &st, &c[i]);
            process_failed |= w[i] <= 0;
        }
        double wr[64], none_r[64];
        for (int i = 0; i < n; i++) {
            wr[i] = w[i];
            none_r[i] = -1.0;
        }
        struct bench_pair pw = bench_pair_summary(wr, none_r, n);
        qsort(w, (size_t)n, sizeof w[0], bench_cmp_double);
        qsort(c, (size_t)n, sizeof c[0], bench_cmp_double);
        /* here the wall clock is the figure the issue asks for: it goes
         * in the main column, the CPU-time rate in the last one */
        struct rate whole = {process_failed ? -1.0 : w[n / 2],
                             process_failed ? -1.0 : c[n / 2]};
        struct rate python = {2500.0, 2500.0};
        snprintf(tn, sizeof tn,
                 "whole process, wall clock incl. start-up: `grove craft run "
                 "--agent random --tasks AC --n-each 1 --episodes %llu --quiet` "
                 "(%.2f M "
                 "steps)",
                 (unsigned long long)episodes, (double)st / 1e6);
        row(out, tn, whole, python, "Python original, quoted", ">= 2 M/s",
            &pw);
    }
    if (process_failed) {
        return gr_error(GR_EIO, "bench craft: '%s craft run' failed",
                        o->grove_path);
    }
    if (limit1.cpu < 0 || b_obs1.cpu < 0 || s_obs1.cpu < 0 || b_no1.cpu < 0 ||
        limitT.cpu < 0 || b_obsT.cpu < 0 || b_noT.cpu < 0 || ex1.cpu < 0 ||
        exT.cpu < 0 || limit1b.cpu < 0 || s_no1.cpu < 0 || b_no1b.cpu < 0) {
        return gr_error(GR_EIO, "bench craft: a case failed to run");
    }
    fprintf(out,
            "\n\"grove\" = units per second of each thread's CPU time "
            "(CLOCK_THREAD_CPUTIME_ID), summed over threads: time a thread "
            "spends descheduled on a shared machine is not counted; the last "
            "column but one is the same run by the wall clock (all units / "
            "the slowest thread). Whole-process row: wall clock of the child "
            "process, start-up and summary included (that column: by its "
            "user+sys CPU time). Baseline \"obs limit\" = the observation "
            "write of the same thread count; every measured baseline runs "
            "in turn with its row (row, baseline, row, baseline, ...: %d "
            "rounds), the ratio is the median of the rounds' ratios and "
            "\"spread\" their range; the Python figure (~2,500 steps/s) is "
            "quoted from issue 6, not measured.\n", runs);
    return 0;
}
