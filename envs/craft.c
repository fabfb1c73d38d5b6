/* Craft: names, configuration, tasks, seeds, the single world, state bytes
 * and the text rendering (spec/craft.md). The rules themselves are in
 * craft_internal.h; the batch is in craft_batch.c. */
#include "envs/craft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/random.h"
#include "envs/craft_internal.h"

/* ---- tables ---------------------------------------------------------------- */

static const char *const kind_names[CRAFT_N_KINDS] = {
    "empty",    "boundary", "water", "stone", "toolshed", "workbench",
    "factory",  "iron",     "grass", "wood",  "gold",     "gem",
    "plank",    "stick",    "axe",   "rope",  "bed",      "shears",
    "cloth",    "bridge",   "ladder"};

static const char kind_letters[CRAFT_N_KINDS + 1] = ".#~STBFIGWO*psarbhcdl";

const struct craft_recipe craft_recipes[CRAFT_N_RECIPES] = {
    {CRAFT_KIND_PLANK, CRAFT_KIND_TOOLSHED, 1, {CRAFT_KIND_WOOD, 0}, {1, 0}},
    {CRAFT_KIND_AXE, CRAFT_KIND_TOOLSHED, 2,
     {CRAFT_KIND_STICK, CRAFT_KIND_IRON}, {1, 1}},
    {CRAFT_KIND_ROPE, CRAFT_KIND_TOOLSHED, 1, {CRAFT_KIND_GRASS, 0}, {1, 0}},
    {CRAFT_KIND_STICK, CRAFT_KIND_WORKBENCH, 1, {CRAFT_KIND_WOOD, 0}, {1, 0}},
    {CRAFT_KIND_BED, CRAFT_KIND_WORKBENCH, 2,
     {CRAFT_KIND_PLANK, CRAFT_KIND_GRASS}, {1, 1}},
    {CRAFT_KIND_SHEARS, CRAFT_KIND_WORKBENCH, 2,
     {CRAFT_KIND_STICK, CRAFT_KIND_IRON}, {1, 1}},
    {CRAFT_KIND_CLOTH, CRAFT_KIND_FACTORY, 1, {CRAFT_KIND_GRASS, 0}, {1, 0}},
    {CRAFT_KIND_BRIDGE, CRAFT_KIND_FACTORY, 2,
     {CRAFT_KIND_WOOD, CRAFT_KIND_IRON}, {1, 1}},
    {CRAFT_KIND_LADDER, CRAFT_KIND_FACTORY, 2,
     {CRAFT_KIND_PLANK, CRAFT_KIND_STICK}, {1, 1}},
};

const int8_t craft_dir_dx[CRAFT_N_DIRS] = {0, 0, -1, 1};
const int8_t craft_dir_dy[CRAFT_N_DIRS] = {-1, 1, 0, 0};

static const char *const action_names[CRAFT_N_ACTIONS] = {"down", "up", "left",
                                                         "right", "use"};
static const char *const treasure_names[3] = {"none", "island", "cave"};
static const char *const reward_names[2] = {"dense", "sparse"};

const char *craft_kind_name(int kind)
{
    return kind >= 0 && kind < CRAFT_N_KINDS ? kind_names[kind] : NULL;
}

int craft_kind_from_name(const char *name)
{
    for (int k = 0; k < CRAFT_N_KINDS; k++) {
        if (strcmp(name, kind_names[k]) == 0) {
            return k;
        }
    }
    return -1;
}

char craft_kind_letter(int kind)
{
    return kind >= 0 && kind < CRAFT_N_KINDS ? kind_letters[kind] : '?';
}

const char *craft_action_name(int action)
{
    return action >= 0 && action < CRAFT_N_ACTIONS ? action_names[action]
                                                   : NULL;
}

const char *craft_treasure_name(int treasure)
{
    return treasure >= 0 && treasure < 3 ? treasure_names[treasure] : NULL;
}

const char *craft_reward_name(int reward)
{
    return reward >= 0 && reward < 2 ? reward_names[reward] : NULL;
}

int craft_treasure_from_name(const char *name)
{
    for (int i = 0; i < 3; i++) {
        if (strcmp(name, treasure_names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

int craft_reward_from_name(const char *name)
{
    for (int i = 0; i < 2; i++) {
        if (strcmp(name, reward_names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

/* ---- configuration ------------------------------------------------------- */

#define DEFAULT_PRIMITIVES                                                   \
    ((1u << CRAFT_KIND_IRON) | (1u << CRAFT_KIND_GRASS) |                    \
     (1u << CRAFT_KIND_WOOD) | (1u << CRAFT_KIND_GOLD))
#define PRIMITIVE_MASK (((1u << (CRAFT_LAST_PRIMITIVE + 1)) - 1u) &          \
                        ~((1u << CRAFT_FIRST_PRIMITIVE) - 1u))

void craft_primitives_format(uint32_t mask, char *out, size_t cap)
{
    size_t len = 0;
    if (cap > 0) {
        out[0] = '\0';
    }
    for (int k = 0; k < CRAFT_N_KINDS && len < cap; k++) {
        if ((mask >> k) & 1u) {
            int n = snprintf(out + len, cap - len, "%s%s", len ? "," : "",
                             craft_kind_name(k));
            len = n < 0 ? cap : len + (size_t)n;
        }
    }
}

void craft_config_default(struct craft_config *c)
{
    c->width = 10;
    c->height = 10;
    c->primitives = DEFAULT_PRIMITIVES;
    c->n_each = 1;
    c->workshops = 1;
    c->treasure = CRAFT_TREASURE_NONE;
    c->coarse_view = 1;
    c->max_steps = 64;
    c->reward = CRAFT_REWARD_DENSE;
}

static int popcount32(uint32_t v)
{
    int n = 0;
    while (v) {
        v &= v - 1;
        n++;
    }
    return n;
}

int craft_config_validate(const struct craft_config *c)
{
    if (c->width < CRAFT_MIN_SIDE || c->width > CRAFT_MAX_SIDE) {
        return gr_error(GR_EINVAL, "craft config: width %d is outside %d..%d",
                        c->width, CRAFT_MIN_SIDE, CRAFT_MAX_SIDE);
    }
    if (c->height < CRAFT_MIN_SIDE || c->height > CRAFT_MAX_SIDE) {
        return gr_error(GR_EINVAL,
                        "craft config: height %d is outside %d..%d",
                        c->height, CRAFT_MIN_SIDE, CRAFT_MAX_SIDE);
    }
    if (c->primitives & ~PRIMITIVE_MASK) {
        return gr_error(GR_EINVAL,
                        "craft config: primitives mask 0x%x names a kind "
                        "that is not a primitive (iron, grass, wood, gold, "
                        "gem)",
                        (unsigned)c->primitives);
    }
    if (c->n_each < 0 || c->n_each > CRAFT_MAX_N_EACH) {
        return gr_error(GR_EINVAL, "craft config: n_each %d is outside 0..%d",
                        c->n_each, CRAFT_MAX_N_EACH);
    }
    if (c->workshops != 0 && c->workshops != 1) {
        return gr_error(GR_EINVAL, "craft config: workshops must be 0 or 1");
    }
    if (c->coarse_view != 0 && c->coarse_view != 1) {
        return gr_error(GR_EINVAL, "craft config: coarse_view must be 0 or 1");
    }
    if (craft_treasure_name((int)c->treasure) == NULL) {
        return gr_error(GR_EINVAL, "craft config: treasure %d is unknown",
                        (int)c->treasure);
    }
    if (craft_reward_name((int)c->reward) == NULL) {
        return gr_error(GR_EINVAL, "craft config: reward %d is unknown",
                        (int)c->reward);
    }
    if (c->max_steps < 1 || c->max_steps > CRAFT_MAX_STEPS_LIMIT) {
        return gr_error(GR_EINVAL,
                        "craft config: max_steps %d is outside 1..%d",
                        c->max_steps, CRAFT_MAX_STEPS_LIMIT);
    }
    int interior = (c->width - 2) * (c->height - 2);
    int reserved = 0;
    if (c->treasure != CRAFT_TREASURE_NONE) {
        /* at most a 3 x 2 interior block: the treasure and its ring */
        int bw = c->width - 2 < 3 ? c->width - 2 : 3;
        int bh = c->height - 2 < 2 ? c->height - 2 : 2;
        reserved = bw * bh;
    }
    int place = popcount32(c->primitives) * c->n_each +
                (c->workshops ? 3 : 0) + 1;
    if (place > interior - reserved) {
        return gr_error(GR_EINVAL,
                        "craft config: %d objects and the agent do not fit "
                        "in the %d free interior cells of a %dx%d grid",
                        place - 1, interior - reserved, c->width, c->height);
    }
    return 0;
}

static int parse_int(const char *key, const char *value, int lo, int hi,
                     int *out)
{
    char *end = NULL;
    long v = strtol(value, &end, 10);
    if (end == value || *end != '\0' || v < lo || v > hi) {
        return gr_error(GR_EINVAL,
                        "craft config: %s = '%s' is not an integer in %d..%d",
                        key, value, lo, hi);
    }
    *out = (int)v;
    return 0;
}

static int parse_bool(const char *key, const char *value, int *out)
{
    if (strcmp(value, "on") == 0 || strcmp(value, "true") == 0 ||
        strcmp(value, "1") == 0) {
        *out = 1;
        return 0;
    }
    if (strcmp(value, "off") == 0 || strcmp(value, "false") == 0 ||
        strcmp(value, "0") == 0) {
        *out = 0;
        return 0;
    }
    return gr_error(GR_EINVAL,
                    "craft config: %s = '%s' is not on/off, true/false or 1/0",
                    key, value);
}

int craft_config_set(struct craft_config *c, const char *key,
                     const char *value)
{
    if (strcmp(key, "width") == 0) {
        return parse_int(key, value, CRAFT_MIN_SIDE, CRAFT_MAX_SIDE, &c->width);
    }
    if (strcmp(key, "height") == 0) {
        return parse_int(key, value, CRAFT_MIN_SIDE, CRAFT_MAX_SIDE,
                         &c->height);
    }
    if (strcmp(key, "n_each") == 0) {
        return parse_int(key, value, 0, CRAFT_MAX_N_EACH, &c->n_each);
    }
    if (strcmp(key, "max_steps") == 0) {
        return parse_int(key, value, 1, CRAFT_MAX_STEPS_LIMIT, &c->max_steps);
    }
    if (strcmp(key, "workshops") == 0) {
        return parse_bool(key, value, &c->workshops);
    }
    if (strcmp(key, "coarse_view") == 0) {
        return parse_bool(key, value, &c->coarse_view);
    }
    if (strcmp(key, "treasure") == 0) {
        int t = craft_treasure_from_name(value);
        if (t < 0) {
            return gr_error(GR_EINVAL,
                            "craft config: treasure = '%s' is not none, "
                            "island or cave",
                            value);
        }
        c->treasure = (enum craft_treasure)t;
        return 0;
    }
    if (strcmp(key, "reward") == 0) {
        int r = craft_reward_from_name(value);
        if (r < 0) {
            return gr_error(GR_EINVAL,
                            "craft config: reward = '%s' is not dense or "
                            "sparse",
                            value);
        }
        c->reward = (enum craft_reward)r;
        return 0;
    }
    if (strcmp(key, "primitives") == 0) {
        uint32_t mask = 0;
        const char *p = value;
        if (strcmp(value, "none") == 0) {
            p = "";
        }
        while (*p) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            char name[16];
            int kind = -1;
            if (len > 0 && len < sizeof name) {
                memcpy(name, p, len);
                name[len] = '\0';
                kind = craft_kind_from_name(name);
            }
            if (!craft_kind_is_primitive(kind)) {
                return gr_error(GR_EINVAL,
                                "craft config: primitives = '%s': '%.*s' is "
                                "not a primitive (iron, grass, wood, gold, "
                                "gem)",
                                value, (int)len, p);
            }
            mask |= 1u << kind;
            p += len;
            if (*p == ',') {
                p++;
                if (*p == '\0') {
                    return gr_error(GR_EINVAL,
                                    "craft config: primitives = '%s' ends "
                                    "with a comma",
                                    value);
                }
            }
        }
        c->primitives = mask;
        return 0;
    }
    return gr_error(GR_EINVAL,
                    "craft config: unknown key '%s' (width, height, "
                    "primitives, n_each, workshops, treasure, coarse_view, "
                    "max_steps, reward)",
                    key);
}

/* ---- tasks --------------------------------------------------------------- */

#define G(kind) {CRAFT_OP_GET, CRAFT_KIND_##kind}
#define M(kind) {CRAFT_OP_MAKE, CRAFT_KIND_##kind}

struct ompn_task {
    const char *name;
    int n;
    struct craft_subtask sub[5];
    enum craft_treasure treasure;
};

static const struct ompn_task ompn_tasks[CRAFT_N_OMPN_TASKS] = {
    {"get wood", 1, {G(WOOD)}, CRAFT_TREASURE_NONE},
    {"get grass", 1, {G(GRASS)}, CRAFT_TREASURE_NONE},
    {"get iron", 1, {G(IRON)}, CRAFT_TREASURE_NONE},
    {"make plank", 2, {G(WOOD), M(TOOLSHED)}, CRAFT_TREASURE_NONE},
    {"make stick", 2, {G(WOOD), M(WORKBENCH)}, CRAFT_TREASURE_NONE},
    {"make cloth", 2, {G(GRASS), M(FACTORY)}, CRAFT_TREASURE_NONE},
    {"make rope", 2, {G(GRASS), M(TOOLSHED)}, CRAFT_TREASURE_NONE},
    {"make bridge", 3, {G(IRON), G(WOOD), M(FACTORY)}, CRAFT_TREASURE_NONE},
    {"make bed", 4, {G(WOOD), M(TOOLSHED), G(GRASS), M(WORKBENCH)},
     CRAFT_TREASURE_NONE},
    {"make axe", 4, {G(WOOD), M(WORKBENCH), G(IRON), M(TOOLSHED)},
     CRAFT_TREASURE_NONE},
    {"make shears", 4, {G(WOOD), M(WORKBENCH), G(IRON), M(WORKBENCH)},
     CRAFT_TREASURE_NONE},
    {"get gold", 4, {G(IRON), G(WOOD), M(FACTORY), G(GOLD)},
     CRAFT_TREASURE_ISLAND},
    {"get gem", 5, {G(WOOD), M(WORKBENCH), G(IRON), M(TOOLSHED), G(GEM)},
     CRAFT_TREASURE_CAVE},
};

#undef G
#undef M

/* OCN letters (thesis Table 5.1). */
static const uint8_t letter_kinds[4] = {CRAFT_KIND_WOOD, CRAFT_KIND_GOLD,
                                        CRAFT_KIND_IRON, CRAFT_KIND_GRASS};

const char *craft_ompn_task_name(int id)
{
    return id >= 0 && id < CRAFT_N_OMPN_TASKS ? ompn_tasks[id].name : NULL;
}

char craft_subtask_letter(const struct craft_subtask *s)
{
    if (s->op != CRAFT_OP_GET) {
        return 0;
    }
    for (int i = 0; i < 4; i++) {
        if (s->kind == letter_kinds[i]) {
            return (char)('A' + i);
        }
    }
    return 0;
}

static int subtask_valid(const struct craft_subtask *s)
{
    if (s->op == CRAFT_OP_GET) {
        return craft_kind_is_grabbable(s->kind);
    }
    if (s->op == CRAFT_OP_MAKE) {
        return craft_kind_is_workshop(s->kind);
    }
    return 0;
}

int craft_task_parse(const char *name, struct craft_task *task)
{
    size_t len = strlen(name);
    int letters = len > 0;
    for (size_t i = 0; i < len; i++) {
        if (name[i] < 'A' || name[i] > 'D') {
            letters = 0;
        }
    }
    if (letters) {
        if (len > CRAFT_MAX_SUBTASKS) {
            return gr_error(GR_EINVAL,
                            "task '%s': %zu subtasks, at most %d", name, len,
                            CRAFT_MAX_SUBTASKS);
        }
        memset(task, 0, sizeof *task);
        task->n = (int)len;
        for (size_t i = 0; i < len; i++) {
            task->sub[i].op = CRAFT_OP_GET;
            task->sub[i].kind = letter_kinds[name[i] - 'A'];
        }
        memcpy(task->name, name, len + 1);
        task->treasure = CRAFT_TREASURE_NONE;
        return 0;
    }
    char norm[CRAFT_TASK_NAME_CAP];
    if (len < sizeof norm) {
        for (size_t i = 0; i <= len; i++) {
            norm[i] = (name[i] == '-' || name[i] == '_') ? ' ' : name[i];
        }
        for (int id = 0; id < CRAFT_N_OMPN_TASKS; id++) {
            if (strcmp(norm, ompn_tasks[id].name) == 0) {
                const struct ompn_task *o = &ompn_tasks[id];
                memset(task, 0, sizeof *task);
                task->n = o->n;
                memcpy(task->sub, o->sub, sizeof(o->sub[0]) * (size_t)o->n);
                snprintf(task->name, sizeof task->name, "%s", o->name);
                task->treasure = o->treasure;
                return 0;
            }
        }
    }
    return gr_error(GR_EINVAL,
                    "unknown task '%s': give OCN letters A-D (A wood, B gold, "
                    "C iron, D grass; e.g. AC, CAD) or an OMPN task such as "
                    "'make bed' or make-bed",
                    name);
}

int craft_task_from_subtasks(const struct craft_subtask *sub, int n,
                             const char *name, struct craft_task *task)
{
    if (n < 1 || n > CRAFT_MAX_SUBTASKS) {
        return gr_error(GR_EINVAL, "task: %d subtasks, want 1..%d", n,
                        CRAFT_MAX_SUBTASKS);
    }
    for (int i = 0; i < n; i++) {
        if (!subtask_valid(&sub[i])) {
            return gr_error(GR_EINVAL,
                            "task: subtask %d (op %d, kind %d) is neither "
                            "'get' a grabbable kind nor 'make at' a workshop",
                            i, sub[i].op, sub[i].kind);
        }
    }
    if (name != NULL && strlen(name) >= CRAFT_TASK_NAME_CAP) {
        return gr_error(GR_EINVAL, "task name '%s' is longer than %d bytes",
                        name, CRAFT_TASK_NAME_CAP - 1);
    }
    struct craft_task t;
    memset(&t, 0, sizeof t);
    t.n = n;
    memcpy(t.sub, sub, sizeof(sub[0]) * (size_t)n);
    t.treasure = CRAFT_TREASURE_NONE;
    for (int id = 0; id < CRAFT_N_OMPN_TASKS; id++) {
        const struct ompn_task *o = &ompn_tasks[id];
        if (o->n == n && memcmp(o->sub, sub, sizeof(sub[0]) * (size_t)n) == 0) {
            t.treasure = o->treasure;
            if (name == NULL) {
                snprintf(t.name, sizeof t.name, "%s", o->name);
            }
        }
    }
    if (name != NULL) {
        snprintf(t.name, sizeof t.name, "%s", name);
    } else if (t.name[0] == '\0') {
        int all_letters = 1;
        for (int i = 0; i < n; i++) {
            char c = craft_subtask_letter(&sub[i]);
            if (c == 0) {
                all_letters = 0;
                break;
            }
            t.name[i] = c;
        }
        if (!all_letters) {
            snprintf(t.name, sizeof t.name, "custom");
        } else {
            t.name[n] = '\0';
        }
    }
    *task = t;
    return 0;
}

int craft_subtask_name(const struct craft_subtask *s, char *buf, size_t cap)
{
    if (!subtask_valid(s)) {
        return gr_error(GR_EINVAL, "subtask (op %d, kind %d) is invalid",
                        s->op, s->kind);
    }
    int n = snprintf(buf, cap, "%s %s",
                     s->op == CRAFT_OP_GET ? "get" : "make at",
                     kind_names[s->kind]);
    if (n < 0 || (size_t)n >= cap) {
        return gr_error(GR_EINVAL, "subtask name needs %d bytes, have %zu",
                        n + 1, cap);
    }
    return n;
}

int craft_subtask_parse(const char *name, struct craft_subtask *s)
{
    const char *kind_text = NULL;
    int op = -1;
    if (strncmp(name, "get ", 4) == 0) {
        op = CRAFT_OP_GET;
        kind_text = name + 4;
    } else if (strncmp(name, "make at ", 8) == 0) {
        op = CRAFT_OP_MAKE;
        kind_text = name + 8;
    }
    if (op >= 0) {
        int kind = craft_kind_from_name(kind_text);
        struct craft_subtask t = {(uint8_t)op, (uint8_t)(kind < 0 ? 0 : kind)};
        if (kind >= 0 && subtask_valid(&t)) {
            *s = t;
            return 0;
        }
    }
    return gr_error(GR_EINVAL,
                    "subtask '%s' is neither 'get X' (X grabbable) nor "
                    "'make at W' (W toolshed, workbench or factory)",
                    name);
}

void craft_config_for_task(const struct craft_config *base,
                           const struct craft_task *task,
                           struct craft_config *out)
{
    *out = *base;
    if (task->treasure != CRAFT_TREASURE_NONE) {
        out->treasure = task->treasure;
        out->primitives = (1u << CRAFT_KIND_IRON) | (1u << CRAFT_KIND_GRASS) |
                          (1u << CRAFT_KIND_WOOD);
    }
}

static int task_validate(const struct craft_task *task)
{
    if (task == NULL || task->n < 1 || task->n > CRAFT_MAX_SUBTASKS) {
        return gr_error(GR_EINVAL, "craft: task has %d subtasks, want 1..%d",
                        task == NULL ? 0 : task->n, CRAFT_MAX_SUBTASKS);
    }
    for (int i = 0; i < task->n; i++) {
        if (!subtask_valid(&task->sub[i])) {
            return gr_error(GR_EINVAL, "craft: task '%s': subtask %d invalid",
                            task->name, i);
        }
    }
    return 0;
}

/* ---- seeds ----------------------------------------------------------------- */

uint64_t craft_episode_seed(uint64_t base, uint64_t world, uint64_t episode)
{
    return gr_mix64(gr_mix64(base ^ world) ^ episode);
}

uint32_t craft_task_tag(const char *task_name)
{
    return (uint32_t)gr_fnv1a64(task_name, strlen(task_name));
}

uint64_t craft_demo_seed(uint64_t base, const char *task_name, uint64_t n)
{
    uint64_t key = (0xD3ull << 56) | (uint64_t)craft_task_tag(task_name);
    return gr_mix64(gr_mix64(base ^ key) ^ n);
}

/* ---- the single world ---------------------------------------------------- */

int craft_world_reset(struct craft_world *w, const struct craft_config *config,
                      uint64_t seed, const struct craft_task *task)
{
    int rc = craft_config_validate(config);
    if (rc < 0) {
        return rc;
    }
    rc = task_validate(task);
    if (rc < 0) {
        return rc;
    }
    w->config = *config;
    w->task = *task;
    w->seed = seed;
    w->episode_return = 0.0f;
    struct craft_core s;
    craft_core_reset(w->grid, w->inventory, &s, config, seed);
    w->x = s.x;
    w->y = s.y;
    w->dir = s.dir;
    w->k = 0;
    w->t = 0;
    return 0;
}

int craft_world_blank(struct craft_world *w, const struct craft_config *config,
                      const struct craft_task *task)
{
    int rc = craft_config_validate(config);
    if (rc < 0) {
        return rc;
    }
    rc = task_validate(task);
    if (rc < 0) {
        return rc;
    }
    memset(w, 0, sizeof *w);
    w->config = *config;
    w->task = *task;
    const int W = config->width, H = config->height;
    for (int x = 0; x < W; x++) {
        for (int y = 0; y < H; y++) {
            int edge = x == 0 || y == 0 || x == W - 1 || y == H - 1;
            w->grid[x * H + y] = edge ? CRAFT_KIND_BOUNDARY : CRAFT_KIND_EMPTY;
        }
    }
    w->x = 1;
    w->y = 1;
    w->dir = CRAFT_DIR_DOWN;
    return 0;
}

int craft_world_step(struct craft_world *w, int action, struct craft_step *out)
{
    if (action < 0 || action >= CRAFT_N_ACTIONS) {
        return gr_error(GR_EINVAL, "craft step: action %d is outside 0..%d",
                        action, CRAFT_N_ACTIONS - 1);
    }
    if (craft_world_done(w)) {
        return gr_error(GR_EINVAL,
                        "craft step: the episode is over (t = %d, k = %d of "
                        "%d); reset first",
                        w->t, w->k, w->task.n);
    }
    struct craft_core s = {w->x, w->y, w->dir, w->k, w->t};
    craft_core_step(w->grid, w->config.height, &s, w->inventory, &w->task,
                    w->config.max_steps,
                    w->config.reward == CRAFT_REWARD_SPARSE, action, out);
    w->x = s.x;
    w->y = s.y;
    w->dir = s.dir;
    w->k = s.k;
    w->t = s.t;
    w->episode_return += out->reward;
    return 0;
}

void craft_world_observe(const struct craft_world *w, float *obs)
{
    craft_core_observe(w->grid, w->config.width, w->config.height, w->x, w->y,
                       w->dir, w->inventory, w->config.coarse_view, obs);
}

/* ---- state bytes (MessagePack by hand; envs/ may not use msgpack-c) ------ */

struct mp_out {
    uint8_t *p;
    size_t n, cap;
    int overflow;
};

static void mp_byte(struct mp_out *o, uint8_t b)
{
    if (o->n < o->cap) {
        o->p[o->n] = b;
    } else {
        o->overflow = 1;
    }
    o->n++;
}

static void mp_be(struct mp_out *o, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--) {
        mp_byte(o, (uint8_t)(v >> (8 * i)));
    }
}

static void mp_uint(struct mp_out *o, uint64_t v)
{
    if (v < 128) {
        mp_byte(o, (uint8_t)v);
    } else if (v < 256) {
        mp_byte(o, 0xcc);
        mp_be(o, v, 1);
    } else if (v < 65536) {
        mp_byte(o, 0xcd);
        mp_be(o, v, 2);
    } else if (v <= 0xffffffffull) {
        mp_byte(o, 0xce);
        mp_be(o, v, 4);
    } else {
        mp_byte(o, 0xcf);
        mp_be(o, v, 8);
    }
}

static void mp_array(struct mp_out *o, uint32_t n)
{
    if (n < 16) {
        mp_byte(o, (uint8_t)(0x90 | n));
    } else if (n < 65536) {
        mp_byte(o, 0xdc);
        mp_be(o, n, 2);
    } else {
        mp_byte(o, 0xdd);
        mp_be(o, n, 4);
    }
}

static void mp_bin(struct mp_out *o, const uint8_t *data, uint32_t n)
{
    if (n < 256) {
        mp_byte(o, 0xc4);
        mp_be(o, n, 1);
    } else if (n < 65536) {
        mp_byte(o, 0xc5);
        mp_be(o, n, 2);
    } else {
        mp_byte(o, 0xc6);
        mp_be(o, n, 4);
    }
    if (!o->overflow && o->n + n <= o->cap) {
        memcpy(o->p + o->n, data, n);
    } else {
        o->overflow = 1;
    }
    o->n += n;
}

static void state_encode(const struct craft_world *w, struct mp_out *o)
{
    const int W = w->config.width, H = w->config.height;
    mp_array(o, 8);
    mp_uint(o, (uint64_t)W);
    mp_uint(o, (uint64_t)H);
    mp_bin(o, w->grid, (uint32_t)(W * H));
    mp_array(o, 3);
    mp_uint(o, (uint64_t)w->x);
    mp_uint(o, (uint64_t)w->y);
    mp_uint(o, (uint64_t)w->dir);
    mp_array(o, CRAFT_N_KINDS);
    for (int i = 0; i < CRAFT_N_KINDS; i++) {
        mp_uint(o, w->inventory[i]);
    }
    mp_uint(o, (uint64_t)w->k);
    mp_uint(o, (uint64_t)w->t);
    mp_array(o, (uint32_t)w->task.n);
    for (int i = 0; i < w->task.n; i++) {
        mp_array(o, 2);
        mp_uint(o, w->task.sub[i].op);
        mp_uint(o, w->task.sub[i].kind);
    }
}

int craft_state_bytes(const struct craft_world *w, uint8_t *buf, size_t cap)
{
    struct mp_out o = {buf, 0, cap, 0};
    state_encode(w, &o);
    if (o.overflow) {
        return gr_error(GR_EINVAL,
                        "craft state: needs %zu bytes, the buffer has %zu",
                        o.n, cap);
    }
    return (int)o.n;
}

uint64_t craft_state_hash(const struct craft_world *w)
{
    uint8_t buf[CRAFT_STATE_MAX_BYTES];
    struct mp_out o = {buf, 0, sizeof buf, 0};
    state_encode(w, &o);
    return gr_fnv1a64(buf, o.n);
}

struct mp_in {
    const uint8_t *p;
    size_t n, pos;
};

/* Reads an unsigned integer (any encoding whose value is >= 0). */
static int mp_read_uint(struct mp_in *in, const char *what, uint64_t max,
                        uint64_t *out)
{
    size_t at = in->pos;
    if (in->pos >= in->n) {
        return gr_error(GR_EFORMAT,
                        "craft state: %s: truncated at byte %zu (want an "
                        "unsigned integer)",
                        what, at);
    }
    uint8_t b = in->p[in->pos++];
    int bytes = 0, is_signed = 0;
    uint64_t v = 0;
    if (b < 0x80) {
        v = b;
    } else if (b >= 0xcc && b <= 0xcf) {
        bytes = 1 << (b - 0xcc);
    } else if (b >= 0xd0 && b <= 0xd3) {
        bytes = 1 << (b - 0xd0);
        is_signed = 1;
    } else {
        return gr_error(GR_EFORMAT,
                        "craft state: %s at byte %zu: type byte 0x%02x is not "
                        "an unsigned integer",
                        what, at, b);
    }
    if (bytes > 0) {
        if (in->n - in->pos < (size_t)bytes) {
            return gr_error(GR_EFORMAT,
                            "craft state: %s: truncated at byte %zu", what,
                            at);
        }
        for (int i = 0; i < bytes; i++) {
            v = (v << 8) | in->p[in->pos++];
        }
        if (is_signed && (v >> (8 * bytes - 1)) & 1u) {
            return gr_error(GR_EFORMAT,
                            "craft state: %s at byte %zu is negative", what,
                            at);
        }
    }
    if (v > max) {
        return gr_error(GR_EFORMAT,
                        "craft state: %s at byte %zu is %llu, above %llu",
                        what, at, (unsigned long long)v,
                        (unsigned long long)max);
    }
    *out = v;
    return 0;
}

static int mp_read_array(struct mp_in *in, const char *what, uint32_t *out)
{
    size_t at = in->pos;
    if (in->pos >= in->n) {
        return gr_error(GR_EFORMAT,
                        "craft state: %s: truncated at byte %zu (want an "
                        "array)",
                        what, at);
    }
    uint8_t b = in->p[in->pos++];
    int bytes = 0;
    uint32_t v = 0;
    if ((b & 0xf0) == 0x90) {
        v = b & 0x0f;
    } else if (b == 0xdc) {
        bytes = 2;
    } else if (b == 0xdd) {
        bytes = 4;
    } else {
        return gr_error(GR_EFORMAT,
                        "craft state: %s at byte %zu: type byte 0x%02x is not "
                        "an array",
                        what, at, b);
    }
    if (in->n - in->pos < (size_t)bytes) {
        return gr_error(GR_EFORMAT, "craft state: %s: truncated at byte %zu",
                        what, at);
    }
    for (int i = 0; i < bytes; i++) {
        v = (v << 8) | in->p[in->pos++];
    }
    *out = v;
    return 0;
}

static int expect_array(struct mp_in *in, const char *what, uint32_t want)
{
    size_t at = in->pos;
    uint32_t n = 0;
    int rc = mp_read_array(in, what, &n);
    if (rc < 0) {
        return rc;
    }
    if (n != want) {
        return gr_error(GR_EFORMAT,
                        "craft state: %s at byte %zu has %u elements, want %u",
                        what, at, n, want);
    }
    return 0;
}

int craft_state_from_bytes(struct craft_world *w,
                           const struct craft_config *config,
                           const uint8_t *buf, size_t n)
{
    int rc = craft_config_validate(config);
    if (rc < 0) {
        return rc;
    }
    const int W = config->width, H = config->height;
    struct mp_in in = {buf, n, 0};
    struct craft_world nw;
    memset(&nw, 0, sizeof nw);
    nw.config = *config;
    uint64_t v = 0;
    if ((rc = expect_array(&in, "state (element list)", 8)) < 0) {
        return rc;
    }
    size_t at = in.pos;
    if ((rc = mp_read_uint(&in, "element 0 (width)", 0xffffffffu, &v)) < 0) {
        return rc;
    }
    if (v != (uint64_t)W) {
        return gr_error(GR_EFORMAT,
                        "craft state: element 0 (width) at byte %zu is %llu, "
                        "the config says %d",
                        at, (unsigned long long)v, W);
    }
    at = in.pos;
    if ((rc = mp_read_uint(&in, "element 1 (height)", 0xffffffffu, &v)) < 0) {
        return rc;
    }
    if (v != (uint64_t)H) {
        return gr_error(GR_EFORMAT,
                        "craft state: element 1 (height) at byte %zu is "
                        "%llu, the config says %d",
                        at, (unsigned long long)v, H);
    }
    /* element 2: grid as bin */
    at = in.pos;
    if (in.pos >= in.n) {
        return gr_error(GR_EFORMAT,
                        "craft state: element 2 (grid): truncated at byte %zu",
                        at);
    }
    uint8_t b = in.p[in.pos++];
    int lenbytes = b == 0xc4 ? 1 : b == 0xc5 ? 2 : b == 0xc6 ? 4 : 0;
    if (lenbytes == 0) {
        return gr_error(GR_EFORMAT,
                        "craft state: element 2 (grid) at byte %zu: type "
                        "byte 0x%02x is not bin",
                        at, b);
    }
    if (in.n - in.pos < (size_t)lenbytes) {
        return gr_error(GR_EFORMAT,
                        "craft state: element 2 (grid): truncated at byte %zu",
                        at);
    }
    uint32_t len = 0;
    for (int i = 0; i < lenbytes; i++) {
        len = (len << 8) | in.p[in.pos++];
    }
    if (len != (uint32_t)(W * H)) {
        return gr_error(GR_EFORMAT,
                        "craft state: element 2 (grid) at byte %zu holds %u "
                        "bytes, want W*H = %d",
                        at, len, W * H);
    }
    if (in.n - in.pos < len) {
        return gr_error(GR_EFORMAT,
                        "craft state: element 2 (grid): truncated at byte %zu "
                        "(%u bytes announced, %zu left)",
                        at, len, in.n - in.pos);
    }
    for (int x = 0; x < W; x++) {
        for (int y = 0; y < H; y++) {
            uint8_t kind = in.p[in.pos + (size_t)(x * H + y)];
            size_t off = in.pos + (size_t)(x * H + y);
            int edge = x == 0 || y == 0 || x == W - 1 || y == H - 1;
            if (kind >= CRAFT_N_KINDS) {
                return gr_error(GR_EFORMAT,
                                "craft state: grid cell (%d, %d) at byte %zu "
                                "holds kind %u, above %d",
                                x, y, off, kind, CRAFT_N_KINDS - 1);
            }
            if (edge != (kind == CRAFT_KIND_BOUNDARY)) {
                return gr_error(GR_EFORMAT,
                                "craft state: grid cell (%d, %d) at byte %zu "
                                "holds %s: the wall must be exactly the "
                                "border",
                                x, y, off, kind_names[kind]);
            }
            nw.grid[x * H + y] = kind;
        }
    }
    in.pos += len;
    /* element 3: agent [x, y, dir] */
    if ((rc = expect_array(&in, "element 3 (agent)", 3)) < 0) {
        return rc;
    }
    uint64_t ax, ay, ad;
    at = in.pos;
    if ((rc = mp_read_uint(&in, "agent x", (uint64_t)W - 1, &ax)) < 0 ||
        (rc = mp_read_uint(&in, "agent y", (uint64_t)H - 1, &ay)) < 0 ||
        (rc = mp_read_uint(&in, "agent dir", 3, &ad)) < 0) {
        return rc;
    }
    if (nw.grid[ax * (uint64_t)H + ay] != CRAFT_KIND_EMPTY) {
        return gr_error(GR_EFORMAT,
                        "craft state: agent at byte %zu stands on (%llu, "
                        "%llu), which holds %s, not empty",
                        at, (unsigned long long)ax, (unsigned long long)ay,
                        kind_names[nw.grid[ax * (uint64_t)H + ay]]);
    }
    nw.x = (int)ax;
    nw.y = (int)ay;
    nw.dir = (int)ad;
    /* element 4: inventory */
    if ((rc = expect_array(&in, "element 4 (inventory)", CRAFT_N_KINDS)) < 0) {
        return rc;
    }
    for (int i = 0; i < CRAFT_N_KINDS; i++) {
        char what[48];
        snprintf(what, sizeof what, "inventory[%d] (%s)", i, kind_names[i]);
        if ((rc = mp_read_uint(&in, what, 65535, &v)) < 0) {
            return rc;
        }
        nw.inventory[i] = (uint16_t)v;
    }
    uint64_t k, t;
    size_t k_at = in.pos;
    if ((rc = mp_read_uint(&in, "element 5 (k)", CRAFT_MAX_SUBTASKS, &k)) <
            0 ||
        (rc = mp_read_uint(&in, "element 6 (t)", CRAFT_MAX_STEPS_LIMIT, &t)) <
            0) {
        return rc;
    }
    /* element 7: task */
    at = in.pos;
    uint32_t m = 0;
    if ((rc = mp_read_array(&in, "element 7 (task)", &m)) < 0) {
        return rc;
    }
    if (m < 1 || m > CRAFT_MAX_SUBTASKS) {
        return gr_error(GR_EFORMAT,
                        "craft state: element 7 (task) at byte %zu has %u "
                        "subtasks, want 1..%d",
                        at, m, CRAFT_MAX_SUBTASKS);
    }
    struct craft_subtask sub[CRAFT_MAX_SUBTASKS];
    for (uint32_t i = 0; i < m; i++) {
        uint64_t op, kind;
        at = in.pos;
        if ((rc = expect_array(&in, "task subtask", 2)) < 0 ||
            (rc = mp_read_uint(&in, "subtask op", 1, &op)) < 0 ||
            (rc = mp_read_uint(&in, "subtask kind", CRAFT_N_KINDS - 1,
                               &kind)) < 0) {
            return rc;
        }
        sub[i].op = (uint8_t)op;
        sub[i].kind = (uint8_t)kind;
        if (!subtask_valid(&sub[i])) {
            return gr_error(GR_EFORMAT,
                            "craft state: subtask %u at byte %zu (op %llu, "
                            "kind %s) is neither 'get' a grabbable kind nor "
                            "'make at' a workshop",
                            i, at, (unsigned long long)op,
                            kind_names[kind]);
        }
    }
    if (k > m) {
        return gr_error(GR_EFORMAT,
                        "craft state: element 5 (k) at byte %zu is %llu, "
                        "above the task's %u subtasks",
                        k_at, (unsigned long long)k, m);
    }
    if (in.pos != in.n) {
        return gr_error(GR_EFORMAT,
                        "craft state: %zu trailing bytes after the state at "
                        "byte %zu",
                        in.n - in.pos, in.pos);
    }
    rc = craft_task_from_subtasks(sub, (int)m, NULL, &nw.task);
    if (rc < 0) {
        return rc;
    }
    nw.k = (int)k;
    nw.t = (int)t;
    nw.seed = 0;
    nw.episode_return = 0.0f;
    *w = nw;
    return 0;
}

/* ---- text ------------------------------------------------------------------ */

int craft_world_render_text(const struct craft_world *w, char *buf,
                            size_t cap)
{
    static const char agent_chars[CRAFT_N_DIRS] = {'v', '^', '<', '>'};
    const int W = w->config.width, H = w->config.height;
    size_t need = (size_t)(H + 1) * (size_t)(3 + 2 * W + 1) + 1;
    if (cap < need) {
        return gr_error(GR_EINVAL,
                        "craft text: needs %zu bytes, the buffer has %zu",
                        need, cap);
    }
    size_t n = 0;
    for (int y = H - 1; y >= 0; y--) {
        n += (size_t)snprintf(buf + n, cap - n, "%-2d ", y);
        for (int x = 0; x < W; x++) {
            char c = (x == w->x && y == w->y)
                         ? agent_chars[w->dir & 3]
                         : craft_kind_letter(w->grid[x * H + y]);
            buf[n++] = c;
            buf[n++] = x + 1 < W ? ' ' : '\n';
        }
    }
    n += (size_t)snprintf(buf + n, cap - n, "   ");
    for (int x = 0; x < W; x++) {
        buf[n++] = (char)('0' + x % 10);
        buf[n++] = x + 1 < W ? ' ' : '\n';
    }
    buf[n] = '\0';
    return (int)n;
}
