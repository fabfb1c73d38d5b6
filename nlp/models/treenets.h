/* nlp/models/treenets.h — models that are given their trees (issue 25):
 * the binary (N = 2) constituency Tree-LSTM and the Child-Sum Tree-LSTM of
 * hybrid_and_trees.md §3.1-§3.2 (Tai, Socher & Manning 2015), and the
 * recursive nets RNN, MV-RNN, RNTN, TreeRNN, TreeCell, executed by
 * tree level over a batch of trees on the kernel layer (CPU and CUDA, the
 * tape differentiates it).
 *
 * A tree is a parent array: node j's parent is parent[j] (-1 for the one
 * root), its children are the nodes whose parent it is, in increasing
 * index order (left to right). word[j] is the token id a node reads (every
 * leaf has one; an internal node has -1, or a word in a dependency tree,
 * which only Child-Sum reads). label[j] (or label == NULL) is the node's
 * class, -1 for none; the model does not read it. name (may be NULL)
 * names the tree in messages ("train.txt:12", "test3 pair 17").
 *
 * Level batching: level(leaf) = 0, level(j) = 1 + max level of its
 * children. Level l of every tree of the batch is one group, computed with
 * one GEMM per level. The children's states are gathered by index: from
 * each earlier group they come from, one gr_embedding of just those rows;
 * the pieces are concatenated under a zero row (the absent child) and one
 * more gr_embedding puts each child in its slot, so every child's state is
 * copied a constant number of times whatever the depth. With
 * NLP_TREE_NODE_BY_NODE every node is its own group (the order of a
 * per-node recursion; tests compare the two). The states of every group
 * are concatenated once at the end.
 *
 * Binary Tree-LSTM (§3.2, BinaryTreeLSTM.lua):
 *   leaf:     [c; o~] = W_leaf x + b_leaf          (W_leaf [2H, E])
 *             c = c, h = σ(o~) ⊙ tanh(c)
 *   internal: z = U [h_L; h_R] + b_L + b_R          (U [5H, 2H]; z rows
 *             in the order i, f_L, f_R, o, u)
 *             c = σ(i) ⊙ tanh(u) + σ(f_L) ⊙ c_L + σ(f_R) ⊙ c_R
 *             h = σ(o) ⊙ tanh(c)
 *   Parameters "<prefix>.leaf.weight" [2H, E], ".leaf.bias" [2H],
 *   ".comp.weight" [5H, 2H], ".comp.bias_l", ".comp.bias_r" [5H]: for
 *   E 300, H 150 the reference's 316,800.
 *   A node with one child or more than two is refused (nlp_tree_check).
 *
 * Child-Sum Tree-LSTM (§3.1):
 *   [a_i; a_o; a_u; a_f] = W x_j + b_W   (W [4H, E]; x_j = 0 for a node
 *                                          without a word)
 *   h~ = Σ_k h_k;  [i; o; u] = U_iou h~ + b_iou + [a_i; a_o; a_u]
 *   f_k = σ(U_f h_k + b_f + a_f)
 *   c = σ(i) ⊙ tanh(u) + Σ_k f_k ⊙ c_k,  h = σ(o) ⊙ tanh(c)
 *   a leaf is computed with one zero child. Parameters ".W.weight" [4H, E],
 *   ".W.bias" [4H], ".U_iou.weight" [3H, H], ".U_iou.bias" [3H],
 *   ".U_f.weight" [H, H], ".U_f.bias" [H]: for E 300, H 168 the
 *   reference's 315,840.
 *
 * The binary recursive nets (Socher et al. 2011-2013; docs/nlp/trees.md
 * has the sources), with x = [h_L; h_R]:
 *   rnn       leaf h = the word vector (E = H); p = tanh(W x + b)
 *             ".comp.weight" [H, 2H], ".comp.bias" [H]
 *   rntn      leaf as rnn; p = tanh(x^T V^[1:H] x + W x + b), the tensor
 *             ".comp.V" [2H, H, 2H] with V[i, k, j] = V^[k]_ij
 *   mvrnn     every word a vector (E = H) and a matrix, ".wmat" [V, H*H]
 *             (row-major H x H, init I + U(-0.01, 0.01));
 *             p = tanh(W [B a; A b] + b) for children (a, A), (b, B);
 *             P = W_M [A; B], ".comp.WM" [H, 2H]
 *   treernn   leaf h = W_leaf x_word + b_leaf (".leaf.weight" [H, E]);
 *             p = tanh(W x + b) (the TreeRNN row of the OM thesis)
 *   treecell  leaf h = LN(W_leaf x_word + b_leaf); z = W_2 ReLU(W_1 x +
 *             b_1) + b_2 (".cell.fc1" [4H, 2H], ".cell.fc2" [4H, 4H]),
 *             h = LN(σ(g_v) ⊙ h_L + σ(g_h) ⊙ h_R + σ(g_c) ⊙ u) with z =
 *             (g_v, g_h, g_c, u) and one LayerNorm ".ln" shared by leaf and
 *             cell: ordered_memory.md eqs 3.5.1 and 3.5.12-13 on the given
 *             tree (the OM thesis's TreeCell row); no cell dropout.
 *
 * Init: every weight and bias U(-1/√in, 1/√in) (PyTorch's Linear default,
 * the reference's nn.Linear in Torch7 is the same form); the RNTN tensor
 * U(-1/(2H), 1/(2H)); LayerNorm 1 and 0.
 *
 * Errors: GR_EINVAL naming the tree and node (malformed parent array,
 * binary model given a unary or n-ary node); op failures as the context's
 * message. Memory: the model owns host scratch (nlp_treenet_free).
 */
#ifndef GROVE_NLP_MODELS_TREENETS_H
#define GROVE_NLP_MODELS_TREENETS_H

#include <stdint.h>

#include "kernels/rng.h"
#include "kernels/tensor.h"

struct nlp_tree {
    int32_t n_nodes;
    const int32_t *parent; /* [n_nodes], -1 for the root */
    const int32_t *word;   /* [n_nodes], token id or -1 */
    const int32_t *label;  /* [n_nodes] or NULL; -1 for none */
    const char *name;      /* for messages, or NULL */
};

enum nlp_tree_cell {
    NLP_TREE_BINARY_LSTM = 0, /* "treelstm" */
    NLP_TREE_CHILDSUM = 1,    /* "childsum" */
    NLP_TREE_RNN = 2,         /* "rnn" */
    NLP_TREE_MVRNN = 3,       /* "mvrnn" */
    NLP_TREE_RNTN = 4,        /* "rntn" */
    NLP_TREE_TREERNN = 5,     /* "treernn" */
    NLP_TREE_TREECELL = 6,    /* "treecell" */
};

/* 1 if the cell composes exactly two children (all but Child-Sum). */
int nlp_tree_cell_binary(enum nlp_tree_cell cell);

enum { NLP_TREE_BY_LEVEL = 0, NLP_TREE_NODE_BY_NODE = 1 };

/* Checks a tree: one root, every parent in range, no cycle, every leaf
 * with a word in [0, vocab) (vocab <= 0: not checked); binary: every
 * internal node has exactly two children. GR_EINVAL "tree NAME: node J
 * ..." otherwise. */
int nlp_tree_check(const struct nlp_tree *t, int binary, int32_t vocab);

struct nlp_span; /* nlp/tasks/parse.h */

/* A parent array from brackets over n_leaves words: nodes 0..n_leaves-1
 * are the leaves, node n_leaves + i is spans[i]; each node's parent is the
 * smallest span containing it (an identical span earlier in spans[] is
 * the parent of a later one: a unary chain). parent[n_leaves + n_spans].
 * Returns 0, or GR_ENOMEM. Crossing brackets give no error here;
 * nlp_tree_check finds a forest. */
int nlp_tree_from_spans(int32_t n_leaves, const struct nlp_span *spans,
                        int32_t n_spans, int32_t *parent);

struct nlp_treenet {
    enum nlp_tree_cell cell;
    int32_t E, H;
    struct gr_tensor *emb; /* [V, E], the caller's (may be shared) */
    /* binary */
    struct gr_tensor *leaf_w, *leaf_b, *comp_w, *comp_bl, *comp_br;
    /* child-sum */
    struct gr_tensor *W_w, *W_b, *Uiou_w, *Uiou_b, *Uf_w, *Uf_b;
    /* recursive nets (comp_w [H, 2H] and leaf_w [H, E] reused) */
    struct gr_tensor *comp_b, *V, *WM, *wmat;
    struct gr_tensor *fc1_w, *fc1_b, *fc2_w, *fc2_b, *ln_g, *ln_b;
    /* dropout on the word vectors the leaves (and Child-Sum's nodes) read,
     * for the next forward: p in [0, 1), masks from rng (0: none) */
    float dropout_in;
    struct gr_rng rng;
    /* host scratch of the schedule */
    int32_t *buf;
    int64_t buf_cap;
};

/* Creates the composition parameters under `prefix` ("enc"); emb is the
 * word table [V, E] the leaves read (not initialised here). */
int nlp_treenet_init(struct nlp_treenet *m, struct gr_ctx *ctx,
                      const char *prefix, enum nlp_tree_cell cell,
                      struct gr_tensor *emb, int32_t H, struct gr_rng rng);
void nlp_treenet_free(struct nlp_treenet *m);

/* The forward over trees[0..B) (checked with nlp_tree_check first):
 * *nodes [Σ n_nodes, H] the h of every node, trees concatenated in order
 * and nodes in their index order; *roots [B, H] the root h of each tree.
 * Either output pointer may be NULL. mode: NLP_TREE_BY_LEVEL or
 * NLP_TREE_NODE_BY_NODE. Returns 0 or a negative GR_E*. */
int nlp_treenet_forward(struct nlp_treenet *m, struct gr_ctx *ctx,
                         const struct nlp_tree *trees, int32_t B, int mode,
                         struct gr_tensor **nodes, struct gr_tensor **roots);

#endif
