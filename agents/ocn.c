/* The Option-Controller Network on the kernel layer (see agents/ocn.h). */
#include "agents/ocn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/lines.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "kernels/tape.h"

/* ---- config --------------------------------------------------------------- */

void ocn_config_default(struct ocn_config *c)
{
    memset(c, 0, sizeof *c);
    c->kind = OCN_KIND_OCN;
    c->n_options = 3;
    c->hidden = 128;
    c->width = 128;
    c->obs_size = CRAFT_OBS_SIZE;
    c->n_actions = CRAFT_N_ACTIONS;
    c->tau = 10.0f;
    c->n_tasks = 0;
}

int ocn_config_validate(const struct ocn_config *c)
{
    if (c->kind != OCN_KIND_OCN && c->kind != OCN_KIND_MOE) {
        return gr_error(GR_EINVAL, "model kind %d is not ocn or moe",
                        (int)c->kind);
    }
    if (c->n_options < 1 || c->n_options > OCN_MAX_OPTIONS) {
        return gr_error(GR_EINVAL, "options: %d, expected 1..%d",
                        c->n_options, OCN_MAX_OPTIONS);
    }
    if (c->hidden < 1 || c->hidden > 65536 || c->width < 1 ||
        c->width > 65536) {
        return gr_error(GR_EINVAL, "hidden %d / width %d: expected 1..65536",
                        c->hidden, c->width);
    }
    if (c->obs_size < 1 || c->obs_size > 65536) {
        return gr_error(GR_EINVAL, "observation size %d: expected 1..65536",
                        c->obs_size);
    }
    if (c->n_actions < 1 || c->n_actions > 256) {
        return gr_error(GR_EINVAL, "actions: %d, expected 1..256",
                        c->n_actions);
    }
    if (!(c->tau > 0.0f) || !isfinite(c->tau)) {
        return gr_error(GR_EINVAL, "tau %g: expected a positive number",
                        (double)c->tau);
    }
    if (c->opt_ignore_lo < 0 || c->opt_ignore_hi < c->opt_ignore_lo ||
        c->opt_ignore_hi > c->obs_size) {
        return gr_error(GR_EINVAL,
                        "options ignore features %d:%d: expected "
                        "0 <= lo <= hi <= %d",
                        c->opt_ignore_lo, c->opt_ignore_hi, c->obs_size);
    }
    if (!(c->balance >= 0.0f) || !isfinite(c->balance)) {
        return gr_error(GR_EINVAL, "balance %g: expected a number >= 0",
                        (double)c->balance);
    }
    if (c->n_tasks < 1 || c->n_tasks > OCN_MAX_TASKS) {
        return gr_error(GR_EINVAL, "tasks: %d, expected 1..%d", c->n_tasks,
                        OCN_MAX_TASKS);
    }
    return 0;
}

const char *ocn_kind_name(enum ocn_kind k)
{
    switch (k) {
    case OCN_KIND_OCN:
        return "ocn";
    case OCN_KIND_MOE:
        return "moe";
    }
    return NULL;
}

int ocn_kind_from_name(const char *name)
{
    if (strcmp(name, "ocn") == 0) {
        return OCN_KIND_OCN;
    }
    if (strcmp(name, "moe") == 0) {
        return OCN_KIND_MOE;
    }
    return -1;
}

int ocn_config_format(const struct ocn_config *c, char *out, size_t cap)
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
    /* %.9g keeps every float exactly */
    int n = snprintf(out, cap,
                     "kind %s\noptions %d\nhidden %d\nwidth %d\nobs %d\n"
                     "actions %d\ntau %.9g\ntasks %s\n",
                     ocn_kind_name(c->kind), c->n_options, c->hidden,
                     c->width, c->obs_size, c->n_actions, (double)c->tau,
                     tasks);
    if (n >= 0 && (size_t)n < cap && c->ctrl_blind) {
        /* only when set, so the config of every other model is unchanged */
        n += snprintf(out + n, cap - (size_t)n, "controller blind\n");
    }
    if (n >= 0 && (size_t)n < cap && c->opt_ignore_hi > c->opt_ignore_lo) {
        n += snprintf(out + n, cap - (size_t)n, "options_ignore %d:%d\n",
                      c->opt_ignore_lo, c->opt_ignore_hi);
    }
    if (n >= 0 && (size_t)n < cap && c->act_hard) {
        n += snprintf(out + n, cap - (size_t)n, "acting hard\n");
    }
    if (n >= 0 && (size_t)n < cap && c->value_head) {
        n += snprintf(out + n, cap - (size_t)n, "value 1\n");
    }
    if (n >= 0 && (size_t)n < cap && c->balance != 0.0f) {
        n += snprintf(out + n, cap - (size_t)n, "balance %.9g\n",
                      (double)c->balance);
    }
    if (n < 0 || (size_t)n >= cap) {
        return gr_error(GR_EINVAL, "config text longer than %zu bytes", cap);
    }
    return n;
}

static int parse_int(const char *v, int line, const char *key, int *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end != '\0' || x < -2147483647L || x > 2147483647L) {
        return gr_error(GR_EFORMAT, "config line %d: %s '%s' is not an "
                                    "integer",
                        line, key, v);
    }
    *out = (int)x;
    return 0;
}

static int parse_float(const char *v, int line, const char *key, float *out)
{
    char *end;
    float x = strtof(v, &end);
    if (end == v || *end != '\0') {
        return gr_error(GR_EFORMAT, "config line %d: %s '%s' is not a "
                                    "number",
                        line, key, v);
    }
    *out = x;
    return 0;
}

int ocn_config_parse(const char *text, struct ocn_config *c)
{
    ocn_config_default(c);
    enum { HAVE_KIND = 1, HAVE_OPT = 2, HAVE_HID = 4, HAVE_WID = 8,
           HAVE_OBS = 16, HAVE_ACT = 32, HAVE_TAU = 64, HAVE_TASKS = 128 };
    unsigned have = 0;
    struct gr_lines it;
    char line[1024];
    const char *key, *v;
    int more;
    gr_lines_begin(&it, text);
    while ((more = gr_lines_next_kv(&it, line, sizeof line, &key, &v)) > 0) {
        const int line_no = it.no;
        int rc = 0;
        if (strcmp(key, "kind") == 0) {
            int k = ocn_kind_from_name(v);
            if (k < 0) {
                return gr_error(GR_EFORMAT, "config line %d: kind '%s' is "
                                            "not ocn or moe",
                                line_no, v);
            }
            c->kind = (enum ocn_kind)k;
            have |= HAVE_KIND;
        } else if (strcmp(key, "options") == 0) {
            rc = parse_int(v, line_no, key, &c->n_options);
            have |= HAVE_OPT;
        } else if (strcmp(key, "hidden") == 0) {
            rc = parse_int(v, line_no, key, &c->hidden);
            have |= HAVE_HID;
        } else if (strcmp(key, "width") == 0) {
            rc = parse_int(v, line_no, key, &c->width);
            have |= HAVE_WID;
        } else if (strcmp(key, "obs") == 0) {
            rc = parse_int(v, line_no, key, &c->obs_size);
            have |= HAVE_OBS;
        } else if (strcmp(key, "actions") == 0) {
            rc = parse_int(v, line_no, key, &c->n_actions);
            have |= HAVE_ACT;
        } else if (strcmp(key, "tau") == 0) {
            rc = parse_float(v, line_no, key, &c->tau);
            have |= HAVE_TAU;
        } else if (strcmp(key, "controller") == 0) {
            if (strcmp(v, "blind") != 0 && strcmp(v, "obs") != 0) {
                return gr_error(GR_EFORMAT, "config line %d: controller '%s' "
                                            "is not blind or obs",
                                line_no, v);
            }
            c->ctrl_blind = strcmp(v, "blind") == 0;
        } else if (strcmp(key, "options_ignore") == 0) {
            int lo, hi, used = 0;
            if (sscanf(v, "%d:%d%n", &lo, &hi, &used) != 2 ||
                v[used] != '\0') {
                return gr_error(GR_EFORMAT, "config line %d: options_ignore "
                                            "'%s' is not LO:HI",
                                line_no, v);
            }
            c->opt_ignore_lo = lo;
            c->opt_ignore_hi = hi;
        } else if (strcmp(key, "acting") == 0) {
            if (strcmp(v, "hard") != 0 && strcmp(v, "soft") != 0) {
                return gr_error(GR_EFORMAT, "config line %d: acting '%s' is "
                                            "not hard or soft",
                                line_no, v);
            }
            c->act_hard = strcmp(v, "hard") == 0;
        } else if (strcmp(key, "value") == 0) {
            rc = parse_int(v, line_no, key, &c->value_head);
            if (rc == 0 && c->value_head != 0 && c->value_head != 1) {
                return gr_error(GR_EFORMAT, "config line %d: value '%s' is "
                                            "not 0 or 1",
                                line_no, v);
            }
        } else if (strcmp(key, "balance") == 0) {
            rc = parse_float(v, line_no, key, &c->balance);
        } else if (strcmp(key, "tasks") == 0) {
            c->n_tasks = 0;
            const char *q = v;
            while (*q != '\0') {
                const char *comma = strchr(q, ',');
                size_t len = comma != NULL ? (size_t)(comma - q) : strlen(q);
                if (len == 0 || len >= CRAFT_TASK_NAME_CAP ||
                    c->n_tasks >= OCN_MAX_TASKS) {
                    return gr_error(GR_EFORMAT, "config line %d: tasks '%s': "
                                                "an empty, too long or "
                                                "surplus name",
                                    line_no, v);
                }
                memcpy(c->task_names[c->n_tasks], q, len);
                c->task_names[c->n_tasks][len] = '\0';
                c->n_tasks++;
                q += len + (comma != NULL);
            }
            have |= HAVE_TASKS;
        }
        if (rc < 0) {
            return rc;
        }
    }
    if (more < 0) {
        return more;
    }
    static const char *const names[] = {"kind", "options", "hidden", "width",
                                        "obs", "actions", "tau", "tasks"};
    for (int i = 0; i < 8; i++) {
        if (!(have & (1u << i))) {
            return gr_error(GR_EFORMAT, "config: key '%s' is missing",
                            names[i]);
        }
    }
    int rc = ocn_config_validate(c);
    if (rc < 0) {
        return gr_error_wrap(GR_EFORMAT, "config");
    }
    return 0;
}

/* ---- parameters ----------------------------------------------------------- */

int64_t ocn_param_count(const struct ocn_config *c)
{
    int64_t K = c->n_options, d = c->hidden, w = c->width, O = c->obs_size,
            A = c->n_actions;
    int64_t ctrl = (O + d) * w + w + w * w + w + (K + d) * w + (K + d) +
                   (int64_t)c->n_tasks * d + (c->value_head ? w + 1 : 0);
    int64_t opt = K * ((O + d) * w + w + w * w + w + (A + d + 1) * w +
                       (A + d + 1));
    return ctrl + opt;
}

struct param_spec {
    const char *name;
    struct gr_shape shape;
    int fan_in; /* 0: normal(0, 0.1) (initial states) */
    size_t offset; /* of the tensor pointer in struct ocn_model */
};

static int param_specs(const struct ocn_config *c, struct param_spec *s)
{
    int64_t K = c->n_options, d = c->hidden, w = c->width, O = c->obs_size,
            A = c->n_actions;
    int f1 = (int)(O + d), fw = (int)w;
    struct param_spec v[] = {
        {"ctrl.l1.wx", gr_shape2(O, w), f1, offsetof(struct ocn_model, c_wx)},
        {"ctrl.l1.wh", gr_shape2(w, d), f1, offsetof(struct ocn_model, c_wh)},
        {"ctrl.l1.bias", gr_shape1(w), f1, offsetof(struct ocn_model, c_b1)},
        {"ctrl.l2.weight", gr_shape2(w, w), fw,
         offsetof(struct ocn_model, c_w2)},
        {"ctrl.l2.bias", gr_shape1(w), fw, offsetof(struct ocn_model, c_b2)},
        {"ctrl.head.weight", gr_shape2(K + d, w), fw,
         offsetof(struct ocn_model, c_wo)},
        {"ctrl.head.bias", gr_shape1(K + d), fw,
         offsetof(struct ocn_model, c_bo)},
        {"ctrl.h_init", gr_shape2(c->n_tasks, d), 0,
         offsetof(struct ocn_model, h_init)},
        {"opt.l1.wx", gr_shape2(O, K * w), f1,
         offsetof(struct ocn_model, o_wx)},
        {"opt.l1.wh", gr_shape3(K, w, d), f1,
         offsetof(struct ocn_model, o_wh)},
        {"opt.l1.bias", gr_shape2(K, w), f1, offsetof(struct ocn_model, o_b1)},
        {"opt.l2.weight", gr_shape3(K, w, w), fw,
         offsetof(struct ocn_model, o_w2)},
        {"opt.l2.bias", gr_shape2(K, w), fw, offsetof(struct ocn_model, o_b2)},
        {"opt.head.weight", gr_shape3(K, A + d + 1, w), fw,
         offsetof(struct ocn_model, o_wo)},
        {"opt.head.bias", gr_shape2(K, A + d + 1), fw,
         offsetof(struct ocn_model, o_bo)},
        {"ctrl.value.weight", gr_shape2(1, w), fw,
         offsetof(struct ocn_model, c_vw)},
        {"ctrl.value.bias", gr_shape1(1), fw, offsetof(struct ocn_model, c_vb)},
    };
    int n = (int)(sizeof v / sizeof v[0]);
    if (!c->value_head) {
        n -= 2; /* the value head is last */
    }
    for (int i = 0; i < n; i++) {
        s[i] = v[i];
    }
    return n;
}

#define OCN_N_PARAMS 17

int ocn_model_init(struct ocn_model *m, struct gr_ctx *ctx,
                   const struct ocn_config *cfg, uint64_t seed)
{
    int rc = ocn_config_validate(cfg);
    if (rc < 0) {
        return rc;
    }
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->ctx = ctx;
    struct param_spec s[OCN_N_PARAMS];
    int n = param_specs(cfg, s);
    struct gr_rng rng = gr_rng_make(seed, 0x0C0Eull);
    for (int i = 0; i < n; i++) {
        struct gr_tensor *t = gr_param_new(ctx, s[i].name, s[i].shape);
        if (t == NULL) {
            return gr_error_wrap(GR_EINVAL, "OCN parameter '%s'", s[i].name);
        }
        *(struct gr_tensor **)((char *)m + s[i].offset) = t;
        if (s[i].fan_in > 0) {
            float b = 1.0f / sqrtf((float)s[i].fan_in);
            rc = gr_init_uniform(t, -b, b, rng);
        } else {
            /* keyed by the name, like gr_init_uniform */
            struct gr_rng r = gr_rng_make(
                seed, rng.stream ^ gr_fnv1a64(s[i].name, strlen(s[i].name)));
            rc = gr_tensor_rand_normal(t, 0.0f, 0.1f, r);
        }
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

int ocn_model_bind(struct ocn_model *m, struct gr_ctx *ctx,
                   const struct ocn_config *cfg)
{
    int rc = ocn_config_validate(cfg);
    if (rc < 0) {
        return rc;
    }
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->ctx = ctx;
    struct param_spec s[OCN_N_PARAMS];
    int n = param_specs(cfg, s);
    for (int i = 0; i < n; i++) {
        struct gr_tensor *t = gr_ctx_find(ctx, s[i].name);
        if (t == NULL) {
            return gr_error(GR_EINVAL, "the context has no OCN parameter '%s'",
                            s[i].name);
        }
        struct gr_shape sh = gr_tensor_shape(t);
        int same = sh.ndim == s[i].shape.ndim;
        for (int k = 0; same && k < sh.ndim; k++) {
            same = sh.d[k] == s[i].shape.d[k];
        }
        if (!same) {
            char a[64], b[64];
            gr_shape_format(sh, a, sizeof a);
            gr_shape_format(s[i].shape, b, sizeof b);
            return gr_error(GR_EINVAL, "OCN parameter '%s' has shape %s, the "
                                       "config needs %s",
                            s[i].name, a, b);
        }
        *(struct gr_tensor **)((char *)m + s[i].offset) = t;
    }
    return 0;
}

/* ---- cells ---------------------------------------------------------------- */

/* Controller cell (ocn.md §3) on N rows: xc [N, w] = the observation part
 * of layer 1 plus its bias, hc [N, d] -> pi [N, K] (softmax of logits/τ),
 * h_new [N, d]. */
static void ctrl_cell(struct ocn_model *m, struct gr_tensor *xc,
                      struct gr_tensor *hc, struct gr_tensor **pi,
                      struct gr_tensor **h_new)
{
    struct gr_ctx *ctx = m->ctx;
    int64_t K = m->cfg.n_options, d = m->cfg.hidden;
    struct gr_tensor *pre = gr_add(ctx, gr_matmul(ctx, hc, m->c_wh, 0, 1), xc);
    struct gr_tensor *z = gr_tanh(ctx, pre);
    struct gr_tensor *u = gr_tanh(ctx, gr_linear(ctx, z, m->c_w2, m->c_b2));
    struct gr_tensor *head = gr_linear(ctx, u, m->c_wo, m->c_bo);
    struct gr_tensor *parts[2] = {NULL, NULL};
    int64_t sizes[2] = {K, d};
    if (head != NULL) {
        gr_split(ctx, head, 1, 2, sizes, parts);
    }
    *pi = gr_softmax(ctx, gr_scale(ctx, parts[0], 1.0f / m->cfg.tau), NULL);
    *h_new = gr_tanh(ctx, parts[1]);
}

/* The K option cells on N rows each: xo [K, N, w] (observation part plus
 * bias), ho [K, N, d] or NULL for the initial state z_i = 0 -> pi [K, N, A],
 * h_new [K, N, d], and e [K, N, 1] when e is not NULL. */
static void opt_cell(struct ocn_model *m, struct gr_tensor *xo,
                     struct gr_tensor *ho, struct gr_tensor **pi,
                     struct gr_tensor **h_new, struct gr_tensor **e)
{
    struct gr_ctx *ctx = m->ctx;
    int64_t K = m->cfg.n_options, d = m->cfg.hidden, w = m->cfg.width,
            A = m->cfg.n_actions;
    struct gr_tensor *pre =
        ho != NULL ? gr_add(ctx, gr_matmul(ctx, ho, m->o_wh, 0, 1), xo) : xo;
    struct gr_tensor *z = gr_tanh(ctx, pre);
    struct gr_tensor *u = gr_tanh(
        ctx, gr_add(ctx, gr_matmul(ctx, z, m->o_w2, 0, 1),
                    gr_reshape(ctx, m->o_b2, gr_shape3(K, 1, w))));
    struct gr_tensor *head = gr_add(
        ctx, gr_matmul(ctx, u, m->o_wo, 0, 1),
        gr_reshape(ctx, m->o_bo, gr_shape3(K, 1, A + d + 1)));
    struct gr_tensor *parts[3] = {NULL, NULL, NULL};
    int64_t sizes[3] = {A, d, 1};
    if (head != NULL) {
        gr_split(ctx, head, 2, 3, sizes, parts);
    }
    *pi = gr_softmax(ctx, parts[0], NULL);
    *h_new = gr_tanh(ctx, parts[1]);
    if (e != NULL) {
        *e = gr_sigmoid(ctx, parts[2]);
    }
}

/* Observation parts of layer 1 for N rows of sparse observations
 * idx/val [N, nz] (host arrays): xc [N, w] and xo [K, N, w], each with its
 * bias added. idx_o [N, nz] is scratch for the options' column list when
 * they ignore some features (cfg.opt_ignore_*): those become -1, the
 * padding index, so their rows of opt.l1.wx are neither read nor trained
 * (they stay in the model, unused, like ctrl.l1.wx for a blind
 * controller). */
static void obs_parts(struct ocn_model *m, const int32_t *idx_h,
                      const float *val_h, int64_t N, int nz, int32_t *idx_o,
                      struct gr_tensor **xc, struct gr_tensor **xo)
{
    struct gr_ctx *ctx = m->ctx;
    int64_t K = m->cfg.n_options, w = m->cfg.width;
    struct gr_tensor *idx =
        gr_tensor_from_host(ctx, GR_I32, gr_shape2(N, nz), idx_h);
    struct gr_tensor *val =
        gr_tensor_from_host(ctx, GR_F32, gr_shape2(N, nz), val_h);
    struct gr_tensor *opt_idx = idx;
    const int lo = m->cfg.opt_ignore_lo, hi = m->cfg.opt_ignore_hi;
    if (hi > lo) {
        for (int64_t i = 0; i < N * nz; i++) {
            idx_o[i] = idx_h[i] >= lo && idx_h[i] < hi ? -1 : idx_h[i];
        }
        opt_idx = gr_tensor_from_host(ctx, GR_I32, gr_shape2(N, nz), idx_o);
    }
    /* a blind controller (cfg.ctrl_blind) has layer 1 = W_h·h + c1 only;
     * ctrl.l1.wx stays in the model, unused, so checkpoints keep one
     * layout */
    *xc = m->cfg.ctrl_blind
              ? gr_add(ctx, gr_full(ctx, gr_shape2(N, w), 0.0f), m->c_b1)
              : gr_add(ctx, gr_sparse_matmul(ctx, idx, val, m->c_wx), m->c_b1);
    struct gr_tensor *x =
        gr_add(ctx, gr_sparse_matmul(ctx, opt_idx, val, m->o_wx),
               gr_reshape(ctx, m->o_b1, gr_shape1(K * w)));
    *xo = gr_transpose(ctx, gr_reshape(ctx, x, gr_shape3(N, K, w)), 0, 1);
}

/* The soft state carried between steps. */
struct soft_state {
    struct gr_tensor *hc;  /* [Bt, d] */
    struct gr_tensor *pit; /* [K, Bt]: Π^C transposed */
    struct gr_tensor *ho;  /* [K, Bt, d] */
};

/* One step of §5 on Bt rows. xc_t [Bt, w], xo_t [K, Bt, w]; sp_t, sh_t
 * [K, Bt, A], [K, Bt, d]: the switch branch's option outputs. st: the
 * state at t-1 in, at t out (st->hc must be set; pit and ho may be NULL
 * when every row switches). switch_all: e_t = 1 for every row (t = 0, or
 * MoE): the continue branch is not computed. first: [Bt, 1] f32 0/1 or
 * NULL: rows where e_t is forced to 1 (an episode's first step while
 * acting). force_end >= 0: e_t replaced by that constant (tests).
 * -> *pi [Bt, A] and *e [Bt, 1] (NULL when switch_all). */
static void soft_step(struct ocn_model *m, struct gr_tensor *xc_t,
                      struct gr_tensor *xo_t, struct gr_tensor *sp_t,
                      struct gr_tensor *sh_t, struct soft_state *st,
                      int switch_all, struct gr_tensor *first,
                      float force_end, int64_t Bt, struct gr_tensor **pi,
                      struct gr_tensor **e_out)
{
    struct gr_ctx *ctx = m->ctx;
    int64_t K = m->cfg.n_options;
    struct gr_tensor *pc, *hc_new;
    ctrl_cell(m, xc_t, st->hc, &pc, &hc_new);
    struct gr_tensor *pct = gr_transpose(ctx, pc, 0, 1); /* [K, Bt] */
    struct gr_tensor *pi_hat = gr_sum_dim(
        ctx, gr_mul(ctx, sp_t, gr_reshape(ctx, pct, gr_shape3(K, Bt, 1))), 0);
    if (switch_all) {
        *pi = pi_hat;
        *e_out = NULL;
        st->hc = hc_new;
        st->pit = pct;
        st->ho = m->cfg.kind == OCN_KIND_MOE ? NULL : sh_t;
        return;
    }
    struct gr_tensor *cp, *ch, *ce;
    opt_cell(m, xo_t, st->ho, &cp, &ch, &ce);
    struct gr_tensor *p3 = gr_reshape(ctx, st->pit, gr_shape3(K, Bt, 1));
    struct gr_tensor *e = gr_sum_dim(ctx, gr_mul(ctx, ce, p3), 0); /* [Bt,1] */
    if (force_end >= 0.0f) {
        e = gr_full(ctx, gr_shape2(Bt, 1), force_end);
    }
    if (first != NULL) {
        /* e·(1 - f) + f: exactly 1 where f = 1, e elsewhere */
        e = gr_add(ctx, gr_mul(ctx, e, gr_affine(ctx, first, -1.0f, 1.0f)),
                   first);
    }
    struct gr_tensor *ne = gr_affine(ctx, e, -1.0f, 1.0f);
    struct gr_tensor *pi_bar = gr_sum_dim(ctx, gr_mul(ctx, cp, p3), 0);
    *pi = gr_add(ctx, gr_mul(ctx, pi_hat, e), gr_mul(ctx, pi_bar, ne));
    struct gr_tensor *e_row = gr_reshape(ctx, e, gr_shape1(Bt));
    struct gr_tensor *ne_row = gr_reshape(ctx, ne, gr_shape1(Bt));
    st->pit = gr_add(ctx, gr_mul(ctx, pct, e_row), gr_mul(ctx, st->pit, ne_row));
    st->hc = gr_add(ctx, gr_mul(ctx, hc_new, e), gr_mul(ctx, st->hc, ne));
    st->ho = gr_add(ctx, gr_mul(ctx, sh_t, e), gr_mul(ctx, ch, ne));
    *e_out = e;
}

/* Writes argmax over the last dimension of host rows p[n, A]. */
static void argmax_rows(const float *p, int64_t n, int A, int32_t *out)
{
    for (int64_t r = 0; r < n; r++) {
        int best = 0;
        for (int a = 1; a < A; a++) {
            if (p[r * A + a] > p[r * A + best]) {
                best = a;
            }
        }
        out[r] = best;
    }
}

static int ctx_fail(struct gr_ctx *ctx, const char *what)
{
    int rc = gr_ctx_status(ctx);
    if (rc == 0) {
        rc = GR_EINVAL;
    }
    return gr_error(rc, "%s: %s", what, gr_ctx_error(ctx));
}

/* ---- teacher-forced forward ------------------------------------------------ */

int ocn_forward_forced(struct ocn_model *m, const struct demo_batch *b,
                       float force_end, struct ocn_forward_out *out)
{
    struct gr_ctx *ctx = m->ctx;
    const int64_t K = m->cfg.n_options, A = m->cfg.n_actions;
    const int64_t N = b->rows;
    const int moe = m->cfg.kind == OCN_KIND_MOE;
    for (int i = 0; i < b->B; i++) {
        if (b->task[i] < 0 || b->task[i] >= m->cfg.n_tasks) {
            return gr_error(GR_EINVAL, "OCN forward: batch element %d has "
                                       "task %d, the model has %d tasks",
                            i, b->task[i], m->cfg.n_tasks);
        }
    }
    int32_t *idx_o = NULL;
    if (m->cfg.opt_ignore_hi > m->cfg.opt_ignore_lo) {
        idx_o = malloc((size_t)(N * b->nz) * sizeof *idx_o);
        if (idx_o == NULL) {
            return gr_error(GR_ENOMEM, "OCN forward: out of memory");
        }
    }
    struct gr_tensor *xc, *xo;
    obs_parts(m, b->idx, b->val, N, b->nz, idx_o, &xc, &xo);
    free(idx_o); /* obs_parts copied it into a tensor */
    /* the switch branch's options depend only on x_t: all rows at once */
    struct gr_tensor *sp, *sh;
    opt_cell(m, xo, NULL, &sp, &sh, NULL);
    struct gr_tensor *tasks =
        gr_tensor_from_host(ctx, GR_I32, gr_shape1(b->B), b->task);
    struct soft_state st = {gr_embedding(ctx, m->h_init, tasks), NULL, NULL};
    struct gr_tensor *eps = gr_full(ctx, gr_shape1(1), 1e-12f);
    struct gr_tensor *total = NULL;
    float *host = NULL;
    if (out->pi_c != NULL) {
        host = malloc((size_t)(K * b->B) * sizeof *host);
        if (host == NULL) {
            return gr_error(GR_ENOMEM, "OCN forward: out of memory");
        }
    }
    int64_t prev = b->B;
    int rc = 0;
    struct gr_tensor *usage = NULL; /* [K]: Σ over steps of Π^C in force */
    for (int t = 0; t < b->T; t++) {
        int64_t Bt = b->active[t], r0 = b->row_off[t];
        if (Bt < prev) {
            st.hc = gr_slice(ctx, st.hc, 0, 0, Bt);
            if (st.pit != NULL) {
                st.pit = gr_slice(ctx, st.pit, 1, 0, Bt);
            }
            if (st.ho != NULL) {
                st.ho = gr_slice(ctx, st.ho, 1, 0, Bt);
            }
        }
        prev = Bt;
        int whole = Bt == N; /* a batch of one step: no slicing needed */
        struct gr_tensor *xc_t = whole ? xc : gr_slice(ctx, xc, 0, r0, Bt);
        struct gr_tensor *xo_t = whole ? xo : gr_slice(ctx, xo, 1, r0, Bt);
        struct gr_tensor *sp_t = whole ? sp : gr_slice(ctx, sp, 1, r0, Bt);
        struct gr_tensor *sh_t =
            moe ? NULL : (whole ? sh : gr_slice(ctx, sh, 1, r0, Bt));
        struct gr_tensor *pi, *e;
        soft_step(m, xc_t, xo_t, sp_t, sh_t, &st, t == 0 || moe, NULL,
                  force_end, Bt, &pi, &e);
        struct gr_tensor *a_t = gr_tensor_from_host(
            ctx, GR_I32, gr_shape2(Bt, 1), b->action + r0);
        struct gr_tensor *p = gr_gather(ctx, pi, a_t); /* [Bt, 1] */
        struct gr_tensor *s = gr_sum(ctx, gr_log(ctx, gr_maximum(ctx, p, eps)));
        total = total == NULL ? s : gr_add(ctx, total, s);
        if (m->cfg.balance > 0.0f) {
            struct gr_tensor *u = gr_sum_dim(ctx, st.pit, 1);
            usage = usage == NULL ? u : gr_add(ctx, usage, u);
        }
        if (gr_ctx_status(ctx) != 0) {
            break;
        }
        /* host copies for the metrics */
        if (out->end != NULL) {
            if (e == NULL) {
                for (int64_t i = 0; i < Bt; i++) {
                    out->end[r0 + i] = 1.0f;
                }
            } else {
                rc = gr_tensor_to_host(e, out->end + r0);
            }
        }
        if (rc == 0 && out->pi_c != NULL) {
            rc = gr_tensor_to_host(st.pit, host);
            for (int64_t i = 0; rc == 0 && i < Bt; i++) {
                for (int64_t k = 0; k < K; k++) {
                    out->pi_c[(r0 + i) * K + k] = host[k * Bt + i];
                }
            }
        }
        if (rc == 0 && out->act_prob != NULL) {
            rc = gr_tensor_to_host(p, out->act_prob + r0);
        }
        if (rc == 0 && (out->pi != NULL || out->act_argmax != NULL)) {
            float *dst = out->pi != NULL ? out->pi + r0 * A : NULL;
            float local[64 * 8];
            float *tmp = dst;
            float *heap = NULL;
            if (tmp == NULL) {
                if ((size_t)(Bt * A) <= sizeof local / sizeof local[0]) {
                    tmp = local;
                } else {
                    heap = malloc((size_t)(Bt * A) * sizeof *heap);
                    tmp = heap;
                }
            }
            if (tmp == NULL) {
                rc = gr_error(GR_ENOMEM, "OCN forward: out of memory");
            } else {
                rc = gr_tensor_to_host(pi, tmp);
                if (rc == 0 && out->act_argmax != NULL) {
                    argmax_rows(tmp, Bt, (int)A, out->act_argmax + r0);
                }
            }
            free(heap);
        }
        if (rc < 0) {
            break;
        }
    }
    free(host);
    if (rc < 0) {
        return rc;
    }
    out->loss = gr_scale(ctx, total, -1.0f / (float)N);
    if (m->cfg.balance > 0.0f) {
        /* λ · Σ_k ū_k log(K ū_k): 0 when every option is in force equally
         * often, ln K when one option is in force everywhere. Early in
         * training the controller's soft choice can leave an option in
         * force nowhere, and an option learns in proportion to its weight,
         * so it never comes back (docs/ocn); this keeps every option in
         * play. nll_sum below stays the pure NLL. */
        struct gr_tensor *ub = gr_scale(ctx, usage, 1.0f / (float)N);
        struct gr_tensor *kl = gr_sum(
            ctx, gr_mul(ctx, ub,
                        gr_log(ctx, gr_maximum(ctx, gr_scale(ctx, ub, (float)K),
                                               eps))));
        out->loss = gr_add(ctx, out->loss, gr_scale(ctx, kl, m->cfg.balance));
    }
    if (out->loss == NULL || gr_ctx_status(ctx) != 0) {
        return ctx_fail(ctx, "OCN forward");
    }
    out->nll_sum = -(double)gr_tensor_item(total);
    return 0;
}

int ocn_forward(struct ocn_model *m, const struct demo_batch *b,
                struct ocn_forward_out *out)
{
    return ocn_forward_forced(m, b, -1.0f, out);
}

/* ---- acting ----------------------------------------------------------------- */

int ocn_act_state_init(struct ocn_act_state *s, const struct ocn_model *m,
                       int E)
{
    memset(s, 0, sizeof *s);
    if (E < 1) {
        return gr_error(GR_EINVAL, "OCN acting: %d worlds, expected >= 1", E);
    }
    int64_t K = m->cfg.n_options, d = m->cfg.hidden, O = m->cfg.obs_size;
    s->E = E;
    s->hc = calloc((size_t)(E * d), sizeof *s->hc);
    s->pi_c = calloc((size_t)(E * K), sizeof *s->pi_c);
    s->ho = calloc((size_t)(K * E * d), sizeof *s->ho);
    s->first = malloc((size_t)E);
    s->task = calloc((size_t)E, sizeof *s->task);
    s->h_init = malloc((size_t)(m->cfg.n_tasks * d) * sizeof *s->h_init);
    s->idx = malloc((size_t)(E * O) * sizeof *s->idx);
    s->idx_o = malloc((size_t)(E * O) * sizeof *s->idx_o);
    s->val = malloc((size_t)(E * O) * sizeof *s->val);
    int64_t A = m->cfg.n_actions;
    s->buf = malloc((size_t)(K * E * (d > A ? d : A) + E) * sizeof *s->buf);
    if (s->hc == NULL || s->pi_c == NULL || s->ho == NULL ||
        s->first == NULL || s->task == NULL || s->h_init == NULL ||
        s->idx == NULL || s->idx_o == NULL || s->val == NULL ||
        s->buf == NULL) {
        ocn_act_state_free(s);
        return gr_error(GR_ENOMEM, "OCN acting: out of memory for %d worlds",
                        E);
    }
    if (m->cfg.act_hard) {
        s->opt = calloc((size_t)E, sizeof *s->opt);
        s->hard = malloc((size_t)(K * E * (2 * A + 2 * d + 1) + E * (K + d)) *
                         sizeof *s->hard);
        if (s->opt == NULL || s->hard == NULL) {
            ocn_act_state_free(s);
            return gr_error(GR_ENOMEM, "OCN acting: out of memory for %d "
                                       "worlds",
                            E);
        }
    }
    memset(s->first, 1, (size_t)E);
    int rc = gr_tensor_to_host(m->h_init, s->h_init);
    if (rc < 0) {
        ocn_act_state_free(s);
        return rc;
    }
    return 0;
}

void ocn_act_state_free(struct ocn_act_state *s)
{
    free(s->hc);
    free(s->pi_c);
    free(s->ho);
    free(s->first);
    free(s->task);
    free(s->h_init);
    free(s->idx);
    free(s->idx_o);
    free(s->val);
    free(s->buf);
    free(s->opt);
    free(s->hard);
    memset(s, 0, sizeof *s);
}

void ocn_act_reset(struct ocn_act_state *s, int j, int task)
{
    s->first[j] = 1;
    s->task[j] = task;
}

int ocn_sparse_rows(const float *obs, int E, int O, int32_t *idx, float *val)
{
    int nz = 1;
    for (int j = 0; j < E; j++) {
        int c = 0;
        for (int i = 0; i < O; i++) {
            c += obs[(int64_t)j * O + i] != 0.0f;
        }
        nz = c > nz ? c : nz;
    }
    for (int j = 0; j < E; j++) {
        int c = 0;
        for (int i = 0; i < O; i++) {
            float v = obs[(int64_t)j * O + i];
            if (v != 0.0f) {
                idx[(int64_t)j * nz + c] = i;
                val[(int64_t)j * nz + c] = v;
                c++;
            }
        }
        for (; c < nz; c++) {
            idx[(int64_t)j * nz + c] = -1;
            val[(int64_t)j * nz + c] = 0.0f;
        }
    }
    return nz;
}

/* Hard execution (cfg.act_hard; ocn.md §7, greedy), see ocn_act. Every
 * option runs on every world (acting is for watching and replays; PPO's
 * own rollouts have their host loop, agents/ppo.c). */
static int act_hard(struct ocn_model *m, struct ocn_act_state *s,
                    const float *obs, int32_t *actions, float *probs,
                    float *end, float *pi_c)
{
    struct gr_ctx *ctx = m->ctx;
    const int64_t K = m->cfg.n_options, d = m->cfg.hidden,
                  A = m->cfg.n_actions, E = s->E;
    const int moe = m->cfg.kind == OCN_KIND_MOE;
    int was = gr_set_grad_enabled(ctx, 0);
    int nz = ocn_sparse_rows(obs, (int)E, m->cfg.obs_size, s->idx, s->val);
    float *pbar = s->hard;              /* [K, E, A] */
    float *hbar = pbar + K * E * A;     /* [K, E, d] */
    float *ebar = hbar + K * E * d;     /* [K, E] */
    float *phat = ebar + K * E;         /* [K, E, A] */
    float *hhat = phat + K * E * A;     /* [K, E, d] */
    float *pc = hhat + K * E * d;       /* [E, K] */
    float *hcn = pc + E * K;            /* [E, d] */
    struct gr_tensor *xc, *xo;
    obs_parts(m, s->idx, s->val, E, nz, s->idx_o, &xc, &xo);
    int any_cont = 0;
    for (int64_t j = 0; j < E; j++) {
        any_cont |= !s->first[j] && !moe;
    }
    int rc = 0;
    if (any_cont) {
        /* the running options check their end at the new observation */
        struct gr_tensor *ho =
            gr_tensor_from_host(ctx, GR_F32, gr_shape3(K, E, d), s->ho);
        struct gr_tensor *p, *h, *e;
        opt_cell(m, xo, ho, &p, &h, &e);
        rc = gr_ctx_status(ctx) != 0 ? ctx_fail(ctx, "OCN acting") : 0;
        if (rc == 0) {
            rc = gr_tensor_to_host(p, pbar);
        }
        if (rc == 0) {
            rc = gr_tensor_to_host(h, hbar);
        }
        if (rc == 0) {
            rc = gr_tensor_to_host(e, ebar);
        }
    }
    uint8_t *ask = (uint8_t *)s->buf; /* E bytes of the scratch */
    int any_ask = 0;
    for (int64_t j = 0; rc == 0 && j < E; j++) {
        ask[j] = s->first[j] || moe || ebar[(int64_t)s->opt[j] * E + j] > 0.5f;
        any_ask |= ask[j];
        if (s->first[j]) {
            memcpy(s->hc + j * d, s->h_init + (int64_t)s->task[j] * d,
                   (size_t)d * sizeof *s->hc);
        }
    }
    if (rc == 0 && any_ask) {
        /* the controller decides; the options start from z_k */
        struct gr_tensor *hc =
            gr_tensor_from_host(ctx, GR_F32, gr_shape2(E, d), s->hc);
        struct gr_tensor *p, *h, *ph, *hh;
        ctrl_cell(m, xc, hc, &p, &h);
        opt_cell(m, xo, NULL, &ph, &hh, NULL);
        rc = gr_ctx_status(ctx) != 0 ? ctx_fail(ctx, "OCN acting") : 0;
        if (rc == 0) {
            rc = gr_tensor_to_host(p, pc);
        }
        if (rc == 0) {
            rc = gr_tensor_to_host(h, hcn);
        }
        if (rc == 0) {
            rc = gr_tensor_to_host(ph, phat);
        }
        if (rc == 0) {
            rc = gr_tensor_to_host(hh, hhat);
        }
    }
    for (int64_t j = 0; rc == 0 && j < E; j++) {
        const float *pi;
        float e;
        if (ask[j]) {
            int32_t k;
            argmax_rows(pc + j * K, 1, (int)K, &k);
            s->opt[j] = k;
            memcpy(s->hc + j * d, hcn + j * d, (size_t)d * sizeof *s->hc);
            memcpy(s->pi_c + j * K, pc + j * K, (size_t)K * sizeof *s->pi_c);
            memcpy(s->ho + ((int64_t)k * E + j) * d,
                   hhat + ((int64_t)k * E + j) * d, (size_t)d * sizeof *s->ho);
            pi = phat + ((int64_t)k * E + j) * A;
            e = 1.0f;
        } else {
            int64_t k = s->opt[j];
            memcpy(s->ho + (k * E + j) * d, hbar + (k * E + j) * d,
                   (size_t)d * sizeof *s->ho);
            pi = pbar + (k * E + j) * A;
            e = ebar[k * E + j];
        }
        argmax_rows(pi, 1, (int)A, actions + j);
        if (probs != NULL) {
            memcpy(probs + j * A, pi, (size_t)A * sizeof *probs);
        }
        if (end != NULL) {
            end[j] = e;
        }
        if (pi_c != NULL) {
            memcpy(pi_c + j * K, s->pi_c + j * K, (size_t)K * sizeof *pi_c);
        }
    }
    if (rc == 0) {
        memset(s->first, 0, (size_t)E);
    }
    gr_step_reset(ctx);
    gr_set_grad_enabled(ctx, was);
    return rc;
}

int ocn_act(struct ocn_model *m, struct ocn_act_state *s, const float *obs,
            int32_t *actions, float *probs, float *end, float *pi_c)
{
    if (m->cfg.act_hard) {
        return act_hard(m, s, obs, actions, probs, end, pi_c);
    }
    struct gr_ctx *ctx = m->ctx;
    const int64_t K = m->cfg.n_options, d = m->cfg.hidden,
                  A = m->cfg.n_actions, E = s->E;
    const int moe = m->cfg.kind == OCN_KIND_MOE;
    int was = gr_set_grad_enabled(ctx, 0);
    int nz = ocn_sparse_rows(obs, (int)E, m->cfg.obs_size, s->idx, s->val);
    /* rows starting an episode take the task's initial state */
    int any_first = 0, all_first = 1;
    for (int64_t j = 0; j < E; j++) {
        if (s->first[j]) {
            any_first = 1;
            memcpy(s->hc + j * d, s->h_init + (int64_t)s->task[j] * d,
                   (size_t)d * sizeof *s->hc);
        } else {
            all_first = 0;
        }
    }
    float *buf = s->buf;
    struct gr_tensor *xc, *xo;
    obs_parts(m, s->idx, s->val, E, nz, s->idx_o, &xc, &xo);
    struct gr_tensor *sp, *sh;
    opt_cell(m, xo, NULL, &sp, &sh, NULL);
    for (int64_t j = 0; j < E; j++) {
        for (int64_t k = 0; k < K; k++) {
            buf[k * E + j] = s->pi_c[j * K + k];
        }
    }
    struct soft_state st;
    st.hc = gr_tensor_from_host(ctx, GR_F32, gr_shape2(E, d), s->hc);
    st.pit = gr_tensor_from_host(ctx, GR_F32, gr_shape2(K, E), buf);
    st.ho = gr_tensor_from_host(ctx, GR_F32, gr_shape3(K, E, d), s->ho);
    struct gr_tensor *first = NULL;
    if (any_first && !all_first) {
        for (int64_t j = 0; j < E; j++) {
            buf[j] = s->first[j] ? 1.0f : 0.0f;
        }
        first = gr_tensor_from_host(ctx, GR_F32, gr_shape2(E, 1), buf);
    }
    struct gr_tensor *pi, *e;
    soft_step(m, xc, xo, sp, moe ? NULL : sh, &st, all_first || moe, first,
              -1.0f, E, &pi, &e);
    int rc = gr_ctx_status(ctx) != 0 ? ctx_fail(ctx, "OCN acting") : 0;
    if (rc == 0) {
        rc = gr_tensor_to_host(pi, buf);
    }
    if (rc == 0) {
        argmax_rows(buf, E, (int)A, actions);
        if (probs != NULL) {
            memcpy(probs, buf, (size_t)(E * A) * sizeof *buf);
        }
        if (end != NULL) {
            if (e == NULL) {
                for (int64_t j = 0; j < E; j++) {
                    end[j] = 1.0f;
                }
            } else {
                rc = gr_tensor_to_host(e, end);
            }
        }
    }
    if (rc == 0) {
        rc = gr_tensor_to_host(st.pit, buf);
        for (int64_t j = 0; rc == 0 && j < E; j++) {
            for (int64_t k = 0; k < K; k++) {
                s->pi_c[j * K + k] = buf[k * E + j];
            }
        }
        if (rc == 0 && pi_c != NULL) {
            memcpy(pi_c, s->pi_c, (size_t)(E * K) * sizeof *pi_c);
        }
    }
    if (rc == 0) {
        rc = gr_tensor_to_host(st.hc, s->hc);
    }
    if (rc == 0 && st.ho != NULL) {
        rc = gr_tensor_to_host(st.ho, s->ho);
    }
    if (rc == 0) {
        memset(s->first, 0, (size_t)E);
    }
    gr_step_reset(ctx);
    gr_set_grad_enabled(ctx, was);
    return rc;
}

int ocn_options_step(struct ocn_model *m, struct ocn_act_state *s,
                     const float *obs, float *ho, float *probs, float *end)
{
    struct gr_ctx *ctx = m->ctx;
    const int64_t K = m->cfg.n_options, d = m->cfg.hidden;
    const int E = s->E;
    int was = gr_set_grad_enabled(ctx, 0);
    int nz = ocn_sparse_rows(obs, E, m->cfg.obs_size, s->idx, s->val);
    struct gr_tensor *xc, *xo;
    obs_parts(m, s->idx, s->val, E, nz, s->idx_o, &xc, &xo);
    struct gr_tensor *h =
        gr_tensor_from_host(ctx, GR_F32, gr_shape3(K, E, d), ho);
    struct gr_tensor *pi, *h_new, *e;
    opt_cell(m, xo, h, &pi, &h_new, &e);
    int rc = gr_ctx_status(ctx) != 0 ? ctx_fail(ctx, "OCN options") : 0;
    if (rc == 0) {
        rc = gr_tensor_to_host(h_new, ho);
    }
    if (rc == 0 && probs != NULL) {
        rc = gr_tensor_to_host(pi, probs);
    }
    if (rc == 0 && end != NULL) {
        rc = gr_tensor_to_host(e, end);
    }
    gr_step_reset(ctx);
    gr_set_grad_enabled(ctx, was);
    return rc;
}
