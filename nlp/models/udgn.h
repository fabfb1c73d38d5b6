/* nlp/models/udgn.h — the Unsupervised Dependency Graph Network (UDGN,
 * thesis chapter 4, ../shared/spec/udgn.md §3-§5) on the kernel layer:
 * a parser whose head distribution becomes a symmetric dependency mask
 * over competing channels of DGN layers, trained by masked language
 * modelling only.
 *
 *   parser   e = E_p[x] + Σ_k softmax(T[x])[k] U[:, k]  (k = 1..K; K = 0:
 *            e = E_p[x], the released code), P BiLSTM layers (packed:
 *            padding never reaches a real position; padded outputs are 0),
 *            [a; b] = W_f h + c_f, s_ij = b_i·a_j / √d, P = softmax_j(s)
 *            with padded j excluded and the diagonal allowed (§3.2);
 *   mask     H = P with a zero diagonal; M = H + Hᵀ − H⊙Hᵀ (eq. 4.2.8),
 *            symmetric, in [0, 1], M_ii = 0 (§4);
 *   DGN      per layer: [Q|K|V|G] = X W + c; s^c_ij = (Q^c_i·K^c_j +
 *            r^c_dir(i,j)) / √d_c (the bias BEFORE the scaling, as the
 *            code; none on the diagonal); π_ij = softmax over the C
 *            channels; w^c_ij = π^c_ij (M_ij + 1e-6), 0 where j is padding,
 *            then attention dropout; o^c_i = σ(G^c_i) ⊙ Σ_j w^c_ij
 *            tanh(V^c_j); X += drop(W_o drop(o) + c_o) (§5);
 *   MLM head Z = drop(LN(X^L)); logits = Z Eᵀ + c_out (tied to the input
 *            embedding E); loss = mean cross entropy over masked positions
 *            (nlp/models/mlm_head.h, shared with the other MLM models).
 * Ablations of Table 4.4 (udgn.md §9, grove's reading): no_nonlinear
 * (tanh(V) -> V), no_gates (no σ(G)), sigmoid (π^c = σ(s^c) per channel),
 * single channel (config C = 1, d_c = C·d_c: π ≡ 1, w = M + 1e-6), abs_pos
 * (no r; a learned absolute position table added to E[x]).
 *
 * Parameter names (the reference's modules, grove's spelling):
 * emb.weight [V, d] (E), parser.emb.weight [V, d] (E_p), parser.pos.table
 * [V, K+1] (T, zeros), parser.pos.proj [d, K] (U as a bias-free Linear
 * K -> d), parser.lstm.L.{fw,bw}.{weight_ih,weight_hh,bias_ih,bias_hh},
 * parser.mlp.{weight [2d, 2d], bias}, layers.L.proj.{weight [4Cd_c, d],
 * bias}, layers.L.relpos [2, C] (row 0 LEFT: j < i, row 1 RIGHT: j > i),
 * layers.L.out.{weight [d, Cd_c], bias}, norm.{weight, bias}, out_bias
 * [V], and pos_emb [max_len, d] with abs_pos. nlp_udgn_param_count gives
 * 49,928,878 (K = 0) / 49,996,226 (K = 5) at the PTB defaults.
 *
 * Layout: batch-major, ids [B, n] row-major (right padding, lengths
 * given), activations [B, n, d]. Everything is a composition of kernel ops
 * (CPU and CUDA, differentiated by the tape).
 *
 * Memory: parameters in the context's persistent arena, activations in the
 * step arena. Errors: init returns 0 or a negative code (gr_last_error);
 * forward functions return NULL / negative with the context's error set.
 * One thread per context.
 *
 *   struct nlp_udgn_config c = nlp_udgn_config_default(vocab_size);
 *   struct nlp_udgn m;
 *   nlp_udgn_init(&m, ctx, &c, seed);
 *   struct nlp_udgn_out o;
 *   nlp_udgn_forward(ctx, &m, ids, lens, B, n, targets, 1, rng, &o);
 *   gr_backward(ctx, o.loss);          // o.P [B, n, n] head distributions
 */
#ifndef GROVE_NLP_MODELS_UDGN_H
#define GROVE_NLP_MODELS_UDGN_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/layers.h"
#include "kernels/rng.h"
#include "kernels/tensor.h"

#define NLP_UDGN_MAX_LAYERS 32
#define NLP_UDGN_MAX_PARSER_LAYERS 8

struct nlp_udgn_config {
    int vocab;          /* V */
    int d;              /* --nemb: embedding / hidden size, 512 */
    int layers;         /* --nlayers: DGN layers, 8 */
    int channels;       /* --nheads: C, 8 */
    int head_size;      /* --head-size: d_c, 128 */
    int parser_layers;  /* --parser-layers: BiLSTM layers, 3 */
    int pos_classes;    /* --pos-classes: K, 5 (0 = released code) */
    float dropout;      /* 0.2 */
    float parser_dropout; /* 0.2 */
    float dropatt;      /* 0.1 */
    /* Table 4.4 ablations (0 = the full model) */
    int no_nonlinear;   /* tanh(V) -> V */
    int no_gates;       /* no σ(G) */
    int sigmoid;        /* π^c = σ(s^c) instead of the channel softmax */
    int abs_pos;        /* no relative-position bias; learned positions */
    int max_len;        /* abs_pos: rows of pos_emb, 512 */
};

/* udgn.md §2 defaults for a vocabulary of `vocab` words. */
struct nlp_udgn_config nlp_udgn_config_default(int vocab);

/* "− competition + single channel": C = 1 with d_c = C·d_c. */
void nlp_udgn_config_single_channel(struct nlp_udgn_config *c);

/* The parameter count implied by a config (udgn.md §5's formula). */
int64_t nlp_udgn_param_count(const struct nlp_udgn_config *c);

struct nlp_udgn_layer {
    struct gr_tensor *proj_w, *proj_b; /* [4Cd_c, d], [4Cd_c] */
    struct gr_tensor *relpos;          /* [2, C] or NULL (abs_pos) */
    struct gr_tensor *out_w, *out_b;   /* [d, Cd_c], [d] */
};

struct nlp_udgn {
    struct nlp_udgn_config cfg;
    struct gr_tensor *emb;             /* E [V, d] */
    struct gr_tensor *pemb;            /* E_p [V, d] */
    struct gr_tensor *ptable, *pproj;  /* T [V, K+1], U [d, K]; NULL if K 0 */
    struct gr_lstm fw[NLP_UDGN_MAX_PARSER_LAYERS];
    struct gr_lstm bw[NLP_UDGN_MAX_PARSER_LAYERS];
    struct gr_tensor *mlp_w, *mlp_b;   /* W_f [2d, 2d], c_f [2d] */
    struct nlp_udgn_layer layer[NLP_UDGN_MAX_LAYERS];
    struct gr_tensor *norm_w, *norm_b; /* [d] */
    struct gr_tensor *out_bias;        /* [V] */
    struct gr_tensor *pos_emb;         /* [max_len, d] or NULL */
};

/* Creates the parameters in ctx, initialised as udgn.md §3/§5 from
 * `seed`. GR_EINVAL names a bad size. */
int nlp_udgn_init(struct nlp_udgn *m, struct gr_ctx *ctx,
                  const struct nlp_udgn_config *c, uint64_t seed);

/* What one forward returns (step tensors; NULL when not computed). */
struct nlp_udgn_out {
    struct gr_tensor *P;      /* [B, n, n] parser softmax, diagonal kept */
    struct gr_tensor *M;      /* [B, n, n] dependency mask */
    struct gr_tensor *X;      /* [B, n, d] last DGN layer's output */
    struct gr_tensor *logits; /* [N, V] at the N masked positions */
    struct gr_tensor *loss;   /* scalar, NULL without targets or when no
                                 position is masked */
    int32_t n_masked;
};

/* The parser alone: ids [B, n] i32 (a device tensor), lens host [B] ->
 * P [B, n, n]. */
struct gr_tensor *nlp_udgn_parser(struct gr_ctx *ctx, const struct nlp_udgn *m,
                                  struct gr_tensor *ids, const int32_t *lens,
                                  int training, struct gr_rng rng);

/* Eq. 4.2.8 on P [B, n, n]: the diagonal zeroed, then H + Hᵀ − H⊙Hᵀ. */
struct gr_tensor *nlp_udgn_mask(struct gr_ctx *ctx, struct gr_tensor *P);

/* One DGN layer l: x [B, n, d], M [B, n, n], keep [B, n, 1, 1] f32 (1 real
 * key, 0 padding) -> [B, n, d]. pi_out (may be NULL) receives the channel
 * probabilities π [B, n(j), n(i), C] (sender j, receiver i). */
struct gr_tensor *nlp_udgn_layer_forward(struct gr_ctx *ctx,
                                         const struct nlp_udgn *m, int l,
                                         struct gr_tensor *x,
                                         struct gr_tensor *M,
                                         struct gr_tensor *keep,
                                         int training, struct gr_rng rng,
                                         struct gr_tensor **pi_out);

/* The whole model: input ids host [B, n] (masked, right-padded with
 * <pad>), lens host [B], targets host [B, n] (original id at masked
 * positions, -1 elsewhere) or NULL. The parser reads `ids` (masked while
 * training, as the reference). Returns 0 or a negative code. */
int nlp_udgn_forward(struct gr_ctx *ctx, const struct nlp_udgn *m,
                     const int32_t *ids, const int32_t *lens, int32_t B,
                     int32_t n, const int32_t *targets, int training,
                     struct gr_rng rng, struct nlp_udgn_out *out);

/* For parsing: H of one sentence (unmasked ids [n], dropout off) into
 * host H [n*n] with the diagonal 0 (dependency_parsing.md §1). */
int nlp_udgn_heads(struct gr_ctx *ctx, const struct nlp_udgn *m,
                   const int32_t *ids, int32_t n, float *H);

/* The channel probabilities of every layer for one unmasked sentence
 * (dropout off) into host pi [L, n, n, C]: pi[l][j][i][c] = π^c of layer
 * l for the message from sender j to receiver i (eq. 4.2.11); for the
 * channel/label correlation of thesis Table 4.3. */
int nlp_udgn_channels(struct gr_ctx *ctx, const struct nlp_udgn *m,
                      const int32_t *ids, int32_t n, float *pi);

#endif
