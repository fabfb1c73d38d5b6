/* cli/lm_common.h — what the language-model commands share (cli/cmd_lm.c,
 * and the --checkpoint paths of cli/cmd_nlp.c). Internal to cli/. */
#ifndef GROVE_CLI_LM_COMMON_H
#define GROVE_CLI_LM_COMMON_H

#include "cli/cli.h"
#include "kernels/tensor.h"

/* The compute context a command's --device and --threads ask for.
 * Returns CLI_CONTINUE, or CLI_EXIT_USAGE after printing the error. */
int lm_cli_ctx_config(const struct cli_command *cmd,
                      const struct cli_common *common,
                      struct gr_ctx_config *cc);

/* ---- grove nlp parse --checkpoint ---- */

struct nlp_treebank;

/* Parses with a trained ON-LSTM: loads `ckpt` (--device/--threads in cc),
 * runs every sentence i with want[i] != 0 as [<eos>, words, <eos>] (fresh
 * state, evaluation mode, batched by length) and writes into dist[i]
 * (malloc'd, n_words floats) the forget distances of layer `layer`
 * (1-based) at the steps of the words (on_lstm.md §10.1-§10.2). desc gets
 * a description of the parser and the unknown-word count. Returns 0, or a
 * negative code with gr_last_error() set (dist is then freed). */
int lm_cli_parse_distances(const char *ckpt, const struct gr_ctx_config *cc,
                           int layer, const struct nlp_treebank *tb,
                           const unsigned char *want, int quiet,
                           float ***dist, char *desc, size_t cap);

void lm_cli_free_distances(float **dist, int32_t n);

/* ---- grove nlp syneval --checkpoint ---- */

struct nlp_syneval;
struct nlp_syneval_results;

/* Scores the syneval set with the language model in `ckpt` (its own
 * vocabulary). desc gets "ON-LSTM LM from FILE (...)". */
int lm_cli_syneval(const char *ckpt, const struct gr_ctx_config *cc,
                   const struct nlp_syneval *set, int32_t batch, int quiet,
                   struct nlp_syneval_results *res, int32_t *vocab_size,
                   char *desc, size_t cap);

#endif
