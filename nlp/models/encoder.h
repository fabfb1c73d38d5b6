/* nlp/models/encoder.h — sentence encoders by name: the one small table
 * through which a task (nlp/tasks/classify.h, later mlm and seq2seq) runs a
 * model without naming its internals. A new model family adds one row
 * (struct nlp_encoder_kind) to the table in nlp/models/encoder.c.
 *
 * An encoder reads a padded batch of token ids [T, B] and returns one
 * vector per sequence, [B, out_dim], on the tape:
 *
 *   struct nlp_encoder_config c;
 *   nlp_encoder_config_default(&c, "lstm", "logic");   // per-task defaults
 *   c.vocab = 12; c.pad_id = 11;
 *   struct nlp_encoder e;
 *   if (nlp_encoder_init(&e, ctx, &c, gr_rng_make(seed, 0)) < 0) ...;
 *   struct nlp_encoder_batch b = {ids, lengths, T, B};
 *   struct gr_tensor *u = nlp_encoder_encode(&e, &b, training, rng); // [B, D]
 *   nlp_encoder_free(&e);
 *
 * Right padding (ids[t, b] = pad for t >= lengths[b]) unless the config
 * asks for left padding (readout at the last step, ListOps): the harness
 * pads as nlp_encoder_left_padded() says. Parameters are named under
 * "enc." so a task's head ("head.") never collides with them.
 */
#ifndef GROVE_NLP_MODELS_ENCODER_H
#define GROVE_NLP_MODELS_ENCODER_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/rng.h"
#include "kernels/tensor.h"

#define NLP_ENCODER_NAME_CAP 16

struct nlp_encoder_config {
    char model[NLP_ENCODER_NAME_CAP]; /* "lstm", "onlstm", "om", ... */
    int32_t vocab;      /* ids in [0, vocab) */
    int32_t pad_id;     /* the padding id (its embedding row unused) */
    int32_t emsize;     /* embedding size */
    int32_t hidden;     /* state size D (the output size unless stated) */
    int32_t chunk;      /* ON-LSTM chunk size */
    int32_t slots_train, slots_eval; /* Ordered Memory's N (§9) */
    float dropout_in;   /* on the embeddings */
    float dropout_cell; /* OM r_c */
    float dropout_mem;  /* OM r_m */
    int left_pad;       /* 1: left padding, output of the last step */
    /* Transformer family (nlp/models/transformer.h); dropout_cell is its
     * residual dropout */
    int32_t layers;     /* encoder layers */
    int32_t heads;      /* attention heads (hidden % heads == 0) */
    int32_t ffn;        /* feed-forward inner size */
    float dropout_attn; /* attention dropout */
    int post_norm;      /* 1: post-norm layers; 0: pre-norm (default) */
};

struct nlp_tree; /* nlp/models/treenets.h */

struct nlp_encoder_batch {
    struct gr_tensor *ids;  /* [T, B] i32, padded as the config says */
    const int32_t *lengths; /* [B] real tokens per sequence (>= 1) */
    int32_t T, B;
    /* the given tree of each sequence, [B] (NULL: none); read by the
     * encoders whose kind has `trees` set (nlp/models/treenets.h) */
    const struct nlp_tree *trees;
};

struct nlp_encoder;

struct nlp_encoder_kind {
    const char *name;
    const char *summary; /* one line for --help and `grove nlp tasks` */
    /* the family's defaults for `task` ("logic", "listops", "sst", or
     * NULL), over the common ones already set */
    void (*defaults)(struct nlp_encoder_config *c, const char *task);
    int (*init)(struct nlp_encoder *e, struct gr_ctx *ctx, struct gr_rng rng);
    struct gr_tensor *(*encode)(struct nlp_encoder *e,
                                const struct nlp_encoder_batch *b,
                                int training, struct gr_rng rng);
    int32_t (*out_dim)(const struct nlp_encoder *e);
    void (*free)(struct nlp_encoder *e);
    /* Optional (NULL: the model induces no tree): the structure distances
     * of the last encode, d[t * B + b] for t < lengths[b], larger = higher
     * in the tree (the convention of nlp/tasks/parse.h). */
    int (*distances)(struct nlp_encoder *e, float *d);
};

struct nlp_encoder {
    const struct nlp_encoder_kind *kind;
    struct nlp_encoder_config cfg;
    struct gr_ctx *ctx;
    void *impl; /* the family's own state */
};

/* The table: every encoder a task may name, NULL-terminated. */
extern const struct nlp_encoder_kind *const nlp_encoder_kinds[];

/* The kind named `name`, or NULL. */
const struct nlp_encoder_kind *nlp_encoder_find(const char *name);

/* "lstm|onlstm|..." for messages and --help. */
const char *nlp_encoder_names(void);

/* Common defaults, then the family's for `task`. GR_EINVAL for an unknown
 * model, naming the known ones. */
int nlp_encoder_config_default(struct nlp_encoder_config *c, const char *model,
                               const char *task);

/* Checks sizes and ranges; GR_EINVAL naming the field. */
int nlp_encoder_config_check(const struct nlp_encoder_config *c);

/* The config as "enc-KEY VALUE" lines appended to out[cap] at *len (the
 * checkpoint's config text), and back. Parse leaves fields it does not
 * find at their defaults and rejects an unknown model. */
int nlp_encoder_config_format(const struct nlp_encoder_config *c, char *out,
                              size_t cap, int *len);
int nlp_encoder_config_parse(const char *text, const char *what,
                             struct nlp_encoder_config *c);

int nlp_encoder_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                     const struct nlp_encoder_config *c, struct gr_rng rng);
struct gr_tensor *nlp_encoder_encode(struct nlp_encoder *e,
                                     const struct nlp_encoder_batch *b,
                                     int training, struct gr_rng rng);
int32_t nlp_encoder_out_dim(const struct nlp_encoder *e);
void nlp_encoder_free(struct nlp_encoder *e);

/* ---- the recurrent families (nlp/models/rnn_encoder.c) ---- */

extern const struct nlp_encoder_kind nlp_encoder_lstm;
extern const struct nlp_encoder_kind nlp_encoder_onlstm;
/* FastTrees, Conv. FastTrees, Faster FastTrees (same file, fasttrees.md) */
extern const struct nlp_encoder_kind nlp_encoder_ft;
extern const struct nlp_encoder_kind nlp_encoder_cft;
extern const struct nlp_encoder_kind nlp_encoder_fft;

/* ---- Ordered Memory (nlp/models/om_encoder.c, nlp/models/om.h) ---- */

extern const struct nlp_encoder_kind nlp_encoder_om;

/* ---- Transformer (nlp/models/transformer.c, nlp/models/transformer.h) ---- */

extern const struct nlp_encoder_kind nlp_encoder_transformer;
extern const struct nlp_encoder_kind nlp_encoder_ftt;
extern const struct nlp_encoder_kind nlp_encoder_ftt_conv;

/* ---- hybrid ON-LSTM + SAN with short-cut (nlp/models/hybrid.c) ---- */

extern const struct nlp_encoder_kind nlp_encoder_hybrid;
extern const struct nlp_encoder_kind nlp_encoder_hybrid_san;

/* ---- StructFormer (nlp/models/sf_encoder.c, nlp/models/structformer.h) ---- */

extern const struct nlp_encoder_kind nlp_encoder_structformer;

/* ---- given trees (nlp/models/tree_encoder.c, nlp/models/treenets.h) ---- */

extern const struct nlp_encoder_kind nlp_encoder_treelstm;
extern const struct nlp_encoder_kind nlp_encoder_childsum;
extern const struct nlp_encoder_kind nlp_encoder_rnn;
extern const struct nlp_encoder_kind nlp_encoder_mvrnn;
extern const struct nlp_encoder_kind nlp_encoder_rntn;
extern const struct nlp_encoder_kind nlp_encoder_treernn;
extern const struct nlp_encoder_kind nlp_encoder_treecell;

/* Whether kind k reads given trees (batch->trees): 0 no, 1 any tree, 2
 * binary trees only (every internal node with two children). */
int nlp_encoder_trees(const struct nlp_encoder_kind *k);

/* The h of every node of the last encode's trees, [Σ n_nodes, out_dim]
 * (trees in batch order, nodes in index order; per-node supervision), or
 * NULL for an encoder without given trees. */
struct gr_tensor *nlp_encoder_node_states(struct nlp_encoder *e);

#endif
