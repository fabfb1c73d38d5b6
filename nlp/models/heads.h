/* nlp/models/heads.h — classifier heads shared by every sentence encoder
 * (OM, LSTM, ON-LSTM, ...): they take the encoder's sentence vectors and
 * give class logits (ordered_memory.md §7).
 *
 *   NLP_HEAD_PAIR: sentence pairs (logical inference, NLI). The encoder's
 *     batch holds the B premises first and the B hypotheses after them
 *     (enc [2B, IN]); with u, v their vectors f = [u; v; u⊙v; |u−v|]
 *     (4·IN) and logits = W_b · drop(ELU(W_a · drop(f) + b_a)) + b_b,
 *     W_a [hidden, 4·IN], W_b [classes, hidden] (proplog.py's mlp;
 *     parameters "<prefix>.1.*" and "<prefix>.4.*").
 *   NLP_HEAD_LINEAR: single sentences (ListOps): logits = W · drop(enc) + b,
 *     W [classes, IN] ("<prefix>.1.*").
 *   NLP_HEAD_MLP: single sentences through the pair head's MLP on enc
 *     itself (W_a [hidden, IN]; SST-style).
 * Dropout is inverted dropout with rate `dropout` (--dropouto), training
 * only, drawn from the caller's (seed, stream).
 *
 * Memory: parameters in the caller's context; outputs in the step arena.
 * One thread per context. Errors: 0 or a negative GR_E* code with the
 * message in gr_last_error(); forward returns NULL and keeps the context's
 * sticky error.
 *
 *   struct nlp_head_config hc = {NLP_HEAD_PAIR, 200, 200, 7, 0.3f};
 *   struct nlp_head head;
 *   nlp_head_init(&head, ctx, "mlp", &hc, seed);
 *   struct gr_tensor *logits = nlp_head_forward(ctx, &head, u2b, 1,
 *                                               gr_rng_make(seed, stream));
 */
#ifndef GROVE_NLP_HEADS_H
#define GROVE_NLP_HEADS_H

#include <stdint.h>

#include "kernels/layers.h"
#include "kernels/rng.h"
#include "kernels/tensor.h"
#include "nlp/models/onlstm.h" /* struct nlp_text */

enum nlp_head_kind {
    NLP_HEAD_PAIR = 0,
    NLP_HEAD_LINEAR = 1,
    NLP_HEAD_MLP = 2,
};

/* "pair" / "linear" / "mlp". */
const char *nlp_head_kind_name(enum nlp_head_kind kind);

struct nlp_head_config {
    enum nlp_head_kind kind;
    int32_t in;      /* IN: the encoder's output size */
    int32_t hidden;  /* the MLP's hidden size (pair, mlp) */
    int32_t classes; /* output classes */
    float dropout;   /* r_o */
};

int nlp_head_config_check(const struct nlp_head_config *cfg);

/* Parameters: pair 4·IN·H + H + H·C + C; linear IN·C + C; mlp IN·H + H +
 * H·C + C. */
int64_t nlp_head_param_count(const struct nlp_head_config *cfg);

/* "head.<key> <value>" lines, and reading them back (GR_EFORMAT naming
 * the key). */
int nlp_head_config_write(const struct nlp_head_config *cfg,
                          struct nlp_text *t);
int nlp_head_config_read(const char *text, const char *what,
                         struct nlp_head_config *cfg);

struct nlp_head {
    struct nlp_head_config cfg;
    struct gr_linear_layer a; /* pair/mlp: W_a; linear: W */
    struct gr_linear_layer b; /* pair/mlp: W_b */
};

/* PyTorch Linear init from (seed, name) (kernels/layers.h). */
int nlp_head_init(struct nlp_head *h, struct gr_ctx *ctx, const char *prefix,
                  const struct nlp_head_config *cfg, uint64_t seed);

/* enc [2B, IN] (pair) or [B, IN] -> logits [B, classes]. training: apply
 * dropout with masks from rng (two streams derived from it). */
struct gr_tensor *nlp_head_forward(struct gr_ctx *ctx,
                                   const struct nlp_head *h,
                                   struct gr_tensor *enc, int training,
                                   struct gr_rng rng);

/* The pair head's features [u; v; u⊙v; |u−v|] along dim 1: u, v [B, IN]
 * -> [B, 4·IN] in the step arena (NULL, with the context's error, when an
 * op fails). nlp/tasks/classify.c's head builds its pair input with it. */
struct gr_tensor *nlp_head_pair_features(struct gr_ctx *ctx,
                                         struct gr_tensor *u,
                                         struct gr_tensor *v);

#endif
