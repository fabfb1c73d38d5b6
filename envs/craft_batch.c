/* Craft batch: N worlds in struct-of-arrays form, stepped by one call, reset
 * in place when an episode ends (craft.md §6.3, §9). Same rules as the
 * single world: both run craft_internal.h. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "envs/craft.h"
#include "envs/craft_internal.h"

static void reset_world(struct craft_batch *b, int j)
{
    struct craft_core s;
    b->seed[j] = craft_episode_seed(b->base_seed, (uint64_t)j, b->episode[j]);
    craft_core_reset(b->grid + (size_t)j * (size_t)b->cells,
                     b->inventory + (size_t)j * CRAFT_N_KINDS, &s, &b->config,
                     b->seed[j]);
    b->x[j] = (uint8_t)s.x;
    b->y[j] = (uint8_t)s.y;
    b->dir[j] = (uint8_t)s.dir;
    b->k[j] = 0;
    b->t[j] = 0;
    b->ret[j] = 0.0f;
}

void craft_batch_observe(const struct craft_batch *b, int j, float *obs)
{
    craft_core_observe(b->grid + (size_t)j * (size_t)b->cells,
                       b->config.width, b->config.height, b->x[j], b->y[j],
                       b->dir[j], b->inventory + (size_t)j * CRAFT_N_KINDS,
                       b->config.coarse_view, obs);
}

void craft_batch_free(struct craft_batch *b)
{
    free(b->tasks);
    free(b->grid);
    free(b->x);
    free(b->y);
    free(b->dir);
    free(b->k);
    free(b->task);
    free(b->t);
    free(b->inventory);
    free(b->ret);
    free(b->episode);
    free(b->seed);
    memset(b, 0, sizeof *b);
}

int craft_batch_init(struct craft_batch *b, const struct craft_config *config,
                     const struct craft_task *tasks, int n_tasks, int n,
                     uint64_t base_seed, float *obs)
{
    memset(b, 0, sizeof *b);
    int rc = craft_config_validate(config);
    if (rc < 0) {
        return rc;
    }
    if (n < 1 || n > 65535) {
        return gr_error(GR_EINVAL, "craft batch: %d worlds, want 1..65535", n);
    }
    if (n_tasks < 1 || n_tasks > 255) {
        return gr_error(GR_EINVAL, "craft batch: %d tasks, want 1..255",
                        n_tasks);
    }
    for (int i = 0; i < n_tasks; i++) {
        struct craft_task check;
        rc = craft_task_from_subtasks(tasks[i].sub, tasks[i].n, tasks[i].name,
                                      &check);
        if (rc < 0) {
            return gr_error_wrap(rc, "craft batch: task %d", i);
        }
    }
    b->n = n;
    b->cells = config->width * config->height;
    b->config = *config;
    b->n_tasks = n_tasks;
    b->base_seed = base_seed;
    size_t N = (size_t)n;
    b->tasks = malloc(sizeof(struct craft_task) * (size_t)n_tasks);
    b->grid = malloc(N * (size_t)b->cells);
    b->x = malloc(N);
    b->y = malloc(N);
    b->dir = malloc(N);
    b->k = malloc(N);
    b->task = malloc(N);
    b->t = malloc(N * sizeof(uint16_t));
    b->inventory = malloc(N * CRAFT_N_KINDS * sizeof(uint16_t));
    b->ret = malloc(N * sizeof(float));
    b->episode = calloc(N, sizeof(uint64_t));
    b->seed = malloc(N * sizeof(uint64_t));
    if (!b->tasks || !b->grid || !b->x || !b->y || !b->dir || !b->k ||
        !b->task || !b->t || !b->inventory || !b->ret || !b->episode ||
        !b->seed) {
        craft_batch_free(b);
        return gr_error(GR_ENOMEM, "craft batch: out of memory for %d worlds",
                        n);
    }
    memcpy(b->tasks, tasks, sizeof(struct craft_task) * (size_t)n_tasks);
    for (int j = 0; j < n; j++) {
        b->task[j] = (uint8_t)(j % n_tasks);
        reset_world(b, j);
        if (obs != NULL) {
            craft_batch_observe(b, j, obs + (size_t)j * CRAFT_OBS_SIZE);
        }
    }
    return 0;
}

int craft_batch_step_range(struct craft_batch *b, int begin, int end,
                           const uint8_t *actions,
                           const struct craft_batch_out *out,
                           struct craft_log *log)
{
    if (begin < 0 || end > b->n || begin > end) {
        return gr_error(GR_EINVAL,
                        "craft batch: range [%d, %d) is outside [0, %d)",
                        begin, end, b->n);
    }
    for (int j = begin; j < end; j++) {
        if (actions[j] >= CRAFT_N_ACTIONS) {
            return gr_error(GR_EINVAL,
                            "craft batch: action %u of world %d is outside "
                            "0..%d",
                            actions[j], j, CRAFT_N_ACTIONS - 1);
        }
    }
    const int H = b->config.height;
    const int max_steps = b->config.max_steps;
    const int sparse = b->config.reward == CRAFT_REWARD_SPARSE;
    static const struct craft_batch_out none;
    if (out == NULL) {
        out = &none;
    }
    for (int j = begin; j < end; j++) {
        uint8_t *grid = b->grid + (size_t)j * (size_t)b->cells;
        uint16_t *inv = b->inventory + (size_t)j * CRAFT_N_KINDS;
        struct craft_core s = {b->x[j], b->y[j], b->dir[j], b->k[j], b->t[j]};
        struct craft_step st;
        craft_core_step(grid, H, &s, inv, &b->tasks[b->task[j]], max_steps,
                        sparse, actions[j], &st);
        b->ret[j] += st.reward;
        if (out->reward) {
            out->reward[j] = st.reward;
        }
        if (out->terminated) {
            out->terminated[j] = (uint8_t)st.terminated;
        }
        if (out->truncated) {
            out->truncated[j] = (uint8_t)st.truncated;
        }
        if (st.terminated | st.truncated) {
            if (out->episode_return) {
                out->episode_return[j] = b->ret[j];
            }
            if (out->episode_length) {
                out->episode_length[j] = (uint16_t)s.t;
            }
            if (log != NULL) {
                log->episodes += 1;
                log->successes += (uint64_t)st.terminated;
                log->steps += (uint64_t)s.t;
                log->return_sum += b->ret[j];
            }
            b->episode[j] += 1;
            reset_world(b, j);
        } else {
            b->x[j] = (uint8_t)s.x;
            b->y[j] = (uint8_t)s.y;
            b->dir[j] = (uint8_t)s.dir;
            b->k[j] = (uint8_t)s.k;
            b->t[j] = (uint16_t)s.t;
        }
        if (out->obs) {
            craft_batch_observe(b, j, out->obs + (size_t)j * CRAFT_OBS_SIZE);
        }
    }
    return 0;
}

int craft_batch_step(struct craft_batch *b, const uint8_t *actions,
                     const struct craft_batch_out *out, struct craft_log *log)
{
    return craft_batch_step_range(b, 0, b->n, actions, out, log);
}

void craft_batch_get(const struct craft_batch *b, int j, struct craft_world *w)
{
    w->config = b->config;
    w->task = b->tasks[b->task[j]];
    w->seed = b->seed[j];
    w->x = b->x[j];
    w->y = b->y[j];
    w->dir = b->dir[j];
    w->k = b->k[j];
    w->t = b->t[j];
    w->episode_return = b->ret[j];
    memcpy(w->inventory, b->inventory + (size_t)j * CRAFT_N_KINDS,
           sizeof w->inventory);
    memset(w->grid, 0, sizeof w->grid);
    memcpy(w->grid, b->grid + (size_t)j * (size_t)b->cells, (size_t)b->cells);
}
