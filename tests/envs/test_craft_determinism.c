/* Craft determinism (craft.md §4, §9): map generation equals a second
 * implementation driven by gr_philox_word_at; same (seed, task) gives the
 * same state bytes after N steps; the batch API agrees world by world with
 * single worlds stepped by hand for thousands of steps, resets included. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/random.h"
#include "envs/craft.h"
#include "envs/expert.h"
#include "tests/envs/craft_ref.h"
#include "tests/test.h"

static struct craft_task task_of(const char *name)
{
    struct craft_task t;
    CHECK(craft_task_parse(name, &t) == 0);
    return t;
}

static void check_generation(const struct craft_config *c, const char *task,
                             int seeds)
{
    struct craft_task t = task_of(task);
    int bad = 0;
    for (int s = 0; s < seeds; s++) {
        uint64_t seed = craft_episode_seed(77, 0, (uint64_t)s);
        struct craft_world w;
        CHECK(craft_world_reset(&w, c, seed, &t) == 0);
        uint8_t grid[CRAFT_MAX_CELLS];
        int x, y, dir;
        ref_generate(c, seed, grid, &x, &y, &dir);
        int same = memcmp(grid, w.grid, (size_t)(c->width * c->height)) == 0 &&
                   x == w.x && y == w.y && dir == w.dir && w.k == 0 &&
                   w.t == 0 && w.seed == seed;
        for (int k = 0; k < CRAFT_N_KINDS; k++) {
            same &= w.inventory[k] == 0;
        }
        bad += !same;
    }
    CHECK_MSG(bad == 0, "%d of %d maps differ from the reference (%dx%d)", bad,
              seeds, c->width, c->height);
}

static void test_generation(void)
{
    struct craft_config c;
    craft_config_default(&c);
    check_generation(&c, "AC", 2000);
    /* what a default map holds: the wall, one of each primitive and
     * workshop, the agent on an empty interior cell */
    struct craft_task t = task_of("AC");
    for (uint64_t seed = 0; seed < 200; seed++) {
        struct craft_world w;
        CHECK(craft_world_reset(&w, &c, seed, &t) == 0);
        int count[CRAFT_N_KINDS] = {0};
        for (int i = 0; i < 100; i++) {
            count[w.grid[i]]++;
        }
        CHECK(count[CRAFT_KIND_BOUNDARY] == 36 && count[CRAFT_KIND_IRON] == 1 &&
              count[CRAFT_KIND_GRASS] == 1 && count[CRAFT_KIND_WOOD] == 1 &&
              count[CRAFT_KIND_GOLD] == 1 && count[CRAFT_KIND_TOOLSHED] == 1 &&
              count[CRAFT_KIND_WORKBENCH] == 1 &&
              count[CRAFT_KIND_FACTORY] == 1 && count[CRAFT_KIND_EMPTY] == 57);
        CHECK(craft_world_cell(&w, w.x, w.y) == CRAFT_KIND_EMPTY);
    }
    struct craft_task gold = task_of("get gold");
    struct craft_config island;
    craft_config_for_task(&c, &gold, &island);
    CHECK(island.treasure == CRAFT_TREASURE_ISLAND &&
          island.primitives == ((1u << 7) | (1u << 8) | (1u << 9)));
    check_generation(&island, "get gold", 500);
    struct craft_config cave = island;
    cave.treasure = CRAFT_TREASURE_CAVE;
    check_generation(&cave, "get gem", 500);
    struct craft_config other = c;
    other.width = 12;
    other.height = 8;
    other.n_each = 3;
    other.primitives |= 1u << CRAFT_KIND_GEM;
    check_generation(&other, "CAD", 500);
    other.workshops = 0;
    other.width = 3;
    other.height = 9;
    other.n_each = 1;
    other.primitives = 1u << CRAFT_KIND_WOOD;
    check_generation(&other, "A", 200);
    /* island: gold on row 1 ringed by water; cave: gem ringed by stone */
    struct craft_world w;
    CHECK(craft_world_reset(&w, &island, 3, &gold) == 0);
    int gx = -1;
    for (int x = 1; x < 9; x++) {
        if (craft_world_cell(&w, x, 1) == CRAFT_KIND_GOLD) {
            gx = x;
        }
    }
    CHECK(gx > 0);
    if (gx > 0) {
        for (int dx = -1; dx <= 1; dx++) {
            for (int dy = -1; dy <= 1; dy++) {
                int kind = craft_world_cell(&w, gx + dx, 1 + dy);
                CHECK((dx == 0 && dy == 0) ? kind == CRAFT_KIND_GOLD
                                           : (kind == CRAFT_KIND_WATER ||
                                              kind == CRAFT_KIND_BOUNDARY));
            }
        }
    }
}

static void test_same_seed_same_bytes(void)
{
    struct craft_config c;
    craft_config_default(&c);
    const char *tasks[] = {"AC", "CAD", "make bed", "make shears"};
    int differ = 0, distinct_maps = 0;
    uint64_t prev_hash = 0;
    for (int ti = 0; ti < 4; ti++) {
        struct craft_task t = task_of(tasks[ti]);
        for (uint64_t s = 0; s < 300; s++) {
            uint64_t seed = craft_episode_seed(1, s, 0);
            struct craft_world a, b;
            CHECK(craft_world_reset(&a, &c, seed, &t) == 0);
            CHECK(craft_world_reset(&b, &c, seed, &t) == 0);
            uint64_t h0 = craft_state_hash(&a);
            distinct_maps += h0 != prev_hash;
            prev_hash = h0;
            struct gr_philox_stream ra = gr_philox_stream_init(seed, 1);
            struct gr_philox_stream rb = gr_philox_stream_init(seed, 1);
            while (!craft_world_done(&a)) {
                struct craft_step sa, sb;
                CHECK(craft_world_step(&a, (int)(gr_philox_next_u32(&ra) % 5),
                                       &sa) == 0);
                CHECK(craft_world_step(&b, (int)(gr_philox_next_u32(&rb) % 5),
                                       &sb) == 0);
                differ += memcmp(&sa, &sb, sizeof sa) != 0;
            }
            uint8_t ba[CRAFT_STATE_MAX_BYTES], bb[CRAFT_STATE_MAX_BYTES];
            int na = craft_state_bytes(&a, ba, sizeof ba);
            int nb = craft_state_bytes(&b, bb, sizeof bb);
            differ += na != nb || memcmp(ba, bb, (size_t)na) != 0;
            differ += craft_state_hash(&a) != craft_state_hash(&b);
        }
    }
    CHECK(differ == 0);
    CHECK(distinct_maps == 1200);
    /* different (j, n) under one base seed S give different seeds, and so
     * do different S for the same (j, n). (The formula of craft.md §9 keys
     * on S ^ j, so (S, j) and (S ^ x, j ^ x) share a stream: seeds of two
     * runs are only independent when their base seeds differ by more than
     * a world index; craft.md states the formula, grove follows it.) */
    enum { NJ = 40, NE = 40 };
    static uint64_t seen[NJ * NE];
    int n = 0, dup = 0;
    for (uint64_t j = 0; j < NJ; j++) {
        for (uint64_t e = 0; e < NE; e++) {
            seen[n++] = craft_episode_seed(12345, j, e);
        }
    }
    for (int a = 0; a < n; a++) {
        for (int b2 = a + 1; b2 < n; b2++) {
            dup += seen[a] == seen[b2];
        }
    }
    CHECK(dup == 0);
    CHECK(craft_episode_seed(1, 5, 0) != craft_episode_seed(2, 5, 0));
    CHECK(craft_episode_seed(1, 0, 3) == craft_episode_seed(0, 1, 3));
}

/* A batch against single worlds stepped by hand. */
static void check_batch(const struct craft_config *c, const char **names,
                        int n_tasks, int n, int steps, uint64_t base)
{
    struct craft_task tasks[8];
    for (int i = 0; i < n_tasks; i++) {
        tasks[i] = task_of(names[i]);
    }
    size_t N = (size_t)n;
    float *obs = malloc(N * CRAFT_OBS_SIZE * sizeof(float));
    float *reward = malloc(N * sizeof(float));
    float *ep_ret = malloc(N * sizeof(float));
    uint16_t *ep_len = malloc(N * sizeof(uint16_t));
    uint8_t *term = malloc(N), *trunc = malloc(N), *actions = malloc(N);
    uint8_t *ex_actions = malloc(N), *ex_status = malloc(N);
    struct craft_world *single = malloc(N * sizeof(struct craft_world));
    uint64_t *episode = calloc(N, sizeof(uint64_t));
    struct craft_batch b;
    CHECK(craft_batch_init(&b, c, tasks, n_tasks, n, base, obs) == 0);
    float ref[CRAFT_OBS_SIZE];
    int obs_bad = 0, state_bad = 0, step_bad = 0, expert_bad = 0;
    struct craft_log want_log = {0, 0, 0, 0.0};
    for (int j = 0; j < n; j++) {
        CHECK(craft_world_reset(&single[j], c, craft_episode_seed(base, j, 0),
                                &tasks[j % n_tasks]) == 0);
        craft_world_observe(&single[j], ref);
        obs_bad += memcmp(ref, obs + (size_t)j * CRAFT_OBS_SIZE, sizeof ref) != 0;
    }
    struct craft_log log = {0, 0, 0, 0.0};
    struct craft_batch_out out = {obs, reward, term, trunc, ep_ret, ep_len};
    struct gr_philox_stream rs = gr_philox_stream_init(base, 7);
    for (int s = 0; s < steps; s++) {
        /* half the time the expert drives, so that episodes also end by
         * success and not only by the time limit */
        int expert = (s / 50) % 2;
        craft_expert_act_batch(&b, 0, n, ex_actions, ex_status, NULL);
        for (int j = 0; j < n; j++) {
            int a = -1;
            int st = craft_expert_act(&single[j], &a, NULL);
            expert_bad += st != ex_status[j] ||
                          (st == CRAFT_EXPERT_OK && a != ex_actions[j]);
            actions[j] = expert ? ex_actions[j]
                                : (uint8_t)(gr_philox_next_u32(&rs) % 5);
        }
        CHECK(craft_batch_step(&b, actions, &out, &log) == 0);
        for (int j = 0; j < n; j++) {
            struct craft_step st;
            CHECK(craft_world_step(&single[j], actions[j], &st) == 0);
            step_bad += st.reward != reward[j] || st.terminated != term[j] ||
                        st.truncated != trunc[j];
            if (st.terminated || st.truncated) {
                step_bad += ep_ret[j] != single[j].episode_return ||
                            ep_len[j] != single[j].t;
                want_log.episodes++;
                want_log.successes += (uint64_t)st.terminated;
                want_log.steps += (uint64_t)single[j].t;
                want_log.return_sum += single[j].episode_return;
                episode[j]++;
                CHECK(craft_world_reset(&single[j], c,
                                        craft_episode_seed(base, j, episode[j]),
                                        &tasks[j % n_tasks]) == 0);
            }
            struct craft_world got;
            craft_batch_get(&b, j, &got);
            state_bad += craft_state_hash(&got) != craft_state_hash(&single[j]) ||
                         got.seed != single[j].seed ||
                         got.episode_return != single[j].episode_return ||
                         b.episode[j] != episode[j];
            craft_world_observe(&single[j], ref);
            obs_bad +=
                memcmp(ref, obs + (size_t)j * CRAFT_OBS_SIZE, sizeof ref) != 0;
        }
    }
    CHECK_MSG(step_bad == 0, "%d step results differ", step_bad);
    CHECK_MSG(state_bad == 0, "%d states differ", state_bad);
    CHECK_MSG(obs_bad == 0, "%d observations differ", obs_bad);
    CHECK_MSG(expert_bad == 0, "%d expert actions differ", expert_bad);
    CHECK(log.episodes == want_log.episodes && log.steps == want_log.steps &&
          log.successes == want_log.successes &&
          log.return_sum == want_log.return_sum);
    CHECK(log.episodes > (uint64_t)n && log.successes > 0 &&
          log.successes < log.episodes);

    /* a bad action steps no world */
    actions[n - 1] = 5;
    CHECK(craft_batch_step(&b, actions, &out, NULL) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "world");
    struct craft_world after;
    craft_batch_get(&b, 0, &after);
    CHECK(craft_state_hash(&after) == craft_state_hash(&single[0]));
    CHECK(craft_batch_step_range(&b, 0, n + 1, actions, &out, NULL) ==
          GR_EINVAL);
    craft_batch_free(&b);
    free(obs);
    free(reward);
    free(ep_ret);
    free(ep_len);
    free(term);
    free(trunc);
    free(actions);
    free(ex_actions);
    free(ex_status);
    free(single);
    free(episode);
}

/* Stepping in two ranges (as two threads would), without outputs, ends in
 * the same states as one call with every output. */
static void test_ranges(void)
{
    struct craft_config c;
    craft_config_default(&c);
    struct craft_task t[2] = {task_of("AC"), task_of("CD")};
    enum { N = 50 };
    struct craft_batch a, b;
    CHECK(craft_batch_init(&a, &c, t, 2, N, 3, NULL) == 0);
    CHECK(craft_batch_init(&b, &c, t, 2, N, 3, NULL) == 0);
    static float obs[N * CRAFT_OBS_SIZE];
    float rew[N];
    uint8_t te[N], tr[N], actions[N];
    struct craft_batch_out out = {obs, rew, te, tr, NULL, NULL};
    struct craft_log la = {0, 0, 0, 0.0}, lb1 = la, lb2 = la;
    struct gr_philox_stream rs = gr_philox_stream_init(9, 0);
    for (int s = 0; s < 1000; s++) {
        for (int j = 0; j < N; j++) {
            actions[j] = (uint8_t)(gr_philox_next_u32(&rs) % 5);
        }
        CHECK(craft_batch_step(&a, actions, &out, &la) == 0);
        CHECK(craft_batch_step_range(&b, 0, 17, actions, NULL, &lb1) == 0);
        CHECK(craft_batch_step_range(&b, 17, N, actions, NULL, &lb2) == 0);
    }
    int bad = memcmp(a.grid, b.grid, (size_t)(N * a.cells)) != 0 ||
              memcmp(a.x, b.x, N) != 0 || memcmp(a.y, b.y, N) != 0 ||
              memcmp(a.dir, b.dir, N) != 0 || memcmp(a.k, b.k, N) != 0 ||
              memcmp(a.t, b.t, N * 2) != 0 ||
              memcmp(a.inventory, b.inventory, N * CRAFT_N_KINDS * 2) != 0 ||
              memcmp(a.episode, b.episode, N * 8) != 0;
    CHECK(bad == 0);
    CHECK(la.episodes == lb1.episodes + lb2.episodes &&
          la.steps == lb1.steps + lb2.steps);
    craft_batch_free(&a);
    craft_batch_free(&b);
    struct craft_batch z;
    CHECK(craft_batch_init(&z, &c, t, 2, 0, 3, NULL) == GR_EINVAL);
    CHECK(craft_batch_init(&z, &c, t, 0, 4, 3, NULL) == GR_EINVAL);
}

int main(void)
{
    test_generation();
    test_same_seed_same_bytes();
    struct craft_config c;
    craft_config_default(&c);
    const char *names[] = {"AC", "CD", "make bed"};
    check_batch(&c, names, 3, 64, 1500, 11);
    c.reward = CRAFT_REWARD_SPARSE;
    c.coarse_view = 0;
    c.max_steps = 40;
    const char *names2[] = {"DCA", "make shears"};
    check_batch(&c, names2, 2, 33, 1000, 12);
    test_ranges();
    return test_report("envs_craft_determinism");
}
