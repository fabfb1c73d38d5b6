/* nlp/models/onlstm.c — the ON-LSTM and AWD-LSTM language models (see nlp/models/onlstm.h). */
#include "nlp/models/onlstm.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/lines.h"
#include "core/progress.h"
#include "kernels/ops.h"
#include "kernels/tape.h"

static const char *const kind_names[] = {"onlstm", "lstm", "ft", "cft",
                                          "fft",    "ftlstm"};
#define N_KINDS ((int)(sizeof kind_names / sizeof kind_names[0]))

const char *nlp_lm_kind_name(enum nlp_lm_kind kind)
{
    return (int)kind >= 0 && (int)kind < N_KINDS ? kind_names[kind] : "?";
}

const char *nlp_lm_kind_title(enum nlp_lm_kind kind)
{
    static const char *const titles[] = {
        "ON-LSTM",          "LSTM",
        "FastTrees",        "Conv. FastTrees",
        "Faster FastTrees", "LSTM (ON-LSTM recipe)"};
    return (int)kind >= 0 && (int)kind < N_KINDS ? titles[kind] : "?";
}

int nlp_lm_kind_ordered(enum nlp_lm_kind kind)
{
    return kind != NLP_LM_LSTM && kind != NLP_LM_FTLSTM;
}

int nlp_lm_kind_on_recipe(enum nlp_lm_kind kind)
{
    return kind != NLP_LM_LSTM;
}

int nlp_lm_kind_parse(const char *text, enum nlp_lm_kind *out)
{
    for (int k = 0; k < N_KINDS; k++) {
        if (strcmp(text, kind_names[k]) == 0) {
            *out = (enum nlp_lm_kind)k;
            return 0;
        }
    }
    return gr_error(GR_EINVAL, "unknown model '%s' (expected one of %s)",
                    text, NLP_LM_KINDS);
}

void nlp_lm_config_default(struct nlp_lm_config *cfg, enum nlp_lm_kind kind,
                           int32_t vocab)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->kind = kind;
    cfg->vocab = vocab;
    cfg->emsize = 400;
    cfg->nhid = 1150;
    cfg->nlayers = 3;
    cfg->chunk = 10;
    cfg->dropoute = 0.1f;
    cfg->alpha = 2.0f;
    cfg->beta = 1.0f;
    if (nlp_lm_kind_on_recipe(kind)) {
        /* README command of Ordered-Neurons (on_lstm.md §7), which the
         * FastTrees runs repeat with --model FT|CFT|FFT (fasttrees.md
         * §6.1). */
        cfg->dropout = 0.45f;
        cfg->dropouth = 0.3f;
        cfg->dropouti = 0.5f;
        cfg->wdrop = 0.45f;
    } else {
        /* README PTB command of awd-lstm-lm (hybrid_and_trees.md §2.2). */
        cfg->dropout = 0.4f;
        cfg->dropouth = 0.25f;
        cfg->dropouti = 0.4f;
        cfg->wdrop = 0.5f;
    }
}

int32_t nlp_lm_layer_in(const struct nlp_lm_config *cfg, int l)
{
    return l == 0 ? cfg->emsize : cfg->nhid;
}

int32_t nlp_lm_layer_out(const struct nlp_lm_config *cfg, int l)
{
    return l == cfg->nlayers - 1 ? cfg->emsize : cfg->nhid;
}

static int check_rate(const char *name, float p)
{
    if (!(p >= 0.0f && p < 1.0f)) {
        return gr_error(GR_EINVAL, "%s must be in [0, 1) (got %g)", name,
                        (double)p);
    }
    return 0;
}

int nlp_lm_config_check(const struct nlp_lm_config *cfg)
{
    if ((int)cfg->kind < 0 || (int)cfg->kind >= N_KINDS) {
        return gr_error(GR_EINVAL, "model kind %d is unknown", (int)cfg->kind);
    }
    if (cfg->vocab < 1) {
        return gr_error(GR_EINVAL, "vocabulary size must be >= 1 (got %d)",
                        (int)cfg->vocab);
    }
    if (cfg->emsize < 1 || cfg->nhid < 1) {
        return gr_error(GR_EINVAL,
                        "emsize and nhid must be >= 1 (got %d and %d)",
                        (int)cfg->emsize, (int)cfg->nhid);
    }
    if (cfg->nlayers < 1 || cfg->nlayers > NLP_LM_MAX_LAYERS) {
        return gr_error(GR_EINVAL, "nlayers must be in [1, %d] (got %d)",
                        NLP_LM_MAX_LAYERS, (int)cfg->nlayers);
    }
    if (nlp_lm_kind_ordered(cfg->kind)) {
        if (cfg->chunk < 1) {
            return gr_error(GR_EINVAL, "chunk-size must be >= 1 (got %d)",
                            (int)cfg->chunk);
        }
        for (int l = 0; l < cfg->nlayers; l++) {
            int32_t h = nlp_lm_layer_out(cfg, l);
            if (h % cfg->chunk != 0) {
                return gr_error(GR_EINVAL,
                                "layer %d has %d units, not a multiple of "
                                "chunk-size %d (docs/models.md: every layer "
                                "size, nhid and emsize, must be one)",
                                l + 1, (int)h, (int)cfg->chunk);
            }
            int32_t in = nlp_lm_layer_in(cfg, l);
            if (cfg->kind == NLP_LM_CFT && in < 2 * (h / cfg->chunk)) {
                return gr_error(GR_EINVAL,
                                "layer %d: the convolution of Conv. "
                                "FastTrees reads the first 2n = %d of its "
                                "%d input features (docs/models.md)",
                                l + 1, (int)(2 * (h / cfg->chunk)), (int)in);
            }
        }
    }
    int rc;
    if ((rc = check_rate("dropout", cfg->dropout)) < 0 ||
        (rc = check_rate("dropouth", cfg->dropouth)) < 0 ||
        (rc = check_rate("dropouti", cfg->dropouti)) < 0 ||
        (rc = check_rate("dropoute", cfg->dropoute)) < 0 ||
        (rc = check_rate("wdrop", cfg->wdrop)) < 0) {
        return rc;
    }
    if (!(cfg->alpha >= 0.0f) || !(cfg->beta >= 0.0f)) {
        return gr_error(GR_EINVAL, "alpha and beta must be >= 0");
    }
    return 0;
}

/* Rows of the input map and of the hidden map of layer l; reference: 1
 * counts FFT's allocated but unused hidden map. */
static int64_t count_params(const struct nlp_lm_config *cfg, int reference)
{
    int64_t n = (int64_t)cfg->vocab * cfg->emsize + cfg->vocab;
    for (int l = 0; l < cfg->nlayers; l++) {
        int64_t in = nlp_lm_layer_in(cfg, l);
        int64_t h = nlp_lm_layer_out(cfg, l);
        int64_t m = nlp_lm_kind_ordered(cfg->kind) ? 2 * (h / cfg->chunk)
                                                   : 0;
        int64_t rows_ih = 4 * h + m, rows_hh = 4 * h + m;
        if (cfg->kind == NLP_LM_FT || cfg->kind == NLP_LM_CFT) {
            rows_hh = 4 * h;
        } else if (cfg->kind == NLP_LM_FFT && !reference) {
            rows_hh = 0;
        }
        n += rows_ih * (in + 1) + rows_hh * (h + 1);
        if (cfg->kind == NLP_LM_CFT) {
            n += m * m * GR_CFT_KERNEL + m;
        }
    }
    return n;
}

int64_t nlp_lm_param_count(const struct nlp_lm_config *cfg)
{
    return count_params(cfg, 0);
}

int64_t nlp_lm_param_count_reference(const struct nlp_lm_config *cfg)
{
    return count_params(cfg, 1);
}

/* 24670640 -> "24,670,640" */
static void digits(int64_t v, char *buf, size_t cap)
{
    char raw[32];
    int len = snprintf(raw, sizeof raw, "%lld", (long long)v);
    size_t o = 0;
    for (int i = 0; i < len && o + 2 < cap; i++) {
        if (i > 0 && raw[i - 1] != '-' && (len - i) % 3 == 0) {
            buf[o++] = ',';
        }
        buf[o++] = raw[i];
    }
    buf[o] = '\0';
}

void nlp_lm_param_report(const struct nlp_lm_config *cfg, char *buf,
                         size_t cap)
{
    int64_t n = nlp_lm_param_count(cfg);
    int64_t r = nlp_lm_param_count_reference(cfg);
    char d[40];
    digits(n, d, sizeof d);
    if (r == n) {
        snprintf(buf, cap, "%s parameters", d);
    } else {
        snprintf(buf, cap,
                 "%s parameters: %.2fM (reference allocates %.2fM, %.2fM "
                 "unused)",
                 d, (double)n / 1e6, (double)r / 1e6, (double)(r - n) / 1e6);
    }
}

int nlp_lm_init(struct nlp_lm *m, struct gr_ctx *ctx,
                const struct nlp_lm_config *cfg, uint64_t seed)
{
    memset(m, 0, sizeof *m);
    int rc = nlp_lm_config_check(cfg);
    if (rc < 0) {
        return rc;
    }
    m->cfg = *cfg;
    m->ctx = ctx;
    struct gr_rng rng = gr_rng_make(seed, 0);
    m->encoder = gr_param_new(ctx, "encoder.weight",
                              gr_shape2(cfg->vocab, cfg->emsize));
    m->decoder_bias = gr_param_new(ctx, "decoder.bias",
                                   gr_shape1(cfg->vocab));
    if (m->encoder == NULL || m->decoder_bias == NULL) {
        return gr_error(GR_EINVAL, "creating the embedding: %s",
                        gr_last_error());
    }
    rc = gr_init_uniform(m->encoder, -0.1f, 0.1f, rng);
    if (rc < 0) {
        return rc;
    }
    for (int l = 0; l < cfg->nlayers; l++) {
        char prefix[64];
        int32_t in = nlp_lm_layer_in(cfg, l);
        int32_t h = nlp_lm_layer_out(cfg, l);
        snprintf(prefix, sizeof prefix, "rnn.cells.%d", l);
        if (cfg->kind == NLP_LM_ONLSTM) {
            rc = gr_onlstm_init(&m->onlstm[l], ctx, prefix, in, h,
                                cfg->chunk, rng);
        } else if (cfg->kind == NLP_LM_FT) {
            rc = gr_ft_init(&m->onlstm[l], ctx, prefix, in, h, cfg->chunk,
                            rng);
        } else if (cfg->kind == NLP_LM_CFT) {
            rc = gr_cft_init(&m->cft[l], ctx, prefix, in, h, cfg->chunk,
                             cfg->conv_axis, rng);
        } else if (cfg->kind == NLP_LM_FFT) {
            rc = gr_fft_init(&m->fft[l], ctx, prefix, in, h, cfg->chunk,
                             rng);
        } else {
            if (cfg->kind == NLP_LM_LSTM) {
                snprintf(prefix, sizeof prefix, "rnns.%d.module", l);
            }
            rc = gr_lstm_init(&m->lstm[l], ctx, prefix, in, h, rng);
        }
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

struct gr_tensor *nlp_lm_layer_w_hh(const struct nlp_lm *m, int l)
{
    switch (m->cfg.kind) {
    case NLP_LM_ONLSTM:
    case NLP_LM_FT: return m->onlstm[l].w_hh;
    case NLP_LM_CFT: return m->cft[l].ft.w_hh;
    case NLP_LM_FFT: return NULL;
    default: return m->lstm[l].w_hh;
    }
}

/* ---- state ---- */

int nlp_lm_state_init(struct nlp_lm_state *st, struct nlp_lm *m,
                      const char *tag, int32_t batch)
{
    memset(st, 0, sizeof *st);
    if (batch < 1) {
        return gr_error(GR_EINVAL, "batch size must be >= 1 (got %d)",
                        (int)batch);
    }
    st->batch = batch;
    st->nlayers = m->cfg.nlayers;
    for (int l = 0; l < m->cfg.nlayers; l++) {
        int32_t h = nlp_lm_layer_out(&m->cfg, l);
        for (int which = 0; which < 2; which++) {
            char name[96];
            snprintf(name, sizeof name, "lm.state.%s.%c%d", tag,
                     which ? 'c' : 'h', l);
            struct gr_tensor *t = gr_ctx_find(m->ctx, name);
            if (t != NULL) {
                if (t->shape[0] != batch || t->shape[1] != h) {
                    return gr_error(GR_EINVAL,
                                    "state '%s' exists with batch %lld, "
                                    "asked for %d",
                                    tag, (long long)t->shape[0], (int)batch);
                }
            } else {
                t = gr_buffer_new(m->ctx, name, GR_F32, gr_shape2(batch, h));
                if (t == NULL) {
                    return gr_error(GR_ENOMEM, "creating state '%s': %s",
                                    name, gr_last_error());
                }
            }
            if (which) {
                st->c[l] = t;
            } else {
                st->h[l] = t;
            }
        }
        if (m->cfg.kind == NLP_LM_CFT && m->cfg.conv_axis == GR_CONV_TIME) {
            char name[96];
            snprintf(name, sizeof name, "lm.state.%s.x%d", tag, l);
            int64_t w = 2 * (h / m->cfg.chunk);
            struct gr_tensor *t = gr_ctx_find(m->ctx, name);
            if (t == NULL) {
                t = gr_buffer_new(m->ctx, name, GR_F32,
                                  gr_shape3(GR_CFT_CONTEXT, batch, w));
                if (t == NULL) {
                    return gr_error(GR_ENOMEM, "creating state '%s': %s",
                                    name, gr_last_error());
                }
            }
            st->x[l] = t;
        }
    }
    return nlp_lm_state_zero(st);
}

int nlp_lm_state_zero(struct nlp_lm_state *st)
{
    for (int l = 0; l < st->nlayers; l++) {
        int rc = gr_tensor_fill(st->h[l], 0.0f);
        if (rc == 0) {
            rc = gr_tensor_fill(st->c[l], 0.0f);
        }
        if (rc == 0 && st->x[l] != NULL) {
            rc = gr_tensor_fill(st->x[l], 0.0f);
        }
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

/* ---- dropout ---- */

struct gr_rng nlp_lm_rng(uint64_t seed, int64_t epoch, int64_t window,
                         int purpose, int layer)
{
    return gr_rng_make(seed, gr_rng_stream((uint64_t)epoch, (uint64_t)window,
                                           (uint64_t)purpose,
                                           (uint64_t)layer));
}

struct nlp_lm_drop nlp_lm_drop_train(uint64_t seed, int64_t epoch,
                                     int64_t window)
{
    struct nlp_lm_drop d;
    memset(&d, 0, sizeof d);
    d.training = 1;
    d.seed = seed;
    d.epoch = epoch;
    d.window = window;
    return d;
}

struct nlp_lm_drop nlp_lm_drop_eval(void)
{
    struct nlp_lm_drop d;
    memset(&d, 0, sizeof d);
    return d;
}

/* A host mask as a step tensor of `shape` (NULL if the mask is NULL). */
static struct gr_tensor *mask_tensor(struct gr_ctx *ctx, const float *mask,
                                     struct gr_shape shape)
{
    return gr_tensor_from_host(ctx, GR_F32, shape, mask);
}

/* Locked dropout of x [T, B, D]: explicit mask [B, D] when masks are
 * given, else a Philox mask from (purpose, layer). */
static struct gr_tensor *locked(struct gr_ctx *ctx, struct gr_tensor *x,
                                float p, const struct nlp_lm_drop *drop,
                                const float *explicit_mask, int purpose,
                                int layer)
{
    if (x == NULL || drop == NULL || !drop->training) {
        return x;
    }
    if (drop->masks != NULL) {
        if (explicit_mask == NULL) {
            return x;
        }
        struct gr_tensor *mk = mask_tensor(
            ctx, explicit_mask, gr_shape3(1, x->shape[1], x->shape[2]));
        return gr_mul(ctx, x, mk);
    }
    if (p <= 0.0f) {
        return x;
    }
    return gr_locked_dropout(
        ctx, x, p,
        nlp_lm_rng(drop->seed, drop->epoch, drop->window, purpose, layer));
}

/* A step tensor holding a copy of buffer b (so that the buffer can be
 * overwritten before the backward pass). */
static struct gr_tensor *snapshot(struct gr_ctx *ctx, struct gr_tensor *b)
{
    struct gr_tensor *t = gr_tensor_new(ctx, GR_F32, gr_tensor_shape(b));
    if (t != NULL && gr_tensor_copy(t, b) < 0) {
        return NULL;
    }
    return t;
}

int nlp_lm_forward(struct nlp_lm *m, struct nlp_lm_state *st,
                   struct gr_tensor *inputs, struct gr_tensor *targets,
                   const struct nlp_lm_drop *drop, struct nlp_lm_out *out)
{
    struct gr_ctx *ctx = m->ctx;
    const struct nlp_lm_config *cfg = &m->cfg;
    memset(out, 0, sizeof *out);
    if (inputs == NULL || inputs->ndim != 2 || inputs->dtype != GR_I32) {
        return gr_error(GR_EINVAL, "nlp_lm_forward: inputs must be i32 "
                                   "[T, B]");
    }
    int64_t T = inputs->shape[0];
    int64_t B = inputs->shape[1];
    if (st != NULL && st->batch != B) {
        return gr_error(GR_EINVAL,
                        "nlp_lm_forward: inputs have batch %lld, the state "
                        "%d",
                        (long long)B, (int)st->batch);
    }
    if (targets != NULL && targets->numel != T * B) {
        return gr_error(GR_EINVAL,
                        "nlp_lm_forward: %lld targets for %lld inputs",
                        (long long)targets->numel, (long long)(T * B));
    }
    int training = drop != NULL && drop->training;
    const struct nlp_lm_masks *mk = training ? drop->masks : NULL;

    /* 1. Embedding dropout: whole rows of E, one mask per call. */
    struct gr_tensor *emb_w = m->encoder;
    if (training) {
        if (mk != NULL) {
            if (mk->embed != NULL) {
                emb_w = gr_mul(ctx, emb_w,
                               mask_tensor(ctx, mk->embed,
                                           gr_shape2(cfg->vocab, 1)));
            }
        } else if (cfg->dropoute > 0.0f) {
            emb_w = gr_dropout_mask(
                ctx, emb_w, cfg->dropoute,
                nlp_lm_rng(drop->seed, drop->epoch, drop->window,
                           NLP_LM_RNG_EMBED, 0),
                gr_shape2(cfg->vocab, 1), 0);
        }
    }
    struct gr_tensor *x = gr_embedding(ctx, emb_w, inputs); /* [T, B, E] */

    /* 2. Locked dropout on the embeddings. */
    x = locked(ctx, x, cfg->dropouti, drop, mk ? mk->input : NULL,
               NLP_LM_RNG_INPUT, 0);

    /* 3. The layers, DropConnect on U, locked dropout between layers. */
    struct gr_tensor *h_last[NLP_LM_MAX_LAYERS] = {0};
    struct gr_tensor *c_last[NLP_LM_MAX_LAYERS] = {0};
    struct gr_tensor *raw_last = NULL;
    struct gr_tensor *x_next[NLP_LM_MAX_LAYERS] = {0};
    for (int l = 0; l < cfg->nlayers; l++) {
        struct gr_tensor *h0 = st ? snapshot(ctx, st->h[l]) : NULL;
        struct gr_tensor *c0 = st ? snapshot(ctx, st->c[l]) : NULL;
        if (st != NULL && (h0 == NULL || c0 == NULL)) {
            return gr_error(GR_ENOMEM, "nlp_lm_forward: state copy: %s",
                            gr_ctx_error(ctx));
        }
        struct gr_tensor *w = nlp_lm_layer_w_hh(m, l);
        enum gr_wdrop_mode mode = nlp_lm_kind_on_recipe(cfg->kind)
                                      ? GR_WDROP_ONLSTM
                                      : GR_WDROP_AWD;
        if (w == NULL) {
            /* FFT: no recurrent weight, wdrop has nothing to act on */
        } else if (training && mk != NULL) {
            if (mk->weight[l] != NULL) {
                w = gr_mul(ctx, w,
                           mask_tensor(ctx, mk->weight[l],
                                       gr_tensor_shape(w)));
            }
        } else if (cfg->wdrop > 0.0f) {
            w = gr_dropconnect(ctx, w, cfg->wdrop, mode, training,
                               training ? nlp_lm_rng(drop->seed, drop->epoch,
                                                     drop->window,
                                                     NLP_LM_RNG_WEIGHT, l)
                                        : gr_rng_make(0, 0));
        }
        struct gr_rnn_out o;
        memset(&o, 0, sizeof o);
        int rc;
        if (cfg->kind == NLP_LM_ONLSTM || cfg->kind == NLP_LM_FT) {
            rc = gr_onlstm_forward(ctx, &m->onlstm[l], x, h0, c0, w, &o);
        } else if (cfg->kind == NLP_LM_CFT) {
            struct gr_tensor *prev = st && st->x[l] ? snapshot(ctx, st->x[l])
                                                    : NULL;
            struct gr_rng r = training ? nlp_lm_rng(drop->seed, drop->epoch,
                                                    drop->window,
                                                    NLP_LM_RNG_CONV, l)
                                       : gr_rng_make(0, 0);
            /* explicit masks (fixtures) mean: no random conv dropout */
            rc = gr_cft_forward(ctx, &m->cft[l], x, prev, h0, c0, w,
                                training && mk == NULL, r, &o, &x_next[l]);
        } else if (cfg->kind == NLP_LM_FFT) {
            rc = gr_fft_forward(ctx, &m->fft[l], x, c0, &o);
        } else {
            rc = gr_lstm_forward(ctx, &m->lstm[l], x, h0, c0, w, &o);
        }
        if (rc < 0 || o.y == NULL) {
            return gr_error(rc < 0 ? rc : GR_EINVAL,
                            "nlp_lm_forward: layer %d: %s", l + 1,
                            gr_ctx_status(ctx) < 0 ? gr_ctx_error(ctx)
                                                   : gr_last_error());
        }
        h_last[l] = o.h;
        c_last[l] = o.c;
        out->df[l] = o.df;
        out->di[l] = o.di;
        if (l < cfg->nlayers - 1) {
            x = locked(ctx, o.y, cfg->dropouth, drop,
                       mk ? mk->hidden[l] : NULL, NLP_LM_RNG_HIDDEN, l);
        } else {
            raw_last = o.y;
        }
    }
    out->output = raw_last;

    /* 4. Locked dropout on the last output. */
    struct gr_tensor *y = locked(ctx, raw_last, cfg->dropout, drop,
                                 mk ? mk->output : NULL, NLP_LM_RNG_OUTPUT,
                                 0);

    /* 5. Tied decoder. */
    struct gr_tensor *flat = gr_reshape(ctx, y, gr_shape2(T * B, cfg->emsize));
    out->logits = gr_linear(ctx, flat, m->encoder, m->decoder_bias);

    if (targets != NULL) {
        out->ce = gr_cross_entropy(ctx, out->logits, targets, -1);
        out->loss = out->ce;
        if (training && cfg->alpha > 0.0f) {
            /* AR: the undropped output for the ON-LSTM (the stack's last
             * "dropped output" is the raw tensor), the dropped one for the
             * AWD-LSTM. */
            struct gr_tensor *src =
                nlp_lm_kind_on_recipe(cfg->kind) ? raw_last : y;
            out->ar = gr_scale(ctx, gr_mean(ctx, gr_square(ctx, src)),
                               cfg->alpha);
            out->loss = gr_add(ctx, out->loss, out->ar);
        }
        if (training && cfg->beta > 0.0f && T > 1) {
            struct gr_tensor *next = gr_slice(ctx, raw_last, 0, 1, T - 1);
            struct gr_tensor *prev = gr_slice(ctx, raw_last, 0, 0, T - 1);
            out->tar = gr_scale(
                ctx, gr_mean(ctx, gr_square(ctx, gr_sub(ctx, next, prev))),
                cfg->beta);
            out->loss = gr_add(ctx, out->loss, out->tar);
        }
    }
    if (gr_ctx_status(ctx) < 0 || out->logits == NULL ||
        (targets != NULL && out->loss == NULL)) {
        return gr_error(gr_ctx_status(ctx) < 0 ? gr_ctx_status(ctx)
                                               : GR_EINVAL,
                        "nlp_lm_forward: %s", gr_ctx_error(ctx));
    }

    /* Carry the final state (detached copies). */
    if (st != NULL) {
        for (int l = 0; l < cfg->nlayers; l++) {
            int rc = gr_tensor_copy(st->h[l], h_last[l]);
            if (rc == 0) {
                rc = gr_tensor_copy(st->c[l], c_last[l]);
            }
            if (rc == 0 && st->x[l] != NULL && x_next[l] != NULL) {
                rc = gr_tensor_copy(st->x[l], x_next[l]);
            }
            if (rc < 0) {
                return rc;
            }
        }
    }
    return 0;
}

/* ---- evaluation ---- */

int nlp_lm_evaluate(struct nlp_lm *m, const int32_t *data, size_t rows,
                    int32_t batch, int32_t bptt, const char *tag,
                    const char *progress_label, int quiet,
                    struct nlp_lm_eval_result *res)
{
    memset(res, 0, sizeof *res);
    if (rows < 2) {
        return gr_error(GR_EINVAL,
                        "evaluation needs at least 2 rows of batch %d (got "
                        "%zu)",
                        (int)batch, rows);
    }
    if (bptt < 1) {
        return gr_error(GR_EINVAL, "bptt must be >= 1 (got %d)", (int)bptt);
    }
    struct nlp_lm_state st;
    int rc = nlp_lm_state_init(&st, m, tag, batch);
    if (rc < 0) {
        return rc;
    }
    struct gr_ctx *ctx = m->ctx;
    int was = gr_set_grad_enabled(ctx, 0);
    struct gr_progress prog;
    if (progress_label != NULL) {
        gr_progress_start(&prog, progress_label, (uint64_t)(rows - 1),
                          "rows", quiet);
    }
    double sum_exact = 0.0, sum_compat = 0.0;
    struct nlp_lm_drop ev = nlp_lm_drop_eval();
    for (size_t i = 0; i + 1 < rows; i += (size_t)bptt) {
        size_t T = rows - 1 - i < (size_t)bptt ? rows - 1 - i : (size_t)bptt;
        gr_step_reset(ctx);
        struct gr_tensor *in = gr_tensor_from_host(
            ctx, GR_I32, gr_shape2((int64_t)T, batch), data + i * batch);
        struct gr_tensor *tg = gr_tensor_from_host(
            ctx, GR_I32, gr_shape1((int64_t)T * batch),
            data + (i + 1) * batch);
        struct nlp_lm_out o;
        rc = nlp_lm_forward(m, &st, in, tg, &ev, &o);
        if (rc < 0) {
            break;
        }
        double ce = (double)gr_tensor_item(o.ce);
        if (!isfinite(ce)) {
            rc = gr_error(GR_EINVAL, "evaluation: loss is %g at row %zu", ce,
                          i);
            break;
        }
        sum_exact += ce * (double)T * (double)batch;
        sum_compat += ce * (double)T;
        if (progress_label != NULL) {
            gr_progress_update(&prog, (uint64_t)(i + T));
        }
    }
    if (progress_label != NULL) {
        gr_progress_finish(&prog);
    }
    gr_step_reset(ctx);
    gr_set_grad_enabled(ctx, was);
    if (rc < 0) {
        return rc;
    }
    res->rows = (int64_t)rows;
    res->n_predictions = (int64_t)(rows - 1) * batch;
    res->loss = sum_exact / (double)res->n_predictions;
    res->loss_compat = sum_compat / (double)rows;
    res->ppl = exp(res->loss);
    res->ppl_compat = exp(res->loss_compat);
    return 0;
}

/* ---- sentences ---- */

int nlp_lm_sentences(struct nlp_lm *m, const int32_t *ids, int32_t n,
                     int32_t batch, float *df_out, float *logp_out)
{
    struct gr_ctx *ctx = m->ctx;
    if (n < 1 || batch < 1) {
        return gr_error(GR_EINVAL, "nlp_lm_sentences: n %d, batch %d",
                        (int)n, (int)batch);
    }
    if (df_out != NULL && !nlp_lm_kind_ordered(m->cfg.kind)) {
        return gr_error(GR_EINVAL, "syntactic distances need an ON-LSTM "
                                   "model (this one is an LSTM)");
    }
    int was = gr_set_grad_enabled(ctx, 0);
    gr_step_reset(ctx);
    int rc = 0;
    struct gr_tensor *in =
        gr_tensor_from_host(ctx, GR_I32, gr_shape2(n, batch), ids);
    struct nlp_lm_drop ev = nlp_lm_drop_eval();
    struct nlp_lm_out o;
    rc = nlp_lm_forward(m, NULL, in, NULL, &ev, &o);
    if (rc == 0 && df_out != NULL) {
        for (int l = 0; l < m->cfg.nlayers && rc == 0; l++) {
            rc = gr_tensor_to_host(o.df[l], df_out + (size_t)l * n * batch);
        }
    }
    if (rc == 0 && logp_out != NULL && n > 1) {
        /* log p of the next token: rows t < n-1 of the log-softmax,
         * gathered at ids[t+1]. */
        int64_t rows = (int64_t)(n - 1) * batch;
        struct gr_tensor *lg = gr_slice(ctx, o.logits, 0, 0, rows);
        struct gr_tensor *ls = gr_log_softmax(ctx, lg, NULL);
        struct gr_tensor *idx = gr_tensor_from_host(
            ctx, GR_I32, gr_shape2(rows, 1), ids + batch);
        struct gr_tensor *lp = gr_gather(ctx, ls, idx);
        if (lp == NULL) {
            rc = gr_error(GR_EINVAL, "nlp_lm_sentences: %s",
                          gr_ctx_error(ctx));
        } else {
            rc = gr_tensor_to_host(lp, logp_out);
        }
    }
    gr_step_reset(ctx);
    gr_set_grad_enabled(ctx, was);
    return rc;
}

/* ---- many sequences ---- */

struct seq_ref {
    int32_t len, index;
};

static int seq_cmp(const void *a, const void *b)
{
    const struct seq_ref *x = a, *y = b;
    if (x->len != y->len) {
        return x->len < y->len ? -1 : 1;
    }
    return x->index < y->index ? -1 : (x->index > y->index);
}

int nlp_lm_run_sequences(struct nlp_lm *m, int32_t n,
                         const int32_t *const *ids, const int32_t *lens,
                         int32_t max_batch, double *logprob, int32_t layer,
                         float *const *df, struct gr_progress *progress)
{
    if (n <= 0) {
        return 0;
    }
    if (max_batch < 1) {
        return gr_error(GR_EINVAL, "max_batch must be >= 1");
    }
    if (df != NULL && (layer < 0 || layer >= m->cfg.nlayers)) {
        return gr_error(GR_EINVAL, "layer %d does not exist (the model has "
                                   "%d layers)",
                        (int)layer + 1, (int)m->cfg.nlayers);
    }
    struct seq_ref *order = malloc((size_t)n * sizeof *order);
    int32_t max_len = 1;
    if (order == NULL) {
        return gr_error(GR_ENOMEM, "out of memory");
    }
    for (int32_t i = 0; i < n; i++) {
        if (lens[i] < 1) {
            free(order);
            return gr_error(GR_EINVAL, "sequence %d is empty", (int)i);
        }
        order[i].len = lens[i];
        order[i].index = i;
        max_len = lens[i] > max_len ? lens[i] : max_len;
    }
    qsort(order, (size_t)n, sizeof *order, seq_cmp);
    size_t cap = (size_t)max_len * (size_t)max_batch;
    int32_t *buf = malloc(cap * sizeof *buf);
    float *lp = malloc(cap * sizeof *lp);
    float *dbuf = df ? malloc(cap * (size_t)m->cfg.nlayers * sizeof *dbuf)
                     : NULL;
    int rc = 0;
    if (buf == NULL || lp == NULL || (df != NULL && dbuf == NULL)) {
        rc = gr_error(GR_ENOMEM, "out of memory");
    }
    for (int32_t s = 0; rc == 0 && s < n;) {
        int32_t len = order[s].len, b = 0;
        while (s + b < n && b < max_batch && order[s + b].len == len) {
            b++;
        }
        for (int32_t j = 0; j < b; j++) {
            const int32_t *src = ids[order[s + j].index];
            for (int32_t t = 0; t < len; t++) {
                buf[(size_t)t * b + j] = src[t];
            }
        }
        rc = nlp_lm_sentences(m, buf, len, b, dbuf,
                              logprob ? lp : NULL);
        for (int32_t j = 0; rc == 0 && j < b; j++) {
            int32_t i = order[s + j].index;
            if (logprob != NULL) {
                double sum = 0.0;
                for (int32_t t = 0; t + 1 < len; t++) {
                    sum += (double)lp[(size_t)t * b + j];
                }
                logprob[i] = sum;
            }
            if (df != NULL) {
                const float *dl = dbuf + (size_t)layer * len * b;
                for (int32_t t = 0; t < len; t++) {
                    df[i][t] = dl[(size_t)t * b + j];
                }
            }
        }
        s += b;
        if (progress != NULL) {
            gr_progress_update(progress, (uint64_t)s);
        }
    }
    free(order);
    free(buf);
    free(lp);
    free(dbuf);
    return rc;
}

int nlp_lm_syneval_score(void *scorer, int32_t n, const int32_t *const *ids,
                         const int32_t *lens, double *logprob)
{
    struct nlp_lm_scorer *sc = scorer;
    int rc = nlp_lm_run_sequences(sc->lm, n, ids, lens, sc->max_batch,
                                  logprob, -1, NULL, NULL);
    if (rc == 0 && sc->progress != NULL) {
        gr_progress_update(sc->progress, sc->progress->done + (uint64_t)n);
    }
    return rc;
}

/* ---- config text ---- */

int nlp_text_printf(struct nlp_text *t, const char *fmt, ...)
{
    for (;;) {
        size_t room = t->cap - t->len;
        va_list ap;
        va_start(ap, fmt);
        int k = t->s ? vsnprintf(t->s + t->len, room, fmt, ap) : -2;
        va_end(ap);
        if (k >= 0 && (size_t)k < room) {
            t->len += (size_t)k;
            return 0;
        }
        size_t need = t->cap * 2 + 256 + (k > 0 ? (size_t)k : 0);
        char *s = realloc(t->s, need);
        if (s == NULL) {
            return gr_error(GR_ENOMEM, "out of memory building a text");
        }
        if (t->s == NULL) {
            s[0] = '\0';
        }
        t->s = s;
        t->cap = need;
    }
}

void nlp_text_free(struct nlp_text *t)
{
    free(t->s);
    memset(t, 0, sizeof *t);
}

int nlp_lm_config_write(const struct nlp_lm_config *cfg, struct nlp_text *t)
{
    int rc = nlp_text_printf(
        t,
        "model %s\nvocab %d\nemsize %d\nnhid %d\nnlayers %d\nchunk-size "
        "%d\ndropout %.9g\ndropouth %.9g\ndropouti %.9g\ndropoute "
        "%.9g\nwdrop %.9g\nalpha %.9g\nbeta %.9g\n",
        nlp_lm_kind_name(cfg->kind), (int)cfg->vocab, (int)cfg->emsize,
        (int)cfg->nhid, (int)cfg->nlayers, (int)cfg->chunk,
        (double)cfg->dropout, (double)cfg->dropouth, (double)cfg->dropouti,
        (double)cfg->dropoute, (double)cfg->wdrop, (double)cfg->alpha,
        (double)cfg->beta);
    if (rc == 0 && cfg->kind == NLP_LM_CFT) {
        rc = nlp_text_printf(t, "conv-axis %s\n",
                             gr_conv_axis_name(cfg->conv_axis));
    }
    return rc;
}

const char *nlp_config_value(const char *text, const char *key, size_t *len)
{
    return gr_lines_find(text, key, len);
}

static int read_int(const char *text, const char *what, const char *key,
                    int32_t *out)
{
    size_t len = 0;
    const char *v = nlp_config_value(text, key, &len);
    char buf[64];
    if (v == NULL || len == 0 || len >= sizeof buf) {
        return gr_error(GR_EFORMAT, "%s: config has no valid '%s'", what, key);
    }
    memcpy(buf, v, len);
    buf[len] = '\0';
    char *end = NULL;
    errno = 0;
    long x = strtol(buf, &end, 10);
    if (errno != 0 || *end != '\0' || x < INT32_MIN || x > INT32_MAX) {
        return gr_error(GR_EFORMAT, "%s: config key '%s': '%s' is not an "
                                    "integer",
                        what, key, buf);
    }
    *out = (int32_t)x;
    return 0;
}

static int read_float(const char *text, const char *what, const char *key,
                      float *out)
{
    size_t len = 0;
    const char *v = nlp_config_value(text, key, &len);
    char buf[64];
    if (v == NULL || len == 0 || len >= sizeof buf) {
        return gr_error(GR_EFORMAT, "%s: config has no valid '%s'", what, key);
    }
    memcpy(buf, v, len);
    buf[len] = '\0';
    char *end = NULL;
    double x = strtod(buf, &end);
    if (*end != '\0' || !isfinite(x)) {
        return gr_error(GR_EFORMAT, "%s: config key '%s': '%s' is not a "
                                    "number",
                        what, key, buf);
    }
    *out = (float)x;
    return 0;
}

int nlp_lm_config_read(const char *text, const char *what,
                       struct nlp_lm_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    size_t len = 0;
    const char *v = nlp_config_value(text, "model", &len);
    char kind[16];
    if (v == NULL || len == 0 || len >= sizeof kind) {
        return gr_error(GR_EFORMAT, "%s: config has no valid 'model'", what);
    }
    memcpy(kind, v, len);
    kind[len] = '\0';
    if (nlp_lm_kind_parse(kind, &cfg->kind) < 0) {
        return gr_error(GR_EFORMAT, "%s: config key 'model': %s", what,
                        gr_last_error());
    }
    int rc;
    if ((rc = read_int(text, what, "vocab", &cfg->vocab)) < 0 ||
        (rc = read_int(text, what, "emsize", &cfg->emsize)) < 0 ||
        (rc = read_int(text, what, "nhid", &cfg->nhid)) < 0 ||
        (rc = read_int(text, what, "nlayers", &cfg->nlayers)) < 0 ||
        (rc = read_int(text, what, "chunk-size", &cfg->chunk)) < 0 ||
        (rc = read_float(text, what, "dropout", &cfg->dropout)) < 0 ||
        (rc = read_float(text, what, "dropouth", &cfg->dropouth)) < 0 ||
        (rc = read_float(text, what, "dropouti", &cfg->dropouti)) < 0 ||
        (rc = read_float(text, what, "dropoute", &cfg->dropoute)) < 0 ||
        (rc = read_float(text, what, "wdrop", &cfg->wdrop)) < 0 ||
        (rc = read_float(text, what, "alpha", &cfg->alpha)) < 0 ||
        (rc = read_float(text, what, "beta", &cfg->beta)) < 0) {
        return rc;
    }
    v = nlp_config_value(text, "conv-axis", &len);
    if (cfg->kind == NLP_LM_CFT && v != NULL) {
        char axis[16];
        if (len == 0 || len >= sizeof axis) {
            return gr_error(GR_EFORMAT, "%s: config key 'conv-axis' is "
                            "malformed", what);
        }
        memcpy(axis, v, len);
        axis[len] = '\0';
        if (gr_conv_axis_parse(axis, &cfg->conv_axis) < 0) {
            return gr_error(GR_EFORMAT, "%s: config key 'conv-axis': %s",
                            what, gr_last_error());
        }
    }
    if (nlp_lm_config_check(cfg) < 0) {
        return gr_error(GR_EFORMAT, "%s: %s", what, gr_last_error());
    }
    return 0;
}
