/* nlp/models/seq2seq.h — the Transformer encoder-decoder of issue 23 §3
 * (Vaswani et al. 2017) on nlp/models/transformer.h: source and target
 * embeddings (N(0, D^-1/2), scaled by √D) with sinusoidal positions, an
 * encoder stack over the padded source, a decoder stack (causal, attending
 * to the source memory), and the output layer tied to the target embedding
 * (logits = y · E_tgtᵀ, T2T's and fairseq's default). Training loss: the
 * label-smoothed cross entropy over the real target tokens
 * (kernels/attention.h). Decoding: greedy and beam search with the GNMT
 * length penalty ((5 + |y|) / 6)^α (T2T's; α = 0 ranks by log-probability).
 *
 * Token ids: pad, bos, eos given by the config; a target sequence is fed
 * as bos y_1 .. y_n (tgt_in) and predicted as y_1 .. y_n eos (tgt_out).
 * Shapes time-major: src [Ts, B] i32 right-padded, tgt [Ty, B] i32.
 *
 * Memory: parameters in the context's persistent arena under "s2s.";
 * decoding runs the decoder one position at a time with a key/value cache
 * (nlp_transformer_decode_step; beam search reorders the cache's rows)
 * inside one step of the arena; m.no_cache = 1 recomputes the whole
 * prefix at every step instead (O(len²) decoder work; the same tokens,
 * test_nlp_seq2seq_model). Errors: 0/negative or NULL with the
 * context's error (gr_ctx_error) or gr_last_error. One thread per context.
 *
 *   struct nlp_s2s_config c = nlp_s2s_config_default(V, V);
 *   struct nlp_s2s m;
 *   nlp_s2s_init(&m, ctx, &c, gr_rng_make(seed, 0));
 *   loss = nlp_s2s_loss(ctx, &m, src, src_len, tgt_in, tgt_out, 0.1f, 1,
 *                       rng);
 *   nlp_s2s_greedy(ctx, &m, src_host, src_len, Ts, B, 50, out, out_len);
 *   nlp_s2s_beam(ctx, &m, src_host, src_len, Ts, B, 4, 0.6f, 50, out,
 *                out_len);
 */
#ifndef GROVE_NLP_MODELS_SEQ2SEQ_H
#define GROVE_NLP_MODELS_SEQ2SEQ_H

#include <stdint.h>

#include "kernels/rng.h"
#include "kernels/tensor.h"
#include "nlp/models/transformer.h"

struct nlp_s2s_config {
    int32_t src_vocab, tgt_vocab;
    int32_t pad, bos, eos;
    int d, layers, heads, ffn;
    float dropout, dropout_attn;
    int post_norm, ft_gate, ft_conv;
};

/* T2T "tiny"-like: D 128, 2 layers, 4 heads, ffn 512, dropout 0.1,
 * pre-norm; pad 0, bos 1, eos 2. */
struct nlp_s2s_config nlp_s2s_config_default(int32_t src_vocab,
                                             int32_t tgt_vocab);

struct nlp_s2s {
    struct nlp_s2s_config cfg;
    int no_cache; /* decoding: 1 recomputes the prefix at every step (the
                     reference the key/value cache is tested against) */
    struct gr_tensor *src_emb, *tgt_emb; /* [V, D] */
    struct nlp_transformer enc, dec;
};

int nlp_s2s_init(struct nlp_s2s *m, struct gr_ctx *ctx,
                 const struct nlp_s2s_config *c, struct gr_rng rng);
void nlp_s2s_free(struct nlp_s2s *m);

/* src [Ts, B] i32, src_len [B] host (1..Ts) -> memory [Ts, B, D]. */
struct gr_tensor *nlp_s2s_encode(struct gr_ctx *ctx, const struct nlp_s2s *m,
                                 struct gr_tensor *src,
                                 const int32_t *src_len, int training,
                                 struct gr_rng rng);

/* Decoder logits [Ty·B, V] (row t·B + b) for tgt_in [Ty, B]. */
struct gr_tensor *nlp_s2s_logits(struct gr_ctx *ctx, const struct nlp_s2s *m,
                                 struct gr_tensor *memory,
                                 const int32_t *src_len,
                                 struct gr_tensor *tgt_in, int training,
                                 struct gr_rng rng);

/* Mean label-smoothed cross entropy over the tokens of tgt_out [Ty, B]
 * that are not pad. */
struct gr_tensor *nlp_s2s_loss(struct gr_ctx *ctx, const struct nlp_s2s *m,
                               struct gr_tensor *src, const int32_t *src_len,
                               struct gr_tensor *tgt_in,
                               struct gr_tensor *tgt_out, float eps,
                               int training, struct gr_rng rng);

/* Greedy decoding of B sources (src host [Ts, B], src_len [B]): out
 * [B, max_len] host ids without bos/eos, out_len [B]. */
int nlp_s2s_greedy(struct gr_ctx *ctx, const struct nlp_s2s *m,
                   const int32_t *src, const int32_t *src_len, int32_t ts,
                   int32_t b, int32_t max_len, int32_t *out,
                   int32_t *out_len);

/* Beam search with `beam` hypotheses per source and length penalty alpha;
 * a hypothesis ends at eos or at max_len tokens; the best finished one by
 * score / ((5 + len) / 6)^alpha (len counting eos) is returned. Beam 1 is
 * greedy decoding. */
int nlp_s2s_beam(struct gr_ctx *ctx, const struct nlp_s2s *m,
                 const int32_t *src, const int32_t *src_len, int32_t ts,
                 int32_t b, int32_t beam, float alpha, int32_t max_len,
                 int32_t *out, int32_t *out_len);

/* The warm-up + inverse-square-root schedule (Vaswani et al.; T2T's
 * "noam"): factor · d^-0.5 · min(step^-0.5, step · warmup^-1.5), step
 * counted from 1. */
double nlp_s2s_noam_lr(int64_t step, int d, int64_t warmup, double factor);

#endif
