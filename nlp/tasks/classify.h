/* nlp/tasks/classify.h — sentence and sentence-pair classification with any
 * encoder of nlp/models/encoder.h: the harness of the logic, ListOps and SST
 * tasks (ordered_memory.md §7, §9; on_lstm.md §11), on train/.
 *
 * A task loader (nlp/tasks/classify_tasks.c) fills a struct nlp_cls_data:
 * token ids in one pool, examples pointing into it, three splits. The
 * trainer batches them (shuffled per epoch from the seed; ListOps also in
 * length buckets, §9), pads them (right, or left when the encoder reads the
 * last step), encodes (a pair batch is B premises then B hypotheses in one
 * encode, §7), applies the head, and trains with Adam, clipping and the
 * plateau schedule on validation accuracy, writing a train/ run folder.
 *
 *   struct nlp_cls_data d;  ... loader ...
 *   struct nlp_cls_train_config tc;
 *   nlp_cls_train_config_default(&tc, "logic");
 *   tc.enc = encoder config (nlp_encoder_config_default + vocab);
 *   tc.out_dir = "runs/om-logic";
 *   nlp_cls_train(&tc, &d, &ctx_config, &result);
 *
 * Heads: a pair's features are [u; v; u ⊙ v; |u − v|] (4D) → dropout →
 * Linear(4D, H) → ELU → dropout → Linear(H, classes) (§7, §11); a single
 * sequence's: dropout → Linear(D, classes), or the pair's MLP form when
 * head_hidden > 0.
 */
#ifndef GROVE_NLP_TASKS_CLASSIFY_H
#define GROVE_NLP_TASKS_CLASSIFY_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/tensor.h"
#include "nlp/models/encoder.h"
#include "nlp/tasks/parse.h"

#define NLP_CLS_MAX_CLASSES 16
#define NLP_CLS_MAX_GROUPS 16

struct nlp_cls_example {
    int64_t a, b;         /* offsets of the sequences in the token pool */
    int32_t len_a, len_b; /* len_b = 0 for single-sequence tasks */
    int32_t label;
    int32_t group;        /* logic: operators k (0..12); else -1 */
    /* given trees (issue 25; nlp_cls_add_tree): nodes [ta, ta + tn_a) of
     * the data's tree pool for sequence a (tn_a = 0: none), same for b */
    int64_t ta, tb;
    int32_t tn_a, tn_b;
    int32_t line;         /* 1-based line in its file, or 0 (messages) */
};

struct nlp_cls_split {
    struct nlp_cls_example *ex;
    int64_t n, cap;
};

enum { NLP_CLS_TRAIN = 0, NLP_CLS_VALID = 1, NLP_CLS_TEST = 2 };

/* Evaluation batches hold at most this many tokens with the padding (256
 * sequences of 64): memory then stays near that of a training batch on
 * long test sequences (nlp_cls_evaluate). */
#define NLP_CLS_EVAL_TOKENS (256 * 64)

/* ListOps trees generated without a training file, by default */
#define NLP_CLS_LISTOPS_GENERATE 90000

struct nlp_cls_data {
    char task[16];       /* "logic", "listops", "sst2", "sst5", or a test's */
    int pair;            /* 1: sentence pairs */
    int n_classes;
    char class_names[NLP_CLS_MAX_CLASSES][8];
    int n_groups;        /* > 0: test accuracy per group 1..n_groups-1 */
    int bucket;          /* 1: length-bucketed batches (ListOps, §9) */
    int32_t vocab_size;  /* ids in [0, vocab_size) */
    int32_t pad_id;
    char *vocab_text;    /* for tasks with a data-built vocabulary: the
                          * words, one per line in id order (kept in the
                          * checkpoint); NULL for a fixed vocabulary */
    int32_t *tokens;
    int64_t n_tokens, cap_tokens;
    struct nlp_cls_split split[3];
    /* the tree pool (nlp_cls_add_tree; NULL when the task gives none):
     * parent (within the tree, -1 root), word (token id or -1), label
     * (class or -1) of every node; node_labels: some label >= 0 */
    int32_t *tree_parent, *tree_word, *tree_label;
    int64_t n_tree_nodes, cap_tree_nodes;
    int node_labels;
    int dep_trees;       /* 1: the trees are SST's dependency conversion
                          * (a "trees dependency" config line; no negation
                          * analysis, which reads constituency shapes) */
    int sst_train_unit;  /* SST: enum nlp_sst_unit of the training split
                          * (an "sst-train phrases|nodes" config line when
                          * not the default, sentences) */
    int32_t listops_generated; /* ListOps: the training trees generated
                          * (no training file), else 0; a "listops-n N"
                          * config line when not the default 90,000 */
    char summary[1024];  /* what the loader read, for the data summary */
};

void nlp_cls_data_init(struct nlp_cls_data *d);
void nlp_cls_data_free(struct nlp_cls_data *d);

/* Appends an example to split s: its token ids are copied into the pool. */
int nlp_cls_add(struct nlp_cls_data *d, int s, const int32_t *a,
                int32_t len_a, const int32_t *b, int32_t len_b, int32_t label,
                int32_t group);

/* Gives the last example added to split s its tree (second = 1: the
 * hypothesis of a pair): n nodes as nlp/models/treenets.h's parent array;
 * label may be NULL (no node labels). The arrays are copied. */
int nlp_cls_add_tree(struct nlp_cls_data *d, int s, int second, int32_t n,
                     const int32_t *parent, const int32_t *word,
                     const int32_t *label);

/* For the models given their trees: checks every tree of d (binary = 1:
 * internal nodes with two children only), GR_EINVAL naming the task,
 * split, example and line: "sst5 train example 17 (line 18): tree: node 3
 * has 1 child (a unary chain) ...", or that an example has no tree. */
int nlp_cls_check_trees(const struct nlp_cls_data *d, int binary);

struct nlp_cls_train_config {
    struct nlp_encoder_config enc;
    int32_t head_hidden; /* H of the MLP head; 0: a linear head (single) */
    float dropout_out;   /* r_o, on the head's input and hidden layer */
    float lr;            /* Adam 1e-3, betas (beta1, 0.999), eps 1e-9 */
    float beta1, beta2, eps;
    float wdecay;        /* 1.2e-6 */
    float clip;          /* 1.0 */
    float plateau_factor; /* 0.5 */
    int32_t plateau_patience; /* 2 */
    int32_t epochs;      /* 50 */
    int32_t batch;       /* 128 (pairs or sequences) */
    int32_t eval_batch;  /* 256 */
    int64_t eval_tokens; /* NLP_CLS_EVAL_TOKENS; 0: no cap */
    int32_t max_batches; /* > 0: cut every epoch after this many (smoke) */
    int32_t test_every;  /* evaluate test every N epochs (and the last) */
    int select_on_test;  /* the ListOps reference's protocol (§9 note) */
    uint64_t seed;       /* 1111 */
    const char *out_dir; /* the run folder (required) */
    int force, resume, quiet;
    int argc;
    char *const *argv;
    const char *data_desc; /* how the data was chosen, kept in the config */
    /* word vectors (nlp/data/vectors.h, GloVe text) for the rows of
     * enc.emb.weight of a fresh run; NULL: random init */
    const char *vectors;
};

/* The reference's defaults for `task` (ordered_memory.md §9; on_lstm.md
 * §11 for the RNN encoders' heads); enc is left for the caller. */
void nlp_cls_train_config_default(struct nlp_cls_train_config *tc,
                                  const char *task);

struct nlp_cls_eval {
    double loss, acc;
    int64_t n;
    double group_acc[NLP_CLS_MAX_GROUPS]; /* NaN where the group is empty */
    int64_t group_n[NLP_CLS_MAX_GROUPS];
    /* models given their trees, on data with node labels (SST): accuracy
     * over every labelled node (NaN / 0 otherwise) */
    double node_acc;
    int64_t node_n;
    /* SST negation (nlp_cls_negation_add): accuracy on negated positive
     * and negated negative nodes, and their counts */
    double neg_pos_acc, neg_neg_acc;
    int64_t neg_pos_n, neg_neg_n;
    int64_t batches; /* the batches it took (the token cap's effect) */
};

/* The negation analysis of the SST tables (Socher et al. 2013, §5.4), as
 * grove defines it on given trees: a negation node is an internal node
 * whose first child is a leaf reading a negation word (neg_word[id] != 0:
 * not, n't, never, no; any case). With c its second child and gold labels
 * from the trees:
 *   negated positive  c positive, the node negative: right when the model
 *                     predicts the node negative (SST-2: class 0 beats 1;
 *                     SST-5: argmax in 0-1);
 *   negated negative  c negative, the node not negative (SST-2: neutral
 *                     nodes, label -1, count): right when the model's
 *                     positivity rises from c to the node (SST-2: logit 1 -
 *                     logit 0; SST-5: the expected class under softmax).
 * Positive / negative: SST-2 labels 1 / 0, SST-5 3-4 / 0-1. logits [Σ
 * n_nodes, n_classes] in the order of trees[0..B) (n_classes 2 or 5).
 * Adds to the four counters. */
void nlp_cls_negation_add(const struct nlp_tree *trees, int32_t B,
                          const float *logits, int n_classes,
                          const uint8_t *neg_word, int32_t vocab,
                          int64_t *np_ok, int64_t *np_n, int64_t *nn_ok,
                          int64_t *nn_n);

struct nlp_cls_train_result {
    int32_t epochs_done;
    int32_t best_epoch;
    double best_valid_acc;
    struct nlp_cls_eval test; /* of best.ckpt (NaN acc when no test set) */
    double wall_s;
    int stopped;              /* a signal stopped it (train/train.h) */
    int config_mismatch;      /* --resume with other options (exit 2) */
};

/* Trains into tc->out_dir (fresh, or --resume from its last.ckpt), then
 * evaluates best.ckpt on the test split. With epochs 0: writes the initial
 * model as last.ckpt and best.ckpt and evaluates nothing. */
int nlp_cls_train(const struct nlp_cls_train_config *tc,
                  struct nlp_cls_data *d, const struct gr_ctx_config *cc,
                  struct nlp_cls_train_result *res);

/* ---- a trained classifier ---- */

struct nlp_cls_model;

/* Opens a checkpoint written by nlp_cls_train: GR_EFORMAT naming the file
 * for anything else (an LM or OCN checkpoint). task_out (cap 16) receives
 * its task name; vocab_text (malloc'd, or NULL) its vocabulary. */
int nlp_cls_model_load(struct nlp_cls_model **out, const char *path,
                       const struct gr_ctx_config *cc, char *task_out,
                       char **vocab_text);
void nlp_cls_model_free(struct nlp_cls_model *m);
const struct nlp_encoder_config *nlp_cls_model_encoder(
    const struct nlp_cls_model *m);

/* Accuracy and loss on split s of d (evaluation mode; validation with the
 * encoder's training slot count, test with its evaluation one, §9), in
 * batches of similar lengths of at most `batch` examples and at most
 * `max_tokens` tokens with the padding (0: no cap; an example longer than
 * the cap goes alone). Batching changes no result beyond rounding, except
 * where padding enters the encoding (OM's left-padded ListOps). */
int nlp_cls_evaluate(struct nlp_cls_model *m, const struct nlp_cls_data *d,
                     int s, int32_t batch, int64_t max_tokens,
                     struct nlp_cls_eval *out);

/* The encoder's structure distances of sequence `ids[0..len)` alone
 * (batch of one): d[0..len). GR_EUNSUPPORTED when the model induces no
 * tree. */
int nlp_cls_distances(struct nlp_cls_model *m, const int32_t *ids,
                      int32_t len, float *d);

/* ---- induced trees (ordered_memory.md §8; grove nlp classify trees) ---- */

/* 1 if the model's encoder induces trees (om, structformer, and those
 * with distances in the encoder table: onlstm, ft, cft, fft); 0 for lstm
 * and the others. */
int nlp_cls_has_trees(const struct nlp_cls_model *m);

/* The tree the model induces over ids[0..len) encoded alone (batch of
 * one, evaluation mode; OM with the eval slot count, cfg.slots_eval):
 * Ordered Memory by ordered_memory.md §8 (distances from the forward
 * pointers' argmax, nlp_om_distances, then build_tree), StructFormer
 * from its gap distances δ (udgn.md §7, the sentence calibrated alone) by
 * splitting each span at its largest gap (nlp_parse_gaps), any other
 * encoder from its distances (nlp_cls_distances) by the greedy top-down
 * parser nlp_parse_distances. The leaves where drop[i] != 0 (drop may be NULL)
 * are then deleted and unary nodes collapsed (logic: the parentheses),
 * as nlp_cls_tree_om / nlp_cls_tree_distances do. out[len] receives the
 * brackets over the kept leaves (numbered 0..kept-1, root included); the
 * return is their count (kept - 1 for kept >= 1) or a negative GR_E*:
 * GR_EUNSUPPORTED when the model induces no tree. */
int32_t nlp_cls_tree(struct nlp_cls_model *m, const int32_t *ids,
                     int32_t len, const uint8_t *drop, struct nlp_span *out);

/* The pure steps under nlp_cls_tree, for tests: an OM tree from integer
 * distances dist[0..n) (d_0 = N_eval, d_t = pointer argmax;
 * nlp_om_build_tree), and a tree from real distances d[0..n) (larger =
 * higher; nlp_parse_distances); then the drop-and-collapse above. out[n]
 * as above; GR_ENOMEM on allocation failure. */
int32_t nlp_cls_tree_om(const int32_t *dist, int32_t n, const uint8_t *drop,
                        struct nlp_span *out);
int32_t nlp_cls_tree_distances(const float *d, int32_t n, const uint8_t *drop,
                               struct nlp_span *out);
/* The same from StructFormer's gap distances g[0..n) (g[i]: the gap after
 * leaf i; nlp_parse_gaps). */
int32_t nlp_cls_tree_gaps(const float *g, int32_t n, const uint8_t *drop,
                          struct nlp_span *out);

#endif
