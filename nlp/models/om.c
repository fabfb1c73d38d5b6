/* nlp/models/om.c — Ordered Memory on the kernel ops (see nlp/models/om.h). */
#include "nlp/models/om.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/ops.h"
#include "kernels/tape.h"

#define OM_LN_EPS 1e-5f
#define OM_CUT 1e-5f   /* mask entries below this are cut to 0 (§4 step 2) */
#define OM_FLOOR 1e-12f /* F.normalize's floor of the sum (§4 step 4) */

/* ---- configuration ---- */

void nlp_om_config_default(struct nlp_om_config *cfg, enum nlp_om_task task)
{
    memset(cfg, 0, sizeof *cfg);
    if (task == NLP_OM_LISTOPS) {
        cfg->vocab = 20;
        cfg->pad_id = 0;
        cfg->emsize = 128;
        cfg->nhid = 128;
        cfg->nslot = 21;
        cfg->nslot_eval = 21;
        cfg->dropout = 0.1f;
        cfg->dropoutm = 0.3f;
        cfg->dropouti = 0.1f;
        cfg->output_last = 1;
        cfg->embed_normal = 1;
    } else {
        cfg->vocab = 12;
        cfg->pad_id = 11;
        cfg->emsize = 200;
        cfg->nhid = 200;
        cfg->nslot = 12;
        cfg->nslot_eval = 24;
        cfg->dropout = 0.2f;
        cfg->dropoutm = 0.2f;
        cfg->dropouti = 0.1f;
    }
}

static int check_rate(const char *name, float p)
{
    if (!(p >= 0.0f && p < 1.0f)) {
        return gr_error(GR_EINVAL, "om: %s must be in [0, 1) (got %g)", name,
                        (double)p);
    }
    return 0;
}

int nlp_om_config_check(const struct nlp_om_config *cfg)
{
    if (cfg->vocab < 1) {
        return gr_error(GR_EINVAL, "om: vocabulary size must be >= 1 (got "
                                   "%d)",
                        (int)cfg->vocab);
    }
    if (cfg->pad_id < 0 || cfg->pad_id >= cfg->vocab) {
        return gr_error(GR_EINVAL, "om: padding id %d is outside the "
                                   "vocabulary [0, %d)",
                        (int)cfg->pad_id, (int)cfg->vocab);
    }
    if (cfg->emsize < 1 || cfg->nhid < 1) {
        return gr_error(GR_EINVAL, "om: emsize and nhid must be >= 1 (got %d "
                                   "and %d)",
                        (int)cfg->emsize, (int)cfg->nhid);
    }
    if (cfg->nslot < 2 || cfg->nslot_eval < 2) {
        return gr_error(GR_EINVAL, "om: nslot and nslot-eval must be >= 2 "
                                   "(got %d and %d)",
                        (int)cfg->nslot, (int)cfg->nslot_eval);
    }
    int rc;
    if ((rc = check_rate("dropout", cfg->dropout)) < 0 ||
        (rc = check_rate("dropoutm", cfg->dropoutm)) < 0 ||
        (rc = check_rate("dropouti", cfg->dropouti)) < 0) {
        return rc;
    }
    return 0;
}

int64_t nlp_om_param_count(const struct nlp_om_config *cfg)
{
    int64_t D = cfg->nhid, I = cfg->emsize;
    int64_t one = (D * I + D) + 2 * D       /* W_in, LN_x */
                  + 2 * (D * D + D + 2 * D) /* W_q, LN_q, W_k, LN_k */
                  + (D + 1)                 /* w_β */
                  + (4 * D * 2 * D + 4 * D) /* W_1 */
                  + (4 * D * 4 * D + 4 * D); /* W_2 */
    return (int64_t)cfg->vocab * I + one * (cfg->bidirection ? 2 : 1);
}

int nlp_om_config_write(const struct nlp_om_config *cfg, struct nlp_text *t)
{
    int rc = nlp_text_printf(
        t,
        "om.vocab %d\nom.pad_id %d\nom.emsize %d\nom.nhid %d\nom.nslot %d\n"
        "om.nslot_eval %d\nom.dropout %.9g\nom.dropoutm %.9g\n"
        "om.dropouti %.9g\nom.bidirection %d\nom.output_last %d\n"
        "om.embed_normal %d\n",
        (int)cfg->vocab, (int)cfg->pad_id, (int)cfg->emsize, (int)cfg->nhid,
        (int)cfg->nslot, (int)cfg->nslot_eval, (double)cfg->dropout,
        (double)cfg->dropoutm, (double)cfg->dropouti, (int)cfg->bidirection,
        (int)cfg->output_last, (int)cfg->embed_normal);
    return rc < 0 ? rc : 0;
}

static int cfg_value(const char *text, const char *what, const char *key,
                     char *buf, size_t cap)
{
    size_t len = 0;
    const char *v = nlp_config_value(text, key, &len);
    if (v == NULL || len == 0 || len >= cap) {
        return gr_error(GR_EFORMAT, "%s: config has no valid '%s'", what,
                        key);
    }
    memcpy(buf, v, len);
    buf[len] = '\0';
    return 0;
}

static int cfg_int(const char *text, const char *what, const char *key,
                   int32_t *out)
{
    char buf[64];
    int rc = cfg_value(text, what, key, buf, sizeof buf);
    if (rc < 0) {
        return rc;
    }
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

static int cfg_float(const char *text, const char *what, const char *key,
                     float *out)
{
    char buf[64];
    int rc = cfg_value(text, what, key, buf, sizeof buf);
    if (rc < 0) {
        return rc;
    }
    char *end = NULL;
    errno = 0;
    double x = strtod(buf, &end);
    if (errno != 0 || *end != '\0' || !isfinite(x)) {
        return gr_error(GR_EFORMAT, "%s: config key '%s': '%s' is not a "
                                    "number",
                        what, key, buf);
    }
    *out = (float)x;
    return 0;
}

int nlp_om_config_read(const char *text, const char *what,
                       struct nlp_om_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    int rc;
    if ((rc = cfg_int(text, what, "om.vocab", &cfg->vocab)) < 0 ||
        (rc = cfg_int(text, what, "om.pad_id", &cfg->pad_id)) < 0 ||
        (rc = cfg_int(text, what, "om.emsize", &cfg->emsize)) < 0 ||
        (rc = cfg_int(text, what, "om.nhid", &cfg->nhid)) < 0 ||
        (rc = cfg_int(text, what, "om.nslot", &cfg->nslot)) < 0 ||
        (rc = cfg_int(text, what, "om.nslot_eval", &cfg->nslot_eval)) < 0 ||
        (rc = cfg_float(text, what, "om.dropout", &cfg->dropout)) < 0 ||
        (rc = cfg_float(text, what, "om.dropoutm", &cfg->dropoutm)) < 0 ||
        (rc = cfg_float(text, what, "om.dropouti", &cfg->dropouti)) < 0 ||
        (rc = cfg_int(text, what, "om.bidirection", &cfg->bidirection)) < 0 ||
        (rc = cfg_int(text, what, "om.output_last", &cfg->output_last)) < 0 ||
        (rc = cfg_int(text, what, "om.embed_normal", &cfg->embed_normal)) <
            0) {
        return rc;
    }
    rc = nlp_om_config_check(cfg);
    if (rc < 0) {
        return gr_error_wrap(GR_EFORMAT, "%s", what);
    }
    return 0;
}

/* ---- parameters ---- */

static int ln_param(struct gr_ctx *ctx, const char *prefix, int D,
                    struct gr_tensor **g, struct gr_tensor **b)
{
    char name[160];
    snprintf(name, sizeof name, "%s.weight", prefix);
    *g = gr_param_new(ctx, name, gr_shape1(D));
    snprintf(name, sizeof name, "%s.bias", prefix);
    *b = gr_param_new(ctx, name, gr_shape1(D));
    if (*g == NULL || *b == NULL) {
        return gr_error(GR_EINVAL, "om: creating '%s': %s", prefix,
                        gr_last_error());
    }
    int rc = gr_tensor_fill(*g, 1.0f);
    return rc < 0 ? rc : gr_tensor_fill(*b, 0.0f);
}

static int dir_init(struct nlp_om_dir *d, struct gr_ctx *ctx,
                    const char *base, int I, int D, struct gr_rng rng)
{
    char p[160];
    int rc;
#define LIN(field, part, in, out)                                             \
    snprintf(p, sizeof p, "%s.%s", base, part);                               \
    if ((rc = gr_linear_init(&d->field, ctx, p, in, out, 1, rng)) < 0) {      \
        return rc;                                                            \
    }
#define LN(g, b, part)                                                        \
    snprintf(p, sizeof p, "%s.%s", base, part);                               \
    if ((rc = ln_param(ctx, p, D, &d->g, &d->b)) < 0) {                       \
        return rc;                                                            \
    }
    LIN(in, "input_projection.0", I, D);
    LN(ln_x_g, ln_x_b, "activation");
    LIN(q, "distribution.query.1", D, D);
    LN(ln_q_g, ln_q_b, "distribution.query.2");
    LIN(k, "distribution.key.1", D, D);
    LN(ln_k_g, ln_k_b, "distribution.key.2");
    LIN(beta, "distribution.beta.2", D, 1);
    LIN(c1, "cell.input_t.1", 2 * D, 4 * D);
    LIN(c2, "cell.input_t.4", 4 * D, 4 * D);
#undef LIN
#undef LN
    return 0;
}

int nlp_om_init(struct nlp_om *m, struct gr_ctx *ctx,
                const struct nlp_om_config *cfg, uint64_t seed)
{
    return nlp_om_init_named(m, ctx, cfg, seed, "");
}

int nlp_om_init_named(struct nlp_om *m, struct gr_ctx *ctx,
                      const struct nlp_om_config *cfg, uint64_t seed,
                      const char *prefix)
{
    memset(m, 0, sizeof *m);
    int rc = nlp_om_config_check(cfg);
    if (rc < 0) {
        return rc;
    }
    m->cfg = *cfg;
    m->ctx = ctx;
    struct gr_rng rng = gr_rng_make(seed, 0);
    if (prefix == NULL || strlen(prefix) > 64) {
        return gr_error(GR_EINVAL, "om: a parameter prefix of at most 64 "
                                   "characters");
    }
    char name[160];
    snprintf(name, sizeof name, "%sembedding.weight", prefix);
    m->embedding = gr_param_new(ctx, name,
                                gr_shape2(cfg->vocab, cfg->emsize));
    if (m->embedding == NULL) {
        return gr_error(GR_EINVAL, "om: creating the embedding: %s",
                        gr_last_error());
    }
    if (cfg->embed_normal) {
        uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a of the name */
        for (const char *s = name; *s; s++) {
            h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
        }
        rc = gr_tensor_rand_normal(m->embedding, 0.0f, 1.0f,
                                   gr_rng_make(seed, h));
        if (rc == 0) {
            /* nn.Embedding(padding_idx=pad) zeroes the padding row. */
            size_t n = (size_t)cfg->vocab * cfg->emsize;
            float *host = malloc(n * sizeof *host);
            if (host == NULL) {
                return gr_error(GR_ENOMEM, "om: out of memory");
            }
            rc = gr_tensor_to_host(m->embedding, host);
            memset(host + (size_t)cfg->pad_id * cfg->emsize, 0,
                   (size_t)cfg->emsize * sizeof *host);
            if (rc == 0) {
                rc = gr_tensor_set_host(m->embedding, host);
            }
            free(host);
        }
    } else {
        rc = gr_init_uniform(m->embedding, -0.1f, 0.1f, rng);
    }
    if (rc < 0) {
        return rc;
    }
    snprintf(name, sizeof name, "%sencoder.OM_forward", prefix);
    rc = dir_init(&m->dir[0], ctx, name, cfg->emsize, cfg->nhid, rng);
    if (rc == 0 && cfg->bidirection) {
        snprintf(name, sizeof name, "%sencoder.OM_backward", prefix);
        rc = dir_init(&m->dir[1], ctx, name, cfg->emsize, cfg->nhid, rng);
    }
    return rc;
}

void nlp_om_free(struct nlp_om *m)
{
    free(m->scratch_);
    m->scratch_ = NULL;
    m->scratch_cap_ = 0;
}

static void *scratch(struct nlp_om *m, size_t bytes)
{
    if (bytes > m->scratch_cap_) {
        void *p = realloc(m->scratch_, bytes);
        if (p == NULL) {
            return NULL;
        }
        m->scratch_ = p;
        m->scratch_cap_ = bytes;
    }
    return m->scratch_;
}

/* ---- runs and dropout ---- */

struct nlp_om_run nlp_om_run_train(uint64_t seed, int64_t batch,
                                   int32_t nslot)
{
    struct nlp_om_run r;
    memset(&r, 0, sizeof r);
    r.training = 1;
    r.seed = seed;
    r.batch = batch;
    r.nslot = nslot;
    return r;
}

struct nlp_om_run nlp_om_run_eval(int32_t nslot)
{
    struct nlp_om_run r;
    memset(&r, 0, sizeof r);
    r.nslot = nslot;
    return r;
}

struct gr_rng nlp_om_rng(uint64_t seed, int64_t batch, int64_t t, int slot,
                         int purpose, int direction)
{
    return gr_rng_make(seed,
                       gr_rng_stream((uint64_t)batch,
                                     (uint64_t)t * 64u + (uint64_t)slot,
                                     (uint64_t)purpose, (uint64_t)direction));
}

static struct gr_tensor *drop(struct gr_ctx *ctx, struct gr_tensor *x,
                              float p, const struct nlp_om_run *run, int64_t t,
                              int slot, int purpose, int dir)
{
    if (x == NULL || !run->training || p <= 0.0f) {
        return x;
    }
    return gr_dropout(ctx, x, p,
                      nlp_om_rng(run->seed, run->batch, t, slot, purpose,
                                 dir));
}

/* ---- the step ---- */

struct gr_tensor *nlp_om_input(struct nlp_om *m, int dir, struct gr_tensor *x)
{
    const struct nlp_om_dir *d = &m->dir[dir];
    return gr_layer_norm(m->ctx, gr_linear_forward(m->ctx, &d->in, x),
                         d->ln_x_g, d->ln_x_b, OM_LN_EPS);
}

int nlp_om_unfused(void)
{
    const char *e = getenv("GROVE_OM_UNFUSED");
    return e != NULL && e[0] != '\0' && strcmp(e, "0") != 0;
}

static struct gr_tensor *cell(struct nlp_om *m, int dir, struct gr_tensor *v,
                              struct gr_tensor *h,
                              const struct nlp_om_run *run, int64_t t,
                              int slot)
{
    struct gr_ctx *ctx = m->ctx;
    const struct nlp_om_dir *d = &m->dir[dir];
    float r = m->cfg.dropout;
    if (!nlp_om_unfused()) {
        /* one op, the same numbers and dropout masks (kernels/ops.h) */
        float p = run->training ? r : 0.0f;
        return gr_om_cell(
            ctx, v, h, d->c1.weight, d->c1.bias, d->c2.weight, d->c2.bias,
            d->ln_x_g, d->ln_x_b, OM_LN_EPS, p,
            nlp_om_rng(run->seed, run->batch, t, slot, NLP_OM_RNG_CELL_IN,
                       dir),
            nlp_om_rng(run->seed, run->batch, t, slot, NLP_OM_RNG_CELL_HID,
                       dir));
    }
    struct gr_tensor *vh[2] = {v, h};
    struct gr_tensor *in = gr_concat(ctx, 2, vh, 1); /* [R, 2D] */
    in = drop(ctx, in, r, run, t, slot, NLP_OM_RNG_CELL_IN, dir);
    struct gr_tensor *a = gr_relu(ctx, gr_linear_forward(ctx, &d->c1, in));
    a = drop(ctx, a, r, run, t, slot, NLP_OM_RNG_CELL_HID, dir);
    struct gr_tensor *z = gr_linear_forward(ctx, &d->c2, a); /* [R, 4D] */
    /* σ(g_v)⊙v + σ(g_h)⊙h + σ(g_c)⊙u as one fused op (kernels/ops.h) */
    struct gr_tensor *s = gr_om_gate(ctx, z, v, h);
    return gr_layer_norm(ctx, s, d->ln_x_g, d->ln_x_b, OM_LN_EPS);
}

struct gr_tensor *nlp_om_cell(struct nlp_om *m, int dir, struct gr_tensor *v,
                              struct gr_tensor *h)
{
    struct nlp_om_run ev = nlp_om_run_eval(2);
    return cell(m, dir, v, h, &ev, 0, 0);
}

/* Host scratch of one forward call. */
struct fwd_scratch {
    float *c;      /* [B, N] previous cumulative pointer */
    float *cut;    /* [B, N-1] 0/1 indicator of the 1e-5 cut */
    float *cp;     /* [B, N] */
    float *vm;     /* [B] validity of step t */
    int32_t *rev;  /* [B, N] reversal indices N-1-i */
    int32_t *act;  /* [B] active rows of a slot */
    int32_t *pos;  /* [B] where each row's cell output is (or A) */
    int32_t *kidx; /* [B·N] allowed pairs: rows of Mh [N·B, D] */
    int32_t *qidx; /* [B·N] allowed pairs: their batch row */
    int32_t *bpos; /* [B·N] where each score is (or K: zero) */
    float *smask;  /* [B, N] 0 allowed, -inf masked */
    float *vmn;    /* [N, B] validity of step t per (slot, row) */
    int32_t *rows; /* [B] the batch rows still in the step (compaction) */
    int32_t *last; /* [B] each row's last real step (-1: none) */
    int32_t *spos; /* [B] each batch row's position among rows, or -1 */
    int32_t *gidx; /* [N·B] when rows leave: the old positions of the
                      rows kept, then their rows of M viewed [N·L, D] */
};

/* Whether finished rows stay in the step: the environment variable
 * GROVE_OM_FULL_BATCH set to anything but "" or "0" (see om.h). */
static int om_full_batch(void)
{
    const char *e = getenv("GROVE_OM_FULL_BATCH");
    return e != NULL && e[0] != '\0' && strcmp(e, "0") != 0;
}

int nlp_om_forward(struct nlp_om *m, int dir, struct gr_tensor *x,
                   const uint8_t *valid, const struct nlp_om_run *run,
                   struct nlp_om_seq *out)
{
    struct gr_ctx *ctx = m->ctx;
    memset(out, 0, sizeof *out);
    if (x == NULL || x->ndim != 3 || x->shape[2] != m->cfg.emsize) {
        return gr_error(GR_EINVAL, "nlp_om_forward: x must be [T, B, %d]",
                        (int)m->cfg.emsize);
    }
    const int64_t T = x->shape[0], B = x->shape[1], D = m->cfg.nhid;
    const int N = run->nslot;
    if (N < 2 || N > 4096) {
        return gr_error(GR_EINVAL, "nlp_om_forward: %d slots (need 2 to "
                                   "4096)",
                        N);
    }
    const struct nlp_om_dir *d = &m->dir[dir];
    const float rm = m->cfg.dropoutm;
    const int fused = !nlp_om_unfused();
    const int compact = fused && !om_full_batch();

    size_t nb = (size_t)B * N;
    size_t bytes = (5 * nb + (size_t)B) * sizeof(float) +
                   (5 * nb + 5 * (size_t)B) * sizeof(int32_t) + 64;
    char *buf = scratch(m, bytes);
    if (buf == NULL) {
        return gr_error(GR_ENOMEM, "nlp_om_forward: out of memory");
    }
    struct fwd_scratch s;
    s.c = (float *)buf;
    s.cut = s.c + nb;
    s.cp = s.cut + nb;
    s.vm = s.cp + nb;
    s.rev = (int32_t *)(s.vm + B);
    s.act = s.rev + nb;
    s.pos = s.act + B;
    s.kidx = s.pos + B;
    s.qidx = s.kidx + nb;
    s.bpos = s.qidx + nb;
    s.smask = (float *)(s.bpos + nb);
    s.vmn = s.smask + nb;
    s.rows = (int32_t *)(s.vmn + nb);
    s.last = s.rows + B;
    s.spos = s.last + B;
    s.gidx = s.spos + B;
    for (int64_t b = 0; b < B; b++) {
        s.rows[b] = (int32_t)b;
        s.last[b] = valid == NULL ? (int32_t)(T - 1) : -1;
        for (int64_t t = 0; valid != NULL && t < T; t++) {
            if (valid[t * B + b]) {
                s.last[b] = (int32_t)t;
            }
        }
    }
    for (int64_t b = 0; b < B; b++) {
        for (int i = 0; i < N; i++) {
            s.rev[b * N + i] = N - 1 - i;
        }
    }

    /* Every step's xt and query at once (eqs 3.5.1, 3.5.8). */
    struct gr_tensor *xt_all = nlp_om_input(m, dir, x); /* [T, B, D] */
    struct gr_tensor *q_all = gr_layer_norm(
        ctx,
        gr_linear_forward(ctx, &d->q,
                          drop(ctx, xt_all, rm, run, 0, 0, NLP_OM_RNG_QUERY,
                               dir)),
        d->ln_q_g, d->ln_q_b, OM_LN_EPS);
    struct gr_tensor *rev = gr_tensor_from_host(ctx, GR_I32,
                                                gr_shape2(B, N), s.rev);
    struct gr_tensor *ones_col = gr_full(ctx, gr_shape2(B, 1), 1.0f);
    struct gr_tensor *floor_t = gr_full(ctx, gr_shape1(1), OM_FLOOR);
    struct gr_tensor *zero_one = gr_zeros(ctx, gr_shape2(1, 1));
    if (zero_one == NULL || q_all == NULL || rev == NULL || ones_col == NULL ||
        floor_t == NULL) {
        return gr_error(gr_ctx_status(ctx) < 0 ? gr_ctx_status(ctx)
                                               : GR_ENOMEM,
                        "nlp_om_forward: %s", gr_ctx_error(ctx));
    }

    struct gr_tensor **ys = NULL, **ps = NULL, **slots = NULL;
    ys = malloc((size_t)T * sizeof *ys);
    ps = malloc((size_t)T * sizeof *ps);
    slots = malloc((size_t)N * sizeof *slots);
    if (ys == NULL || ps == NULL || slots == NULL) {
        free(ys);
        free(ps);
        free(slots);
        return gr_error(GR_ENOMEM, "nlp_om_forward: out of memory");
    }

    struct gr_tensor *M = NULL, *Mh = NULL, *p = NULL; /* [N,L,D], [L,N] */
    struct gr_tensor *zeros_nbd = NULL; /* [N, L, D] zeros (padding rule) */
    /* Compaction (the fused path; om.h): a row whose last real step is
     * behind us takes no further part in the step. Every tensor of the
     * step then holds the L rows still in it (s.rows, increasing batch
     * order), and y and p go back to [B, ...] with zeros for the rows
     * that left. Each op works row by row and the dropout masks are drawn
     * by position among the rows that take part (the allowed pairs, the
     * cell's active rows), which rows that left never were, so y and p
     * are the same values as with every row kept (gradients the same
     * terms, to rounding: see om.h). */
    int64_t L = B;
    struct gr_tensor *zeros_bd = NULL, *zeros_bn = NULL, *ones_b = NULL;
    struct gr_tensor *spos_t = NULL; /* [B] i32: s.spos on the device */
    int rc = 0;
    for (int64_t t = 0; t < T && rc == 0; t++) {
        if (compact) {
            int64_t nl = 0;
            for (int64_t r = 0; r < L; r++) {
                if (s.last[s.rows[r]] >= t) {
                    s.gidx[nl] = (int32_t)r; /* old position */
                    s.rows[nl++] = s.rows[r];
                }
            }
            if (nl < L || t == 0) {
                if (zeros_bd == NULL) {
                    zeros_bd = gr_zeros(ctx, gr_shape2(B, D));
                    zeros_bn = gr_zeros(ctx, gr_shape2(B, N));
                    ones_b = gr_full(ctx, gr_shape2(B, 1), 1.0f);
                }
                if (t > 0 && nl > 0) {
                    /* M, Mh [N, L, D] and p [L, N]: the rows kept */
                    struct gr_tensor *pk = gr_tensor_from_host(
                        ctx, GR_I32, gr_shape1(nl), s.gidx);
                    for (int i = N - 1; i >= 0; i--) {
                        for (int64_t r = 0; r < nl; r++) {
                            s.gidx[(int64_t)i * nl + r] =
                                (int32_t)(i * L + s.gidx[r]);
                        }
                    }
                    struct gr_tensor *gk = gr_tensor_from_host(
                        ctx, GR_I32, gr_shape1((int64_t)N * nl), s.gidx);
                    M = gr_reshape(
                        ctx,
                        gr_embedding(ctx,
                                     gr_reshape(ctx, M, gr_shape2(N * L, D)),
                                     gk),
                        gr_shape3(N, nl, D));
                    Mh = gr_reshape(
                        ctx,
                        gr_embedding(ctx,
                                     gr_reshape(ctx, Mh, gr_shape2(N * L, D)),
                                     gk),
                        gr_shape3(N, nl, D));
                    p = gr_embedding(ctx, p, pk);
                    zeros_nbd = NULL;
                }
                L = nl;
                for (int64_t b = 0; b < B; b++) {
                    s.spos[b] = -1;
                }
                for (int64_t r = 0; r < L; r++) {
                    s.spos[s.rows[r]] = (int32_t)r;
                }
                spos_t = gr_tensor_from_host(ctx, GR_I32, gr_shape1(B),
                                             s.spos);
            }
            if (L == 0) {
                /* every row has ended: y = 0, p = 0 (§4.2) */
                ys[t] = zeros_bd;
                ps[t] = zeros_bn;
                if (gr_ctx_status(ctx) < 0 || zeros_bd == NULL ||
                    zeros_bn == NULL) {
                    rc = -1;
                }
                continue;
            }
        }
        /* xt and q of the L rows */
        struct gr_tensor *xt = gr_select(ctx, xt_all, t); /* [B, D] */
        struct gr_tensor *rows_t = NULL;
        if (L < B) {
            rows_t = gr_tensor_from_host(ctx, GR_I32, gr_shape1(L), s.rows);
            xt = gr_embedding(ctx, xt, rows_t);
        }
        struct gr_tensor *y = NULL;
        int all_valid = 1;
        for (int64_t r = 0; r < L; r++) {
            int64_t b = s.rows[r];
            int v = valid == NULL || valid[t * B + b];
            s.vm[r] = v ? 1.0f : 0.0f;
            all_valid &= v;
        }
        if (t == 0) {
            /* FRESH (§4): p = 0, cp = 0, rcp = 1: M_0 = Mh_{-1} = 0 and
             * every candidate slot holds xt. */
            M = gr_zeros(ctx, gr_shape3(N, L, D));
            Mh = gr_add(ctx, gr_zeros(ctx, gr_shape3(N, L, D)), xt);
            p = gr_zeros(ctx, gr_shape2(L, N));
            y = xt;
        } else {
            struct gr_tensor *q = gr_select(ctx, q_all, t); /* [B, D] */
            if (L < B) {
                q = gr_embedding(ctx, q, rows_t);
            }
            /* mask from the previous cumulative pointer (eq. 3.5.10); the
             * fused op takes p itself, so its cumulative sum is only
             * needed here, on the host (the same float sums) */
            struct gr_tensor *c = NULL;
            if (fused) {
                if (gr_tensor_to_host(p, s.c) < 0) {
                    rc = -1;
                    break;
                }
                for (int64_t b = 0; b < L; b++) {
                    for (int i = 1; i < N; i++) {
                        s.c[b * N + i] += s.c[b * N + i - 1];
                    }
                }
            } else {
                c = gr_cumsum(ctx, p);
                if (c == NULL || gr_tensor_to_host(c, s.c) < 0) {
                    rc = -1;
                    break;
                }
            }
            /* The allowed (slot, row) pairs: m_i > 0 on a real row. Only
             * their scores matter: p_t is 0 at a masked slot and does not
             * depend on its score, so keys are computed for these only. */
            int K = 0;
            for (int64_t b = 0; b < L; b++) {
                for (int i = 0; i < N; i++) {
                    int ok = i == N - 1 || s.c[b * N + i + 1] >= OM_CUT;
                    if (i < N - 1) {
                        s.cut[b * (N - 1) + i] = ok ? 1.0f : 0.0f;
                    }
                    if (ok && s.vm[b] != 0.0f) {
                        s.kidx[K] = (int32_t)(i * L + b);
                        s.qidx[K] = (int32_t)b;
                        s.bpos[b * N + i] = K++;
                        s.smask[b * N + i] = 0.0f;
                    } else {
                        s.bpos[b * N + i] = -1;
                        s.smask[b * N + i] = -INFINITY;
                    }
                }
            }
            struct gr_tensor *pn = NULL, *cpT = NULL, *rcpT = NULL;
            if (fused) {
                /* keys, β, the masked softmax and both cumulative
                 * pointers as one op (kernels/ops.h, gr_om_attend) */
                const struct gr_om_attend_w aw = {
                    d->k.weight, d->k.bias,     d->ln_k_g,
                    d->ln_k_b,   d->beta.weight, d->beta.bias};
                struct gr_tensor *kidx = NULL, *qidx = NULL;
                if (K > 0) {
                    kidx = gr_tensor_from_host(ctx, GR_I32, gr_shape1(K),
                                               s.kidx);
                    qidx = gr_tensor_from_host(ctx, GR_I32, gr_shape1(K),
                                               s.qidx);
                }
                struct gr_tensor *bpos = gr_tensor_from_host(
                    ctx, GR_I32, gr_shape2(L, N), s.bpos);
                if ((K > 0 && (kidx == NULL || qidx == NULL)) ||
                    gr_om_attend(
                        ctx, Mh, q, p, kidx, qidx, bpos, &aw, OM_LN_EPS,
                        run->training ? rm : 0.0f,
                        nlp_om_rng(run->seed, run->batch, t, 0,
                                   NLP_OM_RNG_KEY, dir),
                        nlp_om_rng(run->seed, run->batch, t, 0,
                                   NLP_OM_RNG_BETA, dir),
                        &pn, &cpT, &rcpT) < 0 ||
                    gr_tensor_to_host(cpT, s.c) < 0) {
                    rc = -1;
                    break;
                }
                /* cp [N, L] -> s.cp [L, N] */
                for (int64_t b = 0; b < L; b++) {
                    for (int i = 0; i < N; i++) {
                        s.cp[b * N + i] = s.c[(int64_t)i * L + b];
                    }
                }
            } else {
                for (int64_t j = 0; j < L * N; j++) {
                    if (s.bpos[j] < 0) {
                        s.bpos[j] = K; /* the zero row */
                    }
                }
                struct gr_tensor *beta = NULL;
                if (K > 0) {
                    /* keys from the previous candidates (eqs 3.5.8-3.5.9) */
                    struct gr_tensor *kidx = gr_tensor_from_host(
                        ctx, GR_I32, gr_shape1(K), s.kidx);
                    struct gr_tensor *qidx = gr_tensor_from_host(
                        ctx, GR_I32, gr_shape1(K), s.qidx);
                    struct gr_tensor *mh_rows = gr_embedding(
                        ctx, gr_reshape(ctx, Mh, gr_shape2(N * L, D)), kidx);
                    struct gr_tensor *k = gr_layer_norm(
                        ctx,
                        gr_linear_forward(ctx, &d->k,
                                          drop(ctx, mh_rows, rm, run, t, 0,
                                               NLP_OM_RNG_KEY, dir)),
                        d->ln_k_g, d->ln_k_b, OM_LN_EPS); /* [K, D] */
                    struct gr_tensor *a = drop(
                        ctx, gr_relu(ctx, gr_add(ctx, k, gr_embedding(ctx, q,
                                                                      qidx))),
                        rm, run, t, 0, NLP_OM_RNG_BETA, dir);
                    struct gr_tensor *bk = gr_scale(
                        ctx, gr_linear_forward(ctx, &d->beta, a),
                        1.0f / sqrtf((float)D)); /* [K, 1] */
                    struct gr_tensor *cat[2] = {bk, zero_one};
                    struct gr_tensor *bpos = gr_tensor_from_host(
                        ctx, GR_I32, gr_shape1(L * N), s.bpos);
                    beta = gr_reshape(
                        ctx, gr_embedding(ctx, gr_concat(ctx, 2, cat, 0), bpos),
                        gr_shape2(L, N));
                } else {
                    beta = gr_zeros(ctx, gr_shape2(L, N));
                }
                struct gr_tensor *smask = gr_tensor_from_host(
                    ctx, GR_F32, gr_shape2(L, N), s.smask);
                struct gr_tensor *cut = gr_tensor_from_host(
                    ctx, GR_F32, gr_shape2(L, N - 1), s.cut);
                struct gr_tensor *mparts[2] = {
                    gr_mul(ctx, gr_slice(ctx, c, 1, 1, N - 1), cut), ones_col};
                struct gr_tensor *mask =
                    gr_concat(ctx, 2, mparts, 1); /* [L, N] */
                /* masked softmax (eq. 3.5.11) */
                struct gr_tensor *e = gr_mul(ctx, gr_softmax(ctx, beta, smask),
                                             mask);
                struct gr_tensor *sum = gr_maximum(
                    ctx,
                    gr_reshape(ctx, gr_sum_dim(ctx, e, 1), gr_shape2(L, 1)),
                    floor_t);
                pn = gr_div(ctx, e, sum); /* p_t [L, N] */
                /* cumulative pointers (eqs 3.5.3-3.5.4) */
                struct gr_tensor *cp = gr_cumsum(ctx, pn);
                struct gr_tensor *rcp = gr_gather(
                    ctx, gr_cumsum(ctx, gr_gather(ctx, pn, rev)), rev);
                cpT = gr_reshape(ctx, gr_transpose(ctx, cp, 0, 1),
                                 gr_shape3(N, L, 1));
                rcpT = gr_reshape(ctx, gr_transpose(ctx, rcp, 0, 1),
                                  gr_shape3(N, L, 1));
                if (cp == NULL || gr_tensor_to_host(cp, s.cp) < 0) {
                    rc = -1;
                    break;
                }
            }
            struct gr_tensor *omcT =
                fused ? cpT : gr_affine(ctx, cpT, -1.0f, 1.0f);
            /* memory update (eq. 3.5.5) */
            struct gr_tensor *Mt =
                fused ? gr_lerp(ctx, M, Mh, rcpT)
                      : gr_add(ctx,
                               gr_mul(ctx, M,
                                      gr_affine(ctx, rcpT, -1.0f, 1.0f)),
                               gr_mul(ctx, Mh, rcpT));
            if (Mt == NULL || omcT == NULL) {
                rc = -1;
                break;
            }
            /* candidate update (eqs 3.5.6-3.5.7), active rows only */
            struct gr_tensor *h = xt;
            for (int i = 0; i < N; i++) {
                int A = 0;
                for (int64_t b = 0; b < L; b++) {
                    if (s.vm[b] != 0.0f && s.cp[b * N + i] > 0.0f) {
                        s.pos[b] = A;
                        s.act[A++] = (int32_t)b;
                    } else {
                        s.pos[b] = -1;
                    }
                }
                if (A == 0) {
                    /* cp = 0 on every real row: h stays xt there; a
                     * padded row is zeroed after the step. */
                    slots[i] = h;
                    continue;
                }
                struct gr_tensor *Mi = gr_select(ctx, Mt, i); /* [L, D] */
                struct gr_tensor *ci = gr_select(ctx, cpT, i);   /* [L, 1] */
                if (A == L) {
                    struct gr_tensor *o = cell(m, dir, h, Mi, run, t, i);
                    if (fused) {
                        h = gr_lerp(ctx, xt, o, ci);
                    } else {
                        struct gr_tensor *omci = gr_select(ctx, omcT, i);
                        h = gr_add(ctx, gr_mul(ctx, xt, omci),
                                   gr_mul(ctx, o, ci));
                    }
                } else {
                    /* The A active rows go through the cell; every other
                     * row of the slot is xt (cp = 0; padded rows are
                     * zeroed after the step). */
                    struct gr_tensor *idx = gr_tensor_from_host(
                        ctx, GR_I32, gr_shape1(A), s.act);
                    struct gr_tensor *oa = cell(
                        m, dir, gr_embedding(ctx, h, idx),
                        gr_embedding(ctx, Mi, idx), run, t, i);
                    if (fused) {
                        /* row b: lerp(xt, oa[pos[b]], c) or xt (pos -1) */
                        h = gr_lerp_rows(ctx, xt, oa, ci,
                                         gr_tensor_from_host(
                                             ctx, GR_I32, gr_shape1(L),
                                             s.pos));
                        slots[i] = h;
                        continue;
                    }
                    struct gr_tensor *xa = gr_embedding(ctx, xt, idx);
                    struct gr_tensor *ca = gr_embedding(ctx, ci, idx);
                    struct gr_tensor *ha = gr_add(
                        ctx, gr_mul(ctx, xa, gr_affine(ctx, ca, -1.0f, 1.0f)),
                        gr_mul(ctx, oa, ca));
                    for (int64_t b = 0; b < L; b++) {
                        if (s.pos[b] < 0) {
                            s.pos[b] = A + (int32_t)b; /* xt's row b */
                        }
                    }
                    struct gr_tensor *pos = gr_tensor_from_host(
                        ctx, GR_I32, gr_shape1(L), s.pos);
                    struct gr_tensor *cat[2] = {ha, xt};
                    h = gr_embedding(ctx, gr_concat(ctx, 2, cat, 0), pos);
                }
                slots[i] = h;
            }
            M = Mt;
            Mh = gr_stack(ctx, N, slots);
            p = pn;
            y = h;
        }
        /* padding (§4.2): y, p, M, Mh of padded rows become 0 */
        if (!all_valid) {
            struct gr_tensor *vm = gr_tensor_from_host(ctx, GR_F32,
                                                       gr_shape2(L, 1), s.vm);
            struct gr_tensor *vm3 = gr_reshape(ctx, vm, gr_shape3(1, L, 1));
            y = gr_mul(ctx, y, vm);
            if (!fused || t == 0) {
                /* (gr_om_attend gives p = 0 on rows without an allowed
                 * slot, which padded rows are) */
                p = gr_mul(ctx, p, vm);
            }
            /* The fused path zeroes only what can be seen. A padded row's
             * y is 0 and its p is 0 (no allowed slot), so nothing of its
             * state reaches an output or a gradient while it stays
             * padded. When it turns real at t + 1 (left padding), p = 0
             * forces rcp_{t+1} = 1 on every slot, so M_{t+1} = Mh_t
             * exactly (0·M_t; M_t is finite) and only Mh_t must be 0.
             * So M is never zeroed and Mh only before such a step: the
             * same outputs and gradients as the rule, without two
             * [N, B, D] passes a step on right-padded batches. */
            int turns_real = 0;
            for (int64_t r = 0; fused && valid != NULL && t + 1 < T &&
                                r < L;
                 r++) {
                int64_t b = s.rows[r];
                turns_real |= !valid[t * B + b] && valid[(t + 1) * B + b];
            }
            if (fused && turns_real) {
                /* lerp(0, x, valid): the zeros in one pass, a gradient
                 * written rather than zeroed and accumulated */
                if (zeros_nbd == NULL) {
                    zeros_nbd = gr_zeros(ctx, gr_shape3(N, L, D));
                }
                for (int i = 0; i < N; i++) {
                    memcpy(s.vmn + (size_t)i * L, s.vm,
                           (size_t)L * sizeof *s.vm);
                }
                struct gr_tensor *vmn = gr_tensor_from_host(
                    ctx, GR_F32, gr_shape3(N, L, 1), s.vmn);
                Mh = gr_lerp(ctx, zeros_nbd, Mh, vmn);
            } else if (!fused) {
                M = gr_mul(ctx, M, vm3);
                Mh = gr_mul(ctx, Mh, vm3);
            }
        }
        if (L < B) {
            /* back to [B, ...]: the rows that left get y = 0, p = 0
             * (lerp with weight 1: exactly the row, or exactly 0) */
            ys[t] = gr_lerp_rows(ctx, zeros_bd, y, ones_b, spos_t);
            ps[t] = gr_lerp_rows(ctx, zeros_bn, p, ones_b, spos_t);
        } else {
            ys[t] = y;
            ps[t] = p;
        }
        if (gr_ctx_status(ctx) < 0 || y == NULL || p == NULL || M == NULL ||
            Mh == NULL) {
            rc = -1;
        }
    }
    if (rc == 0) {
        out->y = gr_stack(ctx, (int)T, ys);
        out->p = gr_stack(ctx, (int)T, ps);
    }
    free(ys);
    free(ps);
    free(slots);
    if (rc < 0 || out->y == NULL || out->p == NULL) {
        int st = gr_ctx_status(ctx);
        return gr_error(st < 0 ? st : GR_EINVAL, "nlp_om_forward: %s",
                        st < 0 ? gr_ctx_error(ctx) : gr_last_error());
    }
    return 0;
}

/* ---- the encoder ---- */

int nlp_om_encode(struct nlp_om *m, const int32_t *ids, int32_t T, int32_t B,
                  const struct nlp_om_run *run, struct gr_tensor **out)
{
    struct gr_ctx *ctx = m->ctx;
    const struct nlp_om_config *cfg = &m->cfg;
    *out = NULL;
    if (ids == NULL || T < 1 || B < 1) {
        return gr_error(GR_EINVAL, "nlp_om_encode: need ids of T >= 1 steps "
                                   "and B >= 1 sequences (got T %d, B %d)",
                        (int)T, (int)B);
    }
    size_t n = (size_t)T * B;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= cfg->vocab) {
            return gr_error(GR_EINVAL, "nlp_om_encode: token id %d at step "
                                       "%zu, sequence %zu is outside the "
                                       "vocabulary [0, %d)",
                            (int)ids[i], i / (size_t)B, i % (size_t)B,
                            (int)cfg->vocab);
        }
    }
    /* int32 arrays first (aligned), then the byte masks */
    int32_t *ids_rev = malloc(n * sizeof(int32_t) +
                              (size_t)B * sizeof(int32_t) + 2 * n);
    if (ids_rev == NULL) {
        return gr_error(GR_ENOMEM, "nlp_om_encode: out of memory");
    }
    int32_t *last = ids_rev + n;
    uint8_t *valid = (uint8_t *)(last + B);
    uint8_t *valid_rev = valid + n;
    for (size_t i = 0; i < n; i++) {
        valid[i] = ids[i] != cfg->pad_id;
    }
    int rc = 0;
    struct gr_tensor *idt = gr_tensor_from_host(ctx, GR_I32,
                                                gr_shape2(T, B), ids);
    struct gr_tensor *emb = gr_embedding(ctx, m->embedding, idt);
    if (run->training && cfg->dropouti > 0.0f) {
        emb = gr_dropout(ctx, emb, cfg->dropouti,
                         nlp_om_rng(run->seed, run->batch, 0, 0,
                                    NLP_OM_RNG_INPUT, 0));
    }
    struct nlp_om_seq fw;
    rc = nlp_om_forward(m, 0, emb, valid, run, &fw);
    struct gr_tensor *h = NULL;
    if (rc == 0 && cfg->output_last) {
        h = gr_select(ctx, fw.y, T - 1);
    } else if (rc == 0) {
        for (int32_t b = 0; b < B; b++) {
            int32_t len = 0;
            for (int32_t t = 0; t < T; t++) {
                len += valid[(size_t)t * B + b];
            }
            int32_t pos = len > 0 ? len - 1 : T - 1;
            last[b] = pos * B + b;
        }
        struct gr_tensor *li = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape1(B), last);
        h = gr_embedding(ctx,
                         gr_reshape(ctx, fw.y,
                                    gr_shape2((int64_t)T * B, cfg->nhid)),
                         li);
    }
    if (rc == 0 && run->probs_out != NULL) {
        rc = gr_tensor_to_host(fw.p, run->probs_out);
    }
    if (rc == 0 && cfg->bidirection) {
        /* The reversed batch (mask reversed too) read by the second OM;
         * its y_{T-1} is concatenated (spec §5). */
        for (int32_t t = 0; t < T; t++) {
            memcpy(ids_rev + (size_t)t * B, ids + (size_t)(T - 1 - t) * B,
                   (size_t)B * sizeof *ids);
            memcpy(valid_rev + (size_t)t * B,
                   valid + (size_t)(T - 1 - t) * B, (size_t)B);
        }
        struct gr_tensor *rid = gr_tensor_from_host(ctx, GR_I32,
                                                    gr_shape2(T, B), ids_rev);
        struct gr_tensor *remb = gr_embedding(ctx, m->embedding, rid);
        if (run->training && cfg->dropouti > 0.0f) {
            remb = gr_dropout(ctx, remb, cfg->dropouti,
                              nlp_om_rng(run->seed, run->batch, 0, 0,
                                         NLP_OM_RNG_INPUT, 1));
        }
        struct nlp_om_seq bw;
        rc = nlp_om_forward(m, 1, remb, valid_rev, run, &bw);
        if (rc == 0) {
            struct gr_tensor *two[2] = {h, gr_select(ctx, bw.y, T - 1)};
            h = gr_concat(ctx, 2, two, 1);
        }
    }
    free(ids_rev);
    if (rc == 0 && h == NULL) {
        rc = gr_error(gr_ctx_status(ctx) < 0 ? gr_ctx_status(ctx)
                                             : GR_EINVAL,
                      "nlp_om_encode: %s", gr_ctx_error(ctx));
    }
    *out = rc == 0 ? h : NULL;
    return rc;
}

/* ---- trees (spec §8) ---- */

void nlp_om_distances(const float *probs, int32_t n, int32_t nslot,
                      int32_t *dist)
{
    for (int32_t t = 0; t < n; t++) {
        if (t == 0) {
            dist[t] = nslot;
            continue;
        }
        const float *row = probs + (size_t)t * nslot;
        int32_t best = 0;
        for (int32_t i = 1; i < nslot; i++) {
            if (row[i] > row[best]) {
                best = i;
            }
        }
        dist[t] = best;
    }
}

int32_t nlp_om_build_tree(const int32_t *dist, int32_t n, int32_t *spans)
{
    if (n < 2) {
        return 0;
    }
    /* The stack holds nodes as spans [lo, hi) of leaves. */
    int32_t *lo = malloc((size_t)n * 2 * sizeof *lo);
    if (lo == NULL) {
        return -1;
    }
    int32_t *hi = lo + n;
    int32_t top = 0, k = 0;
    lo[0] = 0;
    hi[0] = 1;
    top = 1;
    int32_t prev = dist[0] - 1;
#define REDUCE()                                                              \
    do {                                                                      \
        hi[top - 2] = hi[top - 1];                                            \
        top--;                                                                \
        spans[2 * k] = lo[top - 1];                                           \
        spans[2 * k + 1] = hi[top - 1];                                       \
        k++;                                                                  \
    } while (0)
    for (int32_t t = 1; t < n; t++) {
        int32_t r = dist[t] - prev;
        for (int32_t j = 0; j < r; j++) {
            if (top == 1) {
                break;
            }
            REDUCE();
        }
        lo[top] = t;
        hi[top] = t + 1;
        top++;
        prev = dist[t] - 1;
    }
    while (top > 1) {
        REDUCE();
    }
#undef REDUCE
    free(lo);
    return k;
}

int32_t nlp_om_tree_remove_leaves(const int32_t *spans, int32_t n,
                                  const uint8_t *drop, int32_t *out)
{
    /* before[i] = kept leaves among 0..i-1 */
    int32_t *before = malloc(((size_t)n + 1) * sizeof *before);
    if (before == NULL) {
        return -1;
    }
    before[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        before[i + 1] = before[i] + (drop[i] ? 0 : 1);
    }
    int32_t k = 0;
    for (int32_t s = 0; s < n - 1; s++) {
        int32_t a = before[spans[2 * s]], b = before[spans[2 * s + 1]];
        if (b - a < 2) {
            continue; /* a leaf or nothing is left */
        }
        int dup = 0;
        for (int32_t j = 0; j < k && !dup; j++) {
            dup = out[2 * j] == a && out[2 * j + 1] == b;
        }
        if (!dup) {
            out[2 * k] = a;
            out[2 * k + 1] = b;
            k++;
        }
    }
    free(before);
    return k;
}

struct fmt {
    char *out;
    size_t cap, len;
};

static void put(struct fmt *f, const char *s)
{
    size_t n = strlen(s);
    if (f->len < f->cap) {
        size_t room = f->cap - f->len;
        memcpy(f->out + f->len, s, n < room ? n : room);
    }
    f->len += n;
}

/* Writes leaves [lo, hi) as children of one node, recursing into the
 * largest brackets inside. */
static void fmt_range(struct fmt *f, const int32_t *spans, int32_t n_spans,
                      int32_t lo, int32_t hi, const char *const *words,
                      int32_t skip)
{
    int32_t i = lo;
    int first = 1;
    while (i < hi) {
        if (!first) {
            put(f, " ");
        }
        first = 0;
        /* the largest bracket starting at i inside [lo, hi), not the
         * bracket being written (skip) */
        int32_t best = -1;
        for (int32_t s = 0; s < n_spans; s++) {
            if (s == skip || spans[2 * s] != i || spans[2 * s + 1] > hi) {
                continue;
            }
            if (spans[2 * s + 1] - i < 2 ||
                (spans[2 * s] == lo && spans[2 * s + 1] == hi)) {
                continue;
            }
            if (best < 0 || spans[2 * s + 1] > spans[2 * best + 1]) {
                best = s;
            }
        }
        if (best < 0) {
            put(f, words[i]);
            i++;
        } else {
            put(f, "(");
            fmt_range(f, spans, n_spans, i, spans[2 * best + 1], words, best);
            put(f, ")");
            i = spans[2 * best + 1];
        }
    }
}

int nlp_om_tree_format(const int32_t *spans, int32_t n_spans, int32_t n,
                       const char *const *words, char *out, size_t cap)
{
    struct fmt f = {out, cap, 0};
    if (n == 1) {
        put(&f, words[0]);
    } else if (n > 1) {
        int root = 0;
        for (int32_t s = 0; s < n_spans; s++) {
            root |= spans[2 * s] == 0 && spans[2 * s + 1] == n;
        }
        if (root) {
            put(&f, "(");
        }
        fmt_range(&f, spans, n_spans, 0, n, words, -1);
        if (root) {
            put(&f, ")");
        }
    }
    if (cap > 0) {
        out[f.len < cap ? f.len : cap - 1] = '\0';
    }
    return (int)f.len;
}
