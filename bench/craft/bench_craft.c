/* Craft benchmark: see bench_craft.h. */
#define _GNU_SOURCE
#include "bench/craft/bench_craft.h"

#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

/* ---- cases; each returns units per second for `work` units ---------------- */

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
    double seconds;  /* out */
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
    double t0 = gr_now_seconds();
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
    double t0 = gr_now_seconds();
    for (uint64_t it = 0; it < iters; it++) {
        craft_batch_step(&b, actions + (it % ACTION_ROWS) * BATCH, &out, &log);
    }
    jb->seconds = gr_now_seconds() - t0;
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
    double t0 = gr_now_seconds();
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
    double t0 = gr_now_seconds();
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

/* One timed run of `kind` on `threads` threads, each doing `work` units on
 * its own buffers; returns the aggregate rate (units / slowest thread's
 * time), or a negative value on failure. */
static double run_case(enum bench_case kind, int threads, uint64_t work,
                       uint64_t seed)
{
    struct thread_arg *ta = calloc((size_t)threads, sizeof *ta);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    pthread_barrier_t start;
    int barrier_ready = 0;
    double rate = -1.0;
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
        double slowest = 0.0;
        uint64_t total = 0;
        for (int i = 0; i < threads; i++) {
            if (ta[i].job.rc < 0) {
                goto done;
            }
            slowest = ta[i].job.seconds > slowest ? ta[i].job.seconds : slowest;
            total += ta[i].job.done;
        }
        rate = slowest > 0 ? (double)total / slowest : -1.0;
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Warm-up, then the median of `runs` timed runs. */
static double median_rate(enum bench_case kind, int threads, uint64_t work,
                          int runs)
{
    double r[64];
    if (runs > 64) {
        runs = 64;
    }
    run_case(kind, threads, work / 4 + 1, 999);
    for (int i = 0; i < runs; i++) {
        r[i] = run_case(kind, threads, work, (uint64_t)i + 1);
        if (r[i] < 0) {
            return -1.0;
        }
    }
    qsort(r, (size_t)runs, sizeof r[0], cmp_double);
    return r[runs / 2];
}

/* ---- the whole process ---------------------------------------------------- */

/* Runs `grove craft run --agent random --tasks AC --episodes E --quiet`,
 * returns its steps per second by the wall clock around the whole child
 * process (start-up and summary included); *steps gets the steps it
 * reports. */
static double whole_process(const char *grove, uint64_t episodes,
                            uint64_t *steps)
{
    char ep[32];
    snprintf(ep, sizeof ep, "%llu", (unsigned long long)episodes);
    char *argv[] = {(char *)grove, "craft", "run", "--agent", "random",
                    "--tasks", "AC", "--episodes", ep, "--quiet", NULL};
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
    waitpid(pid, &status, 0);
    double secs = gr_now_seconds() - t0;
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

static void row(FILE *out, const char *name, double grove, double base,
                const char *base_note, const char *target)
{
    char g[32], b[48], ratio[32];
    fmt_rate(grove, g, sizeof g);
    if (base > 0) {
        char r[32];
        fmt_rate(base, r, sizeof r);
        snprintf(b, sizeof b, "%s (%s)", r, base_note);
        snprintf(ratio, sizeof ratio, "%.2f", grove > 0 ? grove / base : 0.0);
    } else {
        snprintf(b, sizeof b, "%s", base_note);
        snprintf(ratio, sizeof ratio, "-");
    }
    fprintf(out, "| %s | %s | %s | %s | %s |\n", name, g, b, ratio, target);
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
    fprintf(out, "| case | grove | baseline | ratio | target |\n"
                 "|---|---|---|---|---|\n");
    char tn[96];
    if (!o->quiet) {
        fprintf(stderr, "bench craft: observation limit...\n");
    }
    double limit1 = median_rate(CASE_OBS_LIMIT, 1, steps, runs);
    row(out, "observation write alone (clear 4.3 KB + 50 non-zeros), 1 core",
        limit1, -1, "the limit", "~12 M/s");
    double b_obs1 = median_rate(CASE_BATCH_OBS, 1, steps, runs);
    row(out, "batch 256, step + observation, 1 core", b_obs1, limit1,
        "obs limit", ">= 5 M/s");
    double s_obs1 = median_rate(CASE_SINGLE_OBS, 1, steps, runs);
    row(out, "single world, step + observation, 1 core", s_obs1, limit1,
        "obs limit", "-");
    double b_no1 = median_rate(CASE_BATCH_NOOBS, 1, steps * 4, runs);
    double s_no1 = median_rate(CASE_SINGLE_NOOBS, 1, steps * 4, runs);
    row(out, "batch 256, step only, 1 core", b_no1, s_no1, "single world",
        ">= 50 M/s");
    row(out, "single world, step only, 1 core", s_no1, -1, "-", "-");
    if (!o->quiet) {
        fprintf(stderr, "bench craft: %d threads...\n", threads);
    }
    double limitT = median_rate(CASE_OBS_LIMIT, threads, steps, runs);
    snprintf(tn, sizeof tn,
             "observation write alone, %d threads", threads);
    row(out, tn, limitT, -1, "the limit", "-");
    double b_obsT = median_rate(CASE_BATCH_OBS, threads, steps, runs);
    snprintf(tn, sizeof tn, "batch 256 per thread, step + observation, %d "
             "threads", threads);
    row(out, tn, b_obsT, limitT, "obs limit", "-");
    double b_noT = median_rate(CASE_BATCH_NOOBS, threads, steps * 4, runs);
    snprintf(tn, sizeof tn, "batch 256 per thread, step only, %d threads",
             threads);
    row(out, tn, b_noT, b_no1, "1 core", "-");
    if (!o->quiet) {
        fprintf(stderr, "bench craft: expert...\n");
    }
    double ex1 = median_rate(CASE_EXPERT, 1, demos, runs);
    row(out, "expert demonstrations of AC (with observations), 1 core", ex1,
        -1, "-", "-");
    double exT = median_rate(CASE_EXPERT, threads, demos, runs);
    snprintf(tn, sizeof tn, "expert demonstrations of AC, %d threads",
             threads);
    row(out, tn, exT, ex1, "1 core", "-");
    if (o->grove_path != NULL) {
        if (!o->quiet) {
            fprintf(stderr, "bench craft: whole process...\n");
        }
        double w[64];
        uint64_t st = 0;
        int ok = 1;
        for (int i = 0; i < runs && i < 64; i++) {
            w[i] = whole_process(o->grove_path, episodes, &st);
            ok &= w[i] > 0;
        }
        qsort(w, (size_t)(runs < 64 ? runs : 64), sizeof w[0], cmp_double);
        snprintf(tn, sizeof tn,
                 "`grove craft run --agent random --tasks AC --episodes %llu "
                 "--quiet` (%.2f M steps)",
                 (unsigned long long)episodes, (double)st / 1e6);
        row(out, tn, ok ? w[runs / 2] : -1.0, 2500.0,
            "Python original, quoted", ">= 2 M/s");
        if (!ok) {
            return gr_error(GR_EIO, "bench craft: '%s craft run' failed",
                            o->grove_path);
        }
    }
    if (limit1 < 0 || b_obs1 < 0 || b_no1 < 0 || ex1 < 0 || exT < 0) {
        return gr_error(GR_EIO, "bench craft: a case failed to run");
    }
    fprintf(out,
            "\nbaseline \"obs limit\" = the first row (same thread count), "
            "measured in this run; the Python figure (~2,500 steps/s) is "
            "quoted from issue 6, not measured. Timings on a shared machine "
            "are noisy.\n");
    return 0;
}
