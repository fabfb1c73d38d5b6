/* nlp/tasks/mlm_task.h — masked language modelling with latent dependency
 * structure (issue 24 §2-§3, udgn.md §6): the MLM trainer on train/, the
 * masked-token perplexity over several maskings, and dependency parsing
 * with a trained model's head distributions.
 *
 * Models come from one small table (nlp_mlm_models): a row is a name and
 * four functions over an opaque model state, so a new model is one line
 * and its functions:
 *
 *   int  init(void **state, struct gr_ctx *ctx,
 *             const struct nlp_mlm_options *o, int32_t vocab, uint64_t seed);
 *        creates the parameters in ctx (names are the model's), *state
 *        malloc'd; GR_EINVAL naming a bad size;
 *   int  loss(void *state, struct gr_ctx *ctx, const struct nlp_mlm_input *in,
 *             int training, struct gr_rng rng, struct gr_tensor **loss,
 *             int32_t *n_masked);
 *        the mean cross entropy over the masked positions of one batch, on
 *        the tape (*loss NULL when nothing is masked); dropout only when
 *        training, keyed by rng;
 *   int  heads(void *state, struct gr_ctx *ctx, const int32_t *ids,
 *              int32_t n, float *H);
 *        H [n·n] of one unmasked sentence, H[i·n + j] = P(j heads i), the
 *        diagonal 0 (dependency_parsing.md §1); NULL in the row for a model
 *        without a parser (the transformer: no UAS, depparse refused);
 *   void free(void *state).
 * Rows: udgn (nlp/models/udgn.h); transformer (nlp/models/transformer.h,
 * pre-norm with its final LayerNorm, FFN 4·nemb with udgn.md §7's
 * LeakyReLU (0.01; checkpoints without an "ffn_act" config line were
 * trained with ReLU and reopen with it; such a run is not resumed),
 * sinusoidal positions, the tied MLM head; no parser); structformer (nlp/models/structformer.h under prefix
 * "sf", ffn 4·nemb; heads = Par with a zero diagonal). A new model is one
 * more `{"name", "what", init, loss, heads, free}` line in mlm_task.c.
 *
 * Data (--data DIR): a folder with ptb.train.txt (Mikolov's PTB text, one
 * sentence a line; vocabulary min count 1 by default) or a treebank (NLTK's
 * treebank.zip, a WSJ folder, a .mrg file: udgn.md §6 preprocessing,
 * min count 5); nlp/data/mlm.h does both. Gold trees for the UAS (--trees):
 * a CoNLL-X/U file or a treebank converted with grove's Collins rules, §3
 * filtered, words lower-cased with digit runs -> N and mapped through the
 * vocabulary. UAS on converted trees is NOT comparable with the thesis's.
 *
 * Training (udgn.md §6): Adam (0.9, 0.999, eps 1e-9, L2 1.2e-6), lr 1e-3,
 * global clip 0.25, ReduceLROnPlateau on validation loss (0.5, patience 2,
 * threshold 0), batches of < batch_tokens tokens longest first, shuffled
 * per epoch, masking rate 0.3 re-drawn every epoch. Validation: perplexity
 * = exp(mean over eval_runs maskings of the token-weighted mean masked
 * cross entropy), maskings fixed by the seed (the same every epoch);
 * per-epoch UAS/UUAS are argmax decoding (cheap; `grove nlp depparse`
 * gives Chu-Liu). The run folder (train/): command, config, vocab.txt,
 * metrics.csv (epoch, train_loss, valid_ppl, uas, uuas, lr, wall_s),
 * best.ckpt (lowest validation loss), last.ckpt (weights, Adam state, the
 * schedule state as "state.*" lines of its config); --resume continues
 * bit-identically (an epoch interrupted by a signal is redone).
 *
 * Errors: 0 or a negative code with gr_last_error(); a --resume whose
 * options differ is GR_EINVAL with *usage set. One thread.
 */
#ifndef GROVE_NLP_TASKS_MLM_TASK_H
#define GROVE_NLP_TASKS_MLM_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/rng.h"
#include "kernels/tensor.h"
#include "nlp/data/deptree.h"
#include "nlp/data/mlm.h"
#include "nlp/data/vocab.h"
#include "nlp/tasks/depeval.h"

/* Every model's sizes (a model reads the ones it has). */
struct nlp_mlm_options {
    char model[32];       /* table row */
    int nemb, nlayers, nheads, head_size;
    int parser_layers, pos_classes;
    float dropout, dropatt, parser_dropout;
    /* UDGN ablations (Table 4.4) */
    int no_nonlinear, no_gates, sigmoid, single_channel, abs_pos;
    /* transformer row: 1 = ReLU in the FFN instead of udgn.md §7's
     * LeakyReLU (0.01). Not an option of the trainer: set only when a
     * checkpoint says so ("ffn_act relu", or no ffn_act line: written
     * before LeakyReLU became the row's activation). */
    int ffn_relu;
    /* transformer row: 1 = learned absolute positions (a table of
     * NLP_MLM_POS_TABLE rows, U(-0.1, 0.1), as the reference
     * run_transformer.sh's --pos_emb), 0 = sinusoidal (grove's row before
     * 2026-11-27; a checkpoint without a "positions" line) */
    int learned_pos;
};

/* Rows of the transformer row's learned position table (the reference's
 * 500): a longer sentence is an error naming it. */
#define NLP_MLM_POS_TABLE 500

/* UDGN's defaults (udgn.md §2): 512, 8 layers, 8 channels of 128, parser
 * 3 layers, K 5, dropouts 0.2 / 0.1 / 0.2; model "udgn". */
void nlp_mlm_options_default(struct nlp_mlm_options *o);

/* One batch: ids [B, n] (masked, right-padded with <pad>), lens [B],
 * targets [B, n] (original id where masked, -1 elsewhere). Host memory. */
struct nlp_mlm_input {
    const int32_t *ids, *lens, *targets;
    int32_t B, n;
};

struct nlp_mlm_model_entry {
    const char *name;
    const char *what;
    int (*init)(void **state, struct gr_ctx *ctx,
                const struct nlp_mlm_options *o, int32_t vocab,
                uint64_t seed);
    int (*loss)(void *state, struct gr_ctx *ctx,
                const struct nlp_mlm_input *in, int training,
                struct gr_rng rng, struct gr_tensor **loss,
                int32_t *n_masked);
    int (*heads)(void *state, struct gr_ctx *ctx, const int32_t *ids,
                 int32_t n, float *H);
    void (*free)(void *state);
};

extern const struct nlp_mlm_model_entry nlp_mlm_models[]; /* NULL name ends */
const struct nlp_mlm_model_entry *nlp_mlm_model_find(const char *name);
/* "udgn|transformer|..." for messages and --help. */
const char *nlp_mlm_model_names(void);

/* What the trainer reports after each epoch (the cli draws curves.png). */
struct nlp_mlm_epoch_log {
    int64_t epoch;
    double train_loss, valid_ppl, uas, uuas, lr, wall_s;
    const char *dir;
};
typedef int (*nlp_mlm_epoch_fn)(void *user, const struct nlp_mlm_epoch_log *e);

struct nlp_mlm_train_config {
    struct nlp_mlm_options opt;
    const char *data;       /* --data DIR */
    const char *trees;      /* --trees FILE or NULL (none) */
    int32_t trees_limit;    /* first N gold sentences for the UAS, 0 all */
    int32_t epochs, max_batches, batch_tokens, eval_runs, min_count;
    float lr, mask_rate, clip, weight_decay;
    uint64_t seed;
    const char *out_dir;
    int force, resume, quiet, argc;
    char **argv;
    nlp_mlm_epoch_fn on_epoch;
    void *user;
};

/* 100 epochs, batches of 4,096 tokens, 5 evaluation maskings, min count 0
 * (= 1 for PTB text, 5 for a treebank), lr 1e-3, rate 0.3, clip 0.25, wd
 * 1.2e-6, seed 1111. */
void nlp_mlm_train_config_default(struct nlp_mlm_train_config *c);

/* *usage is set to 1 when the failure is the command line's (a --resume
 * with other options, a bad size): the cli exits 2. */
int nlp_mlm_train(const struct nlp_mlm_train_config *tc,
                  const struct gr_ctx_config *cc, int *usage);

/* --data: PTB text folder or treebank; min_count 0 picks the default. */
int nlp_mlm_load_data(struct nlp_mlm_corpus *c, const char *data,
                      int32_t min_count);

/* Gold trees for parsing: CoNLL (tag_column 0 = the reader's default) or
 * a treebank (converted), §3-filtered into *out. *converted (may be NULL)
 * says which: UAS on converted trees is not comparable with the thesis. */
int nlp_mlm_load_trees(struct nlp_deptrees *out, const char *path,
                       int tag_column, int *converted);

/* A trained model reopened from a checkpoint (vocab.txt beside it). */
struct nlp_mlm_runtime {
    struct gr_ctx *ctx;
    const struct nlp_mlm_model_entry *entry;
    void *model;
    struct nlp_mlm_options opt;
    struct nlp_vocab vocab;
    char data[4096];     /* the run's --data */
    int32_t min_count;
    float mask_rate;
    uint64_t seed;
};

int nlp_mlm_open(struct nlp_mlm_runtime *rt, const char *checkpoint,
                 const struct gr_ctx_config *cc);
void nlp_mlm_close(struct nlp_mlm_runtime *rt);

/* Masked-token perplexity of a split over `runs` maskings (seeded by
 * `seed`, run r its own stream); *loss the mean of the runs' losses. */
int nlp_mlm_perplexity(struct gr_ctx *ctx,
                       const struct nlp_mlm_model_entry *e, void *model,
                       const struct nlp_mlm_split *s, int32_t batch_tokens,
                       float rate, int32_t runs, uint64_t seed, double *ppl,
                       double *loss);

/* The vocabulary ids of a gold sentence's forms (lower-cased, digit runs
 * -> N, unknown -> <unk>) into ids[n]. */
void nlp_mlm_tree_ids(const struct nlp_vocab *v,
                      const struct nlp_dep_sentence *s, int32_t *ids);

/* Parses sentences [0, limit) of gold (limit 0: all) with the model's heads
 * and `dec`, adding to ev; pred (may be NULL) receives every sentence's
 * heads one after another. GR_EINVAL when the model has no parser. */
int nlp_mlm_depparse(struct gr_ctx *ctx, const struct nlp_mlm_model_entry *e,
                     void *model, const struct nlp_vocab *v,
                     const struct nlp_deptrees *gold, int32_t limit,
                     enum nlp_dep_decoder dec, int32_t *pred,
                     struct nlp_dep_eval *ev);

/* Thesis Table 4.3 on gold trees (udgn rows only; GR_EINVAL otherwise):
 * for every gold arc (child i -> head j; roots skipped) x_{l,c} = π^c of
 * layer l for the message from the child to the head (sender i, receiver
 * j), and for each gold label the Pearson correlation over all arcs
 * between x_{l,c} and [the arc has that label]; the best (l, c) per label.
 * Sentences [0, limit) of gold (0: all), each alone, unmasked. */
struct nlp_mlm_channel_corr {
    int32_t n_labels;
    char **labels;            /* [n_labels], in order of first appearance */
    int64_t *count;           /* arcs with the label */
    int32_t *layer, *channel; /* the best, 0-based */
    double *r;                /* its correlation (NAN if undefined) */
    int64_t n_arcs;
};

int nlp_mlm_channel_correlation(struct gr_ctx *ctx,
                                const struct nlp_mlm_model_entry *e,
                                void *model, const struct nlp_vocab *v,
                                const struct nlp_deptrees *gold,
                                int32_t limit,
                                struct nlp_mlm_channel_corr *out);
void nlp_mlm_channel_corr_free(struct nlp_mlm_channel_corr *c);

#endif
