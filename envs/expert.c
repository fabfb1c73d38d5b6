/* The scripted expert of craft.md §8: breadth-first search over (x, y, dir)
 * for a shortest action sequence to a state facing the target. */
#include "envs/expert.h"

#include <string.h>

#include "core/error.h"
#include "envs/craft_internal.h"

int craft_core_expert_search(const uint8_t *grid, int W, int H, int x, int y,
                             int dir, int target)
{
    /* state id = cell * 4 + dir, cell = x * H + y; first[s] = 1 + the first
     * action of the path that reached s (0: not visited yet). The first
     * action is carried forward instead of following parent links back:
     * the same answer, without the walk. */
    uint8_t first[4 * CRAFT_MAX_CELLS];
    uint16_t queue[4 * CRAFT_MAX_CELLS];
    const int cells = W * H;
    const int delta[4] = {-1, 1, -H, H};
    memset(first, 0, (size_t)(4 * cells));
    int head = 0, tail = 0;
    int start = (x * H + y) * 4 + dir;
    first[start] = 0xff; /* visited, not a successor of anything */
    queue[tail++] = (uint16_t)start;
    while (head < tail) {
        int s = queue[head++];
        int cell = s >> 2;
        for (int a = 0; a < 4; a++) {
            int next = cell + delta[a];
            int ncell = grid[next] == CRAFT_KIND_EMPTY ? next : cell;
            int ns = ncell * 4 + a;
            if (first[ns] != 0) {
                continue;
            }
            int fa = s == start ? a : first[s] - 1;
            first[ns] = (uint8_t)(fa + 1);
            if (grid[ncell + delta[a]] == target) {
                return fa; /* goal test on enqueue */
            }
            queue[tail++] = (uint16_t)ns;
        }
    }
    return -1;
}

/* 1 when USE at workshop W with inventory inv fires at least one recipe. */
static int can_craft(const uint16_t *inv, int workshop)
{
    for (int r = 0; r < CRAFT_N_RECIPES; r++) {
        const struct craft_recipe *rc = &craft_recipes[r];
        if (rc->workshop != workshop) {
            continue;
        }
        int ok = 1;
        for (int i = 0; i < rc->n_needs; i++) {
            if (inv[rc->need[i]] < rc->need_count[i]) {
                ok = 0;
            }
        }
        if (ok) {
            return 1;
        }
    }
    return 0;
}

/* The expert on a bare state; returns a status and sets *action. */
static int expert_core(const uint8_t *grid, int W, int H, int x, int y,
                       int dir, int k, int t, const uint16_t *inv,
                       const struct craft_task *task, int max_steps,
                       int *action)
{
    *action = -1;
    if (k >= task->n || t >= max_steps) {
        return CRAFT_EXPERT_FINISHED;
    }
    const struct craft_subtask *sub = &task->sub[k];
    int target = sub->kind;
    if (sub->op == CRAFT_OP_MAKE && !can_craft(inv, target)) {
        /* USE there would change nothing: the subtask cannot complete, and
         * walking there to USE forever is the loop we must not enter. */
        return CRAFT_EXPERT_UNREACHABLE;
    }
    int faced = (x + craft_dir_dx[dir]) * H + (y + craft_dir_dy[dir]);
    if (grid[faced] == target) {
        *action = CRAFT_ACTION_USE;
        return CRAFT_EXPERT_OK;
    }
    int a = craft_core_expert_search(grid, W, H, x, y, dir, target);
    if (a < 0) {
        return CRAFT_EXPERT_UNREACHABLE;
    }
    *action = a;
    return CRAFT_EXPERT_OK;
}

int craft_expert_act(const struct craft_world *w, int *action, int *subtask)
{
    if (subtask != NULL) {
        *subtask = w->k;
    }
    return expert_core(w->grid, w->config.width, w->config.height, w->x, w->y,
                       w->dir, w->k, w->t, w->inventory, &w->task,
                       w->config.max_steps, action);
}

void craft_expert_act_batch(const struct craft_batch *b, int begin, int end,
                            uint8_t *actions, uint8_t *status,
                            uint8_t *subtask)
{
    for (int j = begin; j < end; j++) {
        int a = -1;
        int st = expert_core(b->grid + (size_t)j * (size_t)b->cells,
                             b->config.width, b->config.height, b->x[j],
                             b->y[j], b->dir[j], b->k[j], b->t[j],
                             b->inventory + (size_t)j * CRAFT_N_KINDS,
                             &b->tasks[b->task[j]], b->config.max_steps, &a);
        actions[j] = (uint8_t)(st == CRAFT_EXPERT_OK ? a : CRAFT_ACTION_USE);
        if (status != NULL) {
            status[j] = (uint8_t)st;
        }
        if (subtask != NULL) {
            subtask[j] = b->k[j];
        }
    }
}

int craft_expert_rollout(const struct craft_world *start, uint8_t *actions,
                         int cap, int *length)
{
    struct craft_world w = *start;
    int n = 0;
    *length = 0;
    if (craft_world_done(&w)) {
        return CRAFT_EXPERT_FINISHED;
    }
    for (;;) {
        int a = -1;
        int st = craft_expert_act(&w, &a, NULL);
        if (st == CRAFT_EXPERT_UNREACHABLE) {
            return st;
        }
        if (n >= cap) {
            return gr_error(GR_EINVAL,
                            "craft expert rollout: more than %d actions; give "
                            "at least max_steps - t",
                            cap);
        }
        struct craft_step step;
        craft_world_step(&w, a, &step);
        actions[n++] = (uint8_t)a;
        *length = n;
        if (step.terminated) {
            return CRAFT_EXPERT_OK;
        }
        if (step.truncated) {
            return CRAFT_EXPERT_TRUNCATED;
        }
    }
}
