/* The scripted expert (craft.md §8) over thousands of generated maps:
 *   - every action equals the first action of the search exactly as §8
 *     writes it (FIFO queue, parent links, DOWN/UP/LEFT/RIGHT, goal test on
 *     enqueue), implemented again here;
 *   - every segment between two subtask completions is exactly as long as
 *     a shortest path found by an independent search (all distances by
 *     level-by-level sweeps, then the closest state facing the target, plus
 *     the USE);
 *   - it finishes every task it is required for (OCN letter tasks, OMPN
 *     tasks without a treasure) on every map where the independent search
 *     says it can, reports the others as unreachable, and never truncates;
 *   - "get gold" / "get gem" are reported unreachable at their last subtask;
 *   - no episode is shorter than the whole-task optimum of a search over
 *     (x, y, dir, k) (craft.md §12). §8 plans one subtask at a time, so it
 *     is longer than that optimum on some multi-subtask maps; the test
 *     prints how often, it does not require equality (§8 is the rule).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "envs/craft.h"
#include "envs/expert.h"
#include "tests/test.h"

#define MAXS (4 * CRAFT_MAX_CELLS)

/* Transition of craft.md §5 for a move, on (x, y, dir): returns the new
 * state id. Written from the spec, not shared with envs/. */
static int ref_move(const struct craft_world *w, int x, int y, int a)
{
    static const int dx[4] = {0, 0, -1, 1}, dy[4] = {-1, 1, 0, 0};
    int nx = x + dx[a], ny = y + dy[a];
    if (craft_world_cell(w, nx, ny) == CRAFT_KIND_EMPTY) {
        x = nx;
        y = ny;
    }
    return (x * w->config.height + y) * 4 + a;
}

static int faces(const struct craft_world *w, int s, int target)
{
    static const int dx[4] = {0, 0, -1, 1}, dy[4] = {-1, 1, 0, 0};
    int H = w->config.height;
    int cell = s / 4, d = s % 4;
    return craft_world_cell(w, cell / H + dx[d], cell % H + dy[d]) == target;
}

/* §8 literally: FIFO, parents, goal on enqueue, walk back. -1: no goal. */
static int literal_first_action(const struct craft_world *w, int target)
{
    static int parent[MAXS], paction[MAXS], queue[MAXS];
    static unsigned char visited[MAXS];
    int H = w->config.height, n = 4 * w->config.width * H;
    memset(visited, 0, (size_t)n);
    int start = (w->x * H + w->y) * 4 + w->dir;
    int head = 0, tail = 0;
    visited[start] = 1;
    parent[start] = -1;
    queue[tail++] = start;
    while (head < tail) {
        int s = queue[head++];
        int x = (s / 4) / H, y = (s / 4) % H;
        for (int a = 0; a < 4; a++) {
            int ns = ref_move(w, x, y, a);
            if (visited[ns]) {
                continue;
            }
            visited[ns] = 1;
            parent[ns] = s;
            paction[ns] = a;
            if (faces(w, ns, target)) {
                int cur = ns;
                while (parent[cur] != start) {
                    cur = parent[cur];
                }
                return paction[cur];
            }
            queue[tail++] = ns;
        }
    }
    return -1;
}

/* Independent shortest-path length to any state facing the target: the
 * distance of every state by level sweeps over the whole state set (no
 * queue), stopping at the first level that holds a state facing the
 * target. -1 when none can be reached. */
static int sweep_distance(const struct craft_world *w, int target)
{
    static int dist[MAXS];
    int H = w->config.height, n = 4 * w->config.width * H;
    for (int i = 0; i < n; i++) {
        dist[i] = -1;
    }
    int s0 = (w->x * H + w->y) * 4 + w->dir;
    dist[s0] = 0;
    if (faces(w, s0, target)) {
        return 0;
    }
    for (int level = 0;; level++) {
        int grew = 0, found = 0;
        for (int s = 0; s < n; s++) {
            if (dist[s] != level) {
                continue;
            }
            int x = (s / 4) / H, y = (s / 4) % H;
            for (int a = 0; a < 4; a++) {
                int ns = ref_move(w, x, y, a);
                if (dist[ns] < 0) {
                    dist[ns] = level + 1;
                    grew = 1;
                    found |= faces(w, ns, target);
                }
            }
        }
        if (found) {
            return level + 1;
        }
        if (!grew) {
            return -1;
        }
    }
}

/* Whether USE at a workshop would craft something, from craft.md §2's
 * table written out again. */
static int ref_can_craft(const struct craft_world *w, int shop)
{
    static const int table[9][5] = {
        /* workshop, need1, need2 (-1 none) */
        {4, 9, -1}, {4, 13, 7}, {4, 8, -1}, {5, 9, -1}, {5, 12, 8},
        {5, 13, 7}, {6, 8, -1}, {6, 9, 7},  {6, 12, 13}};
    for (int r = 0; r < 9; r++) {
        if (table[r][0] == shop && w->inventory[table[r][1]] > 0 &&
            (table[r][2] < 0 || w->inventory[table[r][2]] > 0)) {
            return 1;
        }
    }
    return 0;
}

/* The fewest actions that finish the whole task from the reset state, by
 * breadth-first search over (x, y, dir, k) (craft.md §12): moves as §5,
 * USE only when it completes subtask k (then the target cell of a "get"
 * empties). Needs each target kind to be unique on the map (n_each = 1,
 * "get" subtasks only). -1 when impossible. */
static int optimum_total(const struct craft_world *start)
{
    static int dist[CRAFT_MAX_SUBTASKS + 1][MAXS];
    static int queue[(CRAFT_MAX_SUBTASKS + 1) * MAXS];
    static struct craft_world stage[CRAFT_MAX_SUBTASKS + 1];
    int m = start->task.n, H = start->config.height;
    int n = 4 * start->config.width * H;
    stage[0] = *start;
    for (int k = 0; k < m; k++) {
        stage[k + 1] = stage[k];
        for (int c = 0; c < start->config.width * H; c++) {
            if (stage[k + 1].grid[c] == start->task.sub[k].kind) {
                stage[k + 1].grid[c] = CRAFT_KIND_EMPTY;
            }
        }
    }
    for (int k = 0; k <= m; k++) {
        for (int i = 0; i < n; i++) {
            dist[k][i] = -1;
        }
    }
    int head = 0, tail = 0;
    int s0 = (start->x * H + start->y) * 4 + start->dir;
    dist[0][s0] = 0;
    queue[tail++] = s0; /* k * MAXS + s */
    while (head < tail) {
        int code = queue[head++];
        int k = code / MAXS, s = code % MAXS;
        if (k == m) {
            return dist[k][s];
        }
        int x = (s / 4) / H, y = (s / 4) % H;
        for (int a = 0; a < 4; a++) {
            int ns = ref_move(&stage[k], x, y, a);
            if (dist[k][ns] < 0) {
                dist[k][ns] = dist[k][s] + 1;
                queue[tail++] = k * MAXS + ns;
            }
        }
        if (faces(&stage[k], s, start->task.sub[k].kind) &&
            dist[k + 1][s] < 0) {
            dist[k + 1][s] = dist[k][s] + 1;
            queue[tail++] = (k + 1) * MAXS + s;
        }
    }
    return -1;
}

struct tally {
    int episodes, solved, unreachable, segments, steps, max_len;
    int wrong_action, wrong_length, wrong_claim, bad_end;
    int checked_optimum, above_optimum, below_optimum, excess;
};

/* Runs the expert on one map, checking it against the references. */
static void run_episode(const struct craft_config *c,
                        const struct craft_task *t, uint64_t seed,
                        int check_optimum, struct tally *ta)
{
    struct craft_world w;
    CHECK(craft_world_reset(&w, c, seed, t) == 0);
    ta->episodes++;
    int all_get = c->n_each == 1 && check_optimum;
    for (int i = 0; i < t->n; i++) {
        all_get &= t->sub[i].op == CRAFT_OP_GET;
    }
    int optimum = all_get ? optimum_total(&w) : -2;
    uint8_t actions[256];
    int n_actions = 0;
    while (w.k < t->n) {
        const struct craft_subtask *sub = &t->sub[w.k];
        int d = sweep_distance(&w, sub->kind);
        int possible = d >= 0 && (sub->op == CRAFT_OP_GET ||
                                  ref_can_craft(&w, sub->kind));
        int action = -1, k = -1;
        int status = craft_expert_act(&w, &action, &k);
        if (!possible) {
            ta->unreachable++;
            ta->wrong_claim += status != CRAFT_EXPERT_UNREACHABLE || k != w.k;
            return;
        }
        int len = 0, k0 = w.k;
        for (;;) {
            if (status != CRAFT_EXPERT_OK) {
                ta->wrong_claim++;
                return;
            }
            int facing = faces(&w, (w.x * c->height + w.y) * 4 + w.dir,
                               sub->kind);
            int want = facing ? CRAFT_ACTION_USE
                              : literal_first_action(&w, sub->kind);
            ta->wrong_action += action != want;
            struct craft_step st;
            CHECK(craft_world_step(&w, action, &st) == 0);
            actions[n_actions++ & 255] = (uint8_t)action;
            len++;
            if (st.completed) {
                break;
            }
            if (st.truncated || len > 4 * CRAFT_MAX_CELLS) {
                ta->bad_end++;
                return;
            }
            status = craft_expert_act(&w, &action, &k);
        }
        ta->segments++;
        ta->wrong_length += len != d + 1 || w.k != k0 + 1;
    }
    ta->solved++;
    if (optimum != -2) {
        ta->checked_optimum++;
        ta->above_optimum += w.t > optimum;
        ta->excess += optimum >= 0 ? w.t - optimum : 0;
        ta->below_optimum += optimum < 0 || w.t < optimum;
    }
    ta->steps += w.t;
    ta->max_len = w.t > ta->max_len ? w.t : ta->max_len;
    ta->bad_end += w.episode_return != (float)t->n || w.t >= c->max_steps;
    /* the same actions under sparse reward: return 1, terminated */
    if (w.t <= 256) {
        struct craft_config sc = *c;
        sc.reward = CRAFT_REWARD_SPARSE;
        struct craft_world v;
        CHECK(craft_world_reset(&v, &sc, seed, t) == 0);
        struct craft_step st = {0, 0, 0, 0, 0};
        for (int i = 0; i < w.t; i++) {
            CHECK(craft_world_step(&v, actions[i], &st) == 0);
        }
        ta->bad_end += v.episode_return != 1.0f || !st.terminated ||
                       st.truncated;
    }
    /* a rollout from the start agrees */
    struct craft_world s;
    CHECK(craft_world_reset(&s, c, seed, t) == 0);
    uint8_t roll[256];
    int rlen = 0;
    ta->bad_end += craft_expert_rollout(&s, roll, 256, &rlen) !=
                       CRAFT_EXPERT_OK ||
                   rlen != w.t || memcmp(roll, actions, (size_t)rlen) != 0;
}

static void check_task(const char *name, int seeds)
{
    struct craft_config base, c;
    craft_config_default(&base);
    struct craft_task t;
    CHECK(craft_task_parse(name, &t) == 0);
    craft_config_for_task(&base, &t, &c);
    struct tally ta;
    memset(&ta, 0, sizeof ta);
    for (int n = 0; n < seeds; n++) {
        run_episode(&c, &t, craft_demo_seed(1, t.name, (uint64_t)n), n < 500,
                    &ta);
    }
    CHECK_MSG(ta.wrong_action == 0, "%s: %d actions differ from §8's search",
              name, ta.wrong_action);
    CHECK_MSG(ta.wrong_length == 0, "%s: %d segments are not shortest", name,
              ta.wrong_length);
    CHECK_MSG(ta.wrong_claim == 0, "%s: %d wrong reachability claims", name,
              ta.wrong_claim);
    CHECK_MSG(ta.bad_end == 0, "%s: %d episodes ended wrongly", name,
              ta.bad_end);
    /* a map the expert cannot finish is rare with the defaults */
    CHECK_MSG(ta.unreachable * 100 < ta.episodes, "%s: %d of %d unreachable",
              name, ta.unreachable, ta.episodes);
    CHECK(ta.solved + ta.unreachable == ta.episodes);
    /* no plan can beat the true optimum over (x, y, dir, k) */
    CHECK_MSG(ta.below_optimum == 0, "%s: %d episodes shorter than optimal",
              name, ta.below_optimum);
    printf("%-12s %5d maps, %5d solved, %3d unreachable, mean length %.2f, "
           "max %d; whole-task optimum checked on %d: expert longer on %d "
           "(+%.3f actions per episode)\n",
           name, ta.episodes, ta.solved, ta.unreachable,
           ta.solved ? (double)ta.steps / ta.solved : 0.0, ta.max_len,
           ta.checked_optimum, ta.above_optimum,
           ta.checked_optimum ? (double)ta.excess / ta.checked_optimum : 0.0);
}

/* OMPN get gold / get gem: the treasure ring stops the expert at its last
 * subtask, on every map. */
static void check_treasure(const char *name, int last, int seeds)
{
    struct craft_config base, c;
    craft_config_default(&base);
    struct craft_task t;
    CHECK(craft_task_parse(name, &t) == 0);
    craft_config_for_task(&base, &t, &c);
    int stuck_at_last = 0, other = 0;
    for (int n = 0; n < seeds; n++) {
        struct craft_world w;
        CHECK(craft_world_reset(&w, &c, craft_demo_seed(2, t.name, (uint64_t)n),
                                &t) == 0);
        uint8_t acts[64];
        int len = 0;
        int st = craft_expert_rollout(&w, acts, 64, &len);
        /* replay to find where it stopped */
        struct craft_step s;
        for (int i = 0; i < len; i++) {
            CHECK(craft_world_step(&w, acts[i], &s) == 0);
        }
        if (st == CRAFT_EXPERT_UNREACHABLE && w.k == last &&
            sweep_distance(&w, t.sub[last].kind) < 0) {
            stuck_at_last++;
        } else if (st != CRAFT_EXPERT_UNREACHABLE) {
            other++;
        }
    }
    CHECK_MSG(other == 0, "%s: %d maps not reported unreachable", name, other);
    /* the few others are maps where an earlier item was already walled in */
    CHECK_MSG(stuck_at_last * 100 >= seeds * 97, "%s: %d of %d stuck at %d",
              name, stuck_at_last, seeds, last);
}

int main(void)
{
    const char *ocn[] = {"A",   "B",  "C",   "D",   "AC",  "CD",  "ACD",
                         "CAD", "DCA", "AB", "BA",  "DC",  "ACB", "DBA"};
    for (size_t i = 0; i < sizeof ocn / sizeof ocn[0]; i++) {
        check_task(ocn[i], 2000);
    }
    for (int id = 0; id < CRAFT_N_OMPN_TASKS; id++) {
        struct craft_task t;
        CHECK(craft_task_parse(craft_ompn_task_name(id), &t) == 0);
        if (t.treasure == CRAFT_TREASURE_NONE) {
            check_task(t.name, 1000);
        }
    }
    check_treasure("get gold", 3, 300);
    check_treasure("get gem", 4, 300);
    return test_report("envs_craft_expert");
}
