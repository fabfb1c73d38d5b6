/* Craft rules on hand-built maps (craft.md §2, §5, §6), the worked example
 * of §11 step by step with its observation, the observation against a
 * literal second implementation, the text rendering, and the state bytes of
 * §9.1 against msgpack-c's packer and unpacker. */
#include <msgpack.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"
#include "envs/craft.h"
#include "envs/expert.h"
#include "tests/envs/craft_ref.h"
#include "tests/test.h"

static struct craft_config default_config(void)
{
    struct craft_config c;
    craft_config_default(&c);
    return c;
}

static struct craft_task task_of(const char *name)
{
    struct craft_task t;
    int rc = craft_task_parse(name, &t);
    CHECK_MSG(rc == 0, "parse %s: %s", name, gr_last_error());
    return t;
}

/* A blank 10x10 world with the agent at (x, y) facing dir. */
static struct craft_world blank(const char *task, int x, int y, int dir)
{
    struct craft_config c = default_config();
    struct craft_task t = task_of(task);
    struct craft_world w;
    CHECK(craft_world_blank(&w, &c, &t) == 0);
    w.x = x;
    w.y = y;
    w.dir = dir;
    return w;
}

static int step(struct craft_world *w, int action, struct craft_step *st)
{
    int rc = craft_world_step(w, action, st);
    CHECK_MSG(rc == 0, "step %d: %s", action, gr_last_error());
    return rc;
}

static void test_tables(void)
{
    CHECK(CRAFT_N_KINDS == 21);
    CHECK(CRAFT_OBS_SIZE == 1075);
    CHECK(CRAFT_OBS_COARSE == 525 && CRAFT_OBS_INVENTORY == 1050 &&
          CRAFT_OBS_DIR == 1071);
    const char *names[21] = {"empty", "boundary", "water", "stone",
                             "toolshed", "workbench", "factory", "iron",
                             "grass", "wood", "gold", "gem", "plank",
                             "stick", "axe", "rope", "bed", "shears",
                             "cloth", "bridge", "ladder"};
    for (int k = 0; k < 21; k++) {
        CHECK_MSG(strcmp(craft_kind_name(k), names[k]) == 0, "kind %d", k);
        CHECK(craft_kind_from_name(names[k]) == k);
        CHECK(craft_kind_is_grabbable(k) == (k >= 7));
        CHECK(craft_kind_is_workshop(k) == (k >= 4 && k <= 6));
    }
    CHECK(craft_kind_name(21) == NULL && craft_kind_from_name("nope") == -1);
    /* recipe table in file order: output, workshop, needs */
    const int want[9][6] = {
        {12, 4, 9, 1, -1, 0}, {14, 4, 13, 1, 7, 1}, {15, 4, 8, 1, -1, 0},
        {13, 5, 9, 1, -1, 0}, {16, 5, 12, 1, 8, 1}, {17, 5, 13, 1, 7, 1},
        {18, 6, 8, 1, -1, 0}, {19, 6, 9, 1, 7, 1},  {20, 6, 12, 1, 13, 1}};
    for (int r = 0; r < 9; r++) {
        const struct craft_recipe *rc = &craft_recipes[r];
        CHECK_MSG(rc->output == want[r][0] && rc->workshop == want[r][1] &&
                      rc->need[0] == want[r][2] &&
                      rc->need_count[0] == want[r][3] &&
                      rc->n_needs == (want[r][4] < 0 ? 1 : 2),
                  "recipe %d", r);
        if (want[r][4] >= 0) {
            CHECK(rc->need[1] == want[r][4] && rc->need_count[1] == 1);
        }
    }
    CHECK(strcmp(craft_action_name(4), "use") == 0);
    CHECK(craft_dir_dx[CRAFT_DIR_RIGHT] == 1 && craft_dir_dy[CRAFT_DIR_UP] == 1);
}

static void test_tasks(void)
{
    struct craft_task t;
    CHECK(craft_task_parse("CAD", &t) == 0);
    CHECK(t.n == 3 && t.sub[0].kind == CRAFT_KIND_IRON &&
          t.sub[1].kind == CRAFT_KIND_WOOD && t.sub[2].kind == CRAFT_KIND_GRASS);
    CHECK(t.sub[0].op == CRAFT_OP_GET && strcmp(t.name, "CAD") == 0);
    CHECK(craft_task_parse("B", &t) == 0 && t.sub[0].kind == CRAFT_KIND_GOLD);
    CHECK(craft_task_parse("make-bed", &t) == 0);
    CHECK(strcmp(t.name, "make bed") == 0 && t.n == 4);
    CHECK(t.sub[1].op == CRAFT_OP_MAKE && t.sub[1].kind == CRAFT_KIND_TOOLSHED);
    CHECK(craft_task_parse("get gold", &t) == 0);
    CHECK(t.treasure == CRAFT_TREASURE_ISLAND && t.n == 4);
    CHECK(craft_task_parse("get_gem", &t) == 0 && t.n == 5 &&
          t.treasure == CRAFT_TREASURE_CAVE);
    for (int i = 0; i < CRAFT_N_OMPN_TASKS; i++) {
        CHECK(craft_task_parse(craft_ompn_task_name(i), &t) == 0);
    }
    CHECK(craft_task_parse("ae", &t) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "'ae'");
    CHECK(craft_task_parse("", &t) == GR_EINVAL);
    CHECK(craft_task_parse("ACE", &t) == GR_EINVAL);
    CHECK(craft_task_parse("AAAAAAAAAAAAAAAAA", &t) == GR_EINVAL);
    char buf[32];
    struct craft_subtask s = {CRAFT_OP_MAKE, CRAFT_KIND_FACTORY};
    CHECK(craft_subtask_name(&s, buf, sizeof buf) == 15);
    CHECK(strcmp(buf, "make at factory") == 0);
    struct craft_subtask back;
    CHECK(craft_subtask_parse(buf, &back) == 0 && back.op == 1 &&
          back.kind == CRAFT_KIND_FACTORY);
    CHECK(craft_subtask_parse("get water", &back) == GR_EINVAL);
    CHECK(craft_subtask_parse("make at wood", &back) == GR_EINVAL);
    /* from parts: letters, catalogue names, custom */
    struct craft_subtask parts[2] = {{0, CRAFT_KIND_IRON}, {0, CRAFT_KIND_WOOD}};
    CHECK(craft_task_from_subtasks(parts, 2, NULL, &t) == 0 &&
          strcmp(t.name, "CA") == 0);
    struct craft_subtask plank[2] = {{0, CRAFT_KIND_WOOD},
                                     {1, CRAFT_KIND_TOOLSHED}};
    CHECK(craft_task_from_subtasks(plank, 2, NULL, &t) == 0 &&
          strcmp(t.name, "make plank") == 0);
    struct craft_subtask odd[1] = {{0, CRAFT_KIND_LADDER}};
    CHECK(craft_task_from_subtasks(odd, 1, NULL, &t) == 0 &&
          strcmp(t.name, "custom") == 0);
    struct craft_subtask bad[1] = {{1, CRAFT_KIND_WOOD}};
    CHECK(craft_task_from_subtasks(bad, 1, NULL, &t) == GR_EINVAL);
    /* seeds of §9 */
    CHECK_EQ_U64(craft_episode_seed(5, 3, 7), gr_mix64(gr_mix64(5 ^ 3) ^ 7));
    uint32_t tau = (uint32_t)gr_fnv1a64("AC", 2);
    CHECK_EQ_U64(craft_task_tag("AC"), tau);
    CHECK_EQ_U64(craft_demo_seed(9, "AC", 4),
                 gr_mix64(gr_mix64(9 ^ (0xD3ull << 56 | tau)) ^ 4));
    CHECK(craft_demo_seed(9, "AC", 4) != craft_demo_seed(9, "CD", 4));
}

static void test_config(void)
{
    struct craft_config c = default_config();
    CHECK(c.width == 10 && c.height == 10 && c.n_each == 1 && c.workshops &&
          c.coarse_view && c.max_steps == 64 && c.reward == CRAFT_REWARD_DENSE &&
          c.treasure == CRAFT_TREASURE_NONE);
    CHECK(c.primitives == ((1u << 7) | (1u << 8) | (1u << 9) | (1u << 10)));
    CHECK(craft_config_validate(&c) == 0);
    CHECK(craft_config_set(&c, "primitives", "wood,gem") == 0);
    CHECK(c.primitives == ((1u << 9) | (1u << 11)));
    CHECK(craft_config_set(&c, "primitives", "wood,plank") == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "plank");
    CHECK(craft_config_set(&c, "reward", "sparse") == 0 &&
          c.reward == CRAFT_REWARD_SPARSE);
    CHECK(craft_config_set(&c, "treasure", "cave") == 0);
    CHECK(craft_config_set(&c, "coarse_view", "off") == 0 && !c.coarse_view);
    CHECK(craft_config_set(&c, "width", "40") == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "width");
    CHECK(craft_config_set(&c, "colour", "red") == GR_EINVAL);
    c = default_config();
    c.width = 4;
    c.height = 4; /* 4 interior cells; 4 primitives + 3 workshops + agent */
    CHECK(craft_config_validate(&c) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "do not fit");
    c = default_config();
    c.max_steps = 0;
    CHECK(craft_config_validate(&c) == GR_EINVAL);
}

static void test_moves(void)
{
    struct craft_step st;
    struct craft_world w = blank("A", 1, 1, CRAFT_DIR_UP);
    /* into the wall: only turns */
    step(&w, CRAFT_ACTION_DOWN, &st);
    CHECK(w.x == 1 && w.y == 1 && w.dir == CRAFT_DIR_DOWN && w.t == 1);
    step(&w, CRAFT_ACTION_LEFT, &st);
    CHECK(w.x == 1 && w.y == 1 && w.dir == CRAFT_DIR_LEFT);
    /* into an object: only turns; every kind blocks */
    for (int kind = 2; kind < CRAFT_N_KINDS; kind++) {
        struct craft_world v = blank("A", 2, 2, CRAFT_DIR_UP);
        craft_world_set(&v, 3, 2, kind);
        step(&v, CRAFT_ACTION_RIGHT, &st);
        CHECK_MSG(v.x == 2 && v.y == 2 && v.dir == CRAFT_DIR_RIGHT,
                  "kind %d", kind);
        CHECK(st.reward == 0.0f && !st.completed);
    }
    /* free moves in all four directions: y grows upwards */
    w = blank("A", 4, 4, CRAFT_DIR_DOWN);
    step(&w, CRAFT_ACTION_UP, &st);
    CHECK(w.x == 4 && w.y == 5 && w.dir == CRAFT_DIR_UP);
    step(&w, CRAFT_ACTION_RIGHT, &st);
    CHECK(w.x == 5 && w.y == 5 && w.dir == CRAFT_DIR_RIGHT);
    step(&w, CRAFT_ACTION_DOWN, &st);
    CHECK(w.x == 5 && w.y == 4 && w.dir == CRAFT_DIR_DOWN);
    step(&w, CRAFT_ACTION_LEFT, &st);
    CHECK(w.x == 4 && w.y == 4 && w.dir == CRAFT_DIR_LEFT && w.t == 4);
    CHECK(st.reward == 0.0f && !st.terminated && !st.truncated);
}

static void test_use(void)
{
    struct craft_step st;
    /* pick-up of each primitive (and a crafted item lying there) */
    for (int kind = 7; kind < CRAFT_N_KINDS; kind++) {
        struct craft_subtask s = {CRAFT_OP_GET, (uint8_t)kind};
        struct craft_task t;
        CHECK(craft_task_from_subtasks(&s, 1, NULL, &t) == 0);
        struct craft_config c = default_config();
        struct craft_world w;
        CHECK(craft_world_blank(&w, &c, &t) == 0);
        w.x = 3;
        w.y = 3;
        w.dir = CRAFT_DIR_LEFT;
        craft_world_set(&w, 2, 3, kind);
        step(&w, CRAFT_ACTION_USE, &st);
        CHECK_MSG(w.inventory[kind] == 1 && craft_world_cell(&w, 2, 3) == 0,
                  "pick up %s", craft_kind_name(kind));
        CHECK(w.x == 3 && w.y == 3 && w.dir == CRAFT_DIR_LEFT);
        CHECK(st.completed && st.reward == 1.0f && st.terminated &&
              !st.truncated && w.k == 1 && st.subtask == 0);
        CHECK(craft_world_done(&w));
        CHECK(craft_world_step(&w, CRAFT_ACTION_USE, &st) == GR_EINVAL);
        CHECK_STR_CONTAINS(gr_last_error(), "over");
    }
    /* USE on empty and on the wall: nothing but t */
    struct craft_world w = blank("A", 1, 1, CRAFT_DIR_UP);
    struct craft_world before = w;
    step(&w, CRAFT_ACTION_USE, &st);
    before.t = 1;
    CHECK(craft_state_hash(&w) == craft_state_hash(&before));
    w.dir = CRAFT_DIR_LEFT;
    before = w;
    step(&w, CRAFT_ACTION_USE, &st);
    before.t = 2;
    CHECK(craft_state_hash(&w) == craft_state_hash(&before));
    CHECK(craft_world_cell(&w, 0, 1) == CRAFT_KIND_BOUNDARY);
    /* water without, then with a bridge (not consumed) */
    w = blank("A", 4, 4, CRAFT_DIR_RIGHT);
    craft_world_set(&w, 5, 4, CRAFT_KIND_WATER);
    step(&w, CRAFT_ACTION_USE, &st);
    CHECK(craft_world_cell(&w, 5, 4) == CRAFT_KIND_WATER);
    w.inventory[CRAFT_KIND_BRIDGE] = 1;
    step(&w, CRAFT_ACTION_USE, &st);
    CHECK(craft_world_cell(&w, 5, 4) == CRAFT_KIND_EMPTY);
    CHECK(w.inventory[CRAFT_KIND_BRIDGE] == 1 && w.x == 4);
    CHECK(st.reward == 0.0f && !st.completed);
    step(&w, CRAFT_ACTION_RIGHT, &st);
    CHECK(w.x == 5); /* now passable */
    /* stone without, then with an axe (not consumed) */
    w = blank("A", 4, 4, CRAFT_DIR_DOWN);
    craft_world_set(&w, 4, 3, CRAFT_KIND_STONE);
    w.inventory[CRAFT_KIND_BRIDGE] = 3; /* a bridge does nothing to stone */
    step(&w, CRAFT_ACTION_USE, &st);
    CHECK(craft_world_cell(&w, 4, 3) == CRAFT_KIND_STONE);
    w.inventory[CRAFT_KIND_AXE] = 1;
    step(&w, CRAFT_ACTION_USE, &st);
    CHECK(craft_world_cell(&w, 4, 3) == CRAFT_KIND_EMPTY &&
          w.inventory[CRAFT_KIND_AXE] == 1);
    /* USE at a workshop with nothing to craft: no change, no completion */
    w = blank("make plank", 4, 4, CRAFT_DIR_UP);
    craft_world_set(&w, 4, 5, CRAFT_KIND_TOOLSHED);
    w.k = 1; /* working on "make at toolshed" */
    step(&w, CRAFT_ACTION_USE, &st);
    CHECK(!st.completed && w.k == 1 && w.inventory[CRAFT_KIND_PLANK] == 0);
    w.inventory[CRAFT_KIND_WOOD] = 1;
    step(&w, CRAFT_ACTION_USE, &st);
    CHECK(st.completed && st.terminated && st.reward == 1.0f);
    CHECK(w.inventory[CRAFT_KIND_PLANK] == 1 && w.inventory[CRAFT_KIND_WOOD] == 0);
    CHECK(craft_world_cell(&w, 4, 5) == CRAFT_KIND_TOOLSHED);
}

/* Every recipe fires alone at its workshop; several fire in one USE. */
static void test_recipes(void)
{
    struct craft_step st;
    for (int r = 0; r < CRAFT_N_RECIPES; r++) {
        const struct craft_recipe *rc = &craft_recipes[r];
        struct craft_world w = blank("A", 4, 4, CRAFT_DIR_RIGHT);
        craft_world_set(&w, 5, 4, rc->workshop);
        for (int i = 0; i < rc->n_needs; i++) {
            w.inventory[rc->need[i]] = rc->need_count[i];
        }
        step(&w, CRAFT_ACTION_USE, &st);
        int others = 0;
        for (int k = 0; k < CRAFT_N_KINDS; k++) {
            if (k != rc->output) {
                others += w.inventory[k];
            }
        }
        CHECK_MSG(w.inventory[rc->output] == 1 && others == 0, "recipe %d", r);
    }
    /* at a workbench holding wood and iron: stick (recipe 4) then shears
     * (recipe 6) from that stick and the iron, in one USE */
    struct craft_world w = blank("make shears", 4, 4, CRAFT_DIR_RIGHT);
    craft_world_set(&w, 5, 4, CRAFT_KIND_WORKBENCH);
    w.inventory[CRAFT_KIND_WOOD] = 1;
    w.inventory[CRAFT_KIND_IRON] = 1;
    w.k = 1; /* "make at workbench" */
    step(&w, CRAFT_ACTION_USE, &st);
    CHECK(w.inventory[CRAFT_KIND_SHEARS] == 1);
    CHECK(w.inventory[CRAFT_KIND_STICK] == 0 && w.inventory[CRAFT_KIND_WOOD] == 0 &&
          w.inventory[CRAFT_KIND_IRON] == 0);
    CHECK(st.completed && w.k == 2);
    /* a workbench with two wood: recipe 4 fires once per USE */
    w = blank("A", 4, 4, CRAFT_DIR_RIGHT);
    craft_world_set(&w, 5, 4, CRAFT_KIND_WORKBENCH);
    w.inventory[CRAFT_KIND_WOOD] = 2;
    step(&w, CRAFT_ACTION_USE, &st);
    CHECK(w.inventory[CRAFT_KIND_STICK] == 1 && w.inventory[CRAFT_KIND_WOOD] == 1);
    /* "get stick" completes when crafting raises the stick count... */
    w = blank("A", 4, 4, CRAFT_DIR_RIGHT);
    struct craft_subtask gs = {CRAFT_OP_GET, CRAFT_KIND_STICK};
    CHECK(craft_task_from_subtasks(&gs, 1, NULL, &w.task) == 0);
    craft_world_set(&w, 5, 4, CRAFT_KIND_WORKBENCH);
    w.inventory[CRAFT_KIND_WOOD] = 1;
    step(&w, CRAFT_ACTION_USE, &st);
    CHECK(st.completed && st.terminated);
    /* ...but not when the stick is consumed in the same USE (net change 0) */
    w = blank("A", 4, 4, CRAFT_DIR_RIGHT);
    CHECK(craft_task_from_subtasks(&gs, 1, NULL, &w.task) == 0);
    craft_world_set(&w, 5, 4, CRAFT_KIND_WORKBENCH);
    w.inventory[CRAFT_KIND_WOOD] = 1;
    w.inventory[CRAFT_KIND_IRON] = 1;
    step(&w, CRAFT_ACTION_USE, &st);
    CHECK(!st.completed && w.inventory[CRAFT_KIND_SHEARS] == 1);
    /* "make at factory" does not complete at a toolshed */
    w = blank("make cloth", 4, 4, CRAFT_DIR_RIGHT);
    craft_world_set(&w, 5, 4, CRAFT_KIND_TOOLSHED);
    w.inventory[CRAFT_KIND_GRASS] = 1;
    w.k = 1;
    step(&w, CRAFT_ACTION_USE, &st);
    CHECK(w.inventory[CRAFT_KIND_ROPE] == 1 && !st.completed && w.k == 1);
}

static void test_rewards_and_limits(void)
{
    struct craft_step st;
    /* AC dense: 1 then 1; sparse: 0 then 1; out-of-order iron first earns
     * nothing */
    for (int sparse = 0; sparse <= 1; sparse++) {
        struct craft_world w = blank("AC", 4, 4, CRAFT_DIR_RIGHT);
        w.config.reward = sparse ? CRAFT_REWARD_SPARSE : CRAFT_REWARD_DENSE;
        craft_world_set(&w, 5, 4, CRAFT_KIND_IRON);
        craft_world_set(&w, 3, 4, CRAFT_KIND_WOOD);
        craft_world_set(&w, 4, 5, CRAFT_KIND_IRON);
        step(&w, CRAFT_ACTION_USE, &st); /* iron, out of order */
        CHECK(st.reward == 0.0f && !st.completed && w.k == 0 &&
              w.inventory[CRAFT_KIND_IRON] == 1);
        step(&w, CRAFT_ACTION_LEFT, &st);
        step(&w, CRAFT_ACTION_USE, &st); /* wood: A done */
        CHECK(st.completed && w.k == 1 && st.subtask == 0);
        CHECK(st.reward == (sparse ? 0.0f : 1.0f) && !st.terminated);
        step(&w, CRAFT_ACTION_UP, &st);
        step(&w, CRAFT_ACTION_USE, &st); /* the second iron: C done */
        CHECK(st.completed && st.terminated && !st.truncated && st.subtask == 1);
        CHECK(st.reward == 1.0f);
        CHECK(w.episode_return == (sparse ? 1.0f : 2.0f));
    }
    /* the step limit: truncated at t = max_steps, not terminated */
    struct craft_world w = blank("A", 4, 4, CRAFT_DIR_RIGHT);
    w.config.max_steps = 5;
    for (int i = 0; i < 5; i++) {
        step(&w, CRAFT_ACTION_USE, &st);
        CHECK(st.truncated == (i == 4) && !st.terminated);
    }
    CHECK(w.t == 5 && craft_world_done(&w));
    CHECK(craft_world_step(&w, CRAFT_ACTION_UP, &st) == GR_EINVAL);
    /* done on the last allowed step: terminated, not truncated */
    w = blank("A", 4, 4, CRAFT_DIR_RIGHT);
    w.config.max_steps = 2;
    craft_world_set(&w, 5, 4, CRAFT_KIND_WOOD);
    step(&w, CRAFT_ACTION_UP, &st);
    step(&w, CRAFT_ACTION_DOWN, &st);
    CHECK(!st.terminated && st.truncated);
    w = blank("A", 4, 4, CRAFT_DIR_UP);
    w.config.max_steps = 2;
    craft_world_set(&w, 5, 4, CRAFT_KIND_WOOD);
    step(&w, CRAFT_ACTION_RIGHT, &st); /* turn only: (5,4) is occupied */
    CHECK(w.x == 4 && w.dir == CRAFT_DIR_RIGHT);
    step(&w, CRAFT_ACTION_USE, &st);
    CHECK(st.terminated && !st.truncated && w.t == 2);
    /* bad actions */
    w = blank("A", 4, 4, CRAFT_DIR_UP);
    CHECK(craft_world_step(&w, 5, &st) == GR_EINVAL);
    CHECK(craft_world_step(&w, -1, &st) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "action -1");
    CHECK(w.t == 0);
}

/* The map of craft.md §11. */
static struct craft_world example_world(void)
{
    struct craft_world w = blank("AC", 3, 3, CRAFT_DIR_UP);
    craft_world_set(&w, 3, 5, CRAFT_KIND_TOOLSHED);
    craft_world_set(&w, 2, 2, CRAFT_KIND_FACTORY);
    craft_world_set(&w, 7, 6, CRAFT_KIND_WORKBENCH);
    craft_world_set(&w, 5, 4, CRAFT_KIND_WOOD);
    craft_world_set(&w, 2, 7, CRAFT_KIND_IRON);
    craft_world_set(&w, 7, 2, CRAFT_KIND_GRASS);
    craft_world_set(&w, 6, 7, CRAFT_KIND_GOLD);
    return w;
}

static int coarse_index(int I, int J, int kind)
{
    return 525 + (I * 5 + J) * 21 + kind;
}

static void test_worked_example(void)
{
    struct craft_world w = example_world();
    const char *picture = "9  # # # # # # # # # #\n"
                          "8  # . . . . . . . . #\n"
                          "7  # . I . . . O . . #\n"
                          "6  # . . . . . . B . #\n"
                          "5  # . . T . . . . . #\n"
                          "4  # . . . . W . . . #\n"
                          "3  # . . ^ . . . . . #\n"
                          "2  # . F . . . . G . #\n"
                          "1  # . . . . . . . . #\n"
                          "0  # # # # # # # # # #\n"
                          "   0 1 2 3 4 5 6 7 8 9\n";
    char text[CRAFT_TEXT_CAP];
    int n = craft_world_render_text(&w, text, sizeof text);
    CHECK(n == (int)strlen(picture));
    CHECK_MSG(strcmp(text, picture) == 0, "rendering:\n%s", text);
    CHECK(craft_world_render_text(&w, text, 20) == GR_EINVAL);

    float obs[CRAFT_OBS_SIZE];
    craft_world_observe(&w, obs);
    CHECK(ref_nonzeros(obs, CRAFT_OBS_SIZE) == 45);
    CHECK(ref_nonzeros(obs, 525) == 25);
    CHECK(ref_nonzeros(obs + 525, 525) == 19);
    CHECK(ref_nonzeros(obs + 1050, 21) == 0);
    CHECK(obs[1072] == 1.0f && ref_nonzeros(obs + 1071, 4) == 1);
    CHECK(obs[492] == 1.0f); /* wood at offset (+2, +1) */
    CHECK(obs[((-1 + 2) * 5 + (-1 + 2)) * 21 + CRAFT_KIND_FACTORY] == 1.0f);
    CHECK(obs[((0 + 2) * 5 + (2 + 2)) * 21 + CRAFT_KIND_TOOLSHED] == 1.0f);
    int empties = 0;
    for (int c = 0; c < 25; c++) {
        empties += obs[c * 21] == 1.0f;
    }
    CHECK(empties == 22);
    /* the coarse blocks listed in §11 */
    struct {
        int I, J, kinds[4], n;
    } blocks[] = {
        {2, 2, {0, 4, 6, 9}, 4}, {2, 3, {0, 7, 1}, 3},  {3, 2, {0, 8, 1}, 3},
        {3, 3, {0, 5, 10, 1}, 4}, {1, 1, {1}, 1},       {1, 2, {1}, 1},
        {1, 3, {1}, 1},          {2, 1, {1}, 1},        {3, 1, {1}, 1},
    };
    int listed = 0;
    for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++) {
        for (int i = 0; i < blocks[b].n; i++) {
            CHECK_MSG(obs[coarse_index(blocks[b].I, blocks[b].J,
                                       blocks[b].kinds[i])] == 1.0f,
                      "block (%d,%d) kind %d", blocks[b].I, blocks[b].J,
                      blocks[b].kinds[i]);
            listed++;
        }
    }
    CHECK(listed == 19);
    float ref[CRAFT_OBS_SIZE];
    ref_observe(&w, ref);
    CHECK(memcmp(obs, ref, sizeof obs) == 0);

    /* the expert's table, step by step */
    const struct {
        int x, y, dir, k, action, x2, y2, dir2;
        float reward;
    } rows[8] = {
        {3, 3, 1, 0, 1, 3, 4, 1, 0}, {3, 4, 1, 0, 3, 4, 4, 3, 0},
        {4, 4, 3, 0, 4, 4, 4, 3, 1}, {4, 4, 3, 1, 1, 4, 5, 1, 0},
        {4, 5, 1, 1, 1, 4, 6, 1, 0}, {4, 6, 1, 1, 1, 4, 7, 1, 0},
        {4, 7, 1, 1, 2, 3, 7, 2, 0}, {3, 7, 2, 1, 4, 3, 7, 2, 1},
    };
    for (int sparse = 0; sparse <= 1; sparse++) {
        w = example_world();
        w.config.reward = sparse ? CRAFT_REWARD_SPARSE : CRAFT_REWARD_DENSE;
        int boundaries[8], nb = 0;
        for (int t = 0; t < 8; t++) {
            CHECK(w.x == rows[t].x && w.y == rows[t].y && w.dir == rows[t].dir &&
                  w.k == rows[t].k && w.t == t);
            int action = -1, subtask = -1;
            CHECK(craft_expert_act(&w, &action, &subtask) == CRAFT_EXPERT_OK);
            CHECK_MSG(action == rows[t].action, "t=%d: expert %d, want %d", t,
                      action, rows[t].action);
            CHECK(subtask == rows[t].k);
            struct craft_step st;
            step(&w, action, &st);
            CHECK_MSG(w.x == rows[t].x2 && w.y == rows[t].y2 &&
                          w.dir == rows[t].dir2,
                      "t=%d: at (%d,%d) dir %d", t, w.x, w.y, w.dir);
            float want = sparse ? (t == 7 ? 1.0f : 0.0f) : rows[t].reward;
            CHECK_MSG(st.reward == want, "t=%d reward %g", t, st.reward);
            CHECK(st.subtask == rows[t].k);
            CHECK(st.terminated == (t == 7) && !st.truncated);
            if (st.completed) {
                boundaries[nb++] = t;
            }
            if (t == 2) {
                CHECK(craft_world_cell(&w, 5, 4) == CRAFT_KIND_EMPTY &&
                      w.inventory[CRAFT_KIND_WOOD] == 1 && w.k == 1);
            }
        }
        CHECK(nb == 2 && boundaries[0] == 2 && boundaries[1] == 7);
        CHECK(w.episode_return == (sparse ? 1.0f : 2.0f) && w.t == 8);
        CHECK(w.inventory[CRAFT_KIND_IRON] == 1 &&
              craft_world_cell(&w, 2, 7) == CRAFT_KIND_EMPTY);
        int a = 0;
        CHECK(craft_expert_act(&w, &a, NULL) == CRAFT_EXPERT_FINISHED &&
              a == -1);
    }
    /* rollout gives the same 8 actions */
    w = example_world();
    uint8_t acts[64];
    int len = 0;
    CHECK(craft_expert_rollout(&w, acts, 64, &len) == CRAFT_EXPERT_OK);
    CHECK(len == 8);
    for (int t = 0; t < len && t < 8; t++) {
        CHECK(acts[t] == rows[t].action);
    }
    CHECK(craft_expert_rollout(&w, acts, 4, &len) == GR_EINVAL);
    /* the turn: agent at (4,4) facing UP, wood at (5,4) */
    w = example_world();
    w.x = 4;
    w.y = 4;
    w.dir = CRAFT_DIR_UP;
    int action = -1;
    CHECK(craft_expert_act(&w, &action, NULL) == CRAFT_EXPERT_OK &&
          action == CRAFT_ACTION_RIGHT);
    struct craft_step st;
    step(&w, action, &st);
    CHECK(w.x == 4 && w.y == 4 && w.dir == CRAFT_DIR_RIGHT);
    CHECK(craft_expert_act(&w, &action, NULL) == CRAFT_EXPERT_OK &&
          action == CRAFT_ACTION_USE);
    /* an unreachable target is reported, not walked to */
    w = example_world();
    craft_world_set(&w, 5, 4, CRAFT_KIND_EMPTY);
    int sub = -1;
    CHECK(craft_expert_act(&w, &action, &sub) == CRAFT_EXPERT_UNREACHABLE);
    CHECK(action == -1 && sub == 0);
    CHECK(craft_expert_rollout(&w, acts, 64, &len) == CRAFT_EXPERT_UNREACHABLE);
    CHECK(len == 0);
    /* walled in: iron at (2,7) behind stone on its four sides */
    w = example_world();
    w.k = 1;
    craft_world_set(&w, 1, 7, CRAFT_KIND_STONE);
    craft_world_set(&w, 3, 7, CRAFT_KIND_STONE);
    craft_world_set(&w, 2, 6, CRAFT_KIND_STONE);
    craft_world_set(&w, 2, 8, CRAFT_KIND_STONE);
    CHECK(craft_expert_act(&w, &action, &sub) == CRAFT_EXPERT_UNREACHABLE &&
          sub == 1);
}

/* Observation = the literal implementation, on many generated states, with
 * and without the coarse view, on several grid sizes. */
static void test_observation_reference(void)
{
    const int sizes[][2] = {{10, 10}, {7, 12}, {20, 16}, {32, 32}, {5, 5},
                            {9, 7},   {3, 8},  {10, 9},  {6, 13}, {13, 13}};
    struct craft_task t = task_of("ACD");
    int mismatches = 0, total = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (int coarse = 0; coarse <= 1; coarse++) {
            struct craft_config c = default_config();
            c.width = sizes[s][0];
            c.height = sizes[s][1];
            c.coarse_view = coarse;
            if (c.width * c.height < 40) {
                c.workshops = 0;
                c.primitives = (1u << 9) | (1u << 7);
            }
            for (uint64_t seed = 0; seed < 40; seed++) {
                struct craft_world w;
                CHECK(craft_world_reset(&w, &c, seed, &t) == 0);
                struct gr_philox_stream rs = gr_philox_stream_init(seed, 99);
                while (!craft_world_done(&w)) {
                    float a[CRAFT_OBS_SIZE], b[CRAFT_OBS_SIZE];
                    craft_world_observe(&w, a);
                    ref_observe(&w, b);
                    total++;
                    mismatches += memcmp(a, b, sizeof a) != 0;
                    struct craft_step st;
                    int action = (int)(gr_philox_next_u32(&rs) % 5);
                    step(&w, action, &st);
                }
            }
        }
    }
    CHECK_MSG(mismatches == 0, "%d of %d observations differ", mismatches,
              total);
}

/* The bytes of §9.1, built independently with msgpack-c's packer. */
static size_t pack_reference(const struct craft_world *w, msgpack_sbuffer *sb)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    int W = w->config.width, H = w->config.height;
    msgpack_pack_array(&pk, 8);
    msgpack_pack_uint32(&pk, (uint32_t)W);
    msgpack_pack_uint32(&pk, (uint32_t)H);
    msgpack_pack_bin(&pk, (size_t)(W * H));
    msgpack_pack_bin_body(&pk, w->grid, (size_t)(W * H));
    msgpack_pack_array(&pk, 3);
    msgpack_pack_uint32(&pk, (uint32_t)w->x);
    msgpack_pack_uint32(&pk, (uint32_t)w->y);
    msgpack_pack_uint32(&pk, (uint32_t)w->dir);
    msgpack_pack_array(&pk, 21);
    for (int i = 0; i < 21; i++) {
        msgpack_pack_uint32(&pk, w->inventory[i]);
    }
    msgpack_pack_uint32(&pk, (uint32_t)w->k);
    msgpack_pack_uint32(&pk, (uint32_t)w->t);
    msgpack_pack_array(&pk, (size_t)w->task.n);
    for (int i = 0; i < w->task.n; i++) {
        msgpack_pack_array(&pk, 2);
        msgpack_pack_uint32(&pk, w->task.sub[i].op);
        msgpack_pack_uint32(&pk, w->task.sub[i].kind);
    }
    return sb->size;
}

static void test_state_bytes(void)
{
    struct craft_world w = example_world();
    w.inventory[CRAFT_KIND_WOOD] = 300; /* a uint16 encoding */
    w.t = 200;                          /* a uint8 encoding */
    uint8_t buf[CRAFT_STATE_MAX_BYTES];
    int n = craft_state_bytes(&w, buf, sizeof buf);
    CHECK(n > 100);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    size_t ref_n = pack_reference(&w, &sb);
    CHECK_MSG((size_t)n == ref_n && memcmp(buf, sb.data, ref_n) == 0,
              "state bytes differ from msgpack-c's (%d vs %zu)", n, ref_n);
    CHECK_EQ_U64(craft_state_hash(&w), gr_fnv1a64(sb.data, sb.size));
    msgpack_sbuffer_destroy(&sb);
    CHECK(craft_state_bytes(&w, buf, (size_t)n - 1) == GR_EINVAL);

    /* msgpack-c reads it as the documented array */
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    CHECK(msgpack_unpack_next(&up, (const char *)buf, (size_t)n, &off) ==
          MSGPACK_UNPACK_SUCCESS);
    CHECK(off == (size_t)n);
    msgpack_object o = up.data;
    CHECK(o.type == MSGPACK_OBJECT_ARRAY && o.via.array.size == 8);
    if (o.type == MSGPACK_OBJECT_ARRAY && o.via.array.size == 8) {
        msgpack_object *e = o.via.array.ptr;
        CHECK(e[0].via.u64 == 10 && e[1].via.u64 == 10);
        CHECK(e[2].type == MSGPACK_OBJECT_BIN && e[2].via.bin.size == 100);
        CHECK((uint8_t)e[2].via.bin.ptr[5 * 10 + 4] == CRAFT_KIND_WOOD);
        CHECK(e[3].via.array.size == 3 && e[3].via.array.ptr[1].via.u64 == 3 &&
              e[3].via.array.ptr[2].via.u64 == CRAFT_DIR_UP);
        CHECK(e[4].via.array.size == 21 &&
              e[4].via.array.ptr[CRAFT_KIND_WOOD].via.u64 == 300);
        CHECK(e[5].via.u64 == 0 && e[6].via.u64 == 200);
        CHECK(e[7].via.array.size == 2 &&
              e[7].via.array.ptr[1].via.array.ptr[1].via.u64 == CRAFT_KIND_IRON);
    }
    msgpack_unpacked_destroy(&up);

    /* round trip, and a 16-subtask task (array16) */
    struct craft_world back;
    CHECK(craft_state_from_bytes(&back, &w.config, buf, (size_t)n) == 0);
    uint8_t buf2[CRAFT_STATE_MAX_BYTES];
    CHECK(craft_state_bytes(&back, buf2, sizeof buf2) == n &&
          memcmp(buf, buf2, (size_t)n) == 0);
    CHECK(strcmp(back.task.name, "AC") == 0 && back.x == 3 && back.y == 3);
    struct craft_world big = blank("ABCDABCDABCDABCD", 2, 2, 0);
    n = craft_state_bytes(&big, buf, sizeof buf);
    CHECK(craft_state_from_bytes(&back, &big.config, buf, (size_t)n) == 0 &&
          back.task.n == 16);
    msgpack_sbuffer_init(&sb);
    pack_reference(&big, &sb);
    CHECK((size_t)n == sb.size && memcmp(buf, sb.data, sb.size) == 0);
    msgpack_sbuffer_destroy(&sb);

    /* every truncation and every single-byte corruption is refused or
     * decodes to a valid world; never a crash (ASan build) */
    w = example_world();
    n = craft_state_bytes(&w, buf, sizeof buf);
    int refused = 0;
    for (int len = 0; len < n; len++) {
        refused += craft_state_from_bytes(&back, &w.config, buf, (size_t)len) ==
                   GR_EFORMAT;
    }
    CHECK(refused == n);
    int flips = 0, accepted = 0;
    for (int i = 0; i < n; i++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(buf2, buf, (size_t)n);
            buf2[i] ^= (uint8_t)(1u << bit);
            flips++;
            if (craft_state_from_bytes(&back, &w.config, buf2, (size_t)n) == 0) {
                accepted++;
                /* what was accepted is a well-formed world */
                CHECK(back.x > 0 && back.x < 9 && back.y > 0 && back.y < 9);
                CHECK(back.k <= back.task.n);
                CHECK(craft_world_cell(&back, back.x, back.y) == 0);
            } else {
                CHECK(strlen(gr_last_error()) > 10);
            }
        }
    }
    CHECK(accepted < flips);
    /* messages name the element and the byte */
    memcpy(buf2, buf, (size_t)n);
    buf2[1] = 12; /* width */
    CHECK(craft_state_from_bytes(&back, &w.config, buf2, (size_t)n) ==
          GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "width");
    CHECK_STR_CONTAINS(gr_last_error(), "byte 1");
    memcpy(buf2, buf, (size_t)n);
    buf2[5 + 33] = CRAFT_KIND_WOOD; /* the agent's cell (3,3) */
    CHECK(craft_state_from_bytes(&back, &w.config, buf2, (size_t)n) ==
          GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "agent");
    memcpy(buf2, buf, (size_t)n);
    buf2[5 + 0] = CRAFT_KIND_EMPTY; /* a hole in the wall */
    CHECK(craft_state_from_bytes(&back, &w.config, buf2, (size_t)n) ==
          GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "wall");
    uint8_t longer[CRAFT_STATE_MAX_BYTES + 1];
    memcpy(longer, buf, (size_t)n);
    longer[n] = 0;
    CHECK(craft_state_from_bytes(&back, &w.config, longer, (size_t)n + 1) ==
          GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "trailing");
}

int main(void)
{
    test_tables();
    test_tasks();
    test_config();
    test_moves();
    test_use();
    test_recipes();
    test_rewards_and_limits();
    test_worked_example();
    test_observation_reference();
    test_state_bytes();
    return test_report("envs_craft_rules");
}
