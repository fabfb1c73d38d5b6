/* The Transformer encoder-decoder and its decoding (nlp/models/seq2seq.h). */
#include "nlp/models/seq2seq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "kernels/tape.h"

struct nlp_s2s_config nlp_s2s_config_default(int32_t src_vocab,
                                             int32_t tgt_vocab)
{
    struct nlp_s2s_config c;
    memset(&c, 0, sizeof c);
    c.src_vocab = src_vocab;
    c.tgt_vocab = tgt_vocab;
    c.pad = 0;
    c.bos = 1;
    c.eos = 2;
    c.d = 128;
    c.layers = 2;
    c.heads = 4;
    c.ffn = 512;
    c.dropout = 0.1f;
    c.dropout_attn = 0.1f;
    return c;
}

int nlp_s2s_init(struct nlp_s2s *m, struct gr_ctx *ctx,
                 const struct nlp_s2s_config *c, struct gr_rng rng)
{
    memset(m, 0, sizeof *m);
    int32_t ids[3] = {c->pad, c->bos, c->eos};
    for (int i = 0; i < 3; i++) {
        if (ids[i] < 0 || ids[i] >= c->tgt_vocab || ids[i] >= c->src_vocab) {
            return gr_error(GR_EINVAL, "seq2seq: pad/bos/eos %d, %d, %d "
                            "outside the vocabularies (%d, %d)", (int)c->pad,
                            (int)c->bos, (int)c->eos, (int)c->src_vocab,
                            (int)c->tgt_vocab);
        }
    }
    m->cfg = *c;
    m->src_emb = gr_param_new(ctx, "s2s.src_emb.weight",
                              gr_shape2(c->src_vocab, c->d));
    m->tgt_emb = gr_param_new(ctx, "s2s.tgt_emb.weight",
                              gr_shape2(c->tgt_vocab, c->d));
    if (m->src_emb == NULL || m->tgt_emb == NULL) {
        return gr_error(GR_EINVAL, "seq2seq: %s", gr_ctx_error(ctx));
    }
    struct gr_rng r1 = gr_rng_make(rng.seed,
                                   gr_rng_stream(rng.stream, 1, 0, 0));
    float sd = 1.0f / sqrtf((float)c->d);
    if (gr_tensor_rand_normal(m->src_emb, 0.0f, sd, r1) < 0 ||
        gr_tensor_rand_normal(m->tgt_emb, 0.0f, sd,
                              gr_rng_make(rng.seed,
                                          gr_rng_stream(rng.stream, 4, 0,
                                                        0))) < 0) {
        return GR_EINVAL;
    }
    struct nlp_transformer_config tc = nlp_transformer_config_default(c->d);
    tc.layers = c->layers;
    tc.heads = c->heads;
    tc.ffn = c->ffn;
    tc.dropout = tc.dropout_ffn = c->dropout;
    tc.dropout_attn = c->dropout_attn;
    tc.post_norm = c->post_norm;
    tc.ft_gate = c->ft_gate;
    tc.ft_conv = c->ft_conv;
    int rc = nlp_transformer_init(&m->enc, ctx, "s2s.encoder", &tc,
                                  gr_rng_make(rng.seed,
                                              gr_rng_stream(rng.stream, 2, 0,
                                                            0)));
    if (rc < 0) {
        return rc;
    }
    tc.decoder = 1;
    return nlp_transformer_init(&m->dec, ctx, "s2s.decoder", &tc,
                                gr_rng_make(rng.seed,
                                            gr_rng_stream(rng.stream, 3, 0,
                                                          0)));
}

void nlp_s2s_free(struct nlp_s2s *m)
{
    nlp_transformer_free(&m->enc);
    nlp_transformer_free(&m->dec);
    memset(m, 0, sizeof *m);
}

/* √D-scaled embedding + positions (+ dropout): [T, B, D]. */
static struct gr_tensor *embed(struct gr_ctx *ctx, const struct nlp_s2s *m,
                               struct gr_tensor *table,
                               struct gr_tensor *ids, int training,
                               struct gr_rng rng, int site)
{
    if (ids == NULL) {
        return NULL;
    }
    struct gr_tensor *x = gr_scale(ctx, gr_embedding(ctx, table, ids),
                                   sqrtf((float)m->cfg.d));
    x = gr_add(ctx, x,
               gr_positions_sinusoidal(ctx, ids->shape[0], m->cfg.d, 0));
    if (training && m->cfg.dropout > 0.0f && x != NULL) {
        x = gr_dropout(ctx, x, m->cfg.dropout,
                       gr_rng_make(rng.seed,
                                   gr_rng_stream(rng.stream, site, 0, 0)));
    }
    return x;
}

struct gr_tensor *nlp_s2s_encode(struct gr_ctx *ctx, const struct nlp_s2s *m,
                                 struct gr_tensor *src,
                                 const int32_t *src_len, int training,
                                 struct gr_rng rng)
{
    if (src == NULL || src->ndim != 2) {
        gr_error(GR_EINVAL, "seq2seq: src must be [Ts, B] i32");
        return NULL;
    }
    for (int64_t b = 0; b < src->shape[1]; b++) {
        if (src_len[b] < 1 || src_len[b] > src->shape[0]) {
            gr_error(GR_EINVAL, "seq2seq: source %lld has length %d of %lld",
                     (long long)b, (int)src_len[b],
                     (long long)src->shape[0]);
            return NULL;
        }
    }
    struct gr_tensor *kl = gr_tensor_from_host(ctx, GR_I32,
                                               gr_shape1(src->shape[1]),
                                               src_len);
    struct gr_tensor *x = embed(ctx, m, m->src_emb, src, training, rng, 40);
    return nlp_transformer_forward(ctx, &m->enc, x, kl, 0, training,
                                   gr_rng_make(rng.seed,
                                               gr_rng_stream(rng.stream, 41,
                                                             0, 0)));
}

struct gr_tensor *nlp_s2s_logits(struct gr_ctx *ctx, const struct nlp_s2s *m,
                                 struct gr_tensor *memory,
                                 const int32_t *src_len,
                                 struct gr_tensor *tgt_in, int training,
                                 struct gr_rng rng)
{
    if (memory == NULL || tgt_in == NULL) {
        return NULL;
    }
    struct gr_tensor *kl = gr_tensor_from_host(ctx, GR_I32,
                                               gr_shape1(memory->shape[1]),
                                               src_len);
    struct gr_tensor *y = embed(ctx, m, m->tgt_emb, tgt_in, training, rng,
                                42);
    y = nlp_transformer_decode(ctx, &m->dec, y, memory, kl, training,
                               gr_rng_make(rng.seed,
                                           gr_rng_stream(rng.stream, 43, 0,
                                                         0)));
    if (y == NULL) {
        return NULL;
    }
    y = gr_reshape(ctx, y, gr_shape2(y->shape[0] * y->shape[1], m->cfg.d));
    return gr_matmul(ctx, y, m->tgt_emb, 0, 1);
}

struct gr_tensor *nlp_s2s_loss(struct gr_ctx *ctx, const struct nlp_s2s *m,
                               struct gr_tensor *src, const int32_t *src_len,
                               struct gr_tensor *tgt_in,
                               struct gr_tensor *tgt_out, float eps,
                               int training, struct gr_rng rng)
{
    struct gr_tensor *mem = nlp_s2s_encode(ctx, m, src, src_len, training,
                                           rng);
    struct gr_tensor *logits = nlp_s2s_logits(ctx, m, mem, src_len, tgt_in,
                                              training, rng);
    if (logits == NULL || tgt_out == NULL) {
        return NULL;
    }
    struct gr_tensor *t = gr_reshape(ctx, tgt_out, gr_shape1(tgt_out->numel));
    return gr_cross_entropy_smoothed(ctx, logits, t, m->cfg.pad, eps);
}

/* Log-probabilities of the last position's rows: logits [(T)·K, V], rows
 * (T-1)·K .. -> lp [K, V] (double), pad and bos excluded (-inf). */
static int last_logprobs(struct gr_ctx *ctx, const struct nlp_s2s *m,
                         struct gr_tensor *logits, int64_t t, int64_t k,
                         float *tmp, double *lp)
{
    const int64_t v = m->cfg.tgt_vocab;
    struct gr_tensor *last = gr_slice(ctx, logits, 0, (t - 1) * k, k);
    if (last == NULL || gr_tensor_to_host(last, tmp) < 0) {
        return GR_EINVAL;
    }
    for (int64_t r = 0; r < k; r++) {
        double mx = -INFINITY, s = 0.0;
        for (int64_t j = 0; j < v; j++) {
            mx = fmax(mx, tmp[r * v + j]);
        }
        for (int64_t j = 0; j < v; j++) {
            s += exp(tmp[r * v + j] - mx);
        }
        for (int64_t j = 0; j < v; j++) {
            lp[r * v + j] = tmp[r * v + j] - mx - log(s);
        }
        lp[r * v + m->cfg.pad] = -INFINITY;
        lp[r * v + m->cfg.bos] = -INFINITY;
    }
    return 0;
}

/* Logits [B, V] of the next position by the cached decoder: ids [B] the
 * tokens at position cache->t. */
static struct gr_tensor *step_logits(struct gr_ctx *ctx,
                                     const struct nlp_s2s *m,
                                     struct gr_tensor *mem,
                                     struct gr_tensor *kl,
                                     const int32_t *ids, int64_t b,
                                     struct nlp_transformer_cache *cache)
{
    struct gr_tensor *it = gr_tensor_from_host(ctx, GR_I32, gr_shape2(1, b),
                                               ids);
    struct gr_tensor *x = it ? gr_scale(ctx, gr_embedding(ctx, m->tgt_emb,
                                                          it),
                                        sqrtf((float)m->cfg.d))
                             : NULL;
    x = gr_add(ctx, x, gr_positions_sinusoidal(ctx, 1, m->cfg.d, cache->t));
    struct gr_tensor *y = x ? nlp_transformer_decode_step(ctx, &m->dec, x,
                                                          mem, kl, cache)
                            : NULL;
    if (y == NULL) {
        return NULL;
    }
    y = gr_reshape(ctx, y, gr_shape2(b, m->cfg.d));
    return gr_matmul(ctx, y, m->tgt_emb, 0, 1);
}

int nlp_s2s_greedy(struct gr_ctx *ctx, const struct nlp_s2s *m,
                   const int32_t *src, const int32_t *src_len, int32_t ts,
                   int32_t b, int32_t max_len, int32_t *out,
                   int32_t *out_len)
{
    const int64_t v = m->cfg.tgt_vocab;
    int was = gr_set_grad_enabled(ctx, 0);
    int32_t *prefix = malloc((size_t)(max_len + 1) * (size_t)b *
                             sizeof *prefix);
    int *done = calloc((size_t)b, sizeof *done);
    float *tmp = malloc((size_t)(b * v) * sizeof *tmp);
    double *lp = malloc((size_t)(b * v) * sizeof *lp);
    int rc = prefix && done && tmp && lp ? 0
                                         : gr_error(GR_ENOMEM, "seq2seq: "
                                                    "out of memory");
    struct gr_tensor *mem = NULL;
    if (rc == 0) {
        struct gr_tensor *st = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape2(ts, b), src);
        mem = nlp_s2s_encode(ctx, m, st, src_len, 0, gr_rng_make(0, 0));
        rc = mem ? 0 : GR_EINVAL;
    }
    for (int32_t i = 0; rc == 0 && i < b; i++) {
        prefix[i] = m->cfg.bos;
        out_len[i] = max_len;
    }
    int alive = b;
    struct nlp_transformer_cache cache;
    memset(&cache, 0, sizeof cache);
    struct gr_tensor *kl = NULL;
    if (rc == 0 && !m->no_cache) {
        rc = nlp_transformer_cache_init(&cache, &m->dec);
        kl = gr_tensor_from_host(ctx, GR_I32, gr_shape1(b), src_len);
    }
    for (int32_t t = 0; rc == 0 && t < max_len && alive > 0; t++) {
        struct gr_tensor *lg = NULL;
        int64_t rows = t + 1;
        if (m->no_cache) {
            struct gr_tensor *in = gr_tensor_from_host(ctx, GR_I32,
                                                       gr_shape2(t + 1, b),
                                                       prefix);
            lg = nlp_s2s_logits(ctx, m, mem, src_len, in, 0,
                                gr_rng_make(0, 0));
        } else {
            lg = step_logits(ctx, m, mem, kl, prefix + (int64_t)t * b, b,
                             &cache);
            rows = 1;
        }
        if (lg == NULL || last_logprobs(ctx, m, lg, rows, b, tmp, lp) < 0) {
            rc = GR_EINVAL;
            break;
        }
        for (int32_t i = 0; i < b; i++) {
            int32_t best = 0;
            for (int32_t j = 1; j < v; j++) {
                best = lp[i * v + j] > lp[i * v + best] ? j : best;
            }
            if (done[i]) {
                best = m->cfg.pad;
            } else if (best == m->cfg.eos) {
                done[i] = 1;
                out_len[i] = t;
                alive--;
            } else {
                out[(int64_t)i * max_len + t] = best;
            }
            prefix[(int64_t)(t + 1) * b + i] = best;
        }
    }
    nlp_transformer_cache_free(&cache);
    gr_set_grad_enabled(ctx, was);
    free(prefix);
    free(done);
    free(tmp);
    free(lp);
    return rc;
}

double nlp_s2s_noam_lr(int64_t step, int d, int64_t warmup, double factor)
{
    double s = step < 1 ? 1.0 : (double)step;
    double w = warmup < 1 ? 1.0 : (double)warmup;
    return factor / sqrt((double)d) * fmin(1.0 / sqrt(s), s * pow(w, -1.5));
}

struct hyp {
    double score; /* sum of log-probabilities */
    int32_t k, v; /* beam row and token of a candidate */
};

static double penalty(int32_t len, float alpha)
{
    return alpha == 0.0f ? 1.0 : pow((5.0 + len) / 6.0, (double)alpha);
}

int nlp_s2s_beam(struct gr_ctx *ctx, const struct nlp_s2s *m,
                 const int32_t *src, const int32_t *src_len, int32_t ts,
                 int32_t b, int32_t beam, float alpha, int32_t max_len,
                 int32_t *out, int32_t *out_len)
{
    if (beam < 1 || max_len < 1) {
        return gr_error(GR_EINVAL, "seq2seq: beam %d and max length %d must "
                        "be >= 1", (int)beam, (int)max_len);
    }
    const int64_t v = m->cfg.tgt_vocab, K = beam;
    int was = gr_set_grad_enabled(ctx, 0);
    int32_t *pre = malloc((size_t)((max_len + 1) * K) * sizeof *pre);
    int32_t *npre = malloc((size_t)((max_len + 1) * K) * sizeof *npre);
    double *score = malloc((size_t)K * sizeof *score);
    double *nscore = malloc((size_t)K * sizeof *nscore);
    float *tmp = malloc((size_t)(K * v) * sizeof *tmp);
    double *lp = malloc((size_t)(K * v) * sizeof *lp);
    struct hyp *cand = malloc((size_t)(2 * K) * sizeof *cand);
    int32_t *src1 = malloc((size_t)ts * sizeof *src1);
    int32_t *best_seq = malloc((size_t)max_len * sizeof *best_seq);
    struct gr_tensor **rep = malloc((size_t)K * sizeof *rep);
    int32_t *lens = malloc((size_t)K * sizeof *lens);
    int rc = pre && npre && score && nscore && tmp && lp && cand && src1 &&
                     best_seq && rep && lens
                 ? 0
                 : gr_error(GR_ENOMEM, "seq2seq: out of memory");
    for (int32_t s = 0; rc == 0 && s < b; s++) {
        /* the source alone (padding invariance makes it the same) */
        int32_t n = src_len[s];
        for (int32_t t = 0; t < n; t++) {
            src1[t] = src[(int64_t)t * b + s];
        }
        struct gr_tensor *st = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape2(n, 1), src1);
        struct gr_tensor *mem1 = nlp_s2s_encode(ctx, m, st, &n, 0,
                                                gr_rng_make(0, 0));
        for (int64_t k = 0; k < K; k++) {
            rep[k] = mem1;
            lens[k] = n;
        }
        struct gr_tensor *mem = mem1 ? gr_concat(ctx, (int)K, rep, 1) : NULL;
        if (mem == NULL) {
            rc = GR_EINVAL;
            break;
        }
        int64_t n_alive = 1;
        for (int64_t k = 0; k < K; k++) {
            pre[k] = m->cfg.bos;
            score[k] = 0.0;
        }
        struct nlp_transformer_cache cache;
        memset(&cache, 0, sizeof cache);
        struct gr_tensor *kl = NULL;
        if (!m->no_cache) {
            rc = nlp_transformer_cache_init(&cache, &m->dec);
            kl = gr_tensor_from_host(ctx, GR_I32, gr_shape1(K), lens);
            if (rc < 0 || kl == NULL) {
                nlp_transformer_cache_free(&cache);
                rc = rc < 0 ? rc : GR_EINVAL;
                break;
            }
        }
        double best = -INFINITY;
        int32_t best_len = -1;
        int n_fin = 0;
        for (int32_t t = 0; t < max_len && n_fin < K && n_alive > 0; t++) {
            struct gr_tensor *lg = NULL;
            int64_t rows = t + 1;
            if (m->no_cache) {
                struct gr_tensor *in = gr_tensor_from_host(
                    ctx, GR_I32, gr_shape2(t + 1, K), pre);
                lg = nlp_s2s_logits(ctx, m, mem, lens, in, 0,
                                    gr_rng_make(0, 0));
            } else {
                lg = step_logits(ctx, m, mem, kl, pre + (int64_t)t * K, K,
                                 &cache);
                rows = 1;
            }
            if (lg == NULL ||
                last_logprobs(ctx, m, lg, rows, K, tmp, lp) < 0) {
                rc = GR_EINVAL;
                break;
            }
            /* the 2K best (row, token) candidates, best first; ties to
             * the lower row, then the lower token */
            int64_t nc = 0;
            for (int64_t k = 0; k < n_alive; k++) {
                for (int64_t j = 0; j < v; j++) {
                    double sc = score[k] + lp[k * v + j];
                    if (sc == -INFINITY) {
                        continue;
                    }
                    int64_t at = nc < 2 * K ? nc++ : 2 * K;
                    if (at == 2 * K) {
                        if (!(sc > cand[2 * K - 1].score)) {
                            continue;
                        }
                        at = 2 * K - 1;
                    }
                    while (at > 0 && sc > cand[at - 1].score) {
                        cand[at] = cand[at - 1];
                        at--;
                    }
                    cand[at].score = sc;
                    cand[at].k = (int32_t)k;
                    cand[at].v = (int32_t)j;
                }
            }
            int64_t na = 0;
            for (int64_t c = 0; c < nc && na < K; c++) {
                if (cand[c].v == m->cfg.eos) {
                    if (n_fin < K) {
                        double ns = cand[c].score / penalty(t + 1, alpha);
                        if (ns > best) {
                            best = ns;
                            best_len = t;
                            for (int32_t i = 0; i < t; i++) {
                                best_seq[i] =
                                    pre[(int64_t)(i + 1) * K + cand[c].k];
                            }
                        }
                        n_fin++;
                    }
                    continue;
                }
                for (int32_t i = 0; i <= t; i++) {
                    npre[(int64_t)i * K + na] =
                        pre[(int64_t)i * K + cand[c].k];
                }
                npre[(int64_t)(t + 1) * K + na] = cand[c].v;
                nscore[na] = cand[c].score;
                na++;
            }
            if (!m->no_cache && na > 0) {
                /* the cache follows the rows kept: new row i was row
                 * cand's k; the unused rows copy row 0 (as pre does) */
                int32_t *from = malloc((size_t)K * sizeof *from);
                if (from == NULL) {
                    rc = gr_error(GR_ENOMEM, "seq2seq: out of memory");
                    break;
                }
                int64_t q = 0;
                for (int64_t c = 0; c < nc && q < na; c++) {
                    if (cand[c].v != m->cfg.eos) {
                        from[q++] = cand[c].k;
                    }
                }
                for (int64_t k = na; k < K; k++) {
                    from[k] = from[0];
                }
                rc = nlp_transformer_cache_select(ctx, &cache, from);
                free(from);
                if (rc < 0) {
                    break;
                }
            }
            n_alive = na;
            for (int64_t k = 0; k < na; k++) {
                for (int32_t i = 0; i <= t + 1; i++) {
                    pre[(int64_t)i * K + k] = npre[(int64_t)i * K + k];
                }
                score[k] = nscore[k];
            }
            for (int64_t k = na; k < K; k++) { /* unused rows: copies */
                for (int32_t i = 0; i <= t + 1; i++) {
                    pre[(int64_t)i * K + k] = pre[(int64_t)i * K];
                }
            }
            if (t == max_len - 1) {
                /* out of room: the alive ones end here */
                for (int64_t k = 0; k < n_alive; k++) {
                    double ns = score[k] / penalty(max_len, alpha);
                    if (ns > best) {
                        best = ns;
                        best_len = max_len;
                        for (int32_t i = 0; i < max_len; i++) {
                            best_seq[i] = pre[(int64_t)(i + 1) * K + k];
                        }
                    }
                }
            }
        }
        nlp_transformer_cache_free(&cache);
        if (rc < 0) {
            break;
        }
        out_len[s] = best_len < 0 ? 0 : best_len;
        for (int32_t i = 0; i < out_len[s]; i++) {
            out[(int64_t)s * max_len + i] = best_seq[i];
        }
    }
    gr_set_grad_enabled(ctx, was);
    free(pre);
    free(npre);
    free(score);
    free(nscore);
    free(tmp);
    free(lp);
    free(cand);
    free(src1);
    free(best_seq);
    free(rep);
    free(lens);
    return rc;
}
