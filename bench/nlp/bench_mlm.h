/* bench/nlp/bench_mlm.h — MLM training throughput of UDGN and
 * StructFormer (issue 24 §5): tokens per second of whole training steps
 * (forward with every dropout, mean cross entropy over the masked
 * positions, backward, global clipping at 0.25, Adam with the trainer's
 * settings), grove's model from the MLM trainer's table
 * (nlp/tasks/mlm_task.h) against the PyTorch reference
 * bench/nlp/udgn_ref.py (written from udgn.md §3-§5, §7) on the same
 * batches in the same run.
 *
 * Batches: synthetic (Philox seed 1111): `rows` sentences per batch with
 * lengths uniform in [min_len, max_len], right-padded to the longest,
 * token ids uniform over the vocabulary's words, masked at rate 0.3 as the
 * trainer does (<mask> only); both sides read the same batches (grove
 * writes them to a temporary file for the reference). tokens/s counts real
 * tokens (not padding) of the timed batches over their total time, by the
 * wall clock and by process CPU time; the first `warmup` batches are
 * untimed. The sides alternate `rounds` times (grove, baseline, grove,
 * ...; bench/bench_util.h): cells are medians, the ratio the median of the
 * rounds' ratios, the spread their range.
 *
 * Not thread-safe (one run at a time). Errors: 0 or a negative GR_E* code
 * (core/error.h); a baseline that cannot run is "n/a" with the reason.
 *
 *   struct bench_mlm_options o;
 *   bench_mlm_options_default(&o);
 *   o.model = "udgn";
 *   bench_mlm_run(&o, stdout);
 */
#ifndef GROVE_BENCH_MLM_H
#define GROVE_BENCH_MLM_H

#include <stdio.h>

#include "kernels/tensor.h"

struct bench_mlm_options {
    const char *model;    /* "udgn" or "structformer" */
    int batches;          /* timed batches (default 3) */
    int warmup;           /* untimed batches first (default 1) */
    int rounds;           /* alternations grove, baseline (default 3) */
    int threads;          /* CPU threads for both sides (default 1) */
    enum gr_device device;
    int quick;            /* tiny sizes (CI smoke run) */
    int baseline;         /* 1: run the PyTorch reference too */
    /* the scaled size (default: d 256, 4 layers, 8 heads (UDGN: channels
     * of 64, C·d_c = 2d as published; StructFormer: d_h 32, ffn 4d),
     * parser 2 layers, K 5, vocabulary 2,000, batches of 32 sentences of
     * 10-30 tokens; the published size is d 512, 8 layers, 8 heads of
     * 128, parser 3 layers, batches of < 4,096 tokens) */
    int nemb, nlayers, nheads, head_size, parser_layers, pos_classes;
    int vocab, rows, min_len, max_len;
    const char *python;   /* interpreter (default /usr/bin/python3) */
    const char *script;   /* udgn_ref.py (default: the source tree's) */
    const char *build;
    const char *commit;
};

void bench_mlm_options_default(struct bench_mlm_options *o);

/* Runs the benchmark and prints the header and the table to `out`.
 * GR_EINVAL for an unknown model or a bad size. */
int bench_mlm_run(const struct bench_mlm_options *o, FILE *out);

#endif
