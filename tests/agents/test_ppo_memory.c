/* The rollout storage of PPO (agents/ppo.h, issue 20 §5/§6: at GPU scale,
 * 4,096 worlds x 64 decisions, PPO_NZ_MAX = 256 sparse slots a decision
 * held 2 KB a decision, over 500 MB): the sparse observations now sit in
 * one pool sized by what the observations need.
 *   - S1 shapes (16 worlds x 64 decisions, the four-copy world): the pool
 *     starts below what the observations need (PPO_NZ_START entries a
 *     decision), grows during the first rollout, and the storage ends
 *     below half the old layout's sparse slots alone (PPO_NZ_MAX x 8
 *     bytes a decision and a minibatch row);
 *   - what the update reads from the pool is what acting stored: with one
 *     epoch of one minibatch the update's first ratio is 1 (old_approx_kl
 *     ~ 0, clipfrac 0) in every iteration, the first (the pool grew under
 *     it), and later ones (the pool reused from its start);
 *   - the minibatch rows grow the same way: 4 minibatches, still ratio 1
 *     in each update's first minibatch. */
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

/* Options of random weights (K = 3, d = w = 32) in the four-copy world. */
static int write_source(const char *path)
{
    struct gr_ctx *ctx = new_ctx();
    struct ocn_config c;
    ocn_config_default(&c);
    c.hidden = 32;
    c.width = 32;
    c.n_tasks = 2;
    strcpy(c.task_names[0], "AC");
    strcpy(c.task_names[1], "CD");
    struct ocn_model m;
    int rc = ocn_model_init(&m, ctx, &c, 5);
    char text[4096];
    int n = rc == 0 ? ocn_config_format(&c, text, sizeof text) : -1;
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

static void run(const char *src, int minibatches)
{
    struct gr_ctx *ctx = new_ctx();
    struct ppo_config c;
    ppo_config_default(&c);
    strcpy(c.task, "DCA");
    c.world.reward = CRAFT_REWARD_SPARSE;
    c.num_envs = 16;
    c.num_steps = 64;
    c.num_minibatches = minibatches;
    c.update_epochs = 1;
    c.total_timesteps = 1000000;
    struct ppo_trainer *t = NULL;
    CHECK(ppo_trainer_new(&t, ctx, &c, &src, 1) == 0);
    if (t == NULL) {
        fprintf(stderr, "trainer: %s\n", gr_last_error());
        gr_ctx_free(ctx);
        return;
    }
    const double D = 16.0 * 64.0;
    size_t before = ppo_storage_bytes(t);
    size_t after1 = 0;
    for (int it = 0; it < 3; it++) {
        struct ppo_stats st;
        int rc = ppo_iteration(t, &st);
        CHECK(rc == 0);
        if (rc < 0) {
            fprintf(stderr, "iteration: %s\n", gr_last_error());
            break;
        }
        /* acting's log-probabilities come back: ratio 1 */
        if (minibatches == 1) {
            CHECK(fabs(st.old_approx_kl) < 1e-4);
            CHECK(st.approx_kl < 1e-6);
            CHECK(st.clipfrac == 0.0);
        }
        if (it == 0) {
            after1 = ppo_storage_bytes(t);
        }
    }
    size_t after = ppo_storage_bytes(t);
    printf("minibatches %d: storage %.0f bytes a decision at the start, %.0f "
           "after one iteration, %.0f after three (the old sparse slots "
           "alone: %.0f)\n", minibatches, (double)before / D,
           (double)after1 / D, (double)after / D,
           (1.0 + 1.0 / minibatches) * PPO_NZ_MAX * 8.0);
    CHECK(after1 > before); /* the pool grew */
    /* the old layout's sparse slots alone: PPO_NZ_MAX entries of 8 bytes
     * for every decision and every minibatch row */
    double old = (D + D / minibatches) * PPO_NZ_MAX * 8.0;
    CHECK((double)after < 0.5 * old);
    ppo_trainer_free(t);
    gr_ctx_free(ctx);
}

int main(void)
{
    char src[256];
    snprintf(src, sizeof src, "/tmp/grove_test_ppo_memory_%ld.ckpt",
             (long)getpid());
    CHECK(write_source(src) == 0);
    run(src, 1);
    run(src, 4);
    unlink(src);
    return test_report("agents_ppo_memory");
}
