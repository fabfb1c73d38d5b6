/* bench/ocn/bench_ocn.h — behaviour-cloning speed of the Option-Controller
 * Network (issue 8): grove's updates per second against the same model
 * written in PyTorch the way its users would (bench/ocn/ocn_torch.py: dense
 * observations, nn.Linear cells, a Python loop over time on padded, masked
 * batches, autograd), both run here, on the same batches.
 *
 * Workload (S1 shapes, ocn.md §6): expert demonstrations of AC and CD,
 * batches of `batch` demonstrations (512), K = 3, d = w = 128, τ_C = 10,
 * Adam lr 1e-3, gradient clipping at 0.2. One update = forward over the
 * batch, backward, clipping, Adam step. Each figure is the median of
 * `runs` timed runs of `updates` updates after a warm-up update on every
 * batch, on the monotonic clock; the timed runs of the two sides
 * alternate (grove, PyTorch, grove, ...: each PyTorch run a child process
 * with its own warm-up), and the table's spread column gives the range of
 * the runs' ratios (bench/bench_util.h). A second table splits grove's update
 * into forward, backward and clip + Adam (device synchronised between
 * phases).
 *
 * The baseline runs as a child process (python with torch); when that is
 * missing its cells read "n/a" and the reason is printed. Prints a header
 * (CPU, threads, device, build, grove's BLAS, and the BLAS and threads
 * PyTorch ran on as bench/baseline_info.py reports them) and the Markdown
 * table `case | grove | baseline | ratio | spread`.
 *
 * Memory: everything is allocated per call and freed. Errors: 0 or a
 * negative GR_E* code with gr_last_error().
 *
 *   struct bench_ocn_options o; bench_ocn_options_default(&o);
 *   bench_ocn_run(&o, stdout);
 */
#ifndef GROVE_BENCH_OCN_H
#define GROVE_BENCH_OCN_H

#include <stdio.h>

struct bench_ocn_options {
    int quick;            /* tiny sizes (a smoke run for CI) */
    int batch;            /* demonstrations per update (512) */
    int updates;          /* timed updates per run (5) */
    int runs;             /* timed runs, median reported (3) */
    int threads;          /* CPU threads for grove (BLAS) and torch (2) */
    int cuda;             /* 1: time on CUDA (grove and torch) */
    const char *python;   /* interpreter ("/usr/bin/python3"), NULL: skip */
    const char *script;   /* ocn_torch.py (default: the source tree's) */
    const char *build;    /* build description for the header, or NULL */
    int quiet;            /* no progress lines on stderr */
};

void bench_ocn_options_default(struct bench_ocn_options *o);

int bench_ocn_run(const struct bench_ocn_options *o, FILE *out);

#endif
