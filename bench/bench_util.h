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

#endif
