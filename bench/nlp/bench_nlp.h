/* bench/nlp/bench_nlp.h — training throughput of the ON-LSTM language model
 * (tokens per second: forward, backward, clipping and the SGD step of one
 * BPTT window) against the PyTorch reference (bench/nlp/onlstm_ref.py, the
 * reference's structure: one input-side product per layer per window, a
 * Python loop over steps) measured in the same run.
 *
 * Cases (issue 9 "Benchmark"): the published size (3 layers, 400/1150/400,
 * chunk 10, batch 20, BPTT 70, V 10,000); batch 1; a small configuration
 * (hidden 256). Each side runs `warmup` windows, then `windows` timed ones;
 * the median window time gives tokens/s = B·T / median. The two sides
 * alternate, `rounds` times per case (grove, baseline, grove, baseline,
 * ...; each baseline round a fresh child process): the table gives the
 * medians over the rounds, the median of the rounds' ratios and its range
 * (bench/bench_util.h). Output: a header (CPU, threads, device, grove's
 * BLAS, build, commit), a Markdown table
 * `case | grove | baseline | ratio | spread` (tokens/s; ratio = grove /
 * baseline), and the BLAS and threads the baseline ran on, as it reports
 * them (bench/baseline_info.py).
 *
 * Memory: each case builds its own context and frees it. Not thread-safe
 * (one run at a time). Errors: 0 or a negative GR_E* code (core/error.h);
 * a baseline that cannot run (no python3, no torch) is reported in the
 * table as "n/a" with the reason below it, not as a failure.
 *
 *   struct bench_nlp_options o;
 *   bench_nlp_options_default(&o);
 *   o.build = "Release, gcc 12";
 *   bench_nlp_run(&o, stdout);
 */
#ifndef GROVE_BENCH_NLP_H
#define GROVE_BENCH_NLP_H

#include <stdio.h>

#include "kernels/tensor.h"

struct bench_nlp_options {
    int windows;          /* timed windows per side (default 3) */
    int warmup;           /* untimed windows first (default 1) */
    int rounds;           /* alternations of the two sides (default 3) */
    int threads;          /* CPU threads for both sides, 0 = all cores */
    enum gr_device device; /* grove's device (the baseline uses the same) */
    const char *cases;    /* comma-separated names, NULL = all */
    const char *models;   /* comma-separated LM kinds (nlp_lm_kind_parse),
                             NULL = "onlstm"; each gets a row per case and,
                             beside onlstm, its epoch-time ratio to grove's
                             ON-LSTM in the same run (fasttrees.md §9) */
    int same_cell;        /* 1: the baseline of each row is the PyTorch
                             version of its own cell (onlstm, ft, fft;
                             n/a for the others), else the ON-LSTM */
    int quick;            /* tiny sizes (CI smoke run), not the issue's */
    int baseline;         /* 1: run the PyTorch reference too */
    const char *python;   /* interpreter (default /usr/bin/python3) */
    const char *script;   /* onlstm_ref.py (default: the source tree's) */
    const char *build;    /* build description for the header */
    const char *commit;   /* commit description for the header */
};

void bench_nlp_options_default(struct bench_nlp_options *o);

/* The case names, comma-separated ("published,batch1,small"). */
const char *bench_nlp_case_names(void);

/* GR_EINVAL naming the bad entry unless o->models is a list of LM kinds. */
int bench_nlp_models_check(const struct bench_nlp_options *o);

/* Runs the benchmark and prints the header and table to `out`. GR_EINVAL
 * for an unknown case name. */
int bench_nlp_run(const struct bench_nlp_options *o, FILE *out);

/* `grove bench nlp --model transformer` (bench/nlp/bench_transformer.c):
 * training steps of a Transformer encoder classifier against the same
 * model of torch.nn.TransformerEncoderLayer (bench/nlp/transformer_ref.py);
 * cases classifier and tiny (o->cases; NULL or "" = both). A second
 * table gives each case's matrix-product floor (the step's GEMMs alone,
 * timed in the same rounds) and grove's step time over it. Uses windows,
 * warmup, rounds, threads, device, quick, baseline, python, build and
 * commit of o. */
int bench_nlp_transformer_run(const struct bench_nlp_options *o, FILE *out);

#endif
