/* bench/trees/bench_trees.h — training speed of the binary Tree-LSTM
 * (issue 25 §4): sentences per second of whole training steps (forward
 * over the trees, Linear(H, 5) at every node, mean cross entropy over the
 * batch's nodes, backward, Adam lr 1e-3; no dropout, no clipping) of
 * grove's level-batched nlp/models/treenets.h against two PyTorch versions
 * of the same model on the same trees in the same run
 * (bench/trees/bench_treelstm.py): the per-node recursion users usually
 * write, and a level-batched PyTorch (one matmul per tree level of the
 * batch, children gathered by index).
 *
 * Trees: the first `sentences` lines of SST's train.txt (E 300, H 150,
 * batch 25: hybrid_and_trees.md §3.3's sizes), in file order, the
 * vocabulary of those lines only on both sides; without the data (or with
 * `quick`) seeded random binary trees of 3-12 words over 50 words
 * (stated in the header). The first `warmup` batches of each pass are
 * untimed; a round is one pass over the sentences per side; the sides
 * alternate (grove, per-node, levels, grove, ...) `rounds` times: cells
 * are medians, the ratio the median of the rounds' ratios and the spread
 * their range (bench/bench_util.h). Rows by wall clock and by process CPU
 * time.
 *
 * The baseline runs as child processes (python with torch); a missing one
 * reads "n/a" with the reason. Not thread-safe (one run at a time).
 * Errors: 0 or a negative GR_E* code with gr_last_error().
 *
 *   struct bench_trees_options o;
 *   bench_trees_options_default(&o);
 *   bench_trees_run(&o, stdout);
 */
#ifndef GROVE_BENCH_TREES_H
#define GROVE_BENCH_TREES_H

#include <stdio.h>

struct bench_trees_options {
    int sentences;      /* trees per pass (default 100) */
    int batch;          /* sentences per batch (25) */
    int emsize, nhid;   /* E 300, H 150 */
    int warmup;         /* untimed batches per pass (1) */
    int rounds;         /* alternations (3) */
    int threads;        /* CPU threads, both sides (1) */
    int quick;          /* tiny sizes on random trees (CI smoke run) */
    int baseline;       /* 1: run the PyTorch variants */
    const char *data;   /* SST folder (train.txt), NULL: beside the source */
    const char *python; /* "/usr/bin/python3" */
    const char *script; /* bench_treelstm.py, NULL: the source tree's */
    const char *build;
    const char *commit;
};

void bench_trees_options_default(struct bench_trees_options *o);

/* Runs the benchmark and prints its header and table to `out`. */
int bench_trees_run(const struct bench_trees_options *o, FILE *out);

#endif
