/* bench/craft/bench_craft.h — speed of the Craft environment (issue 6).
 *
 * Measures, in one run: the observation-writing limit (clearing a 1075-float
 * observation and setting ~50 non-zeros, into a batch-256 buffer), steps per
 * second of the single-world and batch APIs with and without observations on
 * one core and on several threads, expert demonstrations per second, and
 * the whole-process figure of `grove craft run --agent random --tasks AC
 * --episodes 50000 --quiet` (when the grove binary is known). Prints a
 * header (CPU, threads, build, commit) and the Markdown table
 * `case | grove | baseline | ratio | target`; each figure is the median of
 * `runs` timed runs after a warm-up, on the monotonic clock, with actions
 * pre-sampled so that no random number is drawn inside the timed loops.
 *
 * Memory: allocates its buffers per call and frees them. Not reentrant
 * with itself only in that it spawns threads and a child process. Errors:
 * returns 0, or a negative GR_E* code with gr_last_error() set.
 *
 *   struct bench_craft_options o = {0};
 *   o.runs = 5; o.threads = 2; o.grove_path = "/proc/self/exe";
 *   bench_craft_run(&o, stdout);
 */
#ifndef GROVE_BENCH_CRAFT_H
#define GROVE_BENCH_CRAFT_H

#include <stdio.h>

struct bench_craft_options {
    int quick;              /* 1: tiny workloads (CI smoke run) */
    int runs;               /* timed runs per case, median reported (>= 1) */
    int threads;            /* threads for the multi-core rows (>= 2) */
    const char *grove_path; /* grove binary for the whole-process row, or
                               NULL to skip it */
    const char *build;      /* build description for the header, or NULL */
    int quiet;              /* 1: no progress lines on stderr */
};

int bench_craft_run(const struct bench_craft_options *o, FILE *out);

#endif
