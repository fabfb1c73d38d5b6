/* The benchmarks' shared harness (the end of bench/bench_util.h): the
 * CPU's name, clocks, peak RSS, running a baseline script and reading its
 * lines, alternating rounds. One copy for the benchmarks against PyTorch
 * (bench/nlp's ON-LSTM, Ordered Memory, Transformer and MLM benches). */
#define _POSIX_C_SOURCE 200809L
#include "bench/bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

void bench_cpu_name(char *out, size_t cap)
{
    snprintf(out, cap, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) {
        return;
    }
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c != NULL) {
                c += 2;
                c[strcspn(c, "\n")] = '\0';
                snprintf(out, cap, "%s", c);
            }
            break;
        }
    }
    fclose(f);
}

double bench_cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double bench_peak_rss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

double bench_wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void bench_clock_start(struct bench_clock *c)
{
    c->wall0 = bench_wall_seconds();
    c->cpu0 = bench_cpu_seconds();
}

void bench_clock_stop(struct bench_clock *c, int count)
{
    double w = bench_wall_seconds(), u = bench_cpu_seconds();
    if (count) {
        c->wall += w - c->wall0;
        c->cpu += u - c->cpu0;
    }
}

void bench_thread_env(int threads, char *out, size_t cap)
{
    if (threads > 0) {
        snprintf(out, cap, "OMP_NUM_THREADS=%d OPENBLAS_NUM_THREADS=%d ",
                 threads, threads);
    } else if (cap > 0) {
        out[0] = '\0';
    }
}

void bench_temp_file(const char *tag, char *out, size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(out, cap, "%s/grove_bench_%s_%ld.txt",
             tmp && tmp[0] ? tmp : "/tmp", tag, (long)getpid());
}

int bench_run_baseline(const char *cmd, const char *python, const char *who,
                       bench_line_fn parse, void *arg, char *blas,
                       size_t blas_cap, char *why, size_t why_cap)
{
    FILE *p = popen(cmd, "r");
    if (p == NULL) {
        snprintf(why, why_cap, "cannot run %.300s", python);
        return -1;
    }
    char line[2048], last[1024] = "";
    int found = 0;
    while (fgets(line, sizeof line, p) != NULL) {
        if (parse(line, arg)) {
            found = 1;
        } else if (bench_baseline_blas_line(line)[0]) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(blas, blas_cap, "%.1000s",
                     bench_baseline_blas_line(line));
        } else {
            line[strcspn(line, "\n")] = '\0';
            if (line[0]) {
                snprintf(last, sizeof last, "%.1000s", line);
            }
        }
    }
    int status = pclose(p);
    if (!found || status != 0) {
        snprintf(why, why_cap, "%s failed (%.300s)", who,
                 last[0] ? last : "no output");
        return -1;
    }
    return 0;
}

int bench_alternate(int rounds, bench_side_fn grove, bench_side_fn baseline,
                    void *arg, int give_up, double g[2][BENCH_MAX_ROUNDS],
                    double b[2][BENCH_MAX_ROUNDS])
{
    if (rounds > BENCH_MAX_ROUNDS) {
        rounds = BENCH_MAX_ROUNDS;
    }
    int try_b = baseline != NULL;
    for (int r = 0; r < rounds; r++) {
        double rate[2] = {0.0, 0.0};
        int rc = grove(arg, rate);
        if (rc < 0) {
            return rc;
        }
        g[0][r] = rate[0];
        g[1][r] = rate[1];
        b[0][r] = b[1][r] = -1.0;
        if (try_b) {
            rate[0] = rate[1] = 0.0;
            if (baseline(arg, rate) == 0) {
                b[0][r] = rate[0];
                b[1][r] = rate[1];
            } else if (give_up) {
                try_b = 0;
            }
        }
    }
    return 0;
}
