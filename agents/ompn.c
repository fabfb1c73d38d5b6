/* OMPN on the kernel layer (see agents/ompn.h). */
#include "agents/ompn.h"

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

#define LN_EPS 1e-5f

/* ---- config --------------------------------------------------------------- */

void ompn_config_default(struct ompn_config *c)
{
    memset(c, 0, sizeof *c);
    c->n_slots = 3;
    c->hidden = 128;
    c->obs_size = CRAFT_OBS_SIZE;
    c->n_actions = CRAFT_N_ACTIONS;
}

int ompn_config_validate(const struct ompn_config *c)
{
    if (c->n_slots < 2 || c->n_slots > OMPN_MAX_SLOTS) {
        return gr_error(GR_EINVAL, "OMPN slots: %d, expected 2..%d",
                        c->n_slots, OMPN_MAX_SLOTS);
    }
    if (c->hidden < 1 || c->hidden > 16384) {
        return gr_error(GR_EINVAL, "OMPN hidden %d: expected 1..16384",
                        c->hidden);
    }
    if (c->obs_size < 1 || c->obs_size > 65536) {
        return gr_error(GR_EINVAL, "observation size %d: expected 1..65536",
                        c->obs_size);
    }
    if (c->n_actions < 1 || c->n_actions > 256) {
        return gr_error(GR_EINVAL, "actions: %d, expected 1..256",
                        c->n_actions);
    }
    if (c->n_tasks < 1 || c->n_tasks > OCN_MAX_TASKS) {
        return gr_error(GR_EINVAL, "tasks: %d, expected 1..%d", c->n_tasks,
                        OCN_MAX_TASKS);
    }
    return 0;
}

int ompn_config_format(const struct ompn_config *c, char *out, size_t cap)
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
                     "kind ompn\nslots %d\nhidden %d\nobs %d\nactions %d\n"
                     "tasks %s\n",
                     c->n_slots, c->hidden, c->obs_size, c->n_actions, tasks);
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

int ompn_config_parse(const char *text, struct ompn_config *c)
{
    ompn_config_default(c);
    enum { HAVE_KIND = 1, HAVE_SLOTS = 2, HAVE_HID = 4, HAVE_OBS = 8,
           HAVE_ACT = 16, HAVE_TASKS = 32 };
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
            if (strcmp(v, "ompn") != 0) {
                return gr_error(GR_EFORMAT, "config line %d: kind '%s' is "
                                            "not ompn",
                                line_no, v);
            }
            have |= HAVE_KIND;
        } else if (strcmp(key, "slots") == 0) {
            rc = parse_int(v, line_no, key, &c->n_slots);
            have |= HAVE_SLOTS;
        } else if (strcmp(key, "hidden") == 0) {
            rc = parse_int(v, line_no, key, &c->hidden);
            have |= HAVE_HID;
        } else if (strcmp(key, "obs") == 0) {
            rc = parse_int(v, line_no, key, &c->obs_size);
            have |= HAVE_OBS;
        } else if (strcmp(key, "actions") == 0) {
            rc = parse_int(v, line_no, key, &c->n_actions);
            have |= HAVE_ACT;
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
    static const char *const names[] = {"kind", "slots", "hidden",
                                        "obs",  "actions", "tasks"};
    for (int i = 0; i < 6; i++) {
        if (!(have & (1u << i))) {
            return gr_error(GR_EFORMAT, "config: key '%s' is missing",
                            names[i]);
        }
    }
    if (ompn_config_validate(c) < 0) {
        return gr_error_wrap(GR_EFORMAT, "config");
    }
    return 0;
}

/* ---- parameters ----------------------------------------------------------- */

enum init_kind { INIT_UNIFORM, INIT_ONES, INIT_ZEROS, INIT_NORMAL };

struct param_spec {
    const char *name;
    struct gr_shape shape;
    enum init_kind init;
    int fan_in;
    size_t offset;
};

#define OFF(f) offsetof(struct ompn_model, f)

static void param_specs(const struct ompn_config *c, struct param_spec *s)
{
    int64_t n = c->n_slots, d = c->hidden, O = c->obs_size, A = c->n_actions;
    int f4 = (int)(4 * d), f3 = (int)(3 * d);
    struct param_spec v[OMPN_N_PARAMS] = {
        {"ompn.enc.wx", gr_shape2(O, d), INIT_UNIFORM, (int)O, OFF(enc_wx)},
        {"ompn.enc.bias", gr_shape1(d), INIT_UNIFORM, (int)O, OFF(enc_b)},
        {"ompn.task", gr_shape2(c->n_tasks, d), INIT_NORMAL, 0, OFF(task)},
        {"ompn.com.l1.weight", gr_shape3(n, 4 * d, 4 * d), INIT_UNIFORM, f4,
         OFF(com_w1)},
        {"ompn.com.l1.bias", gr_shape2(n, 4 * d), INIT_UNIFORM, f4,
         OFF(com_b1)},
        {"ompn.com.l2.weight", gr_shape3(n, 4 * d, 4 * d), INIT_UNIFORM, f4,
         OFF(com_w2)},
        {"ompn.com.l2.bias", gr_shape2(n, 4 * d), INIT_UNIFORM, f4,
         OFF(com_b2)},
        {"ompn.com.ln.weight", gr_shape2(n, 3 * d), INIT_ONES, 0,
         OFF(com_lnw)},
        {"ompn.com.ln.bias", gr_shape2(n, 3 * d), INIT_ZEROS, 0, OFF(com_lnb)},
        {"ompn.dec.l1.weight", gr_shape3(n - 1, 4 * d, 3 * d), INIT_UNIFORM,
         f3, OFF(dec_w1)},
        {"ompn.dec.l1.bias", gr_shape2(n - 1, 4 * d), INIT_UNIFORM, f3,
         OFF(dec_b1)},
        {"ompn.dec.l2.weight", gr_shape3(n - 1, 3 * d, 4 * d), INIT_UNIFORM,
         f4, OFF(dec_w2)},
        {"ompn.dec.l2.bias", gr_shape2(n - 1, 3 * d), INIT_UNIFORM, f4,
         OFF(dec_b2)},
        {"ompn.dec.ln.weight", gr_shape2(n - 1, 2 * d), INIT_ONES, 0,
         OFF(dec_lnw)},
        {"ompn.dec.ln.bias", gr_shape2(n - 1, 2 * d), INIT_ZEROS, 0,
         OFF(dec_lnb)},
        {"ompn.dist.l1.weight", gr_shape2(d, 4 * d), INIT_UNIFORM, f4,
         OFF(dist_w1)},
        {"ompn.dist.l1.bias", gr_shape1(d), INIT_UNIFORM, f4, OFF(dist_b1)},
        {"ompn.dist.l2.weight", gr_shape2(1, d), INIT_UNIFORM, (int)d,
         OFF(dist_w2)},
        {"ompn.dist.l2.bias", gr_shape1(1), INIT_UNIFORM, (int)d,
         OFF(dist_b2)},
        {"ompn.actor.weight", gr_shape2(A, 3 * d), INIT_UNIFORM, f3,
         OFF(act_w)},
        {"ompn.actor.bias", gr_shape1(A), INIT_UNIFORM, f3, OFF(act_b)},
    };
    memcpy(s, v, sizeof v);
}

const char *ompn_param_name(int i)
{
    struct ompn_config c;
    ompn_config_default(&c);
    c.n_tasks = 1;
    struct param_spec s[OMPN_N_PARAMS];
    param_specs(&c, s);
    return i >= 0 && i < OMPN_N_PARAMS ? s[i].name : NULL;
}

struct gr_tensor *ompn_param(const struct ompn_model *m, int i)
{
    struct param_spec s[OMPN_N_PARAMS];
    param_specs(&m->cfg, s);
    return *(struct gr_tensor *const *)((const char *)m + s[i].offset);
}

int64_t ompn_param_count(const struct ompn_config *c)
{
    struct param_spec s[OMPN_N_PARAMS];
    param_specs(c, s);
    int64_t total = 0;
    for (int i = 0; i < OMPN_N_PARAMS; i++) {
        int64_t k = 1;
        for (int j = 0; j < s[i].shape.ndim; j++) {
            k *= s[i].shape.d[j];
        }
        total += k;
    }
    return total;
}

int ompn_model_init(struct ompn_model *m, struct gr_ctx *ctx,
                    const struct ompn_config *cfg, uint64_t seed)
{
    int rc = ompn_config_validate(cfg);
    if (rc < 0) {
        return rc;
    }
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->ctx = ctx;
    struct param_spec s[OMPN_N_PARAMS];
    param_specs(cfg, s);
    struct gr_rng rng = gr_rng_make(seed, 0x03A9ull);
    for (int i = 0; i < OMPN_N_PARAMS && rc == 0; i++) {
        struct gr_tensor *t = gr_param_new(ctx, s[i].name, s[i].shape);
        if (t == NULL) {
            return gr_error_wrap(GR_EINVAL, "OMPN parameter '%s'", s[i].name);
        }
        *(struct gr_tensor **)((char *)m + s[i].offset) = t;
        switch (s[i].init) {
        case INIT_UNIFORM: {
            float b = 1.0f / sqrtf((float)s[i].fan_in);
            rc = gr_init_uniform(t, -b, b, rng);
            break;
        }
        case INIT_ONES:
        case INIT_ZEROS: {
            float *h = malloc((size_t)t->numel * sizeof *h);
            if (h == NULL) {
                return gr_error(GR_ENOMEM, "OMPN init: out of memory");
            }
            for (int64_t k = 0; k < t->numel; k++) {
                h[k] = s[i].init == INIT_ONES ? 1.0f : 0.0f;
            }
            rc = gr_tensor_set_host(t, h);
            free(h);
            break;
        }
        case INIT_NORMAL: {
            struct gr_rng r = gr_rng_make(
                seed, rng.stream ^ gr_fnv1a64(s[i].name, strlen(s[i].name)));
            rc = gr_tensor_rand_normal(t, 0.0f, 1.0f, r);
            break;
        }
        }
    }
    return rc;
}

/* ---- the step ------------------------------------------------------------- */

static int ctx_fail(struct gr_ctx *ctx, const char *what)
{
    int rc = gr_ctx_status(ctx);
    if (rc == 0) {
        rc = GR_EINVAL;
    }
    return gr_error(rc, "%s: %s", what, gr_ctx_error(ctx));
}

/* What one forward prepares once for all its steps: the parts of every
 * first layer that depend on c = [o ; g] only, computed for all N rows in
 * one product each, and the per-slot weight blocks. */
struct prep {
    struct gr_tensor *c;     /* [N, 2d] */
    struct gr_tensor *ccom;  /* [n, N, 4d]: W1_c c + b1 of every ComCell */
    struct gr_tensor *cdec;  /* [n-1, N, 4d]: the same for the DecomCells */
    struct gr_tensor *cdist; /* [N, d]: dist.l1's c block + bias */
    struct gr_tensor *com_wv, *com_wh; /* [n, 4d, d] blocks v and h */
    struct gr_tensor *dec_wh;          /* [n-1, 4d, d] block h */
    struct gr_tensor *dist_wm, *dist_wc; /* [d, d] blocks M and M̂ */
};

/* rows: idx/val [N, nz] sparse observations, task_rows [N] task id per
 * row (host). */
static void prepare(struct ompn_model *m, const int32_t *idx_h,
                    const float *val_h, int64_t N, int nz,
                    const int32_t *task_rows, struct prep *p)
{
    struct gr_ctx *ctx = m->ctx;
    int64_t n = m->cfg.n_slots, d = m->cfg.hidden;
    struct gr_tensor *idx =
        gr_tensor_from_host(ctx, GR_I32, gr_shape2(N, nz), idx_h);
    struct gr_tensor *val =
        gr_tensor_from_host(ctx, GR_F32, gr_shape2(N, nz), val_h);
    struct gr_tensor *tr =
        gr_tensor_from_host(ctx, GR_I32, gr_shape1(N), task_rows);
    struct gr_tensor *o =
        gr_add(ctx, gr_sparse_matmul(ctx, idx, val, m->enc_wx), m->enc_b);
    struct gr_tensor *g = gr_embedding(ctx, m->task, tr);
    struct gr_tensor *og[2] = {o, g};
    p->c = gr_concat(ctx, 2, og, 1);
    struct gr_tensor *wc = gr_reshape(
        ctx, gr_slice(ctx, m->com_w1, 2, 2 * d, 2 * d), gr_shape2(n * 4 * d,
                                                                  2 * d));
    struct gr_tensor *cc = gr_linear(
        ctx, p->c, wc, gr_reshape(ctx, m->com_b1, gr_shape1(n * 4 * d)));
    p->ccom = gr_transpose(ctx, gr_reshape(ctx, cc, gr_shape3(N, n, 4 * d)),
                           0, 1);
    struct gr_tensor *wd = gr_reshape(
        ctx, gr_slice(ctx, m->dec_w1, 2, d, 2 * d),
        gr_shape2((n - 1) * 4 * d, 2 * d));
    struct gr_tensor *cd = gr_linear(
        ctx, p->c, wd, gr_reshape(ctx, m->dec_b1, gr_shape1((n - 1) * 4 * d)));
    p->cdec = gr_transpose(
        ctx, gr_reshape(ctx, cd, gr_shape3(N, n - 1, 4 * d)), 0, 1);
    p->cdist = gr_linear(ctx, p->c, gr_slice(ctx, m->dist_w1, 1, 0, 2 * d),
                         m->dist_b1);
    p->com_wv = gr_slice(ctx, m->com_w1, 2, 0, d);
    p->com_wh = gr_slice(ctx, m->com_w1, 2, d, d);
    p->dec_wh = gr_slice(ctx, m->dec_w1, 2, 0, d);
    p->dist_wm = gr_slice(ctx, m->dist_w1, 1, 2 * d, d);
    p->dist_wc = gr_slice(ctx, m->dist_w1, 1, 3 * d, d);
}

/* leaky ReLU with slope 0.01: relu(x) - 0.01 relu(-x) */
static struct gr_tensor *leaky_relu(struct gr_ctx *ctx, struct gr_tensor *x)
{
    return gr_sub(ctx, gr_relu(ctx, x),
                  gr_scale(ctx, gr_relu(ctx, gr_scale(ctx, x, -1.0f)), 0.01f));
}

/* rows r0 .. r0+Bt-1 of a [.., N, ..] tensor along dim (whole: as is) */
static struct gr_tensor *rows(struct gr_ctx *ctx, struct gr_tensor *x,
                              int dim, int64_t r0, int64_t Bt, int64_t N)
{
    return Bt == N ? x : gr_slice(ctx, x, dim, r0, Bt);
}

/* One step of ompn.h on Bt rows (rows r0.. of the prepared parts, N in
 * all). mem [n, Bt, d]: M_{t-1}, with the rows that start an episode
 * already holding [LN(g), 0, …]. first: 0 none of the rows starts, 1 all
 * do (t = 0 of a teacher-forced batch), or -1 with fmask [Bt, 1] f32 0/1
 * marking those that do. -> *mem_out [n, Bt, d], *pi [Bt, A], *p [n, Bt,
 * 1] (the slot distribution). */
static void step(struct ompn_model *m, const struct prep *pp, int64_t r0,
                 int64_t Bt, int64_t N, struct gr_tensor *mem, int first,
                 struct gr_tensor *fmask, struct gr_tensor **mem_out,
                 struct gr_tensor **pi, struct gr_tensor **p_out,
                 struct gr_tensor **feat_out)
{
    struct gr_ctx *ctx = m->ctx;
    const int n = m->cfg.n_slots;
    const int64_t d = m->cfg.hidden;
    struct gr_tensor *c_t = rows(ctx, pp->c, 0, r0, Bt, N);
    struct gr_tensor *mhat[OMPN_MAX_SLOTS], *p[OMPN_MAX_SLOTS];
    struct gr_tensor *prev[OMPN_MAX_SLOTS];
    for (int i = 0; i < n; i++) {
        prev[i] = gr_select(ctx, mem, i);
    }
    if (first == 1) {
        /* t = 0: no ComCell, expansion forced to the top slot */
        for (int i = 0; i < n; i++) {
            mhat[i] = prev[i];
            p[i] = gr_full(ctx, gr_shape2(Bt, 1), i == 0 ? 1.0f : 0.0f);
        }
    } else {
        /* 1. bottom-up candidates */
        struct gr_tensor *ccom = rows(ctx, pp->ccom, 1, r0, Bt, N);
        struct gr_tensor *hpart =
            gr_add(ctx, gr_matmul(ctx, mem, pp->com_wh, 0, 1), ccom);
        struct gr_tensor *v = gr_slice(ctx, c_t, 1, 0, d); /* o_t */
        for (int i = n - 1; i >= 0; i--) {
            struct gr_tensor *pre =
                gr_add(ctx, gr_matmul(ctx, v, gr_select(ctx, pp->com_wv, i),
                                      0, 1),
                       gr_select(ctx, hpart, i));
            struct gr_tensor *z = gr_linear(
                ctx, gr_relu(ctx, pre), gr_select(ctx, m->com_w2, i),
                gr_select(ctx, m->com_b2, i));
            struct gr_tensor *parts[2] = {NULL, NULL};
            int64_t sz[2] = {3 * d, d};
            if (z != NULL) {
                gr_split(ctx, z, 1, 2, sz, parts);
            }
            parts[0] = gr_layer_norm(ctx, parts[0],
                                     gr_select(ctx, m->com_lnw, i),
                                     gr_select(ctx, m->com_lnb, i), LN_EPS);
            struct gr_tensor *z4 = gr_concat(ctx, 2, parts, 1);
            v = gr_layer_norm(ctx, gr_om_gate(ctx, z4, v, prev[i]), NULL, NULL,
                              LN_EPS);
            mhat[i] = v;
        }
        /* 2. the expansion distribution */
        struct gr_tensor *mh = gr_stack(ctx, n, mhat); /* [n, Bt, d] */
        struct gr_tensor *pre = gr_add(
            ctx,
            gr_add(ctx, gr_matmul(ctx, mem, pp->dist_wm, 0, 1),
                   gr_matmul(ctx, mh, pp->dist_wc, 0, 1)),
            rows(ctx, pp->cdist, 0, r0, Bt, N));
        struct gr_tensor *beta = gr_sigmoid(
            ctx, gr_linear(ctx, leaky_relu(ctx, pre), m->dist_w2,
                           m->dist_b2)); /* [n, Bt, 1] */
        struct gr_tensor *rem = NULL, *sum = NULL;
        for (int i = n - 1; i >= 0; i--) {
            struct gr_tensor *b = gr_select(ctx, beta, i);
            p[i] = rem == NULL ? b : gr_mul(ctx, b, rem);
            struct gr_tensor *nb = gr_affine(ctx, b, -1.0f, 1.0f);
            rem = rem == NULL ? nb : gr_mul(ctx, rem, nb);
            sum = sum == NULL ? p[i] : gr_add(ctx, sum, p[i]);
        }
        /* p_end = rem is dropped: p renormalised over the slots (as
         * F.normalize, the sum floored at 1e-12) */
        sum = gr_maximum(ctx, sum, gr_full(ctx, gr_shape1(1), 1e-12f));
        for (int i = 0; i < n; i++) {
            p[i] = gr_div(ctx, p[i], sum);
        }
        if (first == -1) {
            /* rows starting an episode: the t = 0 rule */
            struct gr_tensor *nf = gr_affine(ctx, fmask, -1.0f, 1.0f);
            for (int i = 0; i < n; i++) {
                p[i] = gr_mul(ctx, p[i], nf);
                if (i == 0) {
                    p[i] = gr_add(ctx, p[i], fmask);
                }
                mhat[i] = gr_add(ctx, gr_mul(ctx, mhat[i], nf),
                                 gr_mul(ctx, prev[i], fmask));
            }
        }
    }
    /* cumulative sums from the top (cp) and from the bottom (rcp) */
    struct gr_tensor *cp[OMPN_MAX_SLOTS], *rcp[OMPN_MAX_SLOTS];
    for (int i = 0; i < n; i++) {
        cp[i] = i == 0 ? p[0] : gr_add(ctx, cp[i - 1], p[i]);
    }
    for (int i = n - 1; i >= 0; i--) {
        rcp[i] = i == n - 1 ? p[i] : gr_add(ctx, rcp[i + 1], p[i]);
    }
    /* 3. top-down re-expansion */
    struct gr_tensor *kids[OMPN_MAX_SLOTS];
    struct gr_tensor *cdec = rows(ctx, pp->cdec, 1, r0, Bt, N);
    kids[0] = NULL; /* zeros: its term is left out */
    struct gr_tensor *ch = NULL;
    for (int i = 0; i < n - 1; i++) {
        struct gr_tensor *h = gr_mul(ctx, mhat[i], rcp[i]);
        if (ch != NULL) {
            h = gr_add(ctx, h, gr_mul(ctx, ch, gr_affine(ctx, rcp[i], -1.0f,
                                                         1.0f)));
        }
        struct gr_tensor *pre =
            gr_add(ctx, gr_matmul(ctx, h, gr_select(ctx, pp->dec_wh, i), 0, 1),
                   gr_select(ctx, cdec, i));
        struct gr_tensor *z =
            gr_linear(ctx, gr_relu(ctx, pre), gr_select(ctx, m->dec_w2, i),
                      gr_select(ctx, m->dec_b2, i));
        struct gr_tensor *parts[2] = {NULL, NULL};
        int64_t sz[2] = {2 * d, d};
        if (z != NULL) {
            gr_split(ctx, z, 1, 2, sz, parts);
        }
        struct gr_tensor *gates = gr_sigmoid(
            ctx, gr_layer_norm(ctx, parts[0], gr_select(ctx, m->dec_lnw, i),
                               gr_select(ctx, m->dec_lnb, i), LN_EPS));
        struct gr_tensor *gg[2] = {NULL, NULL};
        int64_t sg[2] = {d, d};
        if (gates != NULL) {
            gr_split(ctx, gates, 1, 2, sg, gg);
        }
        ch = gr_layer_norm(ctx,
                           gr_add(ctx, gr_mul(ctx, gg[0], h),
                                  gr_mul(ctx, gg[1], parts[1])),
                           NULL, NULL, LN_EPS);
        kids[i + 1] = ch;
    }
    /* 4. the new memory */
    struct gr_tensor *mt[OMPN_MAX_SLOTS];
    for (int i = 0; i < n; i++) {
        struct gr_tensor *x =
            gr_add(ctx, gr_mul(ctx, prev[i], gr_affine(ctx, cp[i], -1.0f, 1.0f)),
                   gr_mul(ctx, mhat[i], p[i]));
        if (kids[i] != NULL) {
            x = gr_add(ctx, x, gr_mul(ctx, kids[i],
                                      gr_affine(ctx, rcp[i], -1.0f, 1.0f)));
        }
        mt[i] = x;
    }
    *mem_out = gr_stack(ctx, n, mt);
    /* 5. actions */
    struct gr_tensor *yc[2] = {mt[n - 1], c_t};
    struct gr_tensor *feat = gr_concat(ctx, 2, yc, 1);
    if (feat_out != NULL) {
        *feat_out = feat; /* [y ; o ; g], the action head's input */
    }
    *pi = gr_softmax(ctx, gr_linear(ctx, feat, m->act_w, m->act_b), NULL);
    *p_out = gr_stack(ctx, n, p);
}

/* The initial memory [LN(g), 0, …] of Bt rows with task ids tasks [Bt]. */
static struct gr_tensor *init_memory(struct ompn_model *m,
                                     struct gr_tensor *tasks, int64_t Bt)
{
    struct gr_ctx *ctx = m->ctx;
    const int n = m->cfg.n_slots;
    const int64_t d = m->cfg.hidden;
    struct gr_tensor *s[OMPN_MAX_SLOTS];
    s[0] = gr_layer_norm(ctx, gr_embedding(ctx, m->task, tasks), NULL, NULL,
                         LN_EPS);
    for (int i = 1; i < n; i++) {
        s[i] = gr_zeros(ctx, gr_shape2(Bt, d));
    }
    return gr_stack(ctx, n, s);
}

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

int ompn_forward(struct ompn_model *m, const struct demo_batch *b,
                 struct ocn_forward_out *out, float *slot_p)
{
    struct gr_ctx *ctx = m->ctx;
    const int n = m->cfg.n_slots;
    const int64_t A = m->cfg.n_actions, N = b->rows;
    for (int i = 0; i < b->B; i++) {
        if (b->task[i] < 0 || b->task[i] >= m->cfg.n_tasks) {
            return gr_error(GR_EINVAL, "OMPN forward: batch element %d has "
                                       "task %d, the model has %d tasks",
                            i, b->task[i], m->cfg.n_tasks);
        }
    }
    int32_t *task_rows = malloc((size_t)N * sizeof *task_rows);
    float *host = malloc((size_t)(b->B * (A > n ? A : n)) * sizeof *host);
    if (task_rows == NULL || host == NULL) {
        free(task_rows);
        free(host);
        return gr_error(GR_ENOMEM, "OMPN forward: out of memory");
    }
    for (int t = 0; t < b->T; t++) {
        for (int j = 0; j < b->active[t]; j++) {
            task_rows[b->row_off[t] + j] = b->task[j];
        }
    }
    struct prep pp;
    prepare(m, b->idx, b->val, N, b->nz, task_rows, &pp);
    free(task_rows);
    struct gr_tensor *tasks =
        gr_tensor_from_host(ctx, GR_I32, gr_shape1(b->B), b->task);
    struct gr_tensor *mem = init_memory(m, tasks, b->B);
    struct gr_tensor *eps = gr_full(ctx, gr_shape1(1), 1e-12f);
    struct gr_tensor *total = NULL;
    int64_t prev_b = b->B;
    int rc = 0;
    for (int t = 0; t < b->T && rc == 0; t++) {
        int64_t Bt = b->active[t], r0 = b->row_off[t];
        if (Bt < prev_b) {
            mem = gr_slice(ctx, mem, 1, 0, Bt);
        }
        prev_b = Bt;
        struct gr_tensor *pi, *p;
        step(m, &pp, r0, Bt, N, mem, t == 0 ? 1 : 0, NULL, &mem, &pi, &p,
             NULL);
        struct gr_tensor *a_t = gr_tensor_from_host(
            ctx, GR_I32, gr_shape2(Bt, 1), b->action + r0);
        struct gr_tensor *pa = gr_gather(ctx, pi, a_t);
        struct gr_tensor *s =
            gr_sum(ctx, gr_log(ctx, gr_maximum(ctx, pa, eps)));
        total = total == NULL ? s : gr_add(ctx, total, s);
        if (gr_ctx_status(ctx) != 0) {
            break;
        }
        if (out->end != NULL || slot_p != NULL) {
            rc = gr_tensor_to_host(p, host); /* [n, Bt, 1] */
            for (int64_t j = 0; rc == 0 && j < Bt; j++) {
                double depth = 0.0;
                for (int i = 0; i < n; i++) {
                    float v = host[(int64_t)i * Bt + j];
                    depth += (double)(i + 1) * v;
                    if (slot_p != NULL) {
                        slot_p[(r0 + j) * n + i] = v;
                    }
                }
                if (out->end != NULL) {
                    out->end[r0 + j] =
                        (float)(((double)n - depth) / (double)(n - 1));
                }
            }
        }
        if (rc == 0 && out->act_prob != NULL) {
            rc = gr_tensor_to_host(pa, out->act_prob + r0);
        }
        if (rc == 0 && (out->pi != NULL || out->act_argmax != NULL)) {
            float *dst = out->pi != NULL ? out->pi + r0 * A : host;
            rc = gr_tensor_to_host(pi, dst);
            if (rc == 0 && out->act_argmax != NULL) {
                argmax_rows(dst, Bt, (int)A, out->act_argmax + r0);
            }
        }
    }
    free(host);
    if (rc < 0) {
        return rc;
    }
    out->loss = gr_scale(ctx, total, -1.0f / (float)N);
    if (out->loss == NULL || gr_ctx_status(ctx) != 0) {
        return ctx_fail(ctx, "OMPN forward");
    }
    out->nll_sum = -(double)gr_tensor_item(total);
    return 0;
}

/* ---- one step from stored memories (PPO, agents/ppo_ompn.h) ------------------ */

int ompn_step_rows(struct ompn_model *m, const int32_t *idx, const float *val,
                   int64_t M, int nz, const int32_t *task, const float *mem,
                   const float *first, struct gr_tensor **feat)
{
    struct gr_ctx *ctx = m->ctx;
    const int n = m->cfg.n_slots;
    const int64_t d = m->cfg.hidden;
    *feat = NULL;
    for (int64_t j = 0; j < M; j++) {
        if (task[j] < 0 || task[j] >= m->cfg.n_tasks) {
            return gr_error(GR_EINVAL, "OMPN step: row %lld has task %d, the "
                                       "model has %d tasks",
                            (long long)j, task[j], m->cfg.n_tasks);
        }
    }
    float *buf = malloc((size_t)(n * M * d) * sizeof *buf);
    if (buf == NULL) {
        return gr_error(GR_ENOMEM, "OMPN step: out of memory");
    }
    /* [M, n, d] -> [n, M, d]; a row that starts an episode reads zeros
     * here and its initial memory below */
    for (int i = 0; i < n; i++) {
        for (int64_t j = 0; j < M; j++) {
            float *dst = buf + ((int64_t)i * M + j) * d;
            if (first[j] != 0.0f) {
                memset(dst, 0, (size_t)d * sizeof *dst);
            } else {
                memcpy(dst, mem + ((int64_t)j * n + i) * d,
                       (size_t)d * sizeof *dst);
            }
        }
    }
    struct prep pp;
    prepare(m, idx, val, M, nz, task, &pp);
    struct gr_tensor *stored =
        gr_tensor_from_host(ctx, GR_F32, gr_shape3(n, M, d), buf);
    free(buf);
    struct gr_tensor *fmask =
        gr_tensor_from_host(ctx, GR_F32, gr_shape2(M, 1), first);
    struct gr_tensor *tasks =
        gr_tensor_from_host(ctx, GR_I32, gr_shape1(M), task);
    /* the first slot of a new episode is LN(g) on the tape, so the task
     * code learns through it as the OCN's h_init does */
    struct gr_tensor *init0 = gr_select(ctx, init_memory(m, tasks, M), 0);
    struct gr_tensor *slots[OMPN_MAX_SLOTS];
    for (int i = 0; i < n; i++) {
        slots[i] = gr_select(ctx, stored, i);
    }
    slots[0] = gr_add(ctx, slots[0], gr_mul(ctx, init0, fmask));
    struct gr_tensor *mem_in = gr_stack(ctx, n, slots);
    struct gr_tensor *mem_out, *pi, *p;
    step(m, &pp, 0, M, M, mem_in, -1, fmask, &mem_out, &pi, &p, feat);
    if (*feat == NULL || gr_ctx_status(ctx) != 0) {
        *feat = NULL;
        return ctx_fail(ctx, "OMPN step");
    }
    return 0;
}

/* ---- acting ----------------------------------------------------------------- */

int ompn_act_state_init(struct ompn_act_state *s, const struct ompn_model *m,
                        int E)
{
    memset(s, 0, sizeof *s);
    if (E < 1) {
        return gr_error(GR_EINVAL, "OMPN acting: %d worlds, expected >= 1", E);
    }
    int64_t n = m->cfg.n_slots, d = m->cfg.hidden, O = m->cfg.obs_size,
            A = m->cfg.n_actions, T = m->cfg.n_tasks;
    s->E = E;
    s->mem = calloc((size_t)(E * n * d), sizeof *s->mem);
    s->first = malloc((size_t)E);
    s->task = calloc((size_t)E, sizeof *s->task);
    s->g_ln = malloc((size_t)(T * d) * sizeof *s->g_ln);
    s->idx = malloc((size_t)(E * O) * sizeof *s->idx);
    s->val = malloc((size_t)(E * O) * sizeof *s->val);
    s->buf = malloc((size_t)(E * (n * d > A ? n * d : A)) * sizeof *s->buf);
    if (s->mem == NULL || s->first == NULL || s->task == NULL ||
        s->g_ln == NULL || s->idx == NULL || s->val == NULL ||
        s->buf == NULL) {
        ompn_act_state_free(s);
        return gr_error(GR_ENOMEM, "OMPN acting: out of memory for %d worlds",
                        E);
    }
    memset(s->first, 1, (size_t)E);
    int rc = gr_tensor_to_host(m->task, s->g_ln);
    if (rc < 0) {
        ompn_act_state_free(s);
        return rc;
    }
    /* LN(g) per task, as gr_layer_norm computes it (biased variance) */
    for (int64_t k = 0; k < T; k++) {
        float *g = s->g_ln + k * d;
        double mean = 0.0, var = 0.0;
        for (int64_t i = 0; i < d; i++) {
            mean += g[i];
        }
        mean /= (double)d;
        for (int64_t i = 0; i < d; i++) {
            var += (g[i] - mean) * (g[i] - mean);
        }
        var /= (double)d;
        double inv = 1.0 / sqrt(var + (double)LN_EPS);
        for (int64_t i = 0; i < d; i++) {
            g[i] = (float)((g[i] - mean) * inv);
        }
    }
    return 0;
}

void ompn_act_state_free(struct ompn_act_state *s)
{
    free(s->mem);
    free(s->first);
    free(s->task);
    free(s->g_ln);
    free(s->idx);
    free(s->val);
    free(s->buf);
    memset(s, 0, sizeof *s);
}

void ompn_act_reset(struct ompn_act_state *s, int j, int task)
{
    s->first[j] = 1;
    s->task[j] = task;
}

int ompn_act(struct ompn_model *m, struct ompn_act_state *s,
             const float *obs, int32_t *actions, float *probs, float *slot_p)
{
    return ompn_act_feat(m, s, obs, actions, probs, slot_p, NULL);
}

int ompn_act_feat(struct ompn_model *m, struct ompn_act_state *s,
                  const float *obs, int32_t *actions, float *probs,
                  float *slot_p, float *feat)
{
    struct gr_ctx *ctx = m->ctx;
    const int E = s->E, n = m->cfg.n_slots, O = m->cfg.obs_size;
    const int64_t d = m->cfg.hidden, A = m->cfg.n_actions;
    int nz = ocn_sparse_rows(obs, E, O, s->idx, s->val);
    /* the memory as [n, E, d], the first slot of a new episode = LN(g) */
    int any_first = 0, all_first = 1;
    for (int j = 0; j < E; j++) {
        if (s->first[j]) {
            float *mj = s->mem + (int64_t)j * n * d;
            memset(mj, 0, (size_t)(n * d) * sizeof *mj);
            memcpy(mj, s->g_ln + (int64_t)s->task[j] * d,
                   (size_t)d * sizeof *mj);
        }
        any_first |= s->first[j];
        all_first &= s->first[j];
    }
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < E; j++) {
            memcpy(s->buf + ((int64_t)i * E + j) * d,
                   s->mem + ((int64_t)j * n + i) * d, (size_t)d * sizeof *s->buf);
        }
    }
    int was = gr_set_grad_enabled(ctx, 0);
    struct prep pp;
    prepare(m, s->idx, s->val, E, nz, s->task, &pp);
    struct gr_tensor *mem = gr_tensor_from_host(
        ctx, GR_F32, gr_shape3(n, E, d), s->buf);
    struct gr_tensor *fmask = NULL;
    int mode = all_first ? 1 : 0;
    if (any_first && !all_first) {
        float *f = malloc((size_t)E * sizeof *f);
        if (f == NULL) {
            gr_set_grad_enabled(ctx, was);
            return gr_error(GR_ENOMEM, "OMPN acting: out of memory");
        }
        for (int j = 0; j < E; j++) {
            f[j] = s->first[j] ? 1.0f : 0.0f;
        }
        fmask = gr_tensor_from_host(ctx, GR_F32, gr_shape2(E, 1), f);
        free(f);
        mode = -1;
    }
    struct gr_tensor *mem_out, *pi, *p, *ft = NULL;
    step(m, &pp, 0, E, E, mem, mode, fmask, &mem_out, &pi, &p,
         feat != NULL ? &ft : NULL);
    int rc = 0;
    if (mem_out == NULL || pi == NULL || p == NULL ||
        gr_ctx_status(ctx) != 0) {
        rc = ctx_fail(ctx, "OMPN acting");
    }
    if (rc == 0) {
        rc = gr_tensor_to_host(mem_out, s->buf);
        for (int i = 0; rc == 0 && i < n; i++) {
            for (int j = 0; j < E; j++) {
                memcpy(s->mem + ((int64_t)j * n + i) * d,
                       s->buf + ((int64_t)i * E + j) * d,
                       (size_t)d * sizeof *s->buf);
            }
        }
    }
    if (rc == 0 && slot_p != NULL) {
        rc = gr_tensor_to_host(p, s->buf);
        for (int j = 0; rc == 0 && j < E; j++) {
            for (int i = 0; i < n; i++) {
                slot_p[(int64_t)j * n + i] = s->buf[(int64_t)i * E + j];
            }
        }
    }
    if (rc == 0 && feat != NULL) {
        rc = gr_tensor_to_host(ft, feat);
    }
    if (rc == 0) {
        float *dst = probs != NULL ? probs : s->buf;
        rc = gr_tensor_to_host(pi, dst);
        if (rc == 0) {
            argmax_rows(dst, E, (int)A, actions);
        }
    }
    if (rc == 0) {
        memset(s->first, 0, (size_t)E);
    }
    gr_step_reset(ctx);
    gr_set_grad_enabled(ctx, was);
    return rc;
}

int ompn_greedy_returns(struct ompn_model *m, const struct craft_config *config,
                        int episodes, uint64_t base_seed, double *mean_return,
                        double *success)
{
    const int n_tasks = m->cfg.n_tasks;
    if (m->cfg.obs_size != CRAFT_OBS_SIZE ||
        m->cfg.n_actions != CRAFT_N_ACTIONS) {
        return gr_error(GR_EINVAL, "greedy returns: the model reads %d "
                                   "observations and has %d actions; Craft "
                                   "has %d and %d",
                        m->cfg.obs_size, m->cfg.n_actions, CRAFT_OBS_SIZE,
                        CRAFT_N_ACTIONS);
    }
    if (episodes < 1) {
        return gr_error(GR_EINVAL, "greedy returns: %d episodes", episodes);
    }
    struct craft_task tasks[OCN_MAX_TASKS];
    for (int i = 0; i < n_tasks; i++) {
        int rc = craft_task_parse(m->cfg.task_names[i], &tasks[i]);
        if (rc < 0) {
            return gr_error_wrap(rc, "the model's task %d", i);
        }
    }
    const int E = episodes * n_tasks;
    struct craft_world *w = malloc((size_t)E * sizeof *w);
    float *obs = malloc((size_t)E * CRAFT_OBS_SIZE * sizeof *obs);
    int32_t *act = malloc((size_t)E * sizeof *act);
    uint8_t *done = calloc((size_t)E, 1);
    uint64_t *seeds = malloc((size_t)episodes * sizeof *seeds);
    struct ompn_act_state st;
    memset(&st, 0, sizeof st);
    int rc = 0;
    if (w == NULL || obs == NULL || act == NULL || done == NULL ||
        seeds == NULL) {
        rc = gr_error(GR_ENOMEM, "greedy returns: out of memory");
    }
    if (rc == 0) {
        rc = ompn_act_state_init(&st, m, E);
    }
    for (int ti = 0; rc == 0 && ti < n_tasks; ti++) {
        struct craft_config cfg;
        craft_config_for_task(config, &tasks[ti], &cfg);
        rc = bc_solvable_seeds(&cfg, &tasks[ti], ti, episodes, base_seed,
                               seeds, NULL);
        for (int k = 0; rc == 0 && k < episodes; k++) {
            int j = ti * episodes + k;
            rc = craft_world_reset(&w[j], &cfg, seeds[k], &tasks[ti]);
            ompn_act_reset(&st, j, ti);
        }
    }
    int left = E;
    while (rc == 0 && left > 0) {
        for (int j = 0; j < E; j++) {
            craft_world_observe(&w[j], obs + (int64_t)j * CRAFT_OBS_SIZE);
        }
        rc = ompn_act(m, &st, obs, act, NULL, NULL);
        for (int j = 0; rc == 0 && j < E; j++) {
            if (done[j]) {
                continue;
            }
            struct craft_step s;
            rc = craft_world_step(&w[j], act[j], &s);
            if (s.terminated || s.truncated) {
                done[j] = 1;
                left--;
            }
        }
    }
    if (rc == 0) {
        double R = 0.0, S = 0.0;
        for (int j = 0; j < E; j++) {
            R += w[j].episode_return;
            S += w[j].k >= w[j].task.n;
        }
        *mean_return = R / E;
        *success = S / E;
    }
    ompn_act_state_free(&st);
    free(w);
    free(obs);
    free(act);
    free(done);
    free(seeds);
    return rc;
}

/* ---- behaviour cloning ------------------------------------------------------ */

static int policy_forward(void *model, const struct demo_batch *b,
                          struct ocn_forward_out *out)
{
    return ompn_forward(model, b, out, NULL);
}

static int policy_returns(void *model, const struct craft_config *config,
                          int episodes, uint64_t base_seed,
                          double *mean_return, double *success)
{
    return ompn_greedy_returns(model, config, episodes, base_seed,
                               mean_return, success);
}

void ompn_bc_policy(struct ompn_model *m, struct bc_policy *p)
{
    memset(p, 0, sizeof *p);
    p->ctx = m->ctx;
    p->n_tasks = m->cfg.n_tasks;
    p->n_options = 0;
    p->model = m;
    p->forward = policy_forward;
    p->greedy_returns = policy_returns;
}
