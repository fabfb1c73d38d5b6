/* compILE on the kernel layer (see agents/compile.h). */
#include "agents/compile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/lines.h"
#include "core/random.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "kernels/tape.h"

#define LN_EPS 1e-5f

/* ---- config --------------------------------------------------------------- */

void compile_config_default(struct compile_config *c)
{
    memset(c, 0, sizeof *c);
    c->max_segs = 4;
    c->hidden = 128;
    c->obs_size = CRAFT_OBS_SIZE;
    c->n_actions = CRAFT_N_ACTIONS;
    c->beta_b = 0.1f;
    c->beta_z = 0.1f;
    c->prior_rate = 3.0f;
    c->temp_b = 1.0f;
}

int compile_config_validate(const struct compile_config *c)
{
    if (c->max_segs < 2 || c->max_segs > COMPILE_MAX_SEGS) {
        return gr_error(GR_EINVAL, "compILE max_segs: %d, expected 2..%d",
                        c->max_segs, COMPILE_MAX_SEGS);
    }
    if (c->hidden < 1 || c->hidden > 16384) {
        return gr_error(GR_EINVAL, "compILE hidden %d: expected 1..16384",
                        c->hidden);
    }
    if (c->obs_size < 1 || c->obs_size > 65536 || c->n_actions < 1 ||
        c->n_actions > 256) {
        return gr_error(GR_EINVAL, "observation size %d / actions %d out of "
                                   "range",
                        c->obs_size, c->n_actions);
    }
    if (!(c->beta_b >= 0.0f) || !(c->beta_z >= 0.0f) ||
        !(c->prior_rate > 0.0f) || !(c->temp_b > 0.0f) ||
        !isfinite(c->beta_b) || !isfinite(c->beta_z) ||
        !isfinite(c->prior_rate) || !isfinite(c->temp_b)) {
        return gr_error(GR_EINVAL, "compILE beta_b %g, beta_z %g (>= 0), "
                                   "prior_rate %g, temp_b %g (> 0)",
                        (double)c->beta_b, (double)c->beta_z,
                        (double)c->prior_rate, (double)c->temp_b);
    }
    if (c->n_tasks < 1 || c->n_tasks > OCN_MAX_TASKS) {
        return gr_error(GR_EINVAL, "tasks: %d, expected 1..%d", c->n_tasks,
                        OCN_MAX_TASKS);
    }
    return 0;
}

int compile_config_format(const struct compile_config *c, char *out,
                          size_t cap)
{
    char tasks[OCN_MAX_TASKS * CRAFT_TASK_NAME_CAP + OCN_MAX_TASKS] = "";
    size_t len = 0;
    for (int i = 0; i < c->n_tasks && i < OCN_MAX_TASKS; i++) {
        int n = snprintf(tasks + len, sizeof tasks - len, "%s%s",
                         i > 0 ? "," : "", c->task_names[i]);
        if (n < 0 || (size_t)n >= sizeof tasks - len) {
            return gr_error(GR_EINVAL, "config: task names too long");
        }
        len += (size_t)n;
    }
    int n = snprintf(out, cap,
                     "kind compile\nmax_segs %d\nhidden %d\nobs %d\n"
                     "actions %d\nbeta_b %.9g\nbeta_z %.9g\nprior_rate %.9g\n"
                     "temp_b %.9g\ntasks %s\n",
                     c->max_segs, c->hidden, c->obs_size, c->n_actions,
                     (double)c->beta_b, (double)c->beta_z,
                     (double)c->prior_rate, (double)c->temp_b, tasks);
    if (n < 0 || (size_t)n >= cap) {
        return gr_error(GR_EINVAL, "config text longer than %zu bytes", cap);
    }
    return n;
}

int compile_config_parse(const char *text, struct compile_config *c)
{
    compile_config_default(c);
    static const char *const keys[] = {"kind",   "max_segs",   "hidden",
                                       "obs",    "actions",    "beta_b",
                                       "beta_z", "prior_rate", "temp_b",
                                       "tasks"};
    unsigned have = 0;
    struct gr_lines it;
    char line[1024];
    const char *key, *v;
    int more;
    gr_lines_begin(&it, text);
    while ((more = gr_lines_next_kv(&it, line, sizeof line, &key, &v)) > 0) {
        const int line_no = it.no;
        int k = -1;
        for (int i = 0; i < 10; i++) {
            if (strcmp(key, keys[i]) == 0) {
                k = i;
            }
        }
        if (k < 0) {
            continue;
        }
        have |= 1u << k;
        char *end = NULL;
        double x = 0.0;
        if (k >= 1 && k <= 8) {
            x = strtod(v, &end);
            if (end == v || *end != '\0' ||
                (k <= 4 && (x != floor(x) || fabs(x) > 1e9))) {
                return gr_error(GR_EFORMAT, "config line %d: %s '%s' is not "
                                            "%s",
                                line_no, key, v,
                                k <= 4 ? "an integer" : "a number");
            }
        }
        switch (k) {
        case 0:
            if (strcmp(v, "compile") != 0) {
                return gr_error(GR_EFORMAT, "config line %d: kind '%s' is "
                                            "not compile",
                                line_no, v);
            }
            break;
        case 1: c->max_segs = (int)x; break;
        case 2: c->hidden = (int)x; break;
        case 3: c->obs_size = (int)x; break;
        case 4: c->n_actions = (int)x; break;
        case 5: c->beta_b = (float)x; break;
        case 6: c->beta_z = (float)x; break;
        case 7: c->prior_rate = (float)x; break;
        case 8: c->temp_b = (float)x; break;
        default: {
            c->n_tasks = 0;
            const char *q = v;
            while (*q != '\0') {
                const char *comma = strchr(q, ',');
                size_t len = comma != NULL ? (size_t)(comma - q) : strlen(q);
                if (len == 0 || len >= CRAFT_TASK_NAME_CAP ||
                    c->n_tasks >= OCN_MAX_TASKS) {
                    return gr_error(GR_EFORMAT, "config line %d: tasks '%s'",
                                    line_no, v);
                }
                memcpy(c->task_names[c->n_tasks], q, len);
                c->task_names[c->n_tasks][len] = '\0';
                c->n_tasks++;
                q += len + (comma != NULL);
            }
        }
        }
    }
    if (more < 0) {
        return more;
    }
    for (int i = 0; i < 10; i++) {
        if (!(have & (1u << i))) {
            return gr_error(GR_EFORMAT, "config: key '%s' is missing",
                            keys[i]);
        }
    }
    if (compile_config_validate(c) < 0) {
        return gr_error_wrap(GR_EFORMAT, "config");
    }
    return 0;
}

/* ---- parameters ----------------------------------------------------------- */

enum {
    P_ENC_WX, P_ENC_B, P_ACT_EMB, P_IN_W, P_IN_B, P_WIH, P_WHH, P_BIH, P_BHH,
    P_B1_W, P_B1_B, P_B2_W, P_B2_B, P_Z1_W, P_Z1_B, P_Z2_W, P_Z2_B, P_D1_W,
    P_D1_B, P_D2_W, P_D2_B, P_COUNT
};
_Static_assert(P_COUNT == COMPILE_N_PARAMS, "parameter list");

struct pspec {
    const char *name;
    struct gr_shape shape;
    int fan_in; /* 0: N(0, 1) */
};

static int specs(const struct compile_config *c, struct pspec *s)
{
    int64_t d = c->hidden, O = c->obs_size, A = c->n_actions;
    struct pspec v[P_COUNT] = {
        {"cmp.enc.wx", gr_shape2(O, d), (int)O},
        {"cmp.enc.bias", gr_shape1(d), (int)O},
        {"cmp.act_emb", gr_shape2(A + 1, d), 0},
        {"cmp.in.weight", gr_shape2(d, 2 * d), (int)(2 * d)},
        {"cmp.in.bias", gr_shape1(d), (int)(2 * d)},
        {"cmp.lstm.weight_ih", gr_shape2(4 * d, d), (int)d},
        {"cmp.lstm.weight_hh", gr_shape2(4 * d, d), (int)d},
        {"cmp.lstm.bias_ih", gr_shape1(4 * d), (int)d},
        {"cmp.lstm.bias_hh", gr_shape1(4 * d), (int)d},
        {"cmp.b1.weight", gr_shape2(d, d), (int)d},
        {"cmp.b1.bias", gr_shape1(d), (int)d},
        {"cmp.b2.weight", gr_shape2(1, d), (int)d},
        {"cmp.b2.bias", gr_shape1(1), (int)d},
        {"cmp.z1.weight", gr_shape2(d, d), (int)d},
        {"cmp.z1.bias", gr_shape1(d), (int)d},
        {"cmp.z2.weight", gr_shape2(2 * d, d), (int)d},
        {"cmp.z2.bias", gr_shape1(2 * d), (int)d},
        {"cmp.dec1.weight", gr_shape2(d, 2 * d), (int)(2 * d)},
        {"cmp.dec1.bias", gr_shape1(d), (int)(2 * d)},
        {"cmp.dec2.weight", gr_shape2(A, d), (int)d},
        {"cmp.dec2.bias", gr_shape1(A), (int)d},
    };
    memcpy(s, v, sizeof v);
    return P_COUNT;
}

const char *compile_param_name(int i)
{
    struct compile_config c;
    compile_config_default(&c);
    struct pspec s[P_COUNT];
    specs(&c, s);
    return i >= 0 && i < P_COUNT ? s[i].name : NULL;
}

int64_t compile_param_count(const struct compile_config *c)
{
    struct pspec s[P_COUNT];
    specs(c, s);
    int64_t total = 0;
    for (int i = 0; i < P_COUNT; i++) {
        int64_t k = 1;
        for (int j = 0; j < s[i].shape.ndim; j++) {
            k *= s[i].shape.d[j];
        }
        total += k;
    }
    return total;
}

int compile_model_init(struct compile_model *m, struct gr_ctx *ctx,
                       const struct compile_config *cfg, uint64_t seed)
{
    int rc = compile_config_validate(cfg);
    if (rc < 0) {
        return rc;
    }
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->ctx = ctx;
    m->seed = seed;
    struct pspec s[P_COUNT];
    specs(cfg, s);
    struct gr_rng rng = gr_rng_make(seed, 0xC0F1ull);
    for (int i = 0; i < P_COUNT && rc == 0; i++) {
        struct gr_tensor *t = gr_param_new(ctx, s[i].name, s[i].shape);
        if (t == NULL) {
            return gr_error_wrap(GR_EINVAL, "compILE parameter '%s'",
                                 s[i].name);
        }
        m->p[i] = t;
        if (s[i].fan_in > 0) {
            float b = 1.0f / sqrtf((float)s[i].fan_in);
            rc = gr_init_uniform(t, -b, b, rng);
        } else {
            struct gr_rng r = gr_rng_make(
                seed, rng.stream ^ gr_fnv1a64(s[i].name, strlen(s[i].name)));
            rc = gr_tensor_rand_normal(t, 0.0f, 1.0f, r);
        }
    }
    if (rc == 0) {
        m->draws = gr_buffer_new(ctx, "cmp.draws", GR_I32, gr_shape1(2));
        if (m->draws == NULL) {
            return gr_error(GR_EINVAL, "compILE: %s", gr_ctx_error(ctx));
        }
        int32_t zero[2] = {0, 0};
        rc = gr_tensor_set_host(m->draws, zero);
    }
    return rc;
}

/* ---- forward -------------------------------------------------------------- */

static int ctx_fail(struct gr_ctx *ctx, const char *what)
{
    int rc = gr_ctx_status(ctx);
    if (rc == 0) {
        rc = GR_EINVAL;
    }
    return gr_error(rc, "%s: %s", what, gr_ctx_error(ctx));
}

/* The training noise of one forward from Philox keyed by (seed, draw). */
static int draw_noise(struct compile_model *m, int B, int L, float *gumbel,
                      float *eps)
{
    int32_t c[2];
    int rc = gr_tensor_to_host(m->draws, c);
    if (rc < 0) {
        return rc;
    }
    uint64_t draw = (uint64_t)(uint32_t)c[0] | ((uint64_t)(uint32_t)c[1] << 32);
    struct gr_philox_stream s =
        gr_philox_stream_init(gr_mix64(m->seed ^ 0xC0A1E5EEDull), draw);
    const int S = m->cfg.max_segs, d = m->cfg.hidden;
    for (int64_t i = 0; i < (int64_t)(S - 1) * B * L; i++) {
        double u = ((double)gr_philox_next_u32(&s) + 0.5) / 4294967296.0;
        gumbel[i] = (float)-log(-log(u));
    }
    for (int64_t i = 0; i < (int64_t)S * B * d; i++) {
        double u1 = ((double)gr_philox_next_u32(&s) + 0.5) / 4294967296.0;
        double u2 = ((double)gr_philox_next_u32(&s) + 0.5) / 4294967296.0;
        eps[i] = (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    }
    draw++;
    c[0] = (int32_t)(uint32_t)(draw & 0xFFFFFFFFu);
    c[1] = (int32_t)(uint32_t)(draw >> 32);
    return gr_tensor_set_host(m->draws, c);
}

/* host scratch of one forward */
struct scratch {
    int32_t *idx, *act, *act_steps;
    float *val, *bmask, *last, *stepmask, *prior, *host, *pi_acc, *end_acc;
    float *gumbel, *eps;
};

static void scratch_free(struct scratch *s)
{
    free(s->idx);
    free(s->act);
    free(s->act_steps);
    free(s->val);
    free(s->bmask);
    free(s->last);
    free(s->stepmask);
    free(s->prior);
    free(s->host);
    free(s->pi_acc);
    free(s->end_acc);
    free(s->gumbel);
    free(s->eps);
}

int compile_forward(struct compile_model *m, const struct demo_batch *b,
                    const struct compile_noise *noise,
                    struct ocn_forward_out *out, float *seg_out)
{
    struct gr_ctx *ctx = m->ctx;
    const int S = m->cfg.max_segs, B = b->B, T = b->T, L = b->T + 1;
    const int64_t d = m->cfg.hidden, A = m->cfg.n_actions, nz = b->nz;
    /* training mode: gradients are being recorded */
    int training = gr_set_grad_enabled(ctx, 1);
    gr_set_grad_enabled(ctx, training);
    struct scratch h;
    memset(&h, 0, sizeof h);
    h.idx = malloc((size_t)(L * B * nz) * sizeof *h.idx);
    h.val = malloc((size_t)(L * B * nz) * sizeof *h.val);
    h.act = malloc((size_t)(L * B) * sizeof *h.act);
    h.act_steps = malloc((size_t)(B * T) * sizeof *h.act_steps);
    h.bmask = malloc((size_t)(B * L) * sizeof *h.bmask);
    h.last = calloc((size_t)(B * L), sizeof *h.last);
    h.stepmask = calloc((size_t)(B * T), sizeof *h.stepmask);
    h.prior = malloc((size_t)L * sizeof *h.prior);
    h.host = malloc((size_t)(B * (L > T * A ? L : T * A)) * sizeof *h.host);
    h.pi_acc = calloc((size_t)(B * T * A), sizeof *h.pi_acc);
    h.end_acc = calloc((size_t)(B * L), sizeof *h.end_acc);
    if (h.idx == NULL || h.val == NULL || h.act == NULL ||
        h.act_steps == NULL || h.bmask == NULL || h.last == NULL ||
        h.stepmask == NULL || h.prior == NULL || h.host == NULL ||
        h.pi_acc == NULL || h.end_acc == NULL) {
        scratch_free(&h);
        return gr_error(GR_ENOMEM, "compILE forward: out of memory");
    }
    /* padded, time-major rows t·B + j: steps, then EOS at t = T_j */
    for (int t = 0; t < L; t++) {
        for (int j = 0; j < B; j++) {
            int64_t r = (int64_t)t * B + j;
            int Tj = b->len[j];
            if (t < Tj) {
                int64_t src = b->row_off[t] + j;
                memcpy(h.idx + r * nz, b->idx + src * nz,
                       (size_t)nz * sizeof *h.idx);
                memcpy(h.val + r * nz, b->val + src * nz,
                       (size_t)nz * sizeof *h.val);
                h.act[r] = b->action[src];
                h.act_steps[(int64_t)j * T + t] = b->action[src];
                h.stepmask[(int64_t)j * T + t] = 1.0f;
            } else {
                for (int64_t k = 0; k < nz; k++) {
                    h.idx[r * nz + k] = -1;
                    h.val[r * nz + k] = 0.0f;
                }
                h.act[r] = (int32_t)A; /* EOS (and padding) */
                if (t < T) {
                    h.act_steps[(int64_t)j * T + t] = 0;
                }
            }
            h.bmask[(int64_t)j * L + t] =
                t >= 1 && t <= Tj ? 0.0f : -INFINITY;
        }
    }
    for (int j = 0; j < B; j++) {
        h.last[(int64_t)j * L + b->len[j]] = 1.0f;
    }
    /* log Poisson(k; λ) for k = 1 … L, log-normalised over the L positions */
    {
        double mx = -INFINITY, sum = 0.0, lam = m->cfg.prior_rate;
        double *lp = malloc((size_t)L * sizeof *lp);
        if (lp == NULL) {
            scratch_free(&h);
            return gr_error(GR_ENOMEM, "compILE forward: out of memory");
        }
        for (int k = 0; k < L; k++) {
            double v = k + 1.0;
            lp[k] = log(lam) * v - lam - lgamma(v + 1.0);
            mx = fmax(mx, lp[k]);
        }
        for (int k = 0; k < L; k++) {
            sum += exp(lp[k] - mx);
        }
        for (int k = 0; k < L; k++) {
            h.prior[k] = (float)(lp[k] - mx - log(sum));
        }
        h.prior[0] = 0.0f; /* index 0 is dropped (its probability is 0) */
        free(lp);
    }
    const float *gumbel = NULL, *eps = NULL;
    if (training) {
        if (noise != NULL) {
            gumbel = noise->gumbel;
            eps = noise->eps;
        } else {
            h.gumbel = malloc((size_t)((S - 1) * B * L) * sizeof *h.gumbel);
            h.eps = malloc((size_t)(S * B * d) * sizeof *h.eps);
            int rc = h.gumbel == NULL || h.eps == NULL
                         ? gr_error(GR_ENOMEM, "compILE: out of memory")
                         : draw_noise(m, B, L, h.gumbel, h.eps);
            if (rc < 0) {
                scratch_free(&h);
                return rc;
            }
            gumbel = h.gumbel;
            eps = h.eps;
        }
    }
    struct gr_tensor **p = m->p;
    /* inputs */
    struct gr_tensor *idx =
        gr_tensor_from_host(ctx, GR_I32, gr_shape2(L * B, nz), h.idx);
    struct gr_tensor *val =
        gr_tensor_from_host(ctx, GR_F32, gr_shape2(L * B, nz), h.val);
    struct gr_tensor *act =
        gr_tensor_from_host(ctx, GR_I32, gr_shape1(L * B), h.act);
    struct gr_tensor *o =
        gr_add(ctx, gr_sparse_matmul(ctx, idx, val, p[P_ENC_WX]), p[P_ENC_B]);
    struct gr_tensor *oa[2] = {o, gr_embedding(ctx, p[P_ACT_EMB], act)};
    struct gr_tensor *e = gr_layer_norm(
        ctx,
        gr_relu(ctx, gr_linear(ctx, gr_concat(ctx, 2, oa, 1), p[P_IN_W],
                               p[P_IN_B])),
        NULL, NULL, LN_EPS);
    struct gr_tensor *xw = gr_reshape(
        ctx, gr_linear(ctx, e, p[P_WIH], p[P_BIH]), gr_shape3(L, B, 4 * d));
    /* the decoder's observation part, [B, T, d] */
    struct gr_tensor *o_bt = gr_slice(
        ctx, gr_transpose(ctx, gr_reshape(ctx, o, gr_shape3(L, B, d)), 0, 1),
        1, 0, T);
    struct gr_tensor *od = gr_linear(ctx, o_bt,
                                     gr_slice(ctx, p[P_D1_W], 1, 0, d),
                                     p[P_D1_B]);
    struct gr_tensor *dz_w = gr_slice(ctx, p[P_D1_W], 1, d, d);
    struct gr_tensor *bmask =
        gr_tensor_from_host(ctx, GR_F32, gr_shape2(B, L), h.bmask);
    struct gr_tensor *stepmask =
        gr_tensor_from_host(ctx, GR_F32, gr_shape2(B, T), h.stepmask);
    struct gr_tensor *act_steps =
        gr_tensor_from_host(ctx, GR_I32, gr_shape3(B, T, 1), h.act_steps);
    struct gr_tensor *mask = NULL;   /* [B, L]: mask_{s-1} */
    struct gr_tensor *mask_t = NULL; /* [L, B, 1] */
    struct gr_tensor *nll = NULL, *kl_z = NULL, *kl_b = NULL;
    int rc = 0;
    for (int s = 0; s < S && rc == 0; s++) {
        /* the masked LSTM encoder */
        struct gr_tensor *hh = gr_zeros(ctx, gr_shape2(B, d));
        struct gr_tensor *cc = gr_zeros(ctx, gr_shape2(B, d));
        struct gr_tensor *outs[1025];
        if (L > 1025) {
            rc = gr_error(GR_EINVAL, "compILE: demonstrations of %d steps "
                                     "(at most 1024)",
                          T);
            break;
        }
        for (int t = 0; t < L; t++) {
            struct gr_tensor *gates =
                gr_add(ctx, gr_select(ctx, xw, t),
                       gr_linear(ctx, hh, p[P_WHH], p[P_BHH]));
            struct gr_tensor *hn = NULL, *cn = NULL;
            if (gates != NULL) {
                gr_lstm_cell(ctx, gates, cc, &hn, &cn);
            }
            if (mask_t != NULL) {
                struct gr_tensor *mt = gr_select(ctx, mask_t, t);
                hn = gr_mul(ctx, hn, mt);
                cn = gr_mul(ctx, cn, mt);
            }
            hh = hn;
            cc = cn;
            outs[t] = hh;
        }
        struct gr_tensor *enc = gr_stack(ctx, L, outs); /* [L, B, d] */
        struct gr_tensor *bs, *probs = NULL;
        if (s < S - 1) {
            struct gr_tensor *lb = gr_linear(
                ctx, gr_relu(ctx, gr_linear(ctx, enc, p[P_B1_W], p[P_B1_B])),
                p[P_B2_W], p[P_B2_B]);
            lb = gr_transpose(ctx, gr_reshape(ctx, lb, gr_shape2(L, B)), 0, 1);
            probs = gr_softmax(ctx, lb, bmask);
            if (training) {
                struct gr_tensor *g = gr_tensor_from_host(
                    ctx, GR_F32, gr_shape2(B, L),
                    gumbel + (int64_t)s * B * L);
                bs = gr_softmax(
                    ctx, gr_scale(ctx, gr_add(ctx, lb, g), 1.0f / m->cfg.temp_b),
                    bmask);
            } else {
                /* one-hot at the argmax (ties: the first) */
                rc = gr_tensor_to_host(lb, h.host);
                for (int j = 0; rc == 0 && j < B; j++) {
                    int best = 1;
                    for (int t = 1; t <= b->len[j]; t++) {
                        if (h.host[(int64_t)j * L + t] >
                            h.host[(int64_t)j * L + best]) {
                            best = t;
                        }
                    }
                    for (int t = 0; t < L; t++) {
                        h.host[(int64_t)j * L + t] = t == best ? 1.0f : 0.0f;
                    }
                    /* the inferred (hard) boundary counts in the score */
                    h.end_acc[(int64_t)j * L + best] += 1.0f;
                }
                bs = gr_tensor_from_host(ctx, GR_F32, gr_shape2(B, L), h.host);
            }
            if (s == 0) {
                /* KL(b_0 ‖ Poisson) · S, mean over the batch */
                struct gr_tensor *prior =
                    gr_tensor_from_host(ctx, GR_F32, gr_shape1(L), h.prior);
                struct gr_tensor *lp =
                    gr_sub(ctx, gr_log(ctx, gr_affine(ctx, probs, 1.0f, 1e-17f)),
                           prior);
                kl_b = gr_scale(ctx, gr_sum(ctx, gr_mul(ctx, probs, lp)),
                                (float)S / (float)B);
            }
        } else {
            bs = gr_tensor_from_host(ctx, GR_F32, gr_shape2(B, L), h.last);
        }
        /* the latent: readout of enc[t-1] weighted by b[t] */
        struct gr_tensor *enc_b = gr_slice(ctx, gr_transpose(ctx, enc, 0, 1),
                                           1, 0, L - 1); /* [B, L-1, d] */
        struct gr_tensor *w = gr_reshape(ctx, gr_slice(ctx, bs, 1, 1, L - 1),
                                         gr_shape3(B, 1, L - 1));
        struct gr_tensor *r = gr_reshape(ctx, gr_matmul(ctx, w, enc_b, 0, 0),
                                         gr_shape2(B, d));
        struct gr_tensor *zz = gr_linear(
            ctx, gr_relu(ctx, gr_linear(ctx, r, p[P_Z1_W], p[P_Z1_B])),
            p[P_Z2_W], p[P_Z2_B]);
        struct gr_tensor *ml[2] = {NULL, NULL};
        int64_t sz[2] = {d, d};
        if (zz != NULL) {
            gr_split(ctx, zz, 1, 2, sz, ml);
        }
        struct gr_tensor *z = ml[0];
        if (!training && m->latent_out != NULL && rc == 0) {
            rc = gr_tensor_to_host(ml[0], m->latent_out + (int64_t)s * B * d);
        }
        if (training) {
            struct gr_tensor *ep = gr_tensor_from_host(
                ctx, GR_F32, gr_shape2(B, d), eps + (int64_t)s * B * d);
            z = gr_add(ctx, ml[0],
                       gr_mul(ctx, gr_exp(ctx, gr_scale(ctx, ml[1], 0.5f)),
                              ep));
        }
        /* KL(N(μ, σ²) ‖ N(0, 1)), mean over the batch */
        struct gr_tensor *klz = gr_scale(
            ctx,
            gr_sum(ctx, gr_sub(ctx,
                               gr_sub(ctx, gr_affine(ctx, ml[1], 1.0f, 1.0f),
                                      gr_square(ctx, ml[0])),
                               gr_exp(ctx, ml[1]))),
            -0.5f / (float)B);
        kl_z = kl_z == NULL ? klz : gr_add(ctx, kl_z, klz);
        /* segment shares and the next mask */
        struct gr_tensor *cs = gr_cumsum(ctx, bs);
        struct gr_tensor *share = gr_affine(ctx, cs, -1.0f, 1.0f);
        if (mask != NULL) {
            share = gr_mul(ctx, share, mask);
        }
        mask = mask == NULL ? cs : gr_mul(ctx, mask, cs);
        mask_t = gr_reshape(ctx, gr_transpose(ctx, mask, 0, 1),
                            gr_shape3(L, B, 1));
        /* the decoder on every step */
        struct gr_tensor *zp = gr_reshape(
            ctx, gr_matmul(ctx, z, dz_w, 0, 1), gr_shape3(B, 1, d));
        struct gr_tensor *logits = gr_linear(
            ctx, gr_relu(ctx, gr_add(ctx, od, zp)), p[P_D2_W], p[P_D2_B]);
        struct gr_tensor *lpa = gr_reshape(
            ctx, gr_gather(ctx, gr_log_softmax(ctx, logits, NULL), act_steps),
            gr_shape2(B, T));
        struct gr_tensor *share_t = gr_slice(ctx, share, 1, 0, T);
        struct gr_tensor *term =
            gr_sum(ctx, gr_mul(ctx, gr_mul(ctx, share_t, lpa), stepmask));
        nll = nll == NULL ? term : gr_add(ctx, nll, term);
        if (gr_ctx_status(ctx) != 0) {
            break;
        }
        /* host: π_t = Σ_s share_s π_s, the boundary score, seg */
        if (out->pi != NULL || out->act_prob != NULL ||
            out->act_argmax != NULL || seg_out != NULL) {
            float *sh = malloc((size_t)(B * L) * sizeof *sh);
            if (sh == NULL) {
                rc = gr_error(GR_ENOMEM, "compILE forward: out of memory");
                break;
            }
            rc = gr_tensor_to_host(share, sh);
            if (rc == 0) {
                rc = gr_tensor_to_host(gr_softmax(ctx, logits, NULL), h.host);
            }
            for (int j = 0; rc == 0 && j < B; j++) {
                for (int t = 0; t < b->len[j]; t++) {
                    float w_s = sh[(int64_t)j * L + t];
                    for (int64_t a = 0; a < A; a++) {
                        h.pi_acc[((int64_t)j * T + t) * A + a] +=
                            w_s * h.host[((int64_t)j * T + t) * A + a];
                    }
                    if (seg_out != NULL) {
                        seg_out[(b->row_off[t] + j) * S + s] = w_s;
                    }
                }
            }
            free(sh);
        }
        if (rc == 0 && probs != NULL && out->end != NULL) {
            /* evaluation: the soft mass breaks ties between steps with the
             * same count of inferred boundaries; training: it is the score */
            float wsoft = training ? 1.0f : 1e-3f;
            rc = gr_tensor_to_host(probs, h.host);
            for (int64_t k = 0; rc == 0 && k < (int64_t)B * L; k++) {
                h.end_acc[k] += wsoft * h.host[k];
            }
        }
    }
    if (rc == 0 && gr_ctx_status(ctx) == 0) {
        for (int j = 0; j < B; j++) {
            for (int t = 0; t < b->len[j]; t++) {
                int64_t row = b->row_off[t] + j;
                const float *pt = h.pi_acc + ((int64_t)j * T + t) * A;
                int a_t = b->action[row];
                if (out->end != NULL) {
                    out->end[row] = t == 0 ? 1.0f : h.end_acc[(int64_t)j * L + t];
                }
                if (out->act_prob != NULL) {
                    out->act_prob[row] = pt[a_t];
                }
                if (out->pi != NULL) {
                    memcpy(out->pi + row * A, pt, (size_t)A * sizeof *pt);
                }
                if (out->act_argmax != NULL) {
                    int best = 0;
                    for (int a = 1; a < A; a++) {
                        best = pt[a] > pt[best] ? a : best;
                    }
                    out->act_argmax[row] = best;
                }
            }
        }
    }
    scratch_free(&h);
    if (rc < 0) {
        return rc;
    }
    /* loss = −(1/B) Σ share · log π + β_z KL_z + β_b KL_b */
    out->loss = gr_add(
        ctx,
        gr_add(ctx, gr_scale(ctx, nll, -1.0f / (float)B),
               gr_scale(ctx, kl_z, m->cfg.beta_z)),
        gr_scale(ctx, kl_b, m->cfg.beta_b));
    if (out->loss == NULL || gr_ctx_status(ctx) != 0) {
        return ctx_fail(ctx, "compILE forward");
    }
    out->nll_sum = -(double)gr_tensor_item(nll);
    return 0;
}

/* ---- behaviour cloning ------------------------------------------------------ */

int compile_latents(struct compile_model *m, const struct demo_batch *b,
                    float *z, float *seg)
{
    int was = gr_set_grad_enabled(m->ctx, 0);
    struct ocn_forward_out fo;
    memset(&fo, 0, sizeof fo);
    m->latent_out = z;
    int rc = compile_forward(m, b, NULL, &fo, seg);
    m->latent_out = NULL;
    gr_step_reset(m->ctx);
    gr_set_grad_enabled(m->ctx, was);
    return rc;
}

struct gr_tensor *compile_decode_logits(struct compile_model *m,
                                        struct gr_tensor *idx,
                                        struct gr_tensor *val,
                                        struct gr_tensor *z)
{
    struct gr_ctx *ctx = m->ctx;
    struct gr_tensor **p = m->p;
    struct gr_tensor *o =
        gr_add(ctx, gr_sparse_matmul(ctx, idx, val, p[P_ENC_WX]), p[P_ENC_B]);
    struct gr_tensor *oz[2] = {o, z};
    return gr_linear(
        ctx,
        gr_relu(ctx, gr_linear(ctx, gr_concat(ctx, 2, oz, 1), p[P_D1_W],
                               p[P_D1_B])),
        p[P_D2_W], p[P_D2_B]);
}

int compile_decode(struct compile_model *m, const int32_t *idx,
                   const float *val, int64_t M, int nz, const float *z,
                   float *probs)
{
    struct gr_ctx *ctx = m->ctx;
    int was = gr_set_grad_enabled(ctx, 0);
    struct gr_tensor *ti =
        gr_tensor_from_host(ctx, GR_I32, gr_shape2(M, nz), idx);
    struct gr_tensor *tv =
        gr_tensor_from_host(ctx, GR_F32, gr_shape2(M, nz), val);
    struct gr_tensor *tz =
        gr_tensor_from_host(ctx, GR_F32, gr_shape2(M, m->cfg.hidden), z);
    struct gr_tensor *pr =
        gr_softmax(ctx, compile_decode_logits(m, ti, tv, tz), NULL);
    int rc = pr == NULL || gr_ctx_status(ctx) != 0
                 ? ctx_fail(ctx, "compILE decode")
                 : gr_tensor_to_host(pr, probs);
    gr_step_reset(ctx);
    gr_set_grad_enabled(ctx, was);
    return rc;
}

int compile_boundary_step(struct compile_model *m, const int32_t *idx,
                          const float *val, int64_t E, int nz,
                          const int32_t *action, float *h, float *c,
                          float *logit)
{
    struct gr_ctx *ctx = m->ctx;
    const int64_t d = m->cfg.hidden;
    struct gr_tensor **p = m->p;
    int was = gr_set_grad_enabled(ctx, 0);
    struct gr_tensor *ti =
        gr_tensor_from_host(ctx, GR_I32, gr_shape2(E, nz), idx);
    struct gr_tensor *tv =
        gr_tensor_from_host(ctx, GR_F32, gr_shape2(E, nz), val);
    struct gr_tensor *ta =
        gr_tensor_from_host(ctx, GR_I32, gr_shape1(E), action);
    struct gr_tensor *th = gr_tensor_from_host(ctx, GR_F32, gr_shape2(E, d), h);
    struct gr_tensor *tc = gr_tensor_from_host(ctx, GR_F32, gr_shape2(E, d), c);
    struct gr_tensor *o =
        gr_add(ctx, gr_sparse_matmul(ctx, ti, tv, p[P_ENC_WX]), p[P_ENC_B]);
    struct gr_tensor *oa[2] = {o, gr_embedding(ctx, p[P_ACT_EMB], ta)};
    struct gr_tensor *e = gr_layer_norm(
        ctx,
        gr_relu(ctx, gr_linear(ctx, gr_concat(ctx, 2, oa, 1), p[P_IN_W],
                               p[P_IN_B])),
        NULL, NULL, LN_EPS);
    struct gr_tensor *gates =
        gr_add(ctx, gr_linear(ctx, e, p[P_WIH], p[P_BIH]),
               gr_linear(ctx, th, p[P_WHH], p[P_BHH]));
    struct gr_tensor *hn = NULL, *cn = NULL;
    if (gates != NULL) {
        gr_lstm_cell(ctx, gates, tc, &hn, &cn);
    }
    struct gr_tensor *lb = gr_linear(
        ctx, gr_relu(ctx, gr_linear(ctx, hn, p[P_B1_W], p[P_B1_B])),
        p[P_B2_W], p[P_B2_B]);
    int rc = 0;
    if (lb == NULL || gr_ctx_status(ctx) != 0) {
        rc = ctx_fail(ctx, "compILE boundary step");
    }
    if (rc == 0) {
        rc = gr_tensor_to_host(hn, h);
    }
    if (rc == 0) {
        rc = gr_tensor_to_host(cn, c);
    }
    if (rc == 0) {
        rc = gr_tensor_to_host(lb, logit);
    }
    gr_step_reset(ctx);
    gr_set_grad_enabled(ctx, was);
    return rc;
}

static int policy_forward(void *model, const struct demo_batch *b,
                          struct ocn_forward_out *out)
{
    return compile_forward(model, b, NULL, out, NULL);
}

void compile_bc_policy(struct compile_model *m, struct bc_policy *p)
{
    memset(p, 0, sizeof *p);
    p->ctx = m->ctx;
    p->n_tasks = m->cfg.n_tasks;
    p->n_options = 0;
    p->model = m;
    p->forward = policy_forward;
    p->greedy_returns = NULL;
}
