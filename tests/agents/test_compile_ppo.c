/* compILE in fine-tuning (agents/ppo_compile.h, issue 26 §2):
 *   - the Gaussian policy's log-density equals a double-precision host
 *     sum, its entropy the closed form, and their gradients (in z, μ and
 *     log σ) central finite differences; the sampler's draws have the
 *     asked mean and spread;
 *   - the decoder alone (compile_decode) fed each step's inferred latent
 *     (compile_latents) reproduces the evaluation forward's π_t;
 *   - the latents of two compILE models are not interchangeable:
 *     (a) a model whose latent axes are permuted and sign-flipped has the
 *         same loss (the prior N(0, I) cannot tell them apart), yet the
 *         original's latents change its decoder's actions;
 *     (b) two models trained independently (seeds 1, 2) on the same
 *         expert demonstrations: each decoder is better with its own
 *         model's latents than with the other's, and decoding model A's z
 *         with B's decoder gives other action distributions than with A's
 *         (mean total variation);
 *   - the greedy evaluation plays what a reference written from the public
 *     pieces plays on the worlds' current observations. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/bc.h"
#include "agents/compile.h"
#include "agents/ompn.h"
#include "kernels/checkpoint.h"
#include "agents/ppo_compile.h"
#include "core/error.h"
#include "envs/craft.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "kernels/rng.h"
#include "kernels/tape.h"
#include "tests/agents/ocn_testutil.h"
#include "tests/test.h"

#define GM 3
#define GD 4

static double gauss_loss(struct gr_ctx *ctx, const float *z, const float *mu,
                         const float *ls, struct gr_tensor **out,
                         struct gr_tensor **tz, struct gr_tensor **tmu,
                         struct gr_tensor **tls)
{
    /* a smooth scalar of both: Σ_j w_j logp_j + 0.3 H */
    *tz = gr_tensor_from_host(ctx, GR_F32, gr_shape2(GM, GD), z);
    *tmu = gr_tensor_from_host(ctx, GR_F32, gr_shape2(GM, GD), mu);
    *tls = gr_tensor_from_host(ctx, GR_F32, gr_shape2(1, GD), ls);
    gr_tensor_set_requires_grad(*tz, 1);
    gr_tensor_set_requires_grad(*tmu, 1);
    gr_tensor_set_requires_grad(*tls, 1);
    static const float w[GM] = {0.7f, -1.1f, 0.4f};
    struct gr_tensor *tw = gr_tensor_from_host(ctx, GR_F32, gr_shape2(GM, 1), w);
    struct gr_tensor *lp = ppo_gauss_logp(ctx, *tz, *tmu, *tls);
    *out = gr_add(ctx, gr_sum(ctx, gr_mul(ctx, lp, tw)),
                  gr_scale(ctx, ppo_gauss_entropy(ctx, *tls), 0.3f));
    double host = 0.0;
    for (int j = 0; j < GM; j++) {
        host += w[j] * ppo_gauss_logp_host(z + j * GD, mu + j * GD, ls, GD);
    }
    double h = 0.0;
    for (int i = 0; i < GD; i++) {
        h += ls[i] + 0.5 * (1.0 + 1.8378770664093453);
    }
    return host + 0.3 * h;
}

static void test_gauss(void)
{
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    float z[GM * GD], mu[GM * GD], ls[GD];
    for (int k = 0; k < GM * GD; k++) {
        z[k] = 0.3f * (float)((k * 7) % 11) - 1.2f;
        mu[k] = 0.25f * (float)((k * 5) % 9) - 0.9f;
    }
    for (int i = 0; i < GD; i++) {
        ls[i] = -0.4f + 0.3f * (float)i;
    }
    gr_step_reset(ctx);
    struct gr_tensor *loss, *tz, *tmu, *tls;
    double host = gauss_loss(ctx, z, mu, ls, &loss, &tz, &tmu, &tls);
    CHECK_NEAR(gr_tensor_item(loss), host, 1e-4 * fmax(1.0, fabs(host)));
    CHECK(gr_backward(ctx, loss) == 0);
    float gz[GM * GD], gmu[GM * GD], gls[GD];
    CHECK(gr_tensor_to_host(tz->grad, gz) == 0);
    CHECK(gr_tensor_to_host(tmu->grad, gmu) == 0);
    CHECK(gr_tensor_to_host(tls->grad, gls) == 0);
    gr_step_reset(ctx);
    /* finite differences of the double host formula */
    int bad = 0, n = 0;
    float *arrs[3] = {z, mu, ls};
    float *grads[3] = {gz, gmu, gls};
    int sizes[3] = {GM * GD, GM * GD, GD};
    for (int a = 0; a < 3; a++) {
        for (int k = 0; k < sizes[a]; k++) {
            float keep = arrs[a][k];
            const float h = 1e-3f;
            struct gr_tensor *l2, *x1, *x2, *x3;
            arrs[a][k] = keep + h;
            double lp = gauss_loss(ctx, z, mu, ls, &l2, &x1, &x2, &x3);
            arrs[a][k] = keep - h;
            double lm = gauss_loss(ctx, z, mu, ls, &l2, &x1, &x2, &x3);
            arrs[a][k] = keep;
            gr_step_reset(ctx);
            double fd = (lp - lm) / (2.0 * (double)h);
            n++;
            if (fabs(fd - grads[a][k]) > 1e-3 + 1e-3 * fabs(fd)) {
                fprintf(stderr, "array %d [%d]: grad %.7g, fd %.7g\n", a, k,
                        (double)grads[a][k], fd);
                bad++;
            }
        }
    }
    CHECK_MSG(bad == 0, "%d of %d Gaussian gradients off", bad, n);
    /* the sampler: mean and spread of 4000 draws of one dimension pair */
    const float m2[2] = {0.5f, -1.0f}, l2s[2] = {-0.7f, 0.2f};
    uint64_t counter = 0, key = gr_rng_key_of(3, 9);
    double s[2] = {0, 0}, q[2] = {0, 0};
    const int N = 4000;
    for (int i = 0; i < N; i++) {
        float zz[2];
        ppo_gauss_sample(m2, l2s, 2, key, &counter, zz);
        for (int k = 0; k < 2; k++) {
            s[k] += zz[k];
            q[k] += zz[k] * zz[k];
        }
    }
    CHECK(counter == 2 * (uint64_t)N);
    for (int k = 0; k < 2; k++) {
        double mean = s[k] / N, sd = sqrt(q[k] / N - mean * mean);
        double want = exp((double)l2s[k]);
        CHECK_MSG(fabs(mean - m2[k]) < 4.0 * want / sqrt(N),
                  "sample mean %.4f, want %.4f", mean, (double)m2[k]);
        CHECK_MSG(fabs(sd / want - 1.0) < 0.06, "sample sd %.4f, want %.4f",
                  sd, want);
    }
    printf("Gaussian policy: log-density, entropy and %d gradients agree\n",
           n);
    gr_ctx_free(ctx);
}

/* π per packed row from each step's own segment's latent (hard shares in
 * evaluation mode) through dec's decoder; z from compile_latents of the
 * latent model. */
static int decode_rows(struct compile_model *dec, const struct demo_batch *b,
                       const float *z, const float *seg, int S, float *pi)
{
    const int64_t N = b->rows, d = dec->cfg.hidden;
    float *zr = malloc((size_t)(N * d) * sizeof *zr);
    if (zr == NULL) {
        return -1;
    }
    for (int t = 0; t < b->T; t++) {
        for (int j = 0; j < b->active[t]; j++) {
            int64_t r = b->row_off[t] + j;
            int s = 0;
            for (int k = 1; k < S; k++) {
                s = seg[r * S + k] > seg[r * S + s] ? k : s;
            }
            memcpy(zr + r * d, z + ((int64_t)s * b->B + j) * d,
                   (size_t)d * sizeof *zr);
        }
    }
    int rc = compile_decode(dec, b->idx, b->val, N, b->nz, zr, pi);
    free(zr);
    return rc;
}

/* 60 expert demonstrations of AC and of CD in world w, split 80/20. */
static void ac_cd_demos(struct demo_set *ds, const struct craft_config *w)
{
    struct craft_task tasks[2];
    CHECK(craft_task_parse("AC", &tasks[0]) == 0);
    CHECK(craft_task_parse("CD", &tasks[1]) == 0);
    CHECK(demo_set_generate(ds, w, tasks, 2, 60, 1, NULL, NULL) == 0);
    CHECK(demo_set_split(ds, 0.8) == 0);
}

static void train(struct compile_model *m, const struct demo_set *ds, int n)
{
    struct gr_optim *opt = NULL;
    CHECK(bc_optimizer_ctx(&opt, m->ctx, 1e-2f) == 0);
    struct demo_batch b;
    memset(&b, 0, sizeof b);
    for (int u = 0; u < n; u++) {
        int64_t ids[32];
        for (int j = 0; j < 32; j++) {
            ids[j] = ds->train[(u * 32 + j) % ds->n_train];
        }
        CHECK(demo_batch_build(&b, ds, ids, 32) == 0);
        gr_step_reset(m->ctx);
        gr_zero_grad(m->ctx);
        struct ocn_forward_out fo;
        memset(&fo, 0, sizeof fo);
        int rc = compile_forward(m, &b, NULL, &fo, NULL);
        if (rc == 0) {
            rc = gr_backward(m->ctx, fo.loss);
        }
        if (rc == 0) {
            rc = gr_optim_step(opt);
        }
        CHECK(rc == 0);
    }
    gr_step_reset(m->ctx);
    demo_batch_free(&b);
    gr_optim_free(opt);
}

struct pair_stats {
    double acc_own, acc_swap, tv;
};

/* Over the batch: action accuracy of dec_b with its own latents and with
 * lat_a's, and mean TV between dec_a(z_a) and dec_b(z_a). */
static void compare(struct compile_model *a, struct compile_model *bm,
                    const struct demo_batch *b, struct pair_stats *ps)
{
    const int S = a->cfg.max_segs;
    const int64_t N = b->rows, d = a->cfg.hidden, A = a->cfg.n_actions;
    float *za = malloc((size_t)(S * b->B * d) * sizeof *za);
    float *zb = malloc((size_t)(S * b->B * d) * sizeof *zb);
    float *sa = malloc((size_t)(N * S) * sizeof *sa);
    float *sb = malloc((size_t)(N * S) * sizeof *sb);
    float *paa = malloc((size_t)(N * A) * sizeof *paa);
    float *pba = malloc((size_t)(N * A) * sizeof *pba);
    float *pbb = malloc((size_t)(N * A) * sizeof *pbb);
    CHECK(compile_latents(a, b, za, sa) == 0);
    CHECK(compile_latents(bm, b, zb, sb) == 0);
    CHECK(decode_rows(a, b, za, sa, S, paa) == 0);
    CHECK(decode_rows(bm, b, za, sa, S, pba) == 0);
    CHECK(decode_rows(bm, b, zb, sb, S, pbb) == 0);
    double own = 0, swap = 0, tv = 0;
    for (int64_t r = 0; r < N; r++) {
        int act = b->action[r], ao = 0, as = 0;
        double t = 0.0;
        for (int k = 0; k < A; k++) {
            ao = pbb[r * A + k] > pbb[r * A + ao] ? k : ao;
            as = pba[r * A + k] > pba[r * A + as] ? k : as;
            t += fabs((double)paa[r * A + k] - pba[r * A + k]);
        }
        own += ao == act;
        swap += as == act;
        tv += 0.5 * t;
    }
    ps->acc_own = own / N;
    ps->acc_swap = swap / N;
    ps->tv = tv / N;
    free(za);
    free(zb);
    free(sa);
    free(sb);
    free(paa);
    free(pba);
    free(pbb);
}

static void test_latents(void)
{
    struct craft_config cc;
    craft_config_default(&cc);
    struct demo_set ds;
    ac_cd_demos(&ds, &cc);
    struct compile_config cfg;
    compile_config_default(&cfg);
    cfg.hidden = 16;
    cfg.n_tasks = 2;
    strcpy(cfg.task_names[0], "AC");
    strcpy(cfg.task_names[1], "CD");
    struct gr_ctx *ca = tu_ctx(GR_DEVICE_CPU), *cb = tu_ctx(GR_DEVICE_CPU),
                  *cr = tu_ctx(GR_DEVICE_CPU);
    struct compile_model a, b, r;
    CHECK(compile_model_init(&a, ca, &cfg, 1) == 0);
    CHECK(compile_model_init(&b, cb, &cfg, 2) == 0);
    CHECK(compile_model_init(&r, cr, &cfg, 1) == 0);
    train(&a, &ds, 60);
    train(&b, &ds, 60);
    struct demo_batch vb;
    memset(&vb, 0, sizeof vb);
    CHECK(demo_batch_build(&vb, &ds, ds.val, ds.n_val) == 0);
    const int S = cfg.max_segs;
    const int64_t N = vb.rows, d = cfg.hidden, A = cfg.n_actions;
    /* the decoder fed the inferred latents = the evaluation forward */
    float *pi = malloc((size_t)(N * A) * sizeof *pi);
    float *pd = malloc((size_t)(N * A) * sizeof *pd);
    float *seg = malloc((size_t)(N * S) * sizeof *seg);
    float *za = malloc((size_t)(S * vb.B * d) * sizeof *za);
    struct ocn_forward_out fo;
    memset(&fo, 0, sizeof fo);
    fo.pi = pi;
    int was = gr_set_grad_enabled(ca, 0);
    CHECK(compile_forward(&a, &vb, NULL, &fo, NULL) == 0);
    double nll_a = fo.nll_sum;
    gr_step_reset(ca);
    gr_set_grad_enabled(ca, was);
    CHECK(compile_latents(&a, &vb, za, seg) == 0);
    CHECK(decode_rows(&a, &vb, za, seg, S, pd) == 0);
    double worst = 0.0;
    for (int64_t k = 0; k < N * A; k++) {
        worst = fmax(worst, fabs((double)pi[k] - pd[k]));
    }
    CHECK_MSG(worst < 1e-5, "decoder alone vs forward: %.3g", worst);
    /* (a) r = a with latent axes permuted (i -> i+1 mod d) and every
     * other sign flipped: z_r = Q z_a; μ rows of z2 mapped, log σ² rows
     * permuted, the decoder's z columns mapped back */
    for (int i = 0; i < COMPILE_N_PARAMS; i++) {
        float *h = malloc((size_t)a.p[i]->numel * sizeof *h);
        CHECK(gr_tensor_to_host(a.p[i], h) == 0);
        const char *name = compile_param_name(i);
        int64_t cols = a.p[i]->ndim == 2 ? a.p[i]->shape[1] : 1;
        float *o = malloc((size_t)a.p[i]->numel * sizeof *o);
        memcpy(o, h, (size_t)a.p[i]->numel * sizeof *o);
        if (strcmp(name, "cmp.z2.weight") == 0 ||
            strcmp(name, "cmp.z2.bias") == 0) {
            for (int64_t k = 0; k < d; k++) {
                int64_t to = (k + 1) % d;
                float sg = k % 2 == 0 ? -1.0f : 1.0f;
                for (int64_t c = 0; c < cols; c++) {
                    o[to * cols + c] = sg * h[k * cols + c];            /* μ */
                    o[(d + to) * cols + c] = h[(d + k) * cols + c]; /* log σ² */
                }
            }
        } else if (strcmp(name, "cmp.dec1.weight") == 0) {
            /* columns [o ; z]: W'_z[:, to] = sg · W_z[:, k] */
            for (int64_t row = 0; row < d; row++) {
                for (int64_t k = 0; k < d; k++) {
                    int64_t to = (k + 1) % d;
                    float sg = k % 2 == 0 ? -1.0f : 1.0f;
                    o[row * cols + d + to] = sg * h[row * cols + d + k];
                }
            }
        }
        CHECK(gr_tensor_set_host(r.p[i], o) == 0);
        free(h);
        free(o);
    }
    memset(&fo, 0, sizeof fo);
    was = gr_set_grad_enabled(cr, 0);
    CHECK(compile_forward(&r, &vb, NULL, &fo, NULL) == 0);
    gr_step_reset(cr);
    gr_set_grad_enabled(cr, was);
    CHECK_MSG(fabs(fo.nll_sum - nll_a) < 1e-4 * fabs(nll_a),
              "the rotated model's NLL %.6f, the original's %.6f", fo.nll_sum,
              nll_a);
    struct pair_stats pr, pab, pba;
    compare(&a, &r, &vb, &pr);
    CHECK_MSG(pr.tv > 0.02, "rotated model: TV %.4f", pr.tv);
    /* (b) two models trained apart */
    compare(&a, &b, &vb, &pab);
    compare(&b, &a, &vb, &pba);
    printf("latents: rotated model (same NLL) TV %.3f, acc own %.3f swapped "
           "%.3f; trained apart: TV(A z_A | A, B) %.3f, B acc own %.3f "
           "swapped %.3f; A acc own %.3f swapped %.3f\n",
           pr.tv, pr.acc_own, pr.acc_swap, pab.tv, pab.acc_own,
           pab.acc_swap, pba.acc_own, pba.acc_swap);
    CHECK_MSG(pab.tv > 0.05 && pba.tv > 0.05, "TV %.4f / %.4f", pab.tv,
              pba.tv);
    CHECK_MSG(pab.acc_own > pab.acc_swap && pba.acc_own > pba.acc_swap,
              "own latents no better than the other model's");
    free(pi);
    free(pd);
    free(seg);
    free(za);
    demo_batch_free(&vb);
    demo_set_free(&ds);
    gr_ctx_free(ca);
    gr_ctx_free(cb);
    gr_ctx_free(cr);
}

/* A tiny compILE BC checkpoint (random weights) in the S1 world. */
static int write_bc_scaled(const char *path, uint64_t seed,
                           float boundary_bias, float enc_scale);

static int write_bc(const char *path, uint64_t seed, float boundary_bias)
{
    return write_bc_scaled(path, seed, boundary_bias, 1.0f);
}

/* write_bc with the observation encoder's weights multiplied by
 * enc_scale (> 1: the decoder's actions depend more on the observation) */
static int write_bc_scaled(const char *path, uint64_t seed,
                           float boundary_bias, float enc_scale)
{
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct compile_config c;
    compile_config_default(&c);
    c.hidden = 8;
    c.n_tasks = 2;
    strcpy(c.task_names[0], "AC");
    strcpy(c.task_names[1], "CD");
    struct compile_model m;
    int rc = compile_model_init(&m, ctx, &c, seed);
    if (rc == 0 && boundary_bias != 0.0f) {
        rc = gr_tensor_set_host(gr_ctx_find(ctx, "cmp.b2.bias"),
                                &boundary_bias);
    }
    struct gr_tensor *enc = gr_ctx_find(ctx, "cmp.enc.wx");
    if (rc == 0 && enc_scale != 1.0f && enc != NULL) {
        float *h = malloc((size_t)enc->numel * sizeof *h);
        rc = h != NULL ? gr_tensor_to_host(enc, h) : -1;
        for (int64_t i = 0; rc == 0 && i < enc->numel; i++) {
            h[i] *= enc_scale;
        }
        if (rc == 0) {
            rc = gr_tensor_set_host(enc, h);
        }
        free(h);
    }
    char text[4096];
    int n = rc == 0 ? compile_config_format(&c, text, sizeof text) : -1;
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

/* The small compILE fine-tuning of these tests: DCA, 2 worlds of 8
 * decisions, one minibatch, a controller of width 16. */
static void small_config(struct ppo_config *c)
{
    ppo_config_default(c);
    c->policy = PPO_POLICY_COMPILE;
    snprintf(c->task, sizeof c->task, "DCA");
    c->num_envs = 2;
    c->num_steps = 8;
    c->num_minibatches = 1;
    c->width = 16;
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

/* A short run over one model (S1) and two (S2: C' also picks the model),
 * stop-and-resume = straight byte for byte, a deterministic evaluation,
 * an OMPN checkpoint refused. */
static void test_run(const char *dir, int G)
{
    char p0[512], p1[512], mid[512], straight[512], resumed[512];
    snprintf(p0, sizeof p0, "%s/c0.ckpt", dir);
    snprintf(p1, sizeof p1, "%s/c1.ckpt", dir);
    snprintf(mid, sizeof mid, "%s/mid.ckpt", dir);
    snprintf(straight, sizeof straight, "%s/straight.ckpt", dir);
    snprintf(resumed, sizeof resumed, "%s/resumed.ckpt", dir);
    /* boundary logits shifted by −50 (G = 1: compared with +50 below) */
    CHECK(write_bc(p0, 3, -50.0f) == 0);
    CHECK(write_bc(p1, 4, 0.0f) == 0);
    const char *paths[2] = {p0, p1};
    struct ppo_config c;
    small_config(&c);
    c.num_envs = 4;
    c.num_minibatches = 2;
    c.update_epochs = 2;
    c.total_timesteps = 4000;
    c.seed = 7;
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct ppo_compile *t = NULL;
    CHECK_MSG(ppo_compile_new(&t, ctx, &c, paths, G) == 0, "%s",
              gr_last_error());
    if (t == NULL) {
        gr_ctx_free(ctx);
        return;
    }
    CHECK(ppo_compile_n_models(t) == G);
    struct ppo_stats s[4];
    for (int i = 0; i < 4; i++) {
        if (i == 2) {
            CHECK(ppo_compile_save(t, mid, 1) == 0);
        }
        CHECK_MSG(ppo_compile_iteration(t, &s[i]) == 0, "%s", gr_last_error());
        CHECK(isfinite(s[i].policy_loss) && isfinite(s[i].value_loss));
        CHECK(s[i].decisions == 32 && s[i].frames >= 32);
        CHECK(s[i].mean_option_duration >= 1.0);
    }
    CHECK(s[0].approx_kl < 0.05); /* acting's log-probabilities = the update's */
    if (G == 1) {
        /* the boundary threshold is calibrated on demonstrations: a model
         * whose boundary logits are all shifted (bias −50 vs +50, the
         * softmax over positions cannot tell) plays the same segments */
        char p2[512];
        snprintf(p2, sizeof p2, "%s/c2.ckpt", dir);
        CHECK(write_bc(p2, 3, 50.0f) == 0);
        const char *other[1] = {p2};
        struct gr_ctx *x2 = tu_ctx(GR_DEVICE_CPU);
        struct ppo_compile *t2 = NULL;
        struct ppo_stats s2;
        CHECK(ppo_compile_new(&t2, x2, &c, other, 1) == 0);
        CHECK(t2 != NULL && ppo_compile_iteration(t2, &s2) == 0);
        CHECK_MSG(s2.frames == s[0].frames &&
                      s2.mean_option_duration == s[0].mean_option_duration,
                  "shifted boundary logits: %lld frames, %.3f a segment; "
                  "%lld, %.3f",
                  (long long)s2.frames, s2.mean_option_duration,
                  (long long)s[0].frames, s[0].mean_option_duration);
        CHECK(s[0].mean_option_duration > 1.0);
        ppo_compile_free(t2);
        gr_ctx_free(x2);
    }
    CHECK(ppo_compile_save(t, straight, 1) == 0);
    {
        /* acting's log-probabilities = the update's: one epoch of one
         * minibatch measures the ratio before any step */
        struct ppo_config c1 = c;
        c1.update_epochs = 1;
        c1.num_minibatches = 1;
        struct gr_ctx *c1x = tu_ctx(GR_DEVICE_CPU);
        struct ppo_compile *t1 = NULL;
        struct ppo_stats one;
        CHECK(ppo_compile_new(&t1, c1x, &c1, paths, G) == 0);
        CHECK(t1 != NULL && ppo_compile_iteration(t1, &one) == 0);
        CHECK_MSG(fabs(one.old_approx_kl) < 1e-5 && one.approx_kl < 1e-7 &&
                      one.clipfrac == 0.0,
                  "ratio not 1 before the first step: old_approx_kl %.3g, "
                  "approx_kl %.3g",
                  one.old_approx_kl, one.approx_kl);
        ppo_compile_free(t1);
        gr_ctx_free(c1x);
    }
    struct ppo_eval e1, e2;
    int16_t opt[6 * 64];
    struct ppo_trace tr = {0};
    tr.option = opt;
    memset(opt, -1, sizeof opt);
    CHECK(ppo_compile_evaluate(t, 6, PPO_EVAL_SEED, &e1, &tr) == 0);
    CHECK(ppo_compile_evaluate(t, 6, PPO_EVAL_SEED, &e2, NULL) == 0);
    CHECK(e1.mean_return == e2.mean_return && e1.mean_length == e2.mean_length);
    CHECK(e1.decisions_per_episode >= 1.0);
    CHECK(opt[0] >= 0 && opt[0] < G);
    ppo_compile_free(t);
    gr_ctx_free(ctx);
    ctx = tu_ctx(GR_DEVICE_CPU);
    t = NULL;
    CHECK(ppo_compile_new(&t, ctx, &c, paths, G) == 0);
    CHECK_MSG(ppo_compile_load(t, mid) == 0, "%s", gr_last_error());
    for (int i = 2; i < 4; i++) {
        struct ppo_stats r;
        CHECK(ppo_compile_iteration(t, &r) == 0);
        CHECK(r.policy_loss == s[i].policy_loss && r.frames == s[i].frames);
    }
    CHECK(ppo_compile_save(t, resumed, 1) == 0);
    size_t na = 0, nb = 0;
    unsigned char *fa = slurp(straight, &na), *fb = slurp(resumed, &nb);
    CHECK_MSG(fa != NULL && fb != NULL && na == nb && memcmp(fa, fb, na) == 0,
              "resumed checkpoint differs from the straight run's");
    free(fa);
    free(fb);
    ppo_compile_free(t);
    gr_ctx_free(ctx);
    printf("compILE PPO, %d model(s): 4 iterations, %.1f frames a segment, "
           "resume byte-identical, eval return %.3f\n",
           G, s[3].mean_option_duration, e1.mean_return);
    if (G == 1) {
        /* an OMPN checkpoint is not a compILE one */
        char om[512];
        snprintf(om, sizeof om, "%s/ompn.ckpt", dir);
        struct gr_ctx *oc = tu_ctx(GR_DEVICE_CPU);
        struct ompn_config cfg;
        ompn_config_default(&cfg);
        cfg.hidden = 8;
        cfg.n_tasks = 1;
        strcpy(cfg.task_names[0], "AC");
        struct ompn_model m;
        char text[2048];
        CHECK(ompn_model_init(&m, oc, &cfg, 1) == 0);
        CHECK(ompn_config_format(&cfg, text, sizeof text) > 0);
        CHECK(gr_checkpoint_save(oc, om, text, GR_CKPT_PARAMS, 1) == 0);
        gr_ctx_free(oc);
        ctx = tu_ctx(GR_DEVICE_CPU);
        const char *bad[1] = {om};
        t = NULL;
        CHECK(ppo_compile_new(&t, ctx, &c, bad, 1) == GR_EFORMAT && t == NULL);
        CHECK_STR_CONTAINS(gr_last_error(), "not a compILE checkpoint");
        gr_ctx_free(ctx);
    }
}

/* What the reference plays on one map (below). */
struct ref_play {
    struct gr_ctx *ctx;          /* the trainer's: C' */
    struct gr_tensor *wx, *b1, *wmu, *bmu;
    struct compile_model *m;     /* the decoder, loaded here */
    float theta;
    const struct craft_config *world;
    const struct craft_task *task;
};

/* One greedy episode of world 0 of a batch of base seed `base` (as the
 * evaluation builds it): C' decides z = μ(x) when asked, the decoder's
 * argmax acts, a segment ends before its step t >= 1 where ℓ >= θ. With
 * stale, every decision and action reads the episode's first observation
 * (the world still steps). Writes actions/decided [max_steps], returns the
 * length; *ret the return. */
static int ref_episode(const struct ref_play *r, uint64_t base, int stale,
                       uint8_t *actions, uint8_t *decided_out, double *ret)
{
    const int A = CRAFT_N_ACTIONS, O = CRAFT_OBS_SIZE;
    const int T = r->world->max_steps;
    struct craft_batch b;
    float obs[CRAFT_OBS_SIZE], seen[CRAFT_OBS_SIZE], rew = 0.0f;
    uint8_t te[2] = {0, 0};
    CHECK(craft_batch_init(&b, r->world, r->task, 1, 1, base, obs) == 0);
    memcpy(seen, obs, sizeof obs);
    float z[64], h[64], cs[64], hh[64], cc2[64], probs[8], lg = 0.0f;
    int32_t idx[CRAFT_OBS_SIZE];
    float val[CRAFT_OBS_SIZE];
    int ask = 1, seg_len = 0, step = 0;
    *ret = 0.0;
    while (step < T) {
        if (!stale) {
            memcpy(seen, obs, sizeof obs);
        }
        int nz = 0;
        for (int i = 0; i < O; i++) {
            if (seen[i] != 0.0f) {
                idx[nz] = i;
                val[nz++] = seen[i];
            }
        }
        if (nz == 0) {
            idx[0] = -1;
            val[0] = 0.0f;
            nz = 1;
        }
        int32_t a = 0;
        int decided = 0;
        for (int pass = 0; pass < 2; pass++) {
            if (ask) {
                struct gr_ctx *ctx = r->ctx;
                int was = gr_set_grad_enabled(ctx, 0);
                struct gr_tensor *ti =
                    gr_tensor_from_host(ctx, GR_I32, gr_shape2(1, nz), idx);
                struct gr_tensor *tv =
                    gr_tensor_from_host(ctx, GR_F32, gr_shape2(1, nz), val);
                struct gr_tensor *u = gr_tanh(
                    ctx, gr_add(ctx, gr_sparse_matmul(ctx, ti, tv, r->wx), r->b1));
                CHECK(gr_tensor_to_host(gr_linear(ctx, u, r->wmu, r->bmu), z) ==
                      0);
                gr_step_reset(ctx);
                gr_set_grad_enabled(ctx, was);
                memset(h, 0, sizeof h);
                memset(cs, 0, sizeof cs);
                seg_len = 0;
                ask = 0;
                decided = 1;
            }
            CHECK(compile_decode(r->m, idx, val, 1, nz, z, probs) == 0);
            a = 0;
            for (int i = 1; i < A; i++) {
                a = probs[i] > probs[a] ? i : a;
            }
            memcpy(hh, h, sizeof h);
            memcpy(cc2, cs, sizeof cs);
            CHECK(compile_boundary_step(r->m, idx, val, 1, nz, &a, hh, cc2,
                                        &lg) == 0);
            if (!decided && seg_len >= 1 && lg >= r->theta) {
                ask = 1; /* the segment ends before this step */
                continue;
            }
            memcpy(h, hh, sizeof h);
            memcpy(cs, cc2, sizeof cs);
            seg_len++;
            break;
        }
        actions[step] = (uint8_t)a;
        decided_out[step] = (uint8_t)decided;
        uint8_t a8 = (uint8_t)a;
        struct craft_batch_out o = {0};
        o.obs = obs;
        o.reward = &rew;
        o.terminated = te;
        o.truncated = te + 1;
        CHECK(craft_batch_step_range(&b, 0, 1, &a8, &o, NULL) == 0);
        *ret += rew;
        step++;
        if (te[0] || te[1]) {
            break;
        }
    }
    craft_batch_free(&b);
    return step;
}

/* The greedy evaluation (ppo_compile_evaluate, one model) equals a
 * reference written here from the public pieces, playing one world on its
 * current observation: C' from its "ctl." parameters (z = μ), the
 * decoder's argmax (compile_decode), the boundary rule ℓ ≥ θ at a
 * segment's step t ≥ 1 (compile_boundary_step, θ from the checkpoint's
 * config). Same ops on the same rows, so the actions, decisions and
 * returns are compared exactly. The same reference on the episode's first
 * observation plays otherwise on some map, so an evaluation that did not
 * read its worlds' new observations (as ppo_compile_evaluate once did:
 * greedy success 0) fails here. */
static void test_greedy_reference(const char *dir)
{
    char p0[512];
    snprintf(p0, sizeof p0, "%s/g0.ckpt", dir);
    /* the observation weighs 8x: the decoder's argmax follows the map */
    CHECK(write_bc_scaled(p0, 5, 0.0f, 100.0f) == 0);
    const char *paths[1] = {p0};
    struct ppo_config c;
    small_config(&c);
    c.seed = 11;
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct ppo_compile *t = NULL;
    CHECK_MSG(ppo_compile_new(&t, ctx, &c, paths, 1) == 0, "%s",
              gr_last_error());
    if (t == NULL) {
        gr_ctx_free(ctx);
        return;
    }
    /* the decoder and boundary encoder: the same checkpoint, loaded here */
    struct gr_ctx *mx = tu_ctx(GR_DEVICE_CPU);
    char *text = NULL;
    struct compile_config cc;
    struct compile_model m;
    CHECK(gr_checkpoint_read_config(p0, &text) == 0);
    CHECK(text != NULL && compile_config_parse(text, &cc) == 0);
    CHECK(cc.hidden <= 64); /* the reference's state arrays */
    free(text);
    CHECK(compile_model_init(&m, mx, &cc, 0) == 0);
    CHECK(gr_checkpoint_load(mx, p0, GR_CKPT_PARAMS, NULL) == 0);
    char *ptext = ppo_compile_checkpoint_config(t);
    const char *th = ptext != NULL ? strstr(ptext, "boundary_threshold ") : NULL;
    CHECK(th != NULL);
    struct craft_task task;
    CHECK(craft_task_parse(c.task, &task) == 0);
    struct ref_play r = {
        ctx,
        gr_ctx_find(ctx, "ctl.l1.wx"),
        gr_ctx_find(ctx, "ctl.l1.bias"),
        gr_ctx_find(ctx, "ctl.mu.weight"),
        gr_ctx_find(ctx, "ctl.mu.bias"),
        &m,
        th != NULL ? strtof(th + strlen("boundary_threshold "), NULL) : 0.0f,
        ppo_compile_world(t),
        &task,
    };
    free(ptext);
    CHECK(r.wx != NULL && r.b1 != NULL && r.wmu != NULL && r.bmu != NULL);
    const int T = r.world->max_steps;
    uint8_t *act_e = calloc((size_t)T, 1), *dec_e = calloc((size_t)T, 1);
    uint8_t *act_r = calloc((size_t)T, 1), *dec_r = calloc((size_t)T, 1);
    uint8_t *act_s = calloc((size_t)T, 1), *dec_s = calloc((size_t)T, 1);
    CHECK(act_e && dec_e && act_r && dec_r && act_s && dec_s);
    int bad = 0, stale_differs = 0, decisions = 0;
    for (uint64_t base = 1; base <= 4 && r.wx != NULL && act_s != NULL;
         base++) {
        int32_t len_e = 0;
        struct ppo_trace tr = {0};
        tr.action = act_e;
        tr.decided = dec_e;
        tr.length = &len_e;
        struct ppo_eval ev;
        CHECK(ppo_compile_evaluate(t, 1, base, &ev, &tr) == 0);
        double ret_r = 0.0, ret_s = 0.0;
        int len_r = ref_episode(&r, base, 0, act_r, dec_r, &ret_r);
        int len_s = ref_episode(&r, base, 1, act_s, dec_s, &ret_s);
        stale_differs |= len_s != len_r ||
                         memcmp(act_s, act_r, (size_t)len_r) != 0;
        int same = len_e == len_r && memcmp(act_e, act_r, (size_t)len_r) == 0 &&
                   memcmp(dec_e, dec_r, (size_t)len_r) == 0 &&
                   fabs(ev.mean_return - ret_r) < 1e-6;
        for (int s = 0; s < len_r; s++) {
            decisions += dec_r[s];
        }
        if (!same) {
            bad++;
            int s = 0;
            while (s < len_r && s < len_e && act_e[s] == act_r[s] &&
                   dec_e[s] == dec_r[s]) {
                s++;
            }
            printf("  map %llu: evaluation %d steps, return %.3f; reference "
                   "%d, %.3f; first difference at step %d\n",
                   (unsigned long long)base, len_e, ev.mean_return, len_r,
                   ret_r, s);
        }
    }
    CHECK_MSG(bad == 0, "the greedy evaluation differs from the reference "
                        "on %d of 4 maps",
              bad);
    CHECK_MSG(stale_differs, "the reference plays the same on stale "
                             "observations: this test could not fail");
    printf("compILE greedy evaluation = the reference on 4 maps (%d "
           "decisions)\n",
           decisions);
    free(act_e);
    free(dec_e);
    free(act_r);
    free(dec_r);
    free(act_s);
    free(dec_s);
    ppo_compile_free(t);
    gr_ctx_free(ctx);
    gr_ctx_free(mx);
}

/* compile_latent_matrix (eval options on a compILE checkpoint), on a
 * model trained briefly: the training tasks' subtasks in order of
 * appearance (A, C, D for AC, CD),
 * labelled segments from every demonstration, rates in 0..1, the same
 * numbers twice; and with the decoder's latent columns zeroed the decoder
 * plays one policy whatever the latent, so every row is the same: each
 * latent plays the same maps. */
static void test_latent_matrix(void)
{
    struct craft_config w;
    craft_config_default(&w);
    struct demo_set ds;
    ac_cd_demos(&ds, &w);
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct compile_config c;
    compile_config_default(&c);
    c.hidden = 16;
    c.n_tasks = 2;
    strcpy(c.task_names[0], "AC");
    strcpy(c.task_names[1], "CD");
    struct compile_model m;
    CHECK(compile_model_init(&m, ctx, &c, 1) == 0);
    train(&m, &ds, 60); /* some maps solved: the rows are not all 0 */
    demo_set_free(&ds);
    struct craft_subtask subs[CRAFT_MAX_SUBTASKS];
    double rate[CRAFT_MAX_SUBTASKS * CRAFT_MAX_SUBTASKS];
    double again[CRAFT_MAX_SUBTASKS * CRAFT_MAX_SUBTASKS];
    int64_t found[CRAFT_MAX_SUBTASKS];
    double replay[3], replay2[3];
    int S = 0, S2 = 0, nr = 0, nr2 = 0;
    const int demos = 8, episodes = 20;
    CHECK_MSG(compile_latent_matrix(&m, &w, demos, episodes, 1, subs, &S,
                                    rate, found, replay, &nr) == 0,
              "%s", gr_last_error());
    CHECK(nr >= 1 && nr <= 2 * demos);
    for (int v = 0; v < 3; v++) {
        CHECK(replay[v] >= 0.0 && replay[v] <= 1.0);
    }
    CHECK(S == 3 && craft_subtask_letter(&subs[0]) == 'A' &&
          craft_subtask_letter(&subs[1]) == 'C' &&
          craft_subtask_letter(&subs[2]) == 'D');
    int64_t total = 0;
    for (int i = 0; i < S && i < 3; i++) {
        total += found[i];
        for (int j = 0; j < S; j++) {
            CHECK(rate[i * S + j] >= 0.0 && rate[i * S + j] <= 1.0);
        }
    }
    CHECK_MSG(total >= 2 * demos && total <= 2 * demos * c.max_segs,
              "%lld labelled segments from %d demonstrations",
              (long long)total, 2 * demos);
    CHECK(compile_latent_matrix(&m, &w, demos, episodes, 1, subs, &S2, again,
                                found, replay2, &nr2) == 0);
    CHECK(S2 == S && memcmp(rate, again, (size_t)S * S * sizeof *rate) == 0);
    CHECK(nr2 == nr && memcmp(replay, replay2, sizeof replay) == 0);
    /* the latent's columns of the decoder's first layer to zero */
    struct gr_tensor *d1 = gr_ctx_find(ctx, "cmp.dec1.weight");
    CHECK(d1 != NULL);
    if (d1 != NULL) {
        float *h = malloc((size_t)d1->numel * sizeof *h);
        CHECK(h != NULL && gr_tensor_to_host(d1, h) == 0);
        for (int r = 0; h != NULL && r < c.hidden; r++) {
            for (int k = c.hidden; k < 2 * c.hidden; k++) {
                h[r * 2 * c.hidden + k] = 0.0f;
            }
        }
        CHECK(h != NULL && gr_tensor_set_host(d1, h) == 0);
        free(h);
        CHECK(compile_latent_matrix(&m, &w, demos, episodes, 1, subs, &S,
                                    rate, found, replay, &nr) == 0);
        /* blind to the latent: own, mean and zero latents play alike */
        CHECK_MSG(replay[0] == replay[1] && replay[1] == replay[2],
                  "replays of a blind decoder differ: %g %g %g", replay[0],
                  replay[1], replay[2]);
        int same = 1;
        double any = 0.0;
        for (int i = 0; i < S; i++) {
            for (int j = 0; j < S; j++) {
                same &= rate[i * S + j] == rate[j];
                any += rate[i * S + j];
            }
        }
        CHECK_MSG(same, "a decoder blind to its latent gives rows that "
                        "differ");
        CHECK_MSG(any > 0.0, "no map solved: the rows' test says nothing");
    }
    gr_ctx_free(ctx);
}

/* θ at the quantile --boundary-quantile asks (the median by default):
 * ordered in the quantile, recorded in the checkpoint's config, carried
 * by the run's config text (compile runs only), and bounded to 0..1. */
static float theta_at(const char *path, float q)
{
    const char *paths[1] = {path};
    struct ppo_config c;
    small_config(&c);
    c.boundary_quantile = q;
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct ppo_compile *t = NULL;
    float theta = NAN;
    if (ppo_compile_new(&t, ctx, &c, paths, 1) == 0) {
        char *text = ppo_compile_checkpoint_config(t);
        const char *th = text ? strstr(text, "boundary_threshold ") : NULL;
        if (th != NULL) {
            theta = strtof(th + strlen("boundary_threshold "), NULL);
        }
        free(text);
    }
    ppo_compile_free(t);
    gr_ctx_free(ctx);
    return theta;
}

static void test_boundary_quantile(const char *dir)
{
    char p0[512];
    snprintf(p0, sizeof p0, "%s/q0.ckpt", dir);
    CHECK(write_bc(p0, 7, 0.0f) == 0);
    float lo = theta_at(p0, 0.0f), mid = theta_at(p0, 0.5f),
          hi = theta_at(p0, 1.0f);
    CHECK_MSG(isfinite(lo) && isfinite(mid) && isfinite(hi),
              "θ at quantiles 0, 0.5, 1: %g %g %g", (double)lo, (double)mid,
              (double)hi);
    CHECK_MSG(lo <= mid && mid <= hi && lo < hi,
              "θ not ordered in the quantile: %g %g %g", (double)lo,
              (double)mid, (double)hi);
    struct ppo_config c, back;
    ppo_config_default(&c);
    CHECK(c.boundary_quantile == 0.5f);
    char text[4096];
    c.policy = PPO_POLICY_OCN;
    CHECK(ppo_config_format(&c, text, sizeof text) > 0);
    CHECK(strstr(text, "boundary_quantile") == NULL);
    c.policy = PPO_POLICY_COMPILE;
    c.boundary_quantile = 0.25f;
    CHECK(ppo_config_format(&c, text, sizeof text) > 0);
    CHECK(ppo_config_parse(text, &back) == 0 &&
          back.boundary_quantile == 0.25f);
    snprintf(c.task, sizeof c.task, "DCA");
    c.boundary_quantile = 1.5f;
    CHECK(ppo_config_validate(&c) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "boundary quantile");
}

int main(void)
{
    char dir[] = "/tmp/grove_compile_ppo_XXXXXX";
    if (mkdtemp(dir) == NULL) {
        return 1;
    }
    test_gauss();
    test_latents();
    test_run(dir, 1);
    test_run(dir, 2);
    test_greedy_reference(dir);
    test_boundary_quantile(dir);
    test_latent_matrix();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", dir);
    }
    return test_report("agents_compile_ppo");
}
