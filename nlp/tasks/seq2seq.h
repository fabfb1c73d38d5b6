/* nlp/tasks/seq2seq.h — the sequence-to-sequence task of issue 23 §3 on
 * parallel text (TSV: source TAB target, one pair per line): a joint BPE
 * learned on the training pairs (nlp/data/bpe.h), one subword vocabulary
 * for both sides, the Transformer encoder-decoder (nlp/models/seq2seq.h)
 * trained with the label-smoothed loss, Adam (0.9, 0.98, 1e-9) and the
 * noam schedule, validated by corpus BLEU (nlp/tasks/bleu.h) and
 * sequence accuracy of greedy decoding, in a run folder of train/
 * (command, config, metrics.csv, best.ckpt by validation BLEU, last.ckpt,
 * and bpe.codes and vocab.txt beside them). Translation and evaluation
 * reopen a checkpoint with its folder's codes and vocabulary.
 *
 * The MLU task (task "mlu", nlp/data/mlu.h, docs/nlp/mlu.md): with no
 * train/valid files the pairs are generated from the seed (mlu_train
 * training, mlu_valid validation and mlu_valid test examples, distinct)
 * and written to the run folder as mlu_train.tsv, mlu_valid.tsv and
 * mlu_test.tsv; with files they are read as TSV like task "tsv".
 * nlp_s2s_train_config_mlu gives Tensor2Tensor's transformer_tiny
 * defaults as far as grove has them (docs/nlp/mlu.md lists them).
 *
 * --resume continues last.ckpt (tensors, optimizer state, and the step,
 * best BLEU and loss sums in its config) with the options of the run
 * (max_steps may grow; validation then also runs at the old last step
 * unless it is a multiple of eval_every), bit-identical to a run that was not interrupted: the data order and
 * the dropout masks are functions of the seed and the step. A stop by
 * SIGINT/SIGTERM writes last.ckpt at that step first.
 *
 * average_last N keeps the parameters of the last N validation steps as
 * avg-STEP.ckpt (older ones removed) and, when training ends, writes their
 * mean to averaged.ckpt and prints its validation BLEU and accuracy (T2T's
 * and fairseq's checkpoint averaging; FastTrees averages the last 8 on
 * IWSLT).
 *
 * A pair longer than max_len subwords on either side is truncated to it;
 * the count is reported.
 * Errors: 0 or a negative code with gr_last_error (naming file and line
 * for a bad TSV line). One thread.
 */
#ifndef GROVE_NLP_TASKS_SEQ2SEQ_H
#define GROVE_NLP_TASKS_SEQ2SEQ_H

#include <stdint.h>

#include "kernels/tensor.h"
#include "nlp/data/bpe.h"
#include "nlp/data/vocab.h"
#include "nlp/models/seq2seq.h"

struct nlp_s2s_train_config {
    struct nlp_s2s_config model; /* sizes; vocabularies filled in here */
    const char *model_name;      /* "transformer", "ftt", "ftt-conv" */
    const char *task;            /* "tsv" (default) or "mlu" */
    int64_t mlu_train, mlu_valid; /* generated MLU sizes (valid = test) */
    float adam_beta2;
    int32_t bpe_merges, max_len, batch, max_steps, eval_every, warmup;
    float lr_factor, label_smoothing, clip;
    uint64_t seed;
    const char *train, *valid, *out_dir;
    int force, quiet, resume, argc;
    int32_t average_last;        /* 0 or the validation checkpoints to
                                  * average at the end (at most 64) */
    char **argv;
};

/* transformer, D 128, 2 layers, 4 heads, ffn 512, dropout 0.1, 2,000
 * merges, max length 64, batch 32, 1,000 steps, validation every 200,
 * warm-up 400, factor 2, label smoothing 0.1, clip 1. */
void nlp_s2s_train_config_default(struct nlp_s2s_train_config *c);

/* The MLU task with T2T's transformer_tiny (D 128, 2 layers, 4 heads, ffn
 * 512, dropout 0.1 everywhere grove has it, warm-up 8,000, factor 2,
 * Adam beta2 0.997, label smoothing 0.1) and the paper's 100,000 steps;
 * characters as tokens (0 merges), max length 32, batch 256 pairs
 * (about T2T's 4,096 tokens), validation every 1,000 steps; 1,000,000
 * generated training pairs and 10,000 each for validation and test. */
void nlp_s2s_train_config_mlu(struct nlp_s2s_train_config *c);

/* Sets model.ft_gate / ft_conv for "transformer", "ftt", "ftt-conv";
 * GR_EINVAL naming the known ones otherwise. */
int nlp_s2s_model_by_name(struct nlp_s2s_config *m, const char *name);

int nlp_s2s_train(const struct nlp_s2s_train_config *tc,
                  const struct gr_ctx_config *cc);

/* A trained model reopened from a checkpoint and its folder. */
struct nlp_s2s_runtime {
    struct gr_ctx *ctx;
    struct nlp_s2s model;
    struct nlp_bpe bpe;
    struct nlp_vocab vocab;
    int32_t max_len;
};

int nlp_s2s_open(struct nlp_s2s_runtime *rt, const char *checkpoint,
                 const struct gr_ctx_config *cc);
void nlp_s2s_close(struct nlp_s2s_runtime *rt);

/* Translates n raw source lines (beam 1: greedy) into out[i] (malloc'd
 * text, caller frees); *truncated counts sources cut to max_len. */
int nlp_s2s_translate(struct nlp_s2s_runtime *rt, const char *const *src,
                      int64_t n, int32_t beam, float alpha, char **out,
                      int64_t *truncated);

/* BLEU and sequence accuracy (exact match after decoding the subwords) of
 * the model on a TSV file; *truncated counts the sides cut to max_len
 * (the reference is then the cut one for accuracy; BLEU keeps the raw
 * line). */
int nlp_s2s_evaluate(struct nlp_s2s_runtime *rt, const char *tsv,
                     int32_t beam, float alpha, double *bleu,
                     double *accuracy, int64_t *n_pairs,
                     int64_t *truncated);

#endif
