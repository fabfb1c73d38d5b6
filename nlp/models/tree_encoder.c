/* The given-tree encoders of nlp/models/encoder.h (issue 25): `treelstm`
 * (binary constituency Tree-LSTM) and `childsum` (Child-Sum Tree-LSTM) of
 * nlp/models/treenets.h over the trees the task gives (batch->trees). The
 * word table "enc.emb.weight" is U(-0.05, 0.05) (Tai et al.'s init of
 * words without a GloVe vector; hybrid_and_trees.md §3.3), the composition
 * under "enc.". The sentence vector is the root's h; every node's h stays
 * available for per-node supervision (node_states). Dropout on the word
 * vectors (dropouti) while training; the reference applies dropout only
 * at the output module (the harness's dropout_out). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "nlp/models/encoder.h"
#include "nlp/models/treenets.h"

struct tree_encoder {
    struct gr_tensor *emb;
    struct nlp_treenet m;
    struct gr_tensor *nodes; /* of the last encode (step arena) */
};

static void tree_defaults(struct nlp_encoder_config *c, const char *task,
                          int32_t sst_mem)
{
    /* hybrid_and_trees.md §3.3: 300-d words, memory 150 (binary) / 168
     * (Child-Sum), the sizes that match ≈316k composition parameters;
     * logic: the OM setup's 200 (grove's choice); ListOps: 128 */
    c->emsize = 300;
    c->hidden = sst_mem;
    c->dropout_in = 0.0f;
    if (task != NULL && strcmp(task, "logic") == 0) {
        c->emsize = 200;
        c->hidden = 200;
    } else if (task != NULL && strcmp(task, "listops") == 0) {
        c->emsize = 128;
        c->hidden = 128;
    }
}

static void treelstm_defaults(struct nlp_encoder_config *c, const char *task)
{
    tree_defaults(c, task, 150);
}

static void childsum_defaults(struct nlp_encoder_config *c, const char *task)
{
    tree_defaults(c, task, 168);
}

static int tree_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                     struct gr_rng rng, enum nlp_tree_cell cell)
{
    struct tree_encoder *t = calloc(1, sizeof *t);
    if (t == NULL) {
        return gr_error(GR_ENOMEM, "encoder: out of memory");
    }
    e->impl = t;
    t->emb = gr_param_new(ctx, "enc.emb.weight",
                          gr_shape2(e->cfg.vocab, e->cfg.emsize));
    if (t->emb == NULL) {
        return gr_error(GR_EINVAL, "encoder: %s", gr_ctx_error(ctx));
    }
    int rc = gr_init_uniform(
        t->emb, -0.05f, 0.05f,
        gr_rng_make(rng.seed, gr_rng_stream(rng.stream, 1, 0, 0)));
    if (rc < 0) {
        return rc;
    }
    return nlp_treenet_init(&t->m, ctx, "enc", cell, t->emb, e->cfg.hidden,
                             gr_rng_make(rng.seed,
                                         gr_rng_stream(rng.stream, 2, 0, 0)));
}

/* The recursive nets (Socher et al. 2013's SST sizes: word vectors of 25-35
 * dimensions were best, here 30 for rnn and rntn, 25 for mvrnn, whose
 * every word also has a 25 x 25 matrix; docs/nlp/trees.md); logic and
 * ListOps as the Tree-LSTM. */
static void rnn_defaults(struct nlp_encoder_config *c, const char *task)
{
    tree_defaults(c, task, 30);
    if (task == NULL || strncmp(task, "sst", 3) == 0) {
        c->emsize = 30;
    }
}

static void mvrnn_defaults(struct nlp_encoder_config *c, const char *task)
{
    tree_defaults(c, task, 25);
    if (task == NULL || strncmp(task, "sst", 3) == 0) {
        c->emsize = 25;
    } else {
        c->emsize = c->hidden = 25; /* V x H^2 word matrices */
    }
}

static void treernn_defaults(struct nlp_encoder_config *c, const char *task)
{
    tree_defaults(c, task, 150);
}

static int rnn_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                    struct gr_rng rng)
{
    return tree_init(e, ctx, rng, NLP_TREE_RNN);
}

static int mvrnn_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                      struct gr_rng rng)
{
    return tree_init(e, ctx, rng, NLP_TREE_MVRNN);
}

static int rntn_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                     struct gr_rng rng)
{
    return tree_init(e, ctx, rng, NLP_TREE_RNTN);
}

static int treernn_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                        struct gr_rng rng)
{
    return tree_init(e, ctx, rng, NLP_TREE_TREERNN);
}

static int treecell_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                         struct gr_rng rng)
{
    return tree_init(e, ctx, rng, NLP_TREE_TREECELL);
}

static int treelstm_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                         struct gr_rng rng)
{
    return tree_init(e, ctx, rng, NLP_TREE_BINARY_LSTM);
}

static int childsum_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                         struct gr_rng rng)
{
    return tree_init(e, ctx, rng, NLP_TREE_CHILDSUM);
}

static struct gr_tensor *tree_encode(struct nlp_encoder *e,
                                     const struct nlp_encoder_batch *b,
                                     int training, struct gr_rng rng)
{
    struct tree_encoder *t = e->impl;
    struct gr_ctx *ctx = e->ctx;
    t->nodes = NULL;
    if (b->trees == NULL) {
        gr_error(GR_EINVAL, "%s: this model reads the given trees, and the "
                 "batch has none", e->cfg.model);
        return NULL;
    }
    /* dropout on the word vectors read (dropouti), training only */
    t->m.dropout_in = training ? e->cfg.dropout_in : 0.0f;
    t->m.rng = gr_rng_make(rng.seed, gr_rng_stream(rng.stream, 11, 0, 0));
    struct gr_tensor *roots = NULL;
    int rc = nlp_treenet_forward(&t->m, ctx, b->trees, b->B,
                                 NLP_TREE_BY_LEVEL, &t->nodes, &roots);
    t->m.dropout_in = 0.0f;
    if (rc < 0) {
        t->nodes = NULL;
        return NULL;
    }
    return roots;
}

static int32_t tree_out_dim(const struct nlp_encoder *e)
{
    return e->cfg.hidden;
}

static void tree_free(struct nlp_encoder *e)
{
    struct tree_encoder *t = e->impl;
    if (t != NULL) {
        nlp_treenet_free(&t->m);
        free(t);
    }
    e->impl = NULL;
}

static struct gr_tensor *tree_nodes(struct nlp_encoder *e)
{
    struct tree_encoder *t = e->impl;
    return t != NULL ? t->nodes : NULL;
}

const struct nlp_encoder_kind nlp_encoder_treelstm = {
    "treelstm",
    "binary constituency Tree-LSTM over the given trees (Tai et al. 2015; "
    "docs/nlp/trees.md), batched by tree level",
    treelstm_defaults,
    treelstm_init,
    tree_encode,
    tree_out_dim,
    tree_free,
    NULL,
};

const struct nlp_encoder_kind nlp_encoder_childsum = {
    "childsum",
    "Child-Sum Tree-LSTM over the given trees, children unordered (Tai et "
    "al. 2015; docs/nlp/trees.md), batched by tree level",
    childsum_defaults,
    childsum_init,
    tree_encode,
    tree_out_dim,
    tree_free,
    NULL,
};

const struct nlp_encoder_kind nlp_encoder_rnn = {
    "rnn",
    "recursive neural network p = tanh(W[c1; c2] + b) over the given binary "
    "trees (Socher et al.)",
    rnn_defaults, rnn_init, tree_encode, tree_out_dim, tree_free, NULL,
};

const struct nlp_encoder_kind nlp_encoder_mvrnn = {
    "mvrnn",
    "matrix-vector RNN: every word a vector and a matrix (Socher et al. "
    "2012), given binary trees",
    mvrnn_defaults, mvrnn_init, tree_encode, tree_out_dim, tree_free, NULL,
};

const struct nlp_encoder_kind nlp_encoder_rntn = {
    "rntn",
    "recursive neural tensor network (Socher et al. 2013), given binary "
    "trees",
    rnn_defaults, rntn_init, tree_encode, tree_out_dim, tree_free, NULL,
};

const struct nlp_encoder_kind nlp_encoder_treernn = {
    "treernn",
    "TreeRNN of the OM thesis's gold-tree rows: projected leaves, tanh "
    "composition",
    treernn_defaults, treernn_init, tree_encode, tree_out_dim, tree_free,
    NULL,
};

const struct nlp_encoder_kind nlp_encoder_treecell = {
    "treecell",
    "TreeCell: Ordered Memory's gated recursive cell on the given binary "
    "trees",
    treernn_defaults, treecell_init, tree_encode, tree_out_dim, tree_free,
    NULL,
};

int nlp_encoder_trees(const struct nlp_encoder_kind *k)
{
    if (k == &nlp_encoder_childsum) {
        return 1;
    }
    return k == &nlp_encoder_treelstm || k == &nlp_encoder_rnn ||
                   k == &nlp_encoder_mvrnn || k == &nlp_encoder_rntn ||
                   k == &nlp_encoder_treernn || k == &nlp_encoder_treecell
               ? 2
               : 0;
}

struct gr_tensor *nlp_encoder_node_states(struct nlp_encoder *e)
{
    return nlp_encoder_trees(e->kind) ? tree_nodes(e) : NULL;
}
