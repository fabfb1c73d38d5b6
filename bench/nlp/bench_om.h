/* bench/nlp/bench_om.h — Ordered Memory training throughput (issue 27
 * §5): tokens per second of whole training steps of the logic classifier
 * (encode 2P sequences, pair head, cross entropy, backward, clipping at 1,
 * Adam) at the logic size (D = D_in = 200, 128 pairs, 12 slots, the
 * reference's dropouts), grove against the PyTorch reference
 * bench/nlp/om_ref.py on the same batches in the same run.
 *
 * Batches: random pairs of the released logic training files train0-6
 * (Philox seed 1111) when the data folder is there, else synthetic
 * sequences (lengths 3-35, stated in the header); both sides read the same
 * batches (grove writes them to a temporary file for the reference).
 * tokens/s counts real tokens (not padding) of the timed batches over
 * their total time, by the wall clock and by process CPU time; the first
 * `warmup` batches are untimed. The sides alternate `rounds` times
 * (grove, baseline, grove, ...): cells are medians, the ratio the median
 * of the rounds' ratios, the spread their range. Peak memory:
 * grove's arenas (parameters, optimizer state, the largest step) and the
 * process's peak RSS; the reference's peak RSS.
 *
 * Not thread-safe (one run at a time). Errors: 0 or a negative GR_E* code
 * (core/error.h); a baseline that cannot run is "n/a" with the reason.
 *
 *   struct bench_om_options o;
 *   bench_om_options_default(&o);
 *   bench_om_run(&o, stdout);
 */
#ifndef GROVE_BENCH_OM_H
#define GROVE_BENCH_OM_H

#include <stdio.h>

#include "kernels/tensor.h"

struct bench_om_options {
    int batches;          /* timed batches (default 3) */
    int warmup;           /* untimed batches first (default 1) */
    int threads;          /* CPU threads for both sides (default 1) */
    enum gr_device device;
    int quick;            /* tiny sizes (CI smoke run), synthetic data */
    int baseline;         /* 1: run the PyTorch reference too */
    int pairs;            /* pairs per batch (default 128; quick 4) */
    int nslot;            /* slots (default 12) */
    int nhid;             /* D = D_in (default 200; quick 16) */
    int rounds;           /* alternations grove, baseline (default 3;
                             medians and spread, bench/bench_util.h) */
    const char *data;     /* logic_inference folder or NULL (synthetic) */
    const char *python;   /* interpreter (default /usr/bin/python3) */
    const char *script;   /* om_ref.py (default: the source tree's) */
    const char *build;
    const char *commit;
};

void bench_om_options_default(struct bench_om_options *o);

/* Runs the benchmark and prints the header and the table to `out`. */
int bench_om_run(const struct bench_om_options *o, FILE *out);

#endif
