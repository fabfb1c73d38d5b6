/* OMPN fine-tuned by PPO as a recurrent policy (agents/ppo_ompn.h):
 *   - central finite differences of the PPO loss through one OMPN step
 *     from stored memories (every parameter, the value head included; rows
 *     that start an episode build their memory from the task code on the
 *     tape, so it gets a gradient); the loss equals a host sum of its
 *     parts (policy, value, entropy);
 *   - a short run from a tiny OMPN BC checkpoint: every parameter comes
 *     from it (the task code from its row for the task), statistics are
 *     finite, the parameters move;
 *   - save / load: 2 iterations, save, a new trainer loads and runs 2
 *     more = 4 straight, checkpoint bytes and statistics alike;
 *   - greedy evaluation is deterministic and leaves the trainer alone;
 *   - an OCN checkpoint given as the OMPN init is refused by name. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents/bc.h"
#include "agents/ppo_ompn.h"
#include "core/error.h"
#include "core/random.h"
#include "kernels/checkpoint.h"
#include "kernels/layers.h"
#include "kernels/rng.h"
#include "kernels/tape.h"
#include "tests/agents/ocn_testutil.h"
#include "tests/test.h"

#define M_ROWS 6

struct fd_case {
    struct ompn_model m;
    struct gr_tensor *vw, *vb;
    int32_t idx[M_ROWS * 3];
    float val[M_ROWS * 3];
    float mem[M_ROWS * 3 * 4];
    float first[M_ROWS];
    int32_t act[M_ROWS];
    float logp[M_ROWS], adv[M_ROWS], ret[M_ROWS];
};

static double fd_loss(struct fd_case *c, struct ppo_loss_out *lo)
{
    struct ppo_ompn_minibatch b = {M_ROWS, 3,      c->idx,  c->val, c->mem,
                                   c->first, c->act, c->logp, c->adv,
                                   c->ret};
    memset(lo, 0, sizeof *lo);
    /* clip 10: the ratio stays inside, so the loss is smooth */
    if (ppo_ompn_loss(&c->m, c->vw, c->vb, &b, 10.0f, 0.5f, 0.05f, 1, lo) <
        0) {
        fprintf(stderr, "loss: %s\n", gr_last_error());
        return NAN;
    }
    return gr_tensor_item(lo->loss);
}

static void test_finite_differences(void)
{
    struct ompn_config cfg;
    ompn_config_default(&cfg);
    cfg.n_slots = 3;
    cfg.hidden = 4;
    cfg.obs_size = 7;
    cfg.n_tasks = 1;
    strcpy(cfg.task_names[0], "DCA");
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct fd_case c;
    memset(&c, 0, sizeof c);
    CHECK(ompn_model_init(&c.m, ctx, &cfg, 3) == 0);
    c.vw = gr_param_new(ctx, "ompn.value.weight", gr_shape2(1, 12));
    c.vb = gr_param_new(ctx, "ompn.value.bias", gr_shape1(1));
    CHECK(gr_init_uniform(c.vw, -0.5f, 0.5f, gr_rng_make(4, 1)) == 0);
    struct gr_rng_state { uint64_t s; } r = {12345};
    for (int j = 0; j < M_ROWS; j++) {
        for (int k = 0; k < 3; k++) {
            /* distinct columns per row, one slot unused in row 0 */
            c.idx[j * 3 + k] = j == 0 && k == 2 ? -1 : (j + 2 * k) % 7;
            c.val[j * 3 + k] = c.idx[j * 3 + k] < 0 ? 0.0f : 1.0f + 0.5f * k;
        }
        for (int k = 0; k < 12; k++) {
            r.s = gr_mix64(r.s + 1);
            c.mem[j * 12 + k] = (float)((double)(r.s >> 11) / 9007199254740992.0 *
                                        2.0 - 1.0);
        }
        c.first[j] = j % 3 == 0 ? 1.0f : 0.0f;
        c.act[j] = (j * 2) % 5;
        c.logp[j] = -1.6f + 0.03f * (float)j;
        c.adv[j] = (float)j * 0.4f - 1.0f;
        c.ret[j] = 0.2f * (float)(j % 4);
    }
    /* analytic gradients */
    gr_zero_grad(ctx);
    gr_step_reset(ctx);
    struct ppo_loss_out lo;
    double l0 = fd_loss(&c, &lo);
    CHECK(isfinite(l0));
    CHECK_NEAR(l0, lo.policy_loss + 0.5 * lo.value_loss - 0.05 * lo.entropy,
               1e-5);
    CHECK(lo.entropy > 0.0 && lo.entropy <= log(5.0) + 1e-6);
    CHECK(gr_backward(ctx, lo.loss) == 0);
    gr_step_reset(ctx);
    int checked = 0, bad = 0, nonzero = 0;
    double worst = 0.0;
    int was = gr_set_grad_enabled(ctx, 0);
    for (int i = 0; i < OMPN_N_PARAMS + 2; i++) {
        struct gr_tensor *p = i < OMPN_N_PARAMS ? ompn_param(&c.m, i)
                              : i == OMPN_N_PARAMS ? c.vw : c.vb;
        const char *name = i < OMPN_N_PARAMS ? ompn_param_name(i)
                           : i == OMPN_N_PARAMS ? "value.weight"
                                                : "value.bias";
        int64_t cnt = p->numel;
        float *v = malloc((size_t)cnt * sizeof *v);
        float *g = malloc((size_t)cnt * sizeof *g);
        gr_tensor_to_host(p, v);
        gr_tensor_to_host(p->grad, g);
        int64_t stride = cnt > 6 ? cnt / 6 : 1;
        for (int64_t k = 0; k < cnt; k += stride) {
            const float h = 2e-3f;
            float keep = v[k];
            v[k] = keep + h;
            gr_tensor_set_host(p, v);
            double lp = fd_loss(&c, &lo);
            gr_step_reset(ctx);
            v[k] = keep - h;
            gr_tensor_set_host(p, v);
            double lm = fd_loss(&c, &lo);
            gr_step_reset(ctx);
            v[k] = keep;
            gr_tensor_set_host(p, v);
            double fd = (lp - lm) / (2.0 * (double)h);
            double err = fabs(fd - g[k]);
            checked++;
            nonzero += fabs(fd) > 1e-4;
            if (err > 1e-3 + 2e-2 * fabs(fd)) {
                if (bad < 10) {
                    fprintf(stderr, "%s[%lld]: grad %.7g, finite "
                                    "differences %.7g\n",
                            name, (long long)k, (double)g[k], fd);
                }
                bad++;
            }
            worst = fmax(worst, err);
        }
        /* the task code learns through the rows that start an episode */
        if (p == c.m.task) {
            double s = 0.0;
            for (int64_t k = 0; k < cnt; k++) {
                s += fabs(g[k]);
            }
            CHECK_MSG(s > 1e-6, "no gradient into the task code");
        }
        free(v);
        free(g);
    }
    gr_set_grad_enabled(ctx, was);
    CHECK_MSG(bad == 0, "%d of %d gradients off", bad, checked);
    CHECK(nonzero > checked / 2);
    printf("PPO loss through OMPN, finite differences: %d entries (%d "
           "non-zero), worst absolute error %.2e\n",
           checked, nonzero, worst);
    gr_ctx_free(ctx);
}

/* A tiny OMPN BC checkpoint (random weights) of AC, CD in the S1 world. */
static int write_bc(const char *path)
{
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct ompn_config c;
    ompn_config_default(&c);
    c.n_slots = 2;
    c.hidden = 8;
    c.n_tasks = 2;
    strcpy(c.task_names[0], "AC");
    strcpy(c.task_names[1], "CD");
    struct ompn_model m;
    int rc = ompn_model_init(&m, ctx, &c, 17);
    char text[4096];
    int n = rc == 0 ? ompn_config_format(&c, text, sizeof text) : -1;
    struct craft_config w;
    craft_config_default(&w);
    w.n_each = 4;
    if (n > 0 && bc_world_format(&w, text + n, sizeof text - (size_t)n) >= 0) {
        rc = gr_checkpoint_save(ctx, path, text, GR_CKPT_PARAMS, 1);
    } else {
        rc = -1;
    }
    gr_ctx_free(ctx);
    return rc;
}

static void small(struct ppo_config *c, const char *task)
{
    ppo_config_default(c);
    c->policy = PPO_POLICY_OMPN;
    snprintf(c->task, sizeof c->task, "%s", task);
    c->num_envs = 4;
    c->num_steps = 16;
    c->num_minibatches = 2;
    c->update_epochs = 2;
    c->total_timesteps = 4 * 16 * 4;
    c->learning_rate = 1e-3f;
    c->seed = 5;
}

static float *param_host(struct gr_ctx *ctx, const char *name, int64_t *n)
{
    struct gr_tensor *t = gr_ctx_find(ctx, name);
    if (t == NULL) {
        return NULL;
    }
    float *h = malloc((size_t)t->numel * sizeof *h);
    gr_tensor_to_host(t, h);
    *n = t->numel;
    return h;
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)sz + 1);
    *n = fread(b, 1, (size_t)sz, f);
    fclose(f);
    return b;
}

static void test_run_and_resume(const char *dir)
{
    char bc[512], mid[512], straight[512], resumed[512];
    snprintf(bc, sizeof bc, "%s/bc.ckpt", dir);
    snprintf(mid, sizeof mid, "%s/mid.ckpt", dir);
    snprintf(straight, sizeof straight, "%s/straight.ckpt", dir);
    snprintf(resumed, sizeof resumed, "%s/resumed.ckpt", dir);
    CHECK(write_bc(bc) == 0);
    struct ppo_config c;
    small(&c, "AC");
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct ppo_ompn *t = NULL;
    CHECK_MSG(ppo_ompn_new(&t, ctx, &c, bc) == 0, "%s", gr_last_error());
    if (t == NULL) {
        gr_ctx_free(ctx);
        return;
    }
    /* every parameter from the BC model; the task code its row for AC */
    struct gr_ctx *bctx = tu_ctx(GR_DEVICE_CPU);
    struct ompn_config bcfg;
    char *text = NULL;
    CHECK(gr_checkpoint_read_config(bc, &text) == 0);
    CHECK(ompn_config_parse(text, &bcfg) == 0);
    free(text);
    struct ompn_model bm;
    CHECK(ompn_model_init(&bm, bctx, &bcfg, 0) == 0);
    CHECK(gr_checkpoint_load(bctx, bc, GR_CKPT_PARAMS, NULL) == 0);
    int same = 0;
    for (int i = 0; i < OMPN_N_PARAMS; i++) {
        int64_t n1 = 0, n2 = 0;
        float *a = param_host(ctx, ompn_param_name(i), &n1);
        float *b = param_host(bctx, ompn_param_name(i), &n2);
        if (i == 2) { /* ompn.task: row 0 (AC) of the BC model's two */
            same += n1 * 2 == n2 && memcmp(a, b, (size_t)n1 * 4) == 0;
        } else {
            same += n1 == n2 && memcmp(a, b, (size_t)n1 * 4) == 0;
        }
        free(a);
        free(b);
    }
    CHECK_MSG(same == OMPN_N_PARAMS, "%d of %d parameters from the BC model",
              same, OMPN_N_PARAMS);
    CHECK(strcmp(ompn_param_name(2), "ompn.task") == 0);
    struct ppo_eval e1, e2;
    CHECK(ppo_ompn_evaluate(t, 6, PPO_EVAL_SEED, &e1, NULL) == 0);
    struct ppo_stats s[4];
    for (int i = 0; i < 2; i++) {
        CHECK_MSG(ppo_ompn_iteration(t, &s[i]) == 0, "%s", gr_last_error());
    }
    CHECK(ppo_ompn_save(t, mid, 1) == 0);
    for (int i = 2; i < 4; i++) {
        CHECK_MSG(ppo_ompn_iteration(t, &s[i]) == 0, "%s", gr_last_error());
    }
    for (int i = 0; i < 4; i++) {
        CHECK(s[i].global_step == (int64_t)(i + 1) * 64);
        CHECK(isfinite(s[i].policy_loss) && isfinite(s[i].value_loss));
        CHECK(s[i].entropy > 0.0 && s[i].entropy <= log(5.0) + 1e-6);
    }
    /* the first minibatch's ratio is 1 only if acting's forward equals
     * the update's: approx_kl of the run stays small */
    CHECK(s[0].approx_kl < 0.1);
    CHECK(ppo_ompn_save(t, straight, 1) == 0);
    /* the network moved, the BC weights are not frozen */
    int64_t n1 = 0, n2 = 0;
    float *a = param_host(ctx, "ompn.com.l1.weight", &n1);
    float *b = param_host(bctx, "ompn.com.l1.weight", &n2);
    CHECK(n1 == n2 && memcmp(a, b, (size_t)n1 * 4) != 0);
    free(a);
    free(b);
    /* evaluation: the same twice, and it changes nothing */
    CHECK(ppo_ompn_evaluate(t, 6, PPO_EVAL_SEED, &e1, NULL) == 0);
    CHECK(ppo_ompn_evaluate(t, 6, PPO_EVAL_SEED, &e2, NULL) == 0);
    CHECK(e1.mean_return == e2.mean_return && e1.mean_length == e2.mean_length);
    CHECK(e1.mean_length >= 1.0 && e1.mean_length <= 64.0);
    ppo_ompn_free(t);
    gr_ctx_free(ctx);
    gr_ctx_free(bctx);
    /* resume from the middle: the same bytes as the straight run */
    ctx = tu_ctx(GR_DEVICE_CPU);
    t = NULL;
    CHECK(ppo_ompn_new(&t, ctx, &c, bc) == 0);
    CHECK_MSG(ppo_ompn_load(t, mid) == 0, "%s", gr_last_error());
    CHECK(ppo_ompn_global_step(t) == 128);
    struct ppo_stats r[2];
    for (int i = 0; i < 2; i++) {
        CHECK(ppo_ompn_iteration(t, &r[i]) == 0);
        CHECK(r[i].policy_loss == s[i + 2].policy_loss &&
              r[i].value_loss == s[i + 2].value_loss &&
              r[i].episodes == s[i + 2].episodes);
    }
    CHECK(ppo_ompn_save(t, resumed, 1) == 0);
    size_t na = 0, nb = 0;
    unsigned char *fa = slurp(straight, &na), *fb = slurp(resumed, &nb);
    CHECK_MSG(fa != NULL && fb != NULL && na == nb && memcmp(fa, fb, na) == 0,
              "resumed checkpoint differs from the straight run's");
    free(fa);
    free(fb);
    ppo_ompn_free(t);
    gr_ctx_free(ctx);
    /* acting's log-probabilities = the update's: with one epoch of one
     * minibatch the ratio is measured before any step, so it is 1 */
    {
        struct ppo_config c1 = c;
        c1.update_epochs = 1;
        c1.num_minibatches = 1;
        struct gr_ctx *c1x = tu_ctx(GR_DEVICE_CPU);
        struct ppo_ompn *t1 = NULL;
        struct ppo_stats one;
        CHECK(ppo_ompn_new(&t1, c1x, &c1, bc) == 0);
        CHECK(t1 != NULL && ppo_ompn_iteration(t1, &one) == 0);
        CHECK_MSG(fabs(one.old_approx_kl) < 1e-5 && one.approx_kl < 1e-7 &&
                      one.clipfrac == 0.0,
                  "ratio not 1 before the first step: old_approx_kl %.3g, "
                  "approx_kl %.3g",
                  one.old_approx_kl, one.approx_kl);
        ppo_ompn_free(t1);
        gr_ctx_free(c1x);
    }
    /* a task the BC model never saw: a fresh task row, still runs */
    small(&c, "DCA");
    ctx = tu_ctx(GR_DEVICE_CPU);
    t = NULL;
    CHECK(ppo_ompn_new(&t, ctx, &c, bc) == 0);
    CHECK(t != NULL && ppo_ompn_iteration(t, &s[0]) == 0);
    ppo_ompn_free(t);
    gr_ctx_free(ctx);
    printf("OMPN PPO: 4 iterations, resume byte-identical, eval return "
           "%.3f\n",
           e1.mean_return);
}

static void test_refusals(const char *dir)
{
    char ocn[512];
    snprintf(ocn, sizeof ocn, "%s/ocn.ckpt", dir);
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct ocn_config oc;
    ocn_config_default(&oc);
    oc.hidden = 8;
    oc.width = 8;
    oc.n_tasks = 1;
    strcpy(oc.task_names[0], "AC");
    struct ocn_model om;
    CHECK(ocn_model_init(&om, ctx, &oc, 1) == 0);
    char text[4096];
    CHECK(ocn_config_format(&oc, text, sizeof text) > 0);
    CHECK(gr_checkpoint_save(ctx, ocn, text, GR_CKPT_PARAMS, 1) == 0);
    gr_ctx_free(ctx);
    struct ppo_config c;
    small(&c, "AC");
    ctx = tu_ctx(GR_DEVICE_CPU);
    struct ppo_ompn *t = NULL;
    int rc = ppo_ompn_new(&t, ctx, &c, ocn);
    CHECK(rc == GR_EFORMAT && t == NULL);
    CHECK_STR_CONTAINS(gr_last_error(), "not an OMPN checkpoint");
    c.policy = PPO_POLICY_OCN;
    CHECK(ppo_ompn_new(&t, ctx, &c, ocn) == GR_EINVAL);
    gr_ctx_free(ctx);
}

int main(void)
{
    char dir[] = "/tmp/grove_ompn_ppo_XXXXXX";
    if (mkdtemp(dir) == NULL) {
        return 1;
    }
    test_finite_differences();
    test_run_and_resume(dir);
    test_refusals(dir);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", dir);
    }
    return test_report("agents_ompn_ppo");
}
