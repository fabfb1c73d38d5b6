/* Optimizers (PyTorch's update rules), global-norm clipping, schedules. */
#include "kernels/optim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/internal.h"

struct gr_tensor *gr_optim_tensor_new(struct gr_ctx *ctx, const char *name,
                                      enum gr_dtype dtype,
                                      struct gr_shape shape);

struct optim_param {
    struct gr_tensor *p;
    struct gr_tensor *s1; /* momentum / exp_avg / ax */
    struct gr_tensor *s2; /* exp_avg_sq */
};

struct gr_optim {
    struct gr_ctx *ctx;
    struct gr_optim_config cfg;
    char name[64];
    int n;
    struct optim_param *params;
    struct gr_tensor *steps; /* i32 [n + 1]: per-parameter steps, calls */
    struct gr_tensor *asgd;  /* f32 [n, 2]: eta, mu (ASGD only) */
    int32_t *h_steps;        /* host mirrors, refreshed every step */
    float *h_asgd;
};

struct gr_optim_config gr_optim_config_default(enum gr_optim_kind kind)
{
    struct gr_optim_config c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.beta1 = 0.9f;
    c.beta2 = 0.999f;
    c.eps = 1e-8f;
    c.asgd_lambd = 1e-4f;
    c.asgd_alpha = 0.75f;
    c.asgd_t0 = 1e6f;
    switch (kind) {
    case GR_OPTIM_ADAM:
        c.lr = 1e-3f;
        break;
    case GR_OPTIM_ADAMW:
        c.lr = 1e-3f;
        c.weight_decay = 1e-2f;
        break;
    default:
        c.lr = 1e-2f;
        break;
    }
    return c;
}

static int prefix_match(const char *name, const char *prefix)
{
    return !prefix || strncmp(name, prefix, strlen(prefix)) == 0;
}

static struct gr_tensor *state_tensor(struct gr_optim *o, const char *param,
                                      const char *what, struct gr_shape s)
{
    char nm[512];
    snprintf(nm, sizeof nm, "%s/%s/%s", o->name, param, what);
    return gr_optim_tensor_new(o->ctx, nm, GR_F32, s);
}

void gr_optim_free(struct gr_optim *opt)
{
    if (!opt) {
        return;
    }
    free(opt->params);
    free(opt->h_steps);
    free(opt->h_asgd);
    free(opt);
}

int gr_optim_new(struct gr_optim **out, struct gr_ctx *ctx, const char *name,
                 const struct gr_optim_config *cfg)
{
    *out = NULL;
    if (!cfg || !name || !*name || strlen(name) > 60 || strchr(name, '/')) {
        return gr_error(GR_EINVAL, "gr_optim_new: needs a config and a name "
                        "of 1-60 characters without '/'");
    }
    if (cfg->kind < GR_OPTIM_SGD || cfg->kind > GR_OPTIM_ASGD) {
        return gr_error(GR_EINVAL, "gr_optim_new: unknown kind %d",
                        (int)cfg->kind);
    }
    if (!(cfg->lr >= 0.0f) || !(cfg->weight_decay >= 0.0f) ||
        !(cfg->momentum >= 0.0f) ||
        ((cfg->kind == GR_OPTIM_ADAM || cfg->kind == GR_OPTIM_ADAMW) &&
         (!(cfg->beta1 >= 0.0f && cfg->beta1 < 1.0f) ||
          !(cfg->beta2 >= 0.0f && cfg->beta2 < 1.0f) || !(cfg->eps > 0.0f)))) {
        return gr_error(GR_EINVAL, "gr_optim_new '%s': lr, weight decay and "
                        "momentum must be >= 0, betas in [0, 1), eps > 0",
                        name);
    }
    if (cfg->nesterov && (cfg->momentum <= 0.0f || cfg->dampening != 0.0f)) {
        return gr_error(GR_EINVAL, "gr_optim_new '%s': Nesterov momentum "
                        "requires a momentum and zero dampening", name);
    }
    char probe[128];
    snprintf(probe, sizeof probe, "%s/steps", name);
    if (gr_ctx_find(ctx, probe)) {
        return gr_error(GR_EINVAL, "gr_optim_new: an optimizer named '%s' "
                        "exists in this context", name);
    }
    struct gr_optim *o = calloc(1, sizeof *o);
    if (!o) {
        return gr_error(GR_ENOMEM, "out of memory");
    }
    o->ctx = ctx;
    o->cfg = *cfg;
    o->cfg.prefix = NULL; /* the caller's string need not outlive us */
    snprintf(o->name, sizeof o->name, "%s", name);
    int n = 0;
    for (int i = 0; i < ctx->n_named; i++) {
        struct gr_tensor *t = ctx->named[i];
        if (t->kind == GR_KIND_PARAM && prefix_match(t->name, cfg->prefix)) {
            n++;
        }
    }
    if (n == 0) {
        free(o);
        return gr_error(GR_EINVAL, "gr_optim_new '%s': no parameter matches "
                        "prefix '%s'", name, cfg->prefix ? cfg->prefix : "");
    }
    o->params = calloc((size_t)n, sizeof *o->params);
    o->h_steps = calloc((size_t)n + 1, sizeof *o->h_steps);
    o->h_asgd = calloc((size_t)n * 2, sizeof *o->h_asgd);
    if (!o->params || !o->h_steps || !o->h_asgd) {
        gr_optim_free(o);
        return gr_error(GR_ENOMEM, "out of memory");
    }
    int rc = 0;
    for (int i = 0; i < ctx->n_named && rc == 0; i++) {
        struct gr_tensor *t = ctx->named[i];
        if (t->kind != GR_KIND_PARAM || !prefix_match(t->name, cfg->prefix)) {
            continue;
        }
        struct optim_param *op = &o->params[o->n++];
        op->p = t;
        struct gr_shape s = gr_tensor_shape(t);
        switch (cfg->kind) {
        case GR_OPTIM_SGD:
            if (cfg->momentum != 0.0f) {
                op->s1 = state_tensor(o, t->name, "momentum", s);
                rc = op->s1 ? 0 : GR_ENOMEM;
            }
            break;
        case GR_OPTIM_ADAM:
        case GR_OPTIM_ADAMW:
            op->s1 = state_tensor(o, t->name, "exp_avg", s);
            op->s2 = op->s1 ? state_tensor(o, t->name, "exp_avg_sq", s) : NULL;
            rc = op->s2 ? 0 : GR_ENOMEM;
            break;
        case GR_OPTIM_ASGD:
            op->s1 = state_tensor(o, t->name, "ax", s);
            rc = op->s1 ? 0 : GR_ENOMEM;
            break;
        }
    }
    if (rc == 0) {
        o->steps = gr_optim_tensor_new(ctx, probe, GR_I32, gr_shape1(n + 1));
        rc = o->steps ? 0 : GR_ENOMEM;
    }
    if (rc == 0 && cfg->kind == GR_OPTIM_ASGD) {
        char nm[128];
        snprintf(nm, sizeof nm, "%s/asgd_eta_mu", name);
        o->asgd = gr_optim_tensor_new(ctx, nm, GR_F32, gr_shape2(n, 2));
        rc = o->asgd ? 0 : GR_ENOMEM;
        for (int i = 0; rc == 0 && i < n; i++) {
            o->h_asgd[2 * i] = cfg->lr; /* eta starts at the lr */
            o->h_asgd[2 * i + 1] = 1.0f;
        }
        if (rc == 0) {
            rc = gr_tensor_set_host(o->asgd, o->h_asgd);
        }
    }
    if (rc < 0) {
        int code = rc;
        gr_error_wrap(code, "gr_optim_new '%s'", name);
        gr_optim_free(o);
        return code;
    }
    ctx->n_optims++;
    *out = o;
    return 0;
}

void gr_optim_set_lr(struct gr_optim *opt, float lr) { opt->cfg.lr = lr; }

float gr_optim_lr(const struct gr_optim *opt) { return opt->cfg.lr; }

int64_t gr_optim_steps(const struct gr_optim *opt)
{
    int32_t v = 0;
    struct gr_ctx *ctx = opt->ctx;
    ctx->be->d2h(ctx->st, &v, (const int32_t *)opt->steps->data + opt->n,
                 sizeof v);
    return v;
}

int gr_optim_step(struct gr_optim *o)
{
    struct gr_ctx *ctx = o->ctx;
    const struct gr_backend *be = ctx->be;
    const struct gr_optim_config *c = &o->cfg;
    int rc = gr_tensor_to_host(o->steps, o->h_steps);
    if (rc == 0 && o->asgd) {
        rc = gr_tensor_to_host(o->asgd, o->h_asgd);
    }
    if (rc < 0) {
        return rc;
    }
    for (int i = 0; i < o->n; i++) {
        struct optim_param *op = &o->params[i];
        struct gr_tensor *p = op->p;
        if (!p->requires_grad) {
            continue; /* frozen: no update, no state change */
        }
        float *pd = p->data, *g = p->grad->data;
        int32_t t = ++o->h_steps[i];
        switch (c->kind) {
        case GR_OPTIM_SGD:
            rc = be->sgd_step(ctx->st, pd, g, op->s1 ? op->s1->data : NULL,
                              p->numel, c->lr, c->weight_decay, c->momentum,
                              c->dampening, c->nesterov, t == 1);
            break;
        case GR_OPTIM_ADAM:
        case GR_OPTIM_ADAMW: {
            double bc1 = 1.0 - pow((double)c->beta1, (double)t);
            double bc2 = 1.0 - pow((double)c->beta2, (double)t);
            rc = be->adam_step(ctx->st, pd, g, op->s1->data, op->s2->data,
                               p->numel, c->lr, c->beta1, c->beta2, c->eps,
                               c->weight_decay, c->kind == GR_OPTIM_ADAMW,
                               (float)bc1, (float)bc2);
            break;
        }
        case GR_OPTIM_ASGD: {
            float eta = o->h_asgd[2 * i], mu = o->h_asgd[2 * i + 1];
            rc = be->asgd_step(ctx->st, pd, g, op->s1->data, p->numel, eta,
                               c->asgd_lambd, c->weight_decay, mu);
            /* For the next step (torch: computed after the update). */
            o->h_asgd[2 * i] =
                (float)((double)c->lr /
                        pow(1.0 + (double)c->asgd_lambd * c->lr * t,
                            (double)c->asgd_alpha));
            double d = (double)t - (double)c->asgd_t0;
            o->h_asgd[2 * i + 1] = (float)(1.0 / (d > 1.0 ? d : 1.0));
            break;
        }
        }
        if (rc < 0) {
            return gr_error_wrap(rc, "optimizer '%s', parameter '%s'", o->name,
                                 p->name);
        }
    }
    o->h_steps[o->n]++;
    rc = gr_tensor_set_host(o->steps, o->h_steps);
    if (rc == 0 && o->asgd) {
        rc = gr_tensor_set_host(o->asgd, o->h_asgd);
    }
    return rc;
}

int gr_optim_swap_average(struct gr_optim *o)
{
    if (o->cfg.kind != GR_OPTIM_ASGD) {
        return gr_error(GR_EINVAL, "gr_optim_swap_average: optimizer '%s' is "
                        "not ASGD", o->name);
    }
    struct gr_ctx *ctx = o->ctx;
    for (int i = 0; i < o->n; i++) {
        struct optim_param *op = &o->params[i];
        int rc = ctx->be->swap(ctx->st, op->p->data, op->s1->data,
                               op->p->numel);
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

int gr_clip_grad_norm(struct gr_ctx *ctx, const char *prefix, float max_norm,
                      float *norm_out)
{
    if (!(max_norm > 0.0f)) {
        return gr_error(GR_EINVAL, "gr_clip_grad_norm: max_norm %g <= 0",
                        (double)max_norm);
    }
    double total = 0.0;
    for (int i = 0; i < ctx->n_named; i++) {
        struct gr_tensor *t = ctx->named[i];
        if (t->kind != GR_KIND_PARAM || !t->requires_grad ||
            !prefix_match(t->name, prefix)) {
            continue;
        }
        double s = 0.0;
        int rc = ctx->be->sumsq(ctx->st, t->grad->data, t->numel, &s);
        if (rc < 0) {
            return rc;
        }
        total += s;
    }
    double norm = sqrt(total);
    if (norm_out) {
        *norm_out = (float)norm;
    }
    double coef = (double)max_norm / (norm + 1e-6);
    if (coef < 1.0) {
        for (int i = 0; i < ctx->n_named; i++) {
            struct gr_tensor *t = ctx->named[i];
            if (t->kind != GR_KIND_PARAM || !t->requires_grad ||
                !prefix_match(t->name, prefix)) {
                continue;
            }
            int rc = ctx->be->scale(ctx->st, t->grad->data, t->numel,
                                    (float)coef);
            if (rc < 0) {
                return rc;
            }
        }
    }
    return 0;
}

float gr_lr_linear_at(const struct gr_lr_linear *s, int64_t step)
{
    if (s->steps <= 0 || step >= s->steps) {
        return s->lr_end;
    }
    if (step <= 0) {
        return s->lr_start;
    }
    double f = (double)step / (double)s->steps;
    return (float)((double)s->lr_start +
                   ((double)s->lr_end - (double)s->lr_start) * f);
}

void gr_lr_plateau_init(struct gr_lr_plateau *s, int mode_max, float lr)
{
    memset(s, 0, sizeof *s);
    s->mode_max = mode_max ? 1 : 0;
    s->factor = 0.1f;
    s->patience = 10;
    s->threshold = 1e-4f;
    s->cooldown = 0;
    s->min_lr = 0.0f;
    s->lr = lr;
    s->best = mode_max ? -INFINITY : INFINITY;
}

float gr_lr_plateau_step(struct gr_lr_plateau *s, double metric)
{
    int better;
    if (s->mode_max) {
        better = metric > s->best * (1.0 + (double)s->threshold);
    } else {
        better = metric < s->best * (1.0 - (double)s->threshold);
    }
    if (isinf(s->best) && !isnan(metric)) {
        better = s->mode_max ? metric > s->best : metric < s->best;
    }
    s->seen++;
    if (better) {
        s->best = metric;
        s->bad_epochs = 0;
    } else {
        s->bad_epochs++;
    }
    if (s->cooldown_left > 0) {
        s->cooldown_left--;
        s->bad_epochs = 0;
    }
    if (s->bad_epochs > s->patience) {
        float nl = s->lr * s->factor;
        if (nl < s->min_lr) {
            nl = s->min_lr;
        }
        if (s->lr - nl > 1e-8f) {
            s->lr = nl;
        }
        s->cooldown_left = s->cooldown;
        s->bad_epochs = 0;
    }
    return s->lr;
}
