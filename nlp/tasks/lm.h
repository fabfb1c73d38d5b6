/* nlp/tasks/lm.h — training a language model of nlp/models/onlstm.h on PTB the way
 * the reference's main.py does (on_lstm.md §8), and its checkpoints.
 *
 * Schedule (§8.2-§8.3): per epoch, the batchified train stream is cut into
 * windows of random length (base bptt with probability 0.95 else bptt/2,
 * T = max(5, trunc(N(base, 5)))), each trained with lr·T/bptt, global-norm
 * clipping and SGD with weight decay; the hidden state is carried and
 * detached. After every epoch the validation loss decides: save if best;
 * switch to ASGD (NT-ASGD, nonmono rule) when it is worse than the best
 * before the last `nonmono` epochs; in the ASGD phase validate with the
 * averaged weights and, at epoch `finetuning`, restart the averaging. At
 * the end the best checkpoint is reloaded and evaluated on test. Every
 * random draw is a Philox stream keyed by (seed, epoch, window, purpose,
 * layer), so a run is reproducible and the same on CPU and CUDA.
 *
 * A run folder (out_dir) gets: `command`, `config` (core/files.h),
 * `metrics.csv` (one row per epoch, columns documented in nlp/README.md),
 * `best.ckpt` (parameters of the best validation epoch, averaged ones in
 * the ASGD phase), `last.ckpt` (parameters, optimizer state and the
 * schedule's state, for resume). `grove nlp lm train` adds `summary.txt`
 * and `curves.png`.
 *
 * A checkpoint's config text (kernels/checkpoint.h) is "grove-lm 1", the
 * model configuration (nlp_lm_config_write), the training configuration
 * and state, then "words N" and the N vocabulary words one per line, so a
 * checkpoint alone is enough to parse or score sentences.
 *
 * Memory: the trainer owns its host buffers; tensors live in the context.
 * Thread safety: one thread. Errors: 0 or negative GR_E* codes with
 * gr_last_error() naming the file or value.
 *
 *   struct nlp_lm_train_config tc;
 *   nlp_lm_train_config_default(&tc, NLP_LM_ONLSTM);
 *   tc.out_dir = "runs/a";
 *   nlp_lm_train(&tc, &corpus, &ctx_cfg, NULL, NULL, &result);
 */
#ifndef GROVE_NLP_LM_TRAIN_H
#define GROVE_NLP_LM_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "core/random.h"
#include "kernels/tensor.h"
#include "nlp/data/corpus.h"
#include "nlp/models/onlstm.h"
#include "nlp/data/vocab.h"
#include "train/train.h"

/* ---- pieces of the schedule, exposed for tests ---- */

/* NT-ASGD trigger of on_lstm.md §8.3 (awd-lstm-lm issue #13): with
 * history[0, n) the previous epochs' validation losses and v this epoch's,
 * 1 iff n > nonmono and v > min(history[0, n - nonmono)). */
int nlp_ntasgd_should_switch(const double *history, int n, double v,
                             int nonmono);

/* One window length: base = bptt with probability 0.95 else bptt / 2
 * (uniform draw < 0.95), T = max(5, trunc(base + 5·z)), z standard normal
 * (Box-Muller on two more draws). Consumes 3 words of `s`. */
int32_t nlp_lm_window_length(struct gr_philox_stream *s, int32_t bptt);

/* The window-length stream of an epoch. */
struct gr_philox_stream nlp_lm_window_stream(uint64_t seed, int64_t epoch);

/* ---- training ---- */

#define NLP_LM_MAX_WHEN 16

struct nlp_lm_train_config {
    struct nlp_lm_config model; /* vocab is set from the corpus */
    float lr;          /* 30 */
    float clip;        /* 0.25 (0: no clipping) */
    int32_t epochs;    /* 1000 */
    int32_t batch;     /* 20 */
    int32_t bptt;      /* 70 */
    float wdecay;      /* 1.2e-6 */
    int32_t nonmono;   /* 5 */
    int32_t when[NLP_LM_MAX_WHEN]; /* epochs dividing lr by 10 */
    int32_t n_when;
    int32_t finetuning; /* ASGD restart epoch: 500 (ON-LSTM), 0 = never */
    int32_t eval_batch; /* 10 */
    int32_t test_batch; /* 1 */
    int32_t max_batches; /* > 0: cut every epoch after this many windows */
    int fixed_windows;   /* 1: every window exactly bptt steps, lr not
                          * rescaled (deterministic comparisons) */
    int32_t valid_rows;  /* > 0: validate on the first rows only (tests) */
    int32_t train_rows;  /* > 0: train on the first rows only (tests) */
    int skip_test;       /* 1: no final test evaluation */
    uint64_t seed;       /* 141 */
    const char *out_dir; /* run folder; NULL: nothing written (tests) */
    int force;           /* reuse an existing run folder */
    int resume;          /* continue out_dir/last.ckpt */
    int model_given;     /* --resume: model.kind was asked for; a
                          * last.ckpt of another kind is refused */
    int quiet;
    int argc;            /* the command line, for the run folder */
    char *const *argv;
};

/* The published run (on_lstm.md §7; hybrid_and_trees.md §2.2 for the
 * LSTM: finetuning 0). */
void nlp_lm_train_config_default(struct nlp_lm_train_config *tc,
                                 enum nlp_lm_kind kind);

/* One epoch's numbers, as written to metrics.csv. */
struct nlp_lm_epoch_log {
    int32_t epoch;
    int64_t global_step;  /* optimizer steps so far */
    double wall_s;        /* training + validation time so far */
    int asgd;             /* 1 in the ASGD phase */
    double lr;            /* the group learning rate */
    double train_loss;    /* mean CE of the epoch's windows */
    double grad_norm;     /* mean norm before clipping */
    double tokens_per_s;  /* training tokens per second this epoch */
    int64_t windows;      /* windows trained this epoch */
    double val_loss, val_ppl, val_ppl_compat;
    int best;             /* 1 if saved as the best */
};

/* Called after every epoch (may be NULL); a non-zero return stops the
 * run after this epoch. */
typedef int (*nlp_lm_epoch_fn)(void *user, const struct nlp_lm_epoch_log *e);

struct nlp_lm_train_result {
    int32_t epochs_done;
    double best_val_loss, best_val_ppl;
    double test_loss, test_ppl, test_ppl_compat; /* NaN if skipped */
    double wall_s;
    int asgd;                 /* ended in the ASGD phase */
    int32_t asgd_switch_epoch; /* 0 if never */
    int stopped;               /* a signal stopped the run (train/train.h):
                                * last.ckpt holds epochs_done */
};

/* Trains on corpus (already loaded) in a context made from ctx_cfg.
 * Writes the run folder when tc->out_dir is set. */
int nlp_lm_train(const struct nlp_lm_train_config *tc,
                 const struct nlp_corpus *corpus,
                 const struct gr_ctx_config *ctx_cfg, nlp_lm_epoch_fn on_epoch,
                 void *user, struct nlp_lm_train_result *res);

/* ---- checkpoints ---- */

/* Saves the parameters (and optimizer state if with_optim) of `lm` with a
 * config text made of the model config, `extra` (may be NULL) and the
 * vocabulary. Refuses an existing path unless force. */
int nlp_lm_save(struct nlp_lm *lm, const char *path,
                const struct nlp_vocab *vocab, const char *extra,
                int with_optim, int force);

/* A model loaded from a checkpoint, with its own context. */
struct nlp_lm_loaded {
    struct gr_ctx *ctx;
    struct nlp_lm lm;
    struct nlp_vocab vocab;
    char *config; /* the checkpoint's config text (malloc'd) */
};

/* Reads the config, builds the model in a new context (ctx_cfg), loads
 * the parameters. GR_EFORMAT naming the file for anything malformed. */
int nlp_lm_load(struct nlp_lm_loaded *out, const char *path,
                const struct gr_ctx_config *ctx_cfg);

void nlp_lm_loaded_free(struct nlp_lm_loaded *l);

/* Reads the vocabulary section of a config text into v (initialised
 * here). */
int nlp_lm_vocab_read(const char *config, const char *what,
                      struct nlp_vocab *v);

#endif
