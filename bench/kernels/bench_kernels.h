/* bench/kernels/bench_kernels.h — the kernel-layer benchmark behind
 * `grove bench kernels`.
 *
 * Prints a Markdown table `case | grove | baseline | ratio | spread` to
 * `out`:
 * SGEMM GFLOP/s at a few sizes; one LSTM and one ON-LSTM training step
 * (forward + backward + Adam) at the PTB size (B 20, T 70, 400 -> 1150,
 * chunk 10) and at the agents' sizes (128 -> 128, T 64, B 1, 16, 256; chunk
 * 8 for the ON-LSTM, since 128 is not a multiple of 10); the peak device
 * memory of each training case. The baseline is PyTorch, measured in the
 * same run by bench/kernels/bench_torch.py under `python` (Debian's
 * python3-torch at /usr/bin/python3); without it the table says why and
 * shows grove alone. Each timing: warm-up calls, then the median of k
 * calls, monotonic clock (core/progress.h gr_now_seconds; CUDA
 * synchronised). The sides alternate `rounds` times (every case on grove,
 * then every case on PyTorch, again...): each cell is the median over the
 * rounds, the ratio the median of the rounds' ratios, and a spread column
 * gives their range (bench/bench_util.h). The header names grove's BLAS
 * and the BLAS and threads PyTorch ran on (bench/baseline_info.py).
 * Progress goes to stderr unless quiet.
 *
 * Errors: returns 0, or a negative GR_E* code with a message (a context
 * that cannot be created, an op failing). Single-threaded caller.
 *
 *   struct bench_kernels_opts o = bench_kernels_defaults();
 *   o.quick = 1;
 *   if (bench_kernels_run(&o, stdout) < 0) puts(gr_last_error());
 */
#ifndef GROVE_BENCH_KERNELS_H
#define GROVE_BENCH_KERNELS_H

#include <stdio.h>

#include "kernels/tensor.h"

struct bench_kernels_opts {
    int quick;             /* fewer sizes and repetitions: under a minute */
    enum gr_device device; /* cpu, cuda or auto */
    int threads;           /* CPU threads for both sides; 0 = all cores */
    const char *python;    /* interpreter for the baseline */
    const char *script;    /* bench_torch.py (default: the source tree's) */
    int no_torch;          /* skip the baseline */
    int rounds;            /* alternations of the two sides (3) */
    int quiet;             /* no progress lines */
    const char *build;     /* "Release, commit abc123" for the header */
};

struct bench_kernels_opts bench_kernels_defaults(void);

int bench_kernels_run(const struct bench_kernels_opts *o, FILE *out);

#endif
