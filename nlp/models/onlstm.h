/* nlp/models/onlstm.h — the word-level recurrent language models of on_lstm.md: the
 * ON-LSTM LM (Shen et al.) and the plain AWD-LSTM LM (Merity et al.), with
 * their whole regularisation stack, tied weights, evaluation, and the
 * by-products the parser (syntactic distances) and syneval (per-token
 * log-probabilities) use.
 *
 * Model (on_lstm.md §4-§6): embedding E [V, emsize] (U(-0.1, 0.1)), a stack
 * of nlayers recurrent layers of sizes emsize -> nhid -> ... -> nhid ->
 * emsize (kernels/layers.h: gr_onlstm or gr_lstm), a tied decoder
 * logits = y Eᵀ + b (b zero-initialised). Training mode applies, in order:
 * embedding dropout (dropoute; whole rows of E, kept rows scaled), locked
 * dropout on the embeddings (dropouti), DropConnect on every layer's
 * hidden-to-hidden matrix (wdrop: not rescaled for the ON-LSTM, inverted
 * for the AWD-LSTM, §6.4), locked dropout between layers (dropouth) and on
 * the last output (dropout). Loss = mean CE + alpha·mean(y²) +
 * beta·mean((y_{t+1} - y_t)²) with y the last layer's output: undropped for
 * the ON-LSTM, dropped for the AWD-LSTM (§6.5). Evaluation mode: no
 * dropout; the ON-LSTM's U is scaled by (1 - wdrop).
 *
 * Parameter names are the reference's state-dict keys: "encoder.weight",
 * "decoder.bias", "rnn.cells.<l>.ih.0.weight" ... (ON-LSTM) or
 * "rnns.<l>.module.weight_ih" ... (AWD-LSTM). Initial weights come from
 * (seed, name) (kernels/layers.h), so they are the same on CPU and CUDA.
 * Dropout masks are drawn from Philox streams keyed by (seed, epoch,
 * window, purpose, layer) (nlp_lm_rng), also the same on both devices.
 *
 * Memory: parameters live in the caller's context (kernels/tensor.h); a
 * forward's tensors live in the step arena until gr_step_reset. A carried
 * hidden state (struct nlp_lm_state) is a set of named buffers of the
 * context. Nothing here allocates on the host per window. Thread safety:
 * one thread per context. Errors: 0 or a negative GR_E* code with the
 * message in gr_last_error() (core/error.h).
 *
 *   struct nlp_lm_config cfg;
 *   nlp_lm_config_default(&cfg, NLP_LM_ONLSTM, 10000);
 *   struct nlp_lm lm;
 *   if (nlp_lm_init(&lm, ctx, &cfg, seed) < 0) ...;
 *   struct nlp_lm_state st;
 *   nlp_lm_state_init(&st, &lm, "train", 20);
 *   gr_step_reset(ctx);
 *   struct nlp_lm_drop drop = nlp_lm_drop_train(seed, epoch, window);
 *   struct nlp_lm_out o;
 *   nlp_lm_forward(&lm, &st, inputs, targets, T, &drop, &o);  // o.loss
 *   gr_backward(ctx, o.loss);
 */
#ifndef GROVE_NLP_LM_H
#define GROVE_NLP_LM_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/fasttrees.h"
#include "kernels/layers.h"
#include "kernels/rng.h"
#include "kernels/tensor.h"

#define NLP_LM_MAX_LAYERS 8

enum nlp_lm_kind {
    NLP_LM_ONLSTM = 0, /* on_lstm.md */
    NLP_LM_LSTM = 1,   /* AWD-LSTM, hybrid_and_trees.md §2.2 */
    /* fasttrees.md: the ON-LSTM LM with another cell (same stack,
     * regularisation, distances, defaults) */
    NLP_LM_FT = 2,  /* FastTrees: master gates from x_t */
    NLP_LM_CFT = 3, /* Conv. FastTrees: conv over the first 2n features */
    NLP_LM_FFT = 4, /* Faster FastTrees: every gate from x_t, a scan */
    /* the LSTM baseline of the Ordered-Neurons / FastTrees repositories
     * (fasttrees.md §5): an LSTM cell in the ON-LSTM LM, i.e. the ON-LSTM
     * recipe (non-inverted DropConnect, AR on the undropped output, its
     * dropouts and finetuning), which grove's AWD-LSTM (lstm) is not */
    NLP_LM_FTLSTM = 5,
};

/* The valid --model values, for messages. */
#define NLP_LM_KINDS "onlstm|lstm|ft|cft|fft|ftlstm"

/* "onlstm" / "lstm" / "ft" / "cft" / "fft" / "ftlstm". */
const char *nlp_lm_kind_name(enum nlp_lm_kind kind);

/* For people: "ON-LSTM", "LSTM", "FastTrees", "Conv. FastTrees", "Faster
 * FastTrees". */
const char *nlp_lm_kind_title(enum nlp_lm_kind kind);

/* 1 for the cells with master gates (onlstm, ft, cft, fft): chunks and
 * syntactic distances. */
int nlp_lm_kind_ordered(enum nlp_lm_kind kind);

/* 1 for the kinds trained with the ON-LSTM recipe (all but lstm, the
 * AWD-LSTM): non-inverted DropConnect, AR on the undropped output, the
 * ON-LSTM's dropouts, finetuning at 500. */
int nlp_lm_kind_on_recipe(enum nlp_lm_kind kind);

/* Parses a kind name (GR_EINVAL listing the valid ones otherwise). */
int nlp_lm_kind_parse(const char *text, enum nlp_lm_kind *out);

struct nlp_lm_config {
    enum nlp_lm_kind kind;
    int32_t vocab;   /* V */
    int32_t emsize;  /* embedding size = last layer's size (tied) */
    int32_t nhid;    /* hidden size of the inner layers */
    int32_t nlayers; /* 1 .. NLP_LM_MAX_LAYERS */
    int32_t chunk;   /* ON-LSTM chunk size C (every layer size a multiple) */
    float dropout;   /* locked dropout on the last output */
    float dropouth;  /* locked dropout between layers */
    float dropouti;  /* locked dropout on the embeddings */
    float dropoute;  /* embedding (word type) dropout */
    float wdrop;     /* DropConnect on hidden-to-hidden weights */
    float alpha;     /* AR */
    float beta;      /* TAR */
    enum gr_conv_axis conv_axis; /* CFT only: time (default) or
                                    batch_compat (fasttrees.md §3) */
};

/* The published hyperparameters (on_lstm.md §7 for the ON-LSTM; the
 * AWD-LSTM README's PTB run for the LSTM: dropout 0.4, dropouth 0.25,
 * dropouti 0.4, dropoute 0.1, wdrop 0.5) with vocabulary size `vocab`. */
void nlp_lm_config_default(struct nlp_lm_config *cfg, enum nlp_lm_kind kind,
                           int32_t vocab);

/* GR_EINVAL naming the field when a size or rate is out of range (rates
 * in [0, 1), sizes >= 1, every ON-LSTM layer size a multiple of chunk). */
int nlp_lm_config_check(const struct nlp_lm_config *cfg);

/* Size of layer l's input and output (l in [0, nlayers)). */
int32_t nlp_lm_layer_in(const struct nlp_lm_config *cfg, int l);
int32_t nlp_lm_layer_out(const struct nlp_lm_config *cfg, int l);

/* Parameter count of the configuration (tied decoder counted once). The
 * PTB ON-LSTM: 25,232,180; the AWD-LSTM of the same sizes: 24,221,600;
 * FT 24,670,640; CFT 24,895,580; FFT 13,439,840 (fasttrees.md). */
int64_t nlp_lm_param_count(const struct nlp_lm_config *cfg);

/* What the reference would allocate for this configuration: differs only
 * for FFT, whose reference also allocates an unused hh (2n+4H, H) and
 * bias per layer (25,232,180 at the PTB size, fasttrees.md §4). */
int64_t nlp_lm_param_count_reference(const struct nlp_lm_config *cfg);

/* One line about the parameter count into buf: "24,670,640 parameters"
 * and, for FFT, "13,439,840 parameters: 13.44M (reference allocates
 * 25.23M, 11.79M unused)". */
void nlp_lm_param_report(const struct nlp_lm_config *cfg, char *buf,
                         size_t cap);

struct nlp_lm {
    struct nlp_lm_config cfg;
    struct gr_ctx *ctx;
    struct gr_tensor *encoder;     /* [V, emsize], also the decoder weight */
    struct gr_tensor *decoder_bias; /* [V] */
    struct gr_onlstm onlstm[NLP_LM_MAX_LAYERS]; /* kinds ONLSTM and FT
                                                   (master_from_x) */
    struct gr_cft cft[NLP_LM_MAX_LAYERS];       /* kind CFT */
    struct gr_fft fft[NLP_LM_MAX_LAYERS];       /* kind FFT */
    struct gr_lstm lstm[NLP_LM_MAX_LAYERS];     /* kind LSTM */
};

/* Creates and initialises the parameters in ctx (which must not already
 * hold them). seed: the run's seed. */
int nlp_lm_init(struct nlp_lm *m, struct gr_ctx *ctx,
                const struct nlp_lm_config *cfg, uint64_t seed);

/* The hidden-to-hidden weight of layer l ([rows, H]); NULL for FFT. */
struct gr_tensor *nlp_lm_layer_w_hh(const struct nlp_lm *m, int l);

/* ---- carried hidden state ---- */

struct nlp_lm_state {
    int32_t batch;
    int nlayers;
    struct gr_tensor *h[NLP_LM_MAX_LAYERS]; /* [B, H_l] buffers */
    struct gr_tensor *c[NLP_LM_MAX_LAYERS]; /* [B, H_l] buffers */
    /* CFT on the time axis: the last GR_CFT_CONTEXT convolution inputs of
     * the previous window, [GR_CFT_CONTEXT, B, 2n_l]; NULL otherwise. */
    struct gr_tensor *x[NLP_LM_MAX_LAYERS];
};

/* Finds or creates the buffers "lm.state.<tag>.{h,c}<l>" for batch B (a
 * tag names one stream of windows: "train", "valid", ...; the same tag
 * with another batch size is GR_EINVAL) and zeroes them. */
int nlp_lm_state_init(struct nlp_lm_state *st, struct nlp_lm *m,
                      const char *tag, int32_t batch);

/* Zeroes the state (start of an epoch or of a sentence). */
int nlp_lm_state_zero(struct nlp_lm_state *st);

/* ---- dropout for one forward call ---- */

/* What the masks are for (a Philox stream per purpose and layer). */
enum nlp_lm_purpose {
    NLP_LM_RNG_WINDOW = 1, /* window length draws (one stream per epoch) */
    NLP_LM_RNG_EMBED = 2,
    NLP_LM_RNG_INPUT = 3,
    NLP_LM_RNG_WEIGHT = 4, /* DropConnect, per layer */
    NLP_LM_RNG_HIDDEN = 5, /* between layers, per layer */
    NLP_LM_RNG_OUTPUT = 6,
    NLP_LM_RNG_CONV = 7, /* CFT's dropout after the convolution, per layer */
};

/* The key of a draw: (seed, stream(epoch, window, purpose, layer)). */
struct gr_rng nlp_lm_rng(uint64_t seed, int64_t epoch, int64_t window,
                         int purpose, int layer);

/* Explicit masks replacing the random ones (tests, fixtures). Each is a
 * host array of multipliers as the model applies them (already scaled:
 * 0 or 1/(1-p) for the dropouts, 0 or 1 for the ON-LSTM's DropConnect,
 * 0 or 1/(1-p) for the AWD-LSTM's). NULL entries: no dropout there. */
struct nlp_lm_masks {
    const float *embed;  /* [V] row multipliers of E */
    const float *input;  /* [B, emsize] */
    const float *hidden[NLP_LM_MAX_LAYERS]; /* [B, H_l], l < nlayers - 1 */
    const float *output; /* [B, emsize] */
    const float *weight[NLP_LM_MAX_LAYERS]; /* [rows_l, H_l] multiplier of U */
};

struct nlp_lm_drop {
    int training; /* 0: evaluation mode (everything below ignored) */
    uint64_t seed;
    int64_t epoch, window;
    const struct nlp_lm_masks *masks; /* non-NULL: use these instead */
};

/* Training mode with random masks for (seed, epoch, window). */
struct nlp_lm_drop nlp_lm_drop_train(uint64_t seed, int64_t epoch,
                                     int64_t window);

/* Evaluation mode. */
struct nlp_lm_drop nlp_lm_drop_eval(void);

/* ---- forward ---- */

struct nlp_lm_out {
    struct gr_tensor *logits; /* [T·B, V] */
    struct gr_tensor *ce;     /* scalar: mean cross entropy (NULL without
                                 targets) */
    struct gr_tensor *ar;     /* scalar: alpha·mean(y²) (NULL if alpha 0
                                 or not training) */
    struct gr_tensor *tar;    /* scalar: beta·mean(Δy²) (NULL likewise) */
    struct gr_tensor *loss;   /* ce + ar + tar (NULL without targets) */
    struct gr_tensor *output; /* [T, B, emsize] last layer, before the
                                 output dropout */
    struct gr_tensor *df[NLP_LM_MAX_LAYERS]; /* ON-LSTM: [T, B] */
    struct gr_tensor *di[NLP_LM_MAX_LAYERS]; /* ON-LSTM: [T, B] */
};

/* One window: inputs [T, B] i32 (time-major, B = st->batch) in [0, V),
 * targets [T·B] i32 or NULL. Starts from the state in `st` and writes the
 * final state back into it (a detached copy: truncated BPTT). Tensors go
 * to the step arena; the tape records them when gradients are enabled. */
int nlp_lm_forward(struct nlp_lm *m, struct nlp_lm_state *st,
                   struct gr_tensor *inputs, struct gr_tensor *targets,
                   const struct nlp_lm_drop *drop, struct nlp_lm_out *out);

/* ---- evaluation over a batchified split ---- */

struct nlp_lm_eval_result {
    double loss;        /* exact mean NLL per predicted token (nats) */
    double loss_compat; /* the reference's: Σ T·mean / rows (§8.4) */
    double ppl;         /* exp(loss) */
    double ppl_compat;  /* exp(loss_compat) */
    int64_t n_predictions;
    int64_t rows;
};

/* Evaluation mode over data [rows, B] (nlp_batchify's layout), windows of
 * `bptt` rows, hidden state carried from a zero start. Uses the state tag
 * `tag` (created for B if needed). Resets the step arena per window and
 * records no gradients. progress_label: a core/progress.h bar, or NULL. */
int nlp_lm_evaluate(struct nlp_lm *m, const int32_t *data, size_t rows,
                    int32_t batch, int32_t bptt, const char *tag,
                    const char *progress_label, int quiet,
                    struct nlp_lm_eval_result *res);

/* ---- sentences, for parsing and syneval ---- */

/* Evaluation mode on B sentences of the same length n (fresh zero state
 * each call): ids [n, B] time-major (host). Writes, when not NULL,
 *   df_out [nlayers, n, B]: forget distances of every layer and step
 *          (ON-LSTM only; GR_EINVAL for the LSTM);
 *   logp_out [n - 1, B]: log p(ids[t+1] | ids[..t]) for t < n - 1.
 * Resets the step arena before and after; carries no state (it starts
 * from zeros and keeps nothing). */
int nlp_lm_sentences(struct nlp_lm *m, const int32_t *ids, int32_t n,
                     int32_t batch, float *df_out, float *logp_out);

/* Many sequences of different lengths (parsing, syneval): sequences are
 * grouped by length and run in batches of at most max_batch with a fresh
 * zero state each (evaluation mode). ids[i] has lens[i] >= 1 tokens. For
 * every i, when not NULL:
 *   logprob[i] = Σ_{t=1..lens[i]-1} log p(ids[i][t] | ids[i][<t]);
 *   df[i][t]   = forget distance of layer `layer` (0-based) at step t,
 *                t < lens[i] (ON-LSTM only).
 * `progress` (may be NULL) is advanced by one per sequence. */
struct gr_progress;
int nlp_lm_run_sequences(struct nlp_lm *m, int32_t n,
                         const int32_t *const *ids, const int32_t *lens,
                         int32_t max_batch, double *logprob, int32_t layer,
                         float *const *df, struct gr_progress *progress);

/* An nlp_syneval_score_fn (nlp/tasks/syneval.h) over a struct nlp_lm_scorer. */
struct nlp_lm_scorer {
    struct nlp_lm *lm;
    int32_t max_batch;            /* sequences per forward call */
    struct gr_progress *progress; /* may be NULL */
};
int nlp_lm_syneval_score(void *scorer, int32_t n, const int32_t *const *ids,
                         const int32_t *lens, double *logprob);

/* ---- configuration text (checkpoints) ---- */

/* Appends "key value" lines of the model configuration to buf (a
 * malloc'd growable string, see nlp_text_*); used as the checkpoint's
 * config text together with the vocabulary. */
struct nlp_text {
    char *s;
    size_t len, cap;
};
int nlp_text_printf(struct nlp_text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void nlp_text_free(struct nlp_text *t);

int nlp_lm_config_write(const struct nlp_lm_config *cfg, struct nlp_text *t);

/* Reads the model configuration back from a config text ("key value"
 * lines; unknown keys ignored). GR_EFORMAT naming the key if one is
 * missing or malformed; `what` names the source in messages. */
int nlp_lm_config_read(const char *text, const char *what,
                       struct nlp_lm_config *cfg);

/* Finds the value of `key` in a "key value" config text: a pointer to it
 * and its length (up to the end of the line), or NULL. */
const char *nlp_config_value(const char *text, const char *key,
                             size_t *len);

#endif
