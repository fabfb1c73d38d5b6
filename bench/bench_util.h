/* bench/bench_util.h — what every benchmark prints the same way: the BLAS
 * grove itself runs on (from /proc/self/maps), and the sides measured in
 * alternation (grove, baseline, grove, baseline, ...) summed up with their
 * spread, so that a load that comes and goes on a shared machine shows in
 * the numbers instead of tilting a ratio unseen. Header-only (static
 * functions); each bench/<area> library includes it.
 *
 * The baseline's BLAS comes from the baseline itself: its script prints a
 * "baseline_blas ..." line (bench/baseline_info.py) that the benchmark
 * copies into its header.
 *
 *   double g[R], b[R];              // round r: grove, then the baseline
 *   struct bench_pair p = bench_pair_summary(g, b, R);  // rates (higher
 *   char cell[96]; bench_spread_cell(&p, cell, sizeof cell);  // better)
 *
 * The harness the benchmarks against a PyTorch script share (the end of
 * this header; bench/bench_util.c, library grove_bench_util): the CPU's
 * name, the clocks of the timed steps (wall and process CPU time) and the
 * peak RSS, running the script with its threads pinned and reading its
 * result and "baseline_blas" lines, and the rounds alternating the sides.
 *
 *   struct bench_clock c = {0};
 *   for (k ...) { bench_clock_start(&c); step(); bench_clock_stop(&c, k >= warmup); }
 *   bench_alternate(rounds, run_grove_side, run_baseline_side, arg, 0, g, b);
 */
#ifndef GROVE_BENCH_UTIL_H
#define GROVE_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The BLAS-like libraries mapped into this process (the paths the kernel
 * names in /proc/self/maps, symbolic links resolved, comma-separated) into
 * out[cap]: grove's CBLAS as the loader found it. "none mapped" when there
 * is none. */
static inline void bench_process_blas(char *out, size_t cap)
{
    static const char *const names[] = {"openblas", "libblas", "libcblas",
                                        "mkl", "blis", "flexiblas"};
    snprintf(out, cap, "none mapped");
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL) {
        snprintf(out, cap, "unknown (no /proc/self/maps)");
        return;
    }
    char line[1024];
    size_t n = 0;
    char seen[4][512];
    int n_seen = 0;
    while (fgets(line, sizeof line, f) != NULL && n_seen < 4) {
        char *path = strchr(line, '/');
        if (path == NULL) {
            continue;
        }
        path[strcspn(path, "\n")] = '\0';
        const char *base = strrchr(path, '/') + 1;
        int hit = 0;
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
            hit |= strstr(base, names[k]) != NULL;
        }
        if (!hit) {
            continue;
        }
        int dup = 0;
        for (int k = 0; k < n_seen; k++) {
            dup |= strcmp(seen[k], path) == 0;
        }
        if (dup) {
            continue;
        }
        snprintf(seen[n_seen++], sizeof seen[0], "%s", path);
        int w = snprintf(out + n, cap - n, "%s%s", n ? ", " : "", path);
        if (w < 0 || (size_t)w >= cap - n) {
            break;
        }
        n += (size_t)w;
    }
    fclose(f);
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (v is left sorted). */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define BENCH_MAX_ROUNDS 64

/* Rounds of two sides measured in alternation; g[r], b[r] are rates
 * (higher is faster) of round r, b <= 0 where the baseline did not run. */
struct bench_pair {
    int rounds;
    double grove, baseline; /* medians over the rounds (baseline <= 0: n/a) */
    double ratio;           /* median of the rounds' grove / baseline */
    double ratio_lo, ratio_hi; /* the smallest and largest of those */
    double grove_spread, baseline_spread; /* (max - min) / median */
};

static inline struct bench_pair bench_pair_summary(const double *g,
                                                   const double *b, int n)
{
    struct bench_pair p;
    memset(&p, 0, sizeof p);
    if (n > BENCH_MAX_ROUNDS) {
        n = BENCH_MAX_ROUNDS;
    }
    p.rounds = n;
    double gs[BENCH_MAX_ROUNDS], bs[BENCH_MAX_ROUNDS], rs[BENCH_MAX_ROUNDS];
    int have_b = n > 0;
    for (int r = 0; r < n; r++) {
        gs[r] = g[r];
        bs[r] = b[r];
        have_b &= b[r] > 0;
        rs[r] = b[r] > 0 ? g[r] / b[r] : 0.0;
    }
    if (n == 0) {
        return p;
    }
    p.grove = bench_median(gs, n);
    p.grove_spread = p.grove > 0 ? (gs[n - 1] - gs[0]) / p.grove : 0.0;
    p.baseline = -1.0;
    if (have_b) {
        p.baseline = bench_median(bs, n);
        p.baseline_spread = (bs[n - 1] - bs[0]) / p.baseline;
        p.ratio = bench_median(rs, n);
        p.ratio_lo = rs[0];
        p.ratio_hi = rs[n - 1];
    }
    return p;
}

/* The spread cell of a table row: "1.52-1.61x over 3 rounds (grove ±2%,
 * baseline ±3%)", or grove's alone without a baseline. */
static inline void bench_spread_cell(const struct bench_pair *p, char *out,
                                     size_t cap)
{
    if (p->baseline > 0) {
        snprintf(out, cap, "%.2f-%.2fx over %d round%s (grove ±%.0f%%, "
                 "baseline ±%.0f%%)", p->ratio_lo, p->ratio_hi, p->rounds,
                 p->rounds == 1 ? "" : "s", 50 * p->grove_spread,
                 50 * p->baseline_spread);
    } else {
        snprintf(out, cap, "grove ±%.0f%% over %d round%s",
                 50 * p->grove_spread, p->rounds, p->rounds == 1 ? "" : "s");
    }
}

/* The line the baseline scripts print (bench/baseline_info.py) without
 * its key, or "" when `line` is not it. */
static inline const char *bench_baseline_blas_line(const char *line)
{
    static const char key[] = "baseline_blas ";
    return strncmp(line, key, sizeof key - 1) == 0 ? line + sizeof key - 1
                                                   : "";
}

/* ---- the shared harness (bench/bench_util.c, grove_bench_util) -------- */

/* The CPU's "model name" from /proc/cpuinfo, or "unknown CPU". */
void bench_cpu_name(char *out, size_t cap);

/* Monotonic wall seconds; this process's CPU seconds (user + system, all
 * threads). */
double bench_wall_seconds(void);
double bench_cpu_seconds(void);

/* This process's peak resident set so far, MiB. */
double bench_peak_rss_mib(void);

/* The timed part of a run: wall seconds (monotonic) and process CPU
 * seconds summed over the steps stopped with count != 0 (the warm-up
 * steps are stopped with count 0). Start from {0}. */
struct bench_clock {
    double wall, cpu;   /* the sums */
    double wall0, cpu0; /* the running step's start */
};
void bench_clock_start(struct bench_clock *c);
void bench_clock_stop(struct bench_clock *c, int count);

/* "OMP_NUM_THREADS=N OPENBLAS_NUM_THREADS=N " when threads > 0, else "":
 * the prefix of a baseline's command line that pins its threads
 * (torch.set_num_threads does not reach the BLAS). */
void bench_thread_env(int threads, char *out, size_t cap);

/* "$TMPDIR/grove_bench_<tag>_<pid>.txt" (TMPDIR unset or empty: /tmp):
 * where a benchmark writes the batches its baseline reads. */
void bench_temp_file(const char *tag, char *out, size_t cap);

/* 1 when `line` is the baseline's result line (parsed into arg), else 0. */
typedef int (*bench_line_fn)(const char *line, void *arg);

/* Runs `cmd` (a shell command; give it "2>&1") and reads its output:
 * the first line `parse` accepts is the result; a "baseline_blas ..." line
 * is copied (without its key) into blas[blas_cap]; the last other
 * non-empty line is kept for the error. Returns 0 when the result came
 * and the command exited 0; otherwise -1 with why = "cannot run <python>"
 * (no process) or "<who> failed (<that line, or no output>)". */
int bench_run_baseline(const char *cmd, const char *python, const char *who,
                       bench_line_fn parse, void *arg, char *blas,
                       size_t blas_cap, char *why, size_t why_cap);

/* One round of one side: its rates (higher is faster) into rate[0] (wall)
 * and rate[1] (process CPU time; set it to rate[0] where there is one
 * clock); 0, or negative when it failed. */
typedef int (*bench_side_fn)(void *arg, double rate[2]);

/* Rounds of grove then the baseline, alternating: g[k][r], b[k][r] for
 * the clock k and round r < rounds (at most BENCH_MAX_ROUNDS); b is -1 in
 * a round whose baseline failed or was not run (baseline NULL; with
 * give_up, every round after the first failure). A failing grove side
 * stops the rounds and its code is returned; 0 otherwise. */
int bench_alternate(int rounds, bench_side_fn grove, bench_side_fn baseline,
                    void *arg, int give_up, double g[2][BENCH_MAX_ROUNDS],
                    double b[2][BENCH_MAX_ROUNDS]);

#endif
