/* PPO with frozen options (agents/ppo.h, ocn.md §7):
 *   - the SMDP advantage on a hand-computed example: decisions of 3, 2, 4
 *     and 1 steps, one ending by termination, one by truncation (its
 *     value bootstraps from the truncation observation and the λ-recursion
 *     stops there), the last one bootstrapping from the waiting decision;
 *   - frozen options: after training, every "opt." tensor has the bytes of
 *     the BC checkpoint it came from, none is in Adam's state, while the
 *     controller moved; two checkpoints concatenate into one pool in the
 *     order given; a pool from another world is refused;
 *   - the PPO checkpoint is an OCN checkpoint: the BC loader's steps
 *     (ocn_config_parse, ocn_model_init, parameters only) load it and act;
 *   - save / load: 2 iterations, save, a new trainer loads and runs 2 more
 *     = 4 straight, checkpoint bytes and statistics alike;
 *   - learning: oracle options (the expert per subtask) + PPO solve DCA
 *     with sparse reward, greedy evaluation success >= 0.9 within 500,000
 *     frames (lr 1e-3, d = w = 32: ocn.md's lr 3e-4 with τ_C = 10 needs
 *     more, the controller's softmax being flat at first);
 *   - acting's host forward gives the log-probabilities the update's
 *     device forward gives (the ratio of an update's first minibatch is 1);
 *   - moe and flat run (a decision per frame), bad configurations fail
 *     with a message. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents/bc.h"
#include "agents/ppo.h"
#include "core/error.h"
#include "kernels/checkpoint.h"
#include "kernels/tape.h"
#include "tests/test.h"

static struct gr_ctx *new_ctx(void)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    cc.threads = 1;
    struct gr_ctx *ctx = NULL;
    if (gr_ctx_new(&ctx, &cc) < 0) {
        fprintf(stderr, "context: %s\n", gr_last_error());
    }
    return ctx;
}

static void test_gae(void)
{
    const float R[4] = {0.0f, 1.0f, 0.5f, 0.0f};
    const int32_t n[4] = {3, 2, 4, 1};
    const float V[4] = {0.5f, 0.6f, 0.2f, 0.3f};
    const uint8_t term[4] = {0, 1, 0, 0};
    const uint8_t trunc[4] = {0, 0, 1, 0};
    const float boot[4] = {99.0f, 99.0f, 0.7f, 99.0f}; /* read only at 2 */
    float adv[4], ret[4];
    ppo_smdp_gae(4, R, n, V, term, trunc, boot, 0.4f, 0.9f, 0.8f, adv, ret);
    /* by hand, γ = 0.9, λ = 0.8:
     * j3: δ = 0 + 0.9·0.4 − 0.3 = 0.06; Â = 0.06 (the last: no Â after)
     * j2: truncated: δ = 0.5 + 0.9^4·0.7 − 0.2 = 0.75927; Â = δ
     * j1: terminated: δ = 1 − 0.6 = 0.4; Â = δ
     * j0: δ = 0.9^3·0.6 − 0.5 = −0.0626; Â = δ + 0.9^3·0.8·0.4 = 0.17068 */
    const double want[4] = {0.17068, 0.4, 0.75927, 0.06};
    for (int j = 0; j < 4; j++) {
        CHECK_NEAR(adv[j], want[j], 1e-6);
        CHECK_NEAR(ret[j], want[j] + V[j], 1e-6);
    }
    /* a truncation with boot 0 differs from termination only through V' */
    float adv2[4], ret2[4];
    const float boot0[4] = {0, 0, 0, 0};
    ppo_smdp_gae(4, R, n, V, term, trunc, boot0, 0.4f, 0.9f, 0.8f, adv2,
                 ret2);
    CHECK_NEAR(adv2[2], 0.5 - 0.2, 1e-6);
    CHECK_NEAR(adv2[0], adv[0], 1e-7); /* cut at the episode's end */
}

/* A small BC checkpoint (random weights) of K options in `world`. */
static int write_source(const char *path, int K, int n_each, uint64_t seed)
{
    struct gr_ctx *ctx = new_ctx();
    struct ocn_config c;
    ocn_config_default(&c);
    c.n_options = K;
    c.hidden = 16;
    c.width = 16;
    c.n_tasks = 2;
    strcpy(c.task_names[0], "AC");
    strcpy(c.task_names[1], "CD");
    struct ocn_model m;
    int rc = ocn_model_init(&m, ctx, &c, seed);
    char text[4096];
    int n = rc == 0 ? ocn_config_format(&c, text, sizeof text) : -1;
    struct craft_config w;
    craft_config_default(&w);
    w.n_each = n_each;
    if (n > 0 && bc_world_format(&w, text + n, sizeof text - (size_t)n) >= 0) {
        rc = gr_checkpoint_save(ctx, path, text, GR_CKPT_PARAMS, 1);
    } else {
        rc = -1;
    }
    gr_ctx_free(ctx);
    return rc;
}

static float *host_copy(struct gr_ctx *ctx, const char *name, int64_t *n)
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

static void small_config(struct ppo_config *c, enum ppo_policy p)
{
    ppo_config_default(c);
    c->policy = p;
    strcpy(c->task, "DCA");
    c->num_envs = 4;
    c->num_steps = 16;
    c->hidden = 16;
    c->width = 16;
    c->learning_rate = 1e-3f;
    c->total_timesteps = 100000;
}

static const char *const opt_names[] = {
    "opt.l1.wx", "opt.l1.wh", "opt.l1.bias", "opt.l2.weight",
    "opt.l2.bias", "opt.head.weight", "opt.head.bias"};

static void test_frozen(const char *src1, const char *src2, const char *dir)
{
    struct gr_ctx *ctx = new_ctx();
    struct ppo_config c;
    small_config(&c, PPO_POLICY_OCN);
    const char *paths[] = {src1, src2};
    struct ppo_trainer *t = NULL;
    int rc = ppo_trainer_new(&t, ctx, &c, paths, 2);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc < 0) {
        gr_ctx_free(ctx);
        return;
    }
    CHECK(ppo_model(t)->cfg.n_options == 5);
    CHECK(ppo_world(t)->n_each == 4);
    /* the sources' options, concatenated in order */
    struct gr_ctx *s1 = new_ctx(), *s2 = new_ctx();
    struct ocn_config c1, c2;
    char *text = NULL;
    gr_checkpoint_read_config(src1, &text);
    ocn_config_parse(text, &c1);
    free(text);
    gr_checkpoint_read_config(src2, &text);
    ocn_config_parse(text, &c2);
    free(text);
    struct ocn_model m1, m2;
    ocn_model_init(&m1, s1, &c1, 0);
    ocn_model_init(&m2, s2, &c2, 0);
    CHECK(gr_checkpoint_load(s1, src1, GR_CKPT_PARAMS, NULL) == 0);
    CHECK(gr_checkpoint_load(s2, src2, GR_CKPT_PARAMS, NULL) == 0);
    float *before[7];
    int64_t nb[7];
    for (int i = 0; i < 7; i++) {
        before[i] = host_copy(ctx, opt_names[i], &nb[i]);
    }
    {
        int64_t n1, n2;
        float *a = host_copy(s1, "opt.l1.wx", &n1);
        float *b = host_copy(s2, "opt.l1.wx", &n2);
        const int w = 16, O = CRAFT_OBS_SIZE;
        int same = 1;
        for (int o = 0; o < O && same; o++) {
            same = memcmp(before[0] + (size_t)o * 5 * w, a + (size_t)o * 3 * w,
                          3 * w * sizeof(float)) == 0 &&
                   memcmp(before[0] + (size_t)o * 5 * w + 3 * w,
                          b + (size_t)o * 2 * w, 2 * w * sizeof(float)) == 0;
        }
        CHECK_MSG(same, "opt.l1.wx is not [src1 | src2] row by row");
        free(a);
        free(b);
        a = host_copy(s1, "opt.head.weight", &n1);
        b = host_copy(s2, "opt.head.weight", &n2);
        CHECK(nb[5] == n1 + n2);
        CHECK(memcmp(before[5], a, (size_t)n1 * sizeof(float)) == 0);
        CHECK(memcmp(before[5] + n1, b, (size_t)n2 * sizeof(float)) == 0);
        free(a);
        free(b);
    }
    gr_ctx_free(s1);
    gr_ctx_free(s2);
    int64_t nc = 0;
    float *ctrl0 = host_copy(ctx, "ctrl.l2.weight", &nc);
    struct ppo_stats st;
    for (int i = 0; i < 3; i++) {
        rc = ppo_iteration(t, &st);
        CHECK_MSG(rc == 0, "%s", gr_last_error());
    }
    CHECK(st.decisions == 64);
    CHECK(st.frames >= 64);
    CHECK(isfinite(st.policy_loss) && isfinite(st.value_loss));
    for (int i = 0; i < 7; i++) {
        int64_t n = -1;
        float *after = host_copy(ctx, opt_names[i], &n);
        CHECK_MSG(n == nb[i] && memcmp(after, before[i],
                                       (size_t)n * sizeof(float)) == 0,
                  "%s changed during training", opt_names[i]);
        char adam[64];
        snprintf(adam, sizeof adam, "adam/%s", opt_names[i]);
        int in_optim = 0;
        for (int k = 0; k < gr_ctx_n_named(ctx); k++) {
            const char *nm = gr_ctx_named(ctx, k)->name;
            in_optim |= strncmp(nm, adam, strlen(adam)) == 0;
        }
        CHECK_MSG(!in_optim, "%s has optimizer state", opt_names[i]);
        free(after);
        free(before[i]);
    }
    float *ctrl1 = host_copy(ctx, "ctrl.l2.weight", &nc);
    CHECK_MSG(memcmp(ctrl0, ctrl1, (size_t)nc * sizeof(float)) != 0,
              "the controller did not learn");
    free(ctrl0);
    free(ctrl1);
    /* the checkpoint plays where a BC checkpoint does */
    char path[512];
    snprintf(path, sizeof path, "%s/ppo.ckpt", dir);
    CHECK_MSG(ppo_save(t, path, 1) == 0, "%s", gr_last_error());
    CHECK(ppo_save(t, path, 0) < 0); /* no overwrite without force */
    text = NULL;
    CHECK(gr_checkpoint_read_config(path, &text) == 0);
    struct ocn_config oc;
    struct craft_config world;
    CHECK_MSG(ocn_config_parse(text, &oc) == 0, "%s", gr_last_error());
    CHECK(bc_world_parse(text, &world) == 0 && world.n_each == 4);
    CHECK(oc.n_tasks == 1 && strcmp(oc.task_names[0], "DCA") == 0);
    CHECK(oc.value_head == 1 && oc.n_options == 5);
    struct ppo_config back;
    CHECK(ppo_config_parse(text, &back) == 0);
    CHECK(back.num_envs == 4 && back.policy == PPO_POLICY_OCN &&
          strcmp(back.task, "DCA") == 0 && back.learning_rate == 1e-3f);
    free(text);
    struct gr_ctx *pc = new_ctx();
    struct ocn_model pm;
    CHECK(ocn_model_init(&pm, pc, &oc, 0) == 0);
    CHECK_MSG(gr_checkpoint_load(pc, path, GR_CKPT_PARAMS, NULL) == 0, "%s",
              gr_last_error());
    /* ocn_act plays it hard, as ppo_evaluate does: same actions, same
     * option in control, same lengths on the evaluation maps */
    CHECK(oc.act_hard == 1);
    enum { NE = 4, TT = 64 };
    uint64_t seeds[NE];
    int32_t len[NE];
    uint8_t acts[NE * TT], dec[NE * TT];
    int16_t opts[NE * TT];
    struct ppo_trace tr = {seeds, len, acts, opts, dec, NULL};
    struct ppo_eval ev;
    CHECK(ppo_evaluate(t, NE, PPO_EVAL_SEED, &ev, &tr) == 0);
    struct ocn_act_state as;
    CHECK(ocn_act_state_init(&as, &pm, 1) == 0);
    struct craft_task task;
    craft_task_parse("DCA", &task);
    int same = 1, switches = 0;
    for (int e = 0; e < NE; e++) {
        struct craft_world wd;
        craft_world_reset(&wd, &world, seeds[e], &task);
        ocn_act_reset(&as, 0, 0);
        struct craft_step cs = {0};
        int steps = 0;
        while (!craft_world_done(&wd)) {
            float obs[CRAFT_OBS_SIZE], pic[8], end;
            int32_t a = -1;
            craft_world_observe(&wd, obs);
            CHECK(ocn_act(&pm, &as, obs, &a, NULL, &end, pic) == 0);
            int k = 0;
            for (int i = 1; i < 5; i++) {
                k = pic[i] > pic[k] ? i : k;
            }
            same &= a == acts[e * TT + steps] && k == opts[e * TT + steps] &&
                    (end == 1.0f) == (dec[e * TT + steps] == 1);
            switches += dec[e * TT + steps];
            craft_world_step(&wd, a, &cs);
            steps++;
        }
        same &= steps == len[e];
    }
    CHECK_MSG(same, "ocn_act (hard) and ppo_evaluate play differently");
    CHECK(switches > NE); /* options ended and the controller decided again */
    ocn_act_state_free(&as);
    gr_ctx_free(pc);
    ppo_trainer_free(t);
    gr_ctx_free(ctx);
}

static int read_all(const char *path, unsigned char **buf, long *n)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return -1;
    }
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *buf = malloc((size_t)*n + 1);
    size_t got = fread(*buf, 1, (size_t)*n, f);
    fclose(f);
    return got == (size_t)*n ? 0 : -1;
}

/* Runs `iters` iterations of a trainer (loaded from `resume` when not
 * NULL), saves to `out`, returns the last statistics. */
static int run(const char *src, const char *resume, int iters, const char *out,
               struct ppo_stats *st, struct ppo_eval *ev)
{
    struct gr_ctx *ctx = new_ctx();
    struct ppo_config c;
    small_config(&c, PPO_POLICY_OCN);
    c.target_kl = 0.5f;
    struct ppo_trainer *t = NULL;
    int rc = ppo_trainer_new(&t, ctx, &c, &src, 1);
    if (rc == 0 && resume != NULL) {
        rc = ppo_load(t, resume);
    }
    for (int i = 0; rc == 0 && i < iters; i++) {
        rc = ppo_iteration(t, st);
    }
    if (rc == 0) {
        rc = ppo_evaluate(t, 8, PPO_EVAL_SEED, ev, NULL);
    }
    if (rc == 0) {
        rc = ppo_save(t, out, 1);
    }
    if (rc < 0) {
        fprintf(stderr, "run: %s\n", gr_last_error());
    }
    ppo_trainer_free(t);
    gr_ctx_free(ctx);
    return rc;
}

static void test_resume(const char *src, const char *dir)
{
    char a[512], b1[512], b2[512];
    snprintf(a, sizeof a, "%s/straight.ckpt", dir);
    snprintf(b1, sizeof b1, "%s/half.ckpt", dir);
    snprintf(b2, sizeof b2, "%s/resumed.ckpt", dir);
    struct ppo_stats sa, sb;
    struct ppo_eval ea, eb;
    CHECK(run(src, NULL, 4, a, &sa, &ea) == 0);
    CHECK(run(src, NULL, 2, b1, &sb, &eb) == 0);
    CHECK(run(src, b1, 2, b2, &sb, &eb) == 0);
    CHECK(sb.iteration == 4 && sa.iteration == 4);
    CHECK(sa.global_step == sb.global_step);
    CHECK(sa.policy_loss == sb.policy_loss && sa.value_loss == sb.value_loss);
    CHECK(sa.total_episodes == sb.total_episodes);
    CHECK(ea.mean_return == eb.mean_return && ea.mean_length == eb.mean_length);
    unsigned char *x = NULL, *y = NULL;
    long nx = 0, ny = 0;
    CHECK(read_all(a, &x, &nx) == 0 && read_all(b2, &y, &ny) == 0);
    CHECK_MSG(nx == ny && x != NULL && y != NULL &&
                  memcmp(x, y, (size_t)nx) == 0,
              "resumed checkpoint differs from the straight run's");
    free(x);
    free(y);
    /* a state of another shape is refused */
    struct gr_ctx *ctx = new_ctx();
    struct ppo_config c;
    small_config(&c, PPO_POLICY_OCN);
    c.num_envs = 8;
    struct ppo_trainer *t = NULL;
    CHECK(ppo_trainer_new(&t, ctx, &c, &src, 1) == 0);
    CHECK(ppo_load(t, a) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "worlds");
    ppo_trainer_free(t);
    gr_ctx_free(ctx);
}

/* Acting on several threads (ppo_set_acting_threads) is the run of one:
 * the checkpoint byte for byte and the rollout's counts, for every policy
 * (ocn and moe group their worlds by cell; oracle asks the expert from
 * each thread); the count is checked and capped at the worlds. */
static void test_threads(const char *src, const char *dir)
{
    const enum ppo_policy pols[] = {PPO_POLICY_OCN, PPO_POLICY_MOE,
                                    PPO_POLICY_FLAT, PPO_POLICY_ORACLE};
    for (size_t p = 0; p < sizeof pols / sizeof pols[0]; p++) {
        int64_t frames[2] = {0, 0}, episodes[2] = {0, 0};
        double loss[2] = {0, 0};
        char path[2][512];
        for (int v = 0; v < 2; v++) {
            const int threads = v == 0 ? 1 : 3;
            snprintf(path[v], sizeof path[v], "%s/threads_%zu_%d.ckpt", dir,
                     p, threads);
            struct gr_ctx *ctx = new_ctx();
            struct ppo_config c;
            small_config(&c, pols[p]);
            c.num_envs = 7;
            c.num_minibatches = 7;
            int needs = pols[p] == PPO_POLICY_OCN || pols[p] == PPO_POLICY_MOE;
            struct ppo_trainer *t = NULL;
            int rc = ppo_trainer_new(&t, ctx, &c, needs ? &src : NULL, needs);
            CHECK(rc == 0 && ppo_acting_threads(t) == 1);
            if (rc == 0) {
                rc = ppo_set_acting_threads(t, threads);
                CHECK(rc == 0 && ppo_acting_threads(t) == threads);
            }
            struct ppo_stats st;
            memset(&st, 0, sizeof st);
            for (int i = 0; rc == 0 && i < 3; i++) {
                rc = ppo_iteration(t, &st);
            }
            if (rc == 0) {
                rc = ppo_save(t, path[v], 1);
            }
            CHECK_MSG(rc == 0, "policy %s, %d threads: %s",
                      ppo_policy_name(pols[p]), threads, gr_last_error());
            frames[v] = st.global_step;
            episodes[v] = st.total_episodes;
            loss[v] = st.policy_loss;
            ppo_trainer_free(t);
            gr_ctx_free(ctx);
        }
        unsigned char *x = NULL, *y = NULL;
        long nx = 0, ny = 0;
        CHECK(read_all(path[0], &x, &nx) == 0 && read_all(path[1], &y, &ny) == 0);
        CHECK_MSG(nx == ny && x != NULL && y != NULL &&
                      memcmp(x, y, (size_t)nx) == 0,
                  "policy %s: 3 acting threads give another checkpoint",
                  ppo_policy_name(pols[p]));
        CHECK_MSG(frames[0] == frames[1] && episodes[0] == episodes[1] &&
                      loss[0] == loss[1],
                  "policy %s: 3 acting threads give other counts",
                  ppo_policy_name(pols[p]));
        free(x);
        free(y);
    }
    struct gr_ctx *ctx = new_ctx();
    struct ppo_config c;
    small_config(&c, PPO_POLICY_OCN);
    struct ppo_trainer *t = NULL;
    CHECK(ppo_trainer_new(&t, ctx, &c, &src, 1) == 0);
    CHECK(ppo_set_acting_threads(t, 0) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "acting threads");
    CHECK(ppo_acting_threads(t) == 1);
    CHECK(ppo_set_acting_threads(t, 100) == 0);
    CHECK(ppo_acting_threads(t) == c.num_envs);
    ppo_trainer_free(t);
    gr_ctx_free(ctx);
}

static void test_learning(void)
{
    struct gr_ctx *ctx = new_ctx();
    struct ppo_config c;
    ppo_config_default(&c);
    c.policy = PPO_POLICY_ORACLE;
    strcpy(c.task, "DCA");
    c.world.reward = CRAFT_REWARD_SPARSE;
    c.hidden = 32;
    c.width = 32;
    c.learning_rate = 1e-3f;
    c.total_timesteps = 500000;
    struct ppo_trainer *t = NULL;
    int rc = ppo_trainer_new(&t, ctx, &c, NULL, 0);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    struct ppo_eval ev = {0};
    struct ppo_stats st = {0};
    double first_success = -1.0;
    while (rc == 0 && ppo_global_step(t) < c.total_timesteps) {
        rc = ppo_iteration(t, &st);
        if (rc == 0 && st.iteration == 1) {
            first_success = st.success_rate;
            CHECK(st.mean_option_duration > 1.5); /* decisions span steps */
        }
        if (rc == 0 && st.iteration % 10 == 0) {
            rc = ppo_evaluate(t, 100, PPO_EVAL_SEED, &ev, NULL);
            if (ev.success_rate >= 0.9) {
                break;
            }
        }
    }
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    printf("oracle DCA sparse: eval success %.2f (return %.2f, %.1f "
           "decisions per episode) after %lld frames; rollout success %.2f "
           "at the first iteration\n",
           ev.success_rate, ev.mean_return, ev.decisions_per_episode,
           (long long)ppo_global_step(t), first_success);
    CHECK(ev.success_rate >= 0.9);
    CHECK(ppo_global_step(t) <= 500000 + 16 * 64 * 64);
    /* the trace records the option in force at each step */
    int16_t opt[4 * 64];
    uint8_t dec[4 * 64], act[4 * 64];
    int32_t len[4];
    uint64_t seeds[4];
    struct ppo_trace tr = {seeds, len, act, opt, dec, NULL};
    struct ppo_eval e4;
    CHECK(ppo_evaluate(t, 4, PPO_EVAL_SEED, &e4, &tr) == 0);
    for (int e = 0; e < 4; e++) {
        CHECK(len[e] >= 1 && len[e] <= 64 && dec[e * 64] == 1);
        CHECK(opt[e * 64] >= 0 && opt[e * 64] < 4);
        CHECK(seeds[e] == craft_episode_seed(PPO_EVAL_SEED, (uint64_t)e, 0));
    }
    ppo_trainer_free(t);
    gr_ctx_free(ctx);
}

static void test_moe_flat(const char *src)
{
    for (int p = 0; p < 2; p++) {
        struct gr_ctx *ctx = new_ctx();
        struct ppo_config c;
        small_config(&c, p == 0 ? PPO_POLICY_MOE : PPO_POLICY_FLAT);
        struct ppo_trainer *t = NULL;
        int rc = ppo_trainer_new(&t, ctx, &c, p == 0 ? &src : NULL, p == 0);
        CHECK_MSG(rc == 0, "%s", gr_last_error());
        struct ppo_stats st;
        for (int i = 0; rc == 0 && i < 2; i++) {
            rc = ppo_iteration(t, &st);
        }
        CHECK_MSG(rc == 0, "%s", gr_last_error());
        CHECK(st.frames == 64 && st.mean_option_duration == 1.0);
        if (p == 1) {
            CHECK(ppo_model(t)->cfg.tau == 1.0f && ppo_model(t)->cfg.n_options == 5);
            char *text = ppo_checkpoint_config(t);
            struct ocn_config oc;
            CHECK(text != NULL && ocn_config_parse(text, &oc) < 0);
            free(text);
        }
        ppo_trainer_free(t);
        gr_ctx_free(ctx);
    }
}

/* Acting's host forward (plain C, a fast tanh) against the update's device
 * forward (kernel ops): with one epoch of one minibatch, the ratio is
 * computed before any step, so log p_old (host) must equal log p_new. */
static void test_host_forward(const char *src)
{
    struct gr_ctx *ctx = new_ctx();
    struct ppo_config c;
    small_config(&c, PPO_POLICY_OCN);
    c.update_epochs = 1;
    c.num_minibatches = 1;
    struct ppo_trainer *t = NULL;
    CHECK(ppo_trainer_new(&t, ctx, &c, &src, 1) == 0);
    struct ppo_stats st;
    for (int i = 0; t != NULL && i < 2; i++) {
        CHECK(ppo_iteration(t, &st) == 0);
        CHECK_MSG(fabs(st.old_approx_kl) < 1e-5 && st.clipfrac == 0.0,
                  "host and device log-probabilities differ: mean log "
                  "ratio %g",
                  -st.old_approx_kl);
    }
    ppo_trainer_free(t);
    gr_ctx_free(ctx);
}

static void test_errors(const char *src, const char *other_world,
                        const char *dir)
{
    struct gr_ctx *ctx = new_ctx();
    struct ppo_config c;
    struct ppo_trainer *t = NULL;
    small_config(&c, PPO_POLICY_OCN);
    c.num_envs = 0;
    CHECK(ppo_trainer_new(&t, ctx, &c, &src, 1) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "num_envs");
    small_config(&c, PPO_POLICY_OCN);
    strcpy(c.task, "XYZ");
    CHECK(ppo_trainer_new(&t, ctx, &c, &src, 1) < 0);
    small_config(&c, PPO_POLICY_OCN);
    c.num_minibatches = 3;
    CHECK(ppo_trainer_new(&t, ctx, &c, &src, 1) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "num_minibatches");
    small_config(&c, PPO_POLICY_OCN);
    CHECK(ppo_trainer_new(&t, ctx, &c, NULL, 0) < 0);
    small_config(&c, PPO_POLICY_FLAT);
    CHECK(ppo_trainer_new(&t, ctx, &c, &src, 1) < 0);
    small_config(&c, PPO_POLICY_OCN);
    const char *two[] = {src, other_world};
    CHECK(ppo_trainer_new(&t, ctx, &c, two, 2) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "another world");
    /* a checkpoint that is not an OCN */
    char bad[512];
    snprintf(bad, sizeof bad, "%s/lm.ckpt", dir);
    struct gr_ctx *lc = new_ctx();
    gr_param_new(lc, "lm.weight", gr_shape2(2, 2));
    CHECK(gr_checkpoint_save(lc, bad, "model lm\n", GR_CKPT_ALL, 1) == 0);
    gr_ctx_free(lc);
    const char *badp = bad;
    CHECK(ppo_trainer_new(&t, ctx, &c, &badp, 1) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "not an OCN checkpoint");
    /* a diverging run stops with a message naming the iteration */
    small_config(&c, PPO_POLICY_ORACLE);
    c.learning_rate = 1e30f;
    struct gr_ctx *nctx = new_ctx();
    CHECK(ppo_trainer_new(&t, nctx, &c, NULL, 0) == 0);
    int rc = 0;
    struct ppo_stats st;
    for (int i = 0; t != NULL && rc == 0 && i < 10; i++) {
        rc = ppo_iteration(t, &st);
    }
    CHECK(rc < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "non-finite");
    CHECK_STR_CONTAINS(gr_last_error(), "at iteration");
    ppo_trainer_free(t);
    gr_ctx_free(nctx);
    t = NULL;
    small_config(&c, PPO_POLICY_OCN);
    /* a task with a subtask no option was trained on */
    strcpy(c.task, "DBA");
    CHECK(ppo_trainer_new(&t, ctx, &c, &src, 1) == 0);
    char missing[128];
    ppo_untrained_subtasks(t, missing, sizeof missing);
    CHECK_STR_CONTAINS(missing, "gold");
    CHECK(strstr(missing, "wood") == NULL);
    ppo_trainer_free(t);
    gr_ctx_free(ctx);
}

int main(void)
{
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/grove_test_ppo_%ld", (long)getpid());
    char cmd[512];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    if (system(cmd) != 0) {
        return 1;
    }
    char src1[512], src2[512], src3[512];
    snprintf(src1, sizeof src1, "%s/bc1.ckpt", dir);
    snprintf(src2, sizeof src2, "%s/bc2.ckpt", dir);
    snprintf(src3, sizeof src3, "%s/bc_one_copy.ckpt", dir);
    CHECK(write_source(src1, 3, 4, 11) == 0);
    CHECK(write_source(src2, 2, 4, 12) == 0);
    CHECK(write_source(src3, 2, 1, 13) == 0);
    test_gae();
    test_frozen(src1, src2, dir);
    test_resume(src1, dir);
    test_threads(src1, dir);
    test_moe_flat(src1);
    test_host_forward(src1);
    test_errors(src1, src3, dir);
    test_learning();
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", dir);
    }
    return test_report("agents_ppo");
}
