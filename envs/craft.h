/* envs/craft.h — the Craft gridworld of spec/craft.md, in pure C.
 *
 * A W x H grid (default 10 x 10) ringed by a wall, one agent with a facing
 * direction, 21 kinds of objects (craft.md §2), five actions (four moves and
 * USE), tasks made of "get X" / "make at W" subtasks (the OCN letter tasks
 * "AC", "CAD", ... and the OMPN catalogue), dense or sparse reward, and the
 * 1075-float observation of craft.md §7 written into a caller's buffer.
 * Everything is a pure function of (config, seed, task) and the actions.
 *
 * Two APIs over the same rules:
 *   - single world: struct craft_world (a plain value, ~1.2 KB, no heap);
 *     craft_world_reset / craft_world_step / craft_world_observe;
 *   - batch: struct craft_batch, N worlds in struct-of-arrays form; one
 *     craft_batch_step call steps all of them, resets finished worlds in
 *     place with the per-world seed stream of craft.md §9 and reports each
 *     finished episode's return, length and success.
 * The scripted expert of craft.md §8 is in envs/expert.h.
 *
 * Coordinates: x grows right, y grows UP (UP = y + 1); per-cell arrays are
 * x-major: cell (x, y) is grid[x * H + y] (craft.md §2).
 *
 * Memory: a craft_world is the caller's (stack or embedded); nothing in it
 * points elsewhere, so it can be copied with `=` or memcpy. A craft_batch
 * owns its arrays (allocated once by craft_batch_init, released by
 * craft_batch_free); stepping never allocates. Observation, reward and flag
 * buffers are always the caller's.
 *
 * Threads: every function is reentrant and keeps no global state; one world
 * or batch must not be used by two threads at once, except that
 * craft_batch_step_range may run on disjoint ranges of one batch from
 * different threads.
 *
 * Errors: functions that can fail on input (bad config, task name, action,
 * state bytes, too-small buffer) return a negative GR_E* code and leave a
 * message for gr_last_error() naming the field, flag or byte offset
 * (core/error.h). They never abort and never print.
 *
 * Usage:
 *   struct craft_config cfg;  craft_config_default(&cfg);
 *   struct craft_task task;   if (craft_task_parse("AC", &task) < 0) ...;
 *   struct craft_world w;     craft_world_reset(&w, &cfg, seed, &task);
 *   float obs[CRAFT_OBS_SIZE];
 *   struct craft_step st;
 *   do { craft_world_observe(&w, obs);
 *        craft_world_step(&w, policy(obs), &st); }
 *   while (!st.terminated && !st.truncated);
 */
#ifndef GROVE_ENVS_CRAFT_H
#define GROVE_ENVS_CRAFT_H

#include <stddef.h>
#include <stdint.h>

/* ---- kinds (craft.md §2) ------------------------------------------------ */

/* Index = value stored in a grid cell = one-hot channel of the observation. */
enum craft_kind {
    CRAFT_KIND_EMPTY = 0,
    CRAFT_KIND_BOUNDARY = 1,  /* environment */
    CRAFT_KIND_WATER = 2,     /* environment */
    CRAFT_KIND_STONE = 3,     /* environment */
    CRAFT_KIND_TOOLSHED = 4,  /* workshop */
    CRAFT_KIND_WORKBENCH = 5, /* workshop */
    CRAFT_KIND_FACTORY = 6,   /* workshop */
    CRAFT_KIND_IRON = 7,      /* primitive */
    CRAFT_KIND_GRASS = 8,     /* primitive */
    CRAFT_KIND_WOOD = 9,      /* primitive */
    CRAFT_KIND_GOLD = 10,     /* primitive */
    CRAFT_KIND_GEM = 11,      /* primitive */
    CRAFT_KIND_PLANK = 12,    /* crafted */
    CRAFT_KIND_STICK = 13,
    CRAFT_KIND_AXE = 14,
    CRAFT_KIND_ROPE = 15,
    CRAFT_KIND_BED = 16,
    CRAFT_KIND_SHEARS = 17,
    CRAFT_KIND_CLOTH = 18,
    CRAFT_KIND_BRIDGE = 19,
    CRAFT_KIND_LADDER = 20,
    CRAFT_N_KINDS = 21
};

#define CRAFT_FIRST_WORKSHOP CRAFT_KIND_TOOLSHED  /* workshops: 4..6 */
#define CRAFT_LAST_WORKSHOP CRAFT_KIND_FACTORY
#define CRAFT_FIRST_PRIMITIVE CRAFT_KIND_IRON     /* primitives: 7..11 */
#define CRAFT_LAST_PRIMITIVE CRAFT_KIND_GEM
#define CRAFT_FIRST_GRABBABLE CRAFT_KIND_IRON     /* grabbable: 7..20 */

/* Lower-case name ("wood", "toolshed", ...); NULL when kind is out of range. */
const char *craft_kind_name(int kind);

/* Kind index of a name as craft_kind_name spells it, or -1. */
int craft_kind_from_name(const char *name);

/* The kinds of a primitives mask (bit k = kind k) as craft_config_set's
 * "primitives" value, "iron,grass,wood,gold", into out[cap] (cut short if
 * cap is too small; 128 bytes hold every kind). */
void craft_primitives_format(uint32_t mask, char *out, size_t cap);

/* One character for text renderings (craft.md §11: '.' empty, '#' wall,
 * T toolshed, B workbench, F factory, I iron, G grass, W wood, O gold; grove
 * adds '~' water, 'S' stone, '*' gem and lower-case letters for crafted
 * items: p plank, s stick, a axe, r rope, b bed, h shears, c cloth,
 * d bridge, l ladder). '?' when out of range. */
char craft_kind_letter(int kind);

static inline int craft_kind_is_grabbable(int kind)
{
    return kind >= CRAFT_FIRST_GRABBABLE && kind < CRAFT_N_KINDS;
}
static inline int craft_kind_is_workshop(int kind)
{
    return kind >= CRAFT_FIRST_WORKSHOP && kind <= CRAFT_LAST_WORKSHOP;
}
static inline int craft_kind_is_primitive(int kind)
{
    return kind >= CRAFT_FIRST_PRIMITIVE && kind <= CRAFT_LAST_PRIMITIVE;
}

/* ---- recipes (craft.md §2, table "ompn") -------------------------------- */

#define CRAFT_N_RECIPES 9
#define CRAFT_RECIPES_NAME "ompn" /* the table's name in a replay env_config */

struct craft_recipe {
    uint8_t output;      /* kind made, yield 1 */
    uint8_t workshop;    /* kind of the workshop where it is made */
    uint8_t n_needs;     /* 1 or 2 */
    uint8_t need[2];     /* ingredient kinds */
    uint8_t need_count[2];
};

/* The recipe table in checking order (file order of OMPN recipes.yaml). */
extern const struct craft_recipe craft_recipes[CRAFT_N_RECIPES];

/* ---- actions and directions (craft.md §5) -------------------------------- */

enum craft_action {
    CRAFT_ACTION_DOWN = 0, /* (0, -1) */
    CRAFT_ACTION_UP = 1,   /* (0, +1) */
    CRAFT_ACTION_LEFT = 2, /* (-1, 0) */
    CRAFT_ACTION_RIGHT = 3,/* (+1, 0) */
    CRAFT_ACTION_USE = 4,
    CRAFT_N_ACTIONS = 5
};

/* Facing directions share the move actions' indices. */
enum craft_dir {
    CRAFT_DIR_DOWN = 0,
    CRAFT_DIR_UP = 1,
    CRAFT_DIR_LEFT = 2,
    CRAFT_DIR_RIGHT = 3,
    CRAFT_N_DIRS = 4
};

/* Unit vectors of the directions, indexed by enum craft_dir. */
extern const int8_t craft_dir_dx[CRAFT_N_DIRS];
extern const int8_t craft_dir_dy[CRAFT_N_DIRS];

/* "down", "up", "left", "right", "use"; NULL when out of range. */
const char *craft_action_name(int action);

/* ---- observation layout (craft.md §7) ------------------------------------ */

#define CRAFT_VIEW 5                                    /* 5 x 5 views */
#define CRAFT_OBS_LOCAL 0                               /* [0, 525) */
#define CRAFT_OBS_COARSE (CRAFT_VIEW * CRAFT_VIEW * CRAFT_N_KINDS) /* 525 */
#define CRAFT_OBS_INVENTORY (2 * CRAFT_OBS_COARSE)      /* 1050 */
#define CRAFT_OBS_DIR (CRAFT_OBS_INVENTORY + CRAFT_N_KINDS) /* 1071 */
#define CRAFT_OBS_SIZE (CRAFT_OBS_DIR + CRAFT_N_DIRS)   /* 1075 */

/* ---- configuration (craft.md §3) ----------------------------------------- */

#define CRAFT_MIN_SIDE 3
#define CRAFT_MAX_SIDE 32
#define CRAFT_MAX_CELLS (CRAFT_MAX_SIDE * CRAFT_MAX_SIDE)
#define CRAFT_MAX_N_EACH 64
#define CRAFT_MAX_STEPS_LIMIT 65535

enum craft_treasure {
    CRAFT_TREASURE_NONE = 0,
    CRAFT_TREASURE_ISLAND = 1, /* gold on the lowest interior row, ringed by water */
    CRAFT_TREASURE_CAVE = 2,   /* gem ringed by stone */
};

enum craft_reward {
    CRAFT_REWARD_DENSE = 0, /* +1 per subtask completed in order */
    CRAFT_REWARD_SPARSE = 1 /* +1 only when the last subtask completes */
};

struct craft_config {
    int width, height;     /* grid size including the wall: 3..32 (10, 10) */
    uint32_t primitives;   /* bit (1u << kind) per scattered primitive kind,
                              7..11, placed in increasing index order
                              (iron, grass, wood, gold) */
    int n_each;            /* copies of each scattered primitive (1), 0..64 */
    int workshops;         /* 1: one toolshed, workbench, factory (1) */
    enum craft_treasure treasure; /* (none) */
    int coarse_view;       /* 1: fill the coarse 5x5 summary (1) */
    int max_steps;         /* time limit T_max, 1..65535 (64) */
    enum craft_reward reward; /* (dense) */
};

/* The defaults of craft.md §3. */
void craft_config_default(struct craft_config *c);

/* 0, or GR_EINVAL naming the first bad field (also: more objects to place
 * than free interior cells). */
int craft_config_validate(const struct craft_config *c);

/* Sets one field from text, with craft.md §3's key names: width, height,
 * n_each, max_steps (integers), workshops, coarse_view (on/off, true/false,
 * 1/0), treasure (none/island/cave), reward (dense/sparse), primitives
 * (comma-separated kind names, e.g. "iron,grass,wood"). GR_EINVAL naming the
 * key and value when either is unknown or out of range. Does not run
 * craft_config_validate (call it after the last key). */
int craft_config_set(struct craft_config *c, const char *key,
                     const char *value);

/* "none"/"island"/"cave" and "dense"/"sparse"; NULL when out of range. */
const char *craft_treasure_name(int treasure);
const char *craft_reward_name(int reward);
/* Inverse of the above, or -1. */
int craft_treasure_from_name(const char *name);
int craft_reward_from_name(const char *name);

/* ---- tasks (craft.md §6) -------------------------------------------------- */

#define CRAFT_MAX_SUBTASKS 16
#define CRAFT_TASK_NAME_CAP 32 /* bytes including the terminating NUL */
#define CRAFT_N_OMPN_TASKS 13

enum craft_op {
    CRAFT_OP_GET = 0,  /* get X: X grabbable (7..20) */
    CRAFT_OP_MAKE = 1  /* make at W: W a workshop (4..6) */
};

struct craft_subtask {
    uint8_t op;   /* enum craft_op */
    uint8_t kind; /* X or W */
};

struct craft_task {
    int n;                                         /* m, 1..16 subtasks */
    struct craft_subtask sub[CRAFT_MAX_SUBTASKS];
    char name[CRAFT_TASK_NAME_CAP]; /* canonical name: "AC", "make bed", or
                                       "custom" for a task built from parts */
    enum craft_treasure treasure;   /* treasure the task needs (OMPN get
                                       gold/gem), else NONE */
};

/* Parses a task name:
 *   - OCN letters, 1..16 of A (get wood), B (get gold), C (get iron),
 *     D (get grass), upper case: "AC", "CAD", "DCA";
 *   - an OMPN catalogue name (craft.md §6.4): "get wood", "make bed", ...;
 *     '-' or '_' may stand for the space ("make-bed"); the canonical name
 *     (with the space) is stored in task->name.
 * GR_EINVAL with a message quoting the name otherwise. */
int craft_task_parse(const char *name, struct craft_task *task);

/* Builds a task from subtasks (for example from a replay's task array);
 * checks each subtask (get: grabbable kind; make: workshop). name may be
 * NULL: the name becomes the letters when every subtask is an OCN letter,
 * the OMPN name when the list equals a catalogue task, else "custom". */
int craft_task_from_subtasks(const struct craft_subtask *sub, int n,
                             const char *name, struct craft_task *task);

/* Name of OMPN catalogue task `id` (row order of craft.md §6.4, from 0:
 * "get wood" ... "get gem"), or NULL. */
const char *craft_ompn_task_name(int id);

/* "get wood" / "make at toolshed" into buf[cap]; returns the length, or
 * GR_EINVAL when the subtask is invalid or cap is too small. */
int craft_subtask_name(const struct craft_subtask *s, char *buf, size_t cap);

/* Inverse of craft_subtask_name. */
int craft_subtask_parse(const char *name, struct craft_subtask *s);

/* The OCN letter of a subtask ('A'..'D') or 0 when it has none. */
char craft_subtask_letter(const struct craft_subtask *s);

/* `base` adjusted to what `task` needs: for OMPN "get gold" treasure =
 * island and primitives = iron, grass, wood; for "get gem" treasure = cave,
 * same primitives (craft.md §6.4); otherwise `base` unchanged. */
void craft_config_for_task(const struct craft_config *base,
                           const struct craft_task *task,
                           struct craft_config *out);

/* ---- seeds (craft.md §9) -------------------------------------------------- */

/* Seed of episode `episode` of world `world` of a run with base seed S:
 * mix64(mix64(S ^ world) ^ episode). */
uint64_t craft_episode_seed(uint64_t base, uint64_t world, uint64_t episode);

/* tau: the low 32 bits of FNV-1a 64 of a task name (the canonical name). */
uint32_t craft_task_tag(const char *task_name);

/* Seed of demonstration `n` of a task:
 * mix64(mix64(S ^ (0xD3 << 56 | tau)) ^ n). */
uint64_t craft_demo_seed(uint64_t base, const char *task_name, uint64_t n);

/* ---- the single world ----------------------------------------------------- */

struct craft_world {
    struct craft_config config;
    struct craft_task task;
    uint64_t seed;     /* the seed of this episode's reset (0 if hand-built) */
    int x, y;          /* agent position, inside the wall */
    int dir;           /* enum craft_dir */
    int k;             /* subtask progress: index of the subtask worked on */
    int t;             /* steps taken in this episode */
    float episode_return; /* sum of rewards so far */
    uint16_t inventory[CRAFT_N_KINDS];
    uint8_t grid[CRAFT_MAX_CELLS]; /* grid[x * height + y], kind indices */
};

/* Result of one step. */
struct craft_step {
    float reward;   /* r_t (craft.md §6.2) */
    int terminated; /* 1 when k reached m on this step (task done) */
    int truncated;  /* 1 when t reached max_steps without the task done */
    int completed;  /* 1 when this step completed a subtask */
    int subtask;    /* k before the step (the replay's "s") */
};

/* Generates the map of craft.md §4 from (config, seed, task): a pure
 * function of its arguments. GR_EINVAL for a bad config or task. */
int craft_world_reset(struct craft_world *w, const struct craft_config *config,
                      uint64_t seed, const struct craft_task *task);

/* A blank world for hand-built maps: the wall, an empty interior, the agent
 * at (1, 1) facing DOWN, empty inventory, k = t = 0, seed 0. Place objects
 * with craft_world_set and move the agent by writing x, y, dir.
 * Invariants every state keeps (the rules never break them; a caller who
 * edits a world by hand must keep them too, as craft_state_from_bytes
 * checks them): the border cells hold exactly the wall, the agent stands
 * on an empty interior cell, 0 <= k <= task.n. The observation and the
 * expert rely on them. */
int craft_world_blank(struct craft_world *w, const struct craft_config *config,
                      const struct craft_task *task);

static inline int craft_world_cell(const struct craft_world *w, int x, int y)
{
    return w->grid[x * w->config.height + y];
}
static inline void craft_world_set(struct craft_world *w, int x, int y,
                                   int kind)
{
    w->grid[x * w->config.height + y] = (uint8_t)kind;
}

/* 1 when the episode is over (k = m or t = max_steps). */
static inline int craft_world_done(const struct craft_world *w)
{
    return w->k >= w->task.n || w->t >= w->config.max_steps;
}

/* One step with `action` (0..4) per craft.md §5-6. GR_EINVAL (world
 * unchanged) when action is out of range or the episode is already over. */
int craft_world_step(struct craft_world *w, int action, struct craft_step *out);

/* Writes the observation of the current state: obs[CRAFT_OBS_SIZE] f32,
 * caller-owned; every element is written (zeros included). */
void craft_world_observe(const struct craft_world *w, float *obs);

/* ---- state bytes and hash (craft.md §9.1) --------------------------------- */

/* Bytes of any state: 8-element MessagePack array, smallest encodings. */
#define CRAFT_STATE_MAX_BYTES (CRAFT_MAX_CELLS + 256)

/* Writes the state's bytes into buf[cap]; returns the length (> 0), or
 * GR_EINVAL when cap is too small (CRAFT_STATE_MAX_BYTES always suffices). */
int craft_state_bytes(const struct craft_world *w, uint8_t *buf, size_t cap);

/* FNV-1a 64 of the state's bytes. */
uint64_t craft_state_hash(const struct craft_world *w);

/* Rebuilds a world from state bytes (a replay keyframe) under `config`
 * (which supplies what the bytes lack: max_steps, reward, coarse_view, ...).
 * Accepts any conforming MessagePack integer encoding. Checks everything: the
 * array shape, width/height equal to the config's, kinds < 21, a wall on
 * the border, the agent inside on an empty cell, dir < 4, k <= m, valid
 * subtasks, no trailing bytes. GR_EFORMAT naming the element and byte offset
 * otherwise; *w is untouched on error. seed is set to 0 and
 * episode_return to 0 (not part of the state). */
int craft_state_from_bytes(struct craft_world *w,
                           const struct craft_config *config,
                           const uint8_t *buf, size_t n);

/* ---- text rendering (craft.md §11) ---------------------------------------- */

/* Enough for any grid. */
#define CRAFT_TEXT_CAP ((CRAFT_MAX_SIDE + 1) * (2 * CRAFT_MAX_SIDE + 8) + 1)

/* Draws the grid as text, row y = H-1 on top, each row "y  c c c ...\n",
 * then a line of column numbers (x mod 10); the agent is ^ v < > by its
 * direction. Returns the length written (NUL-terminated), or GR_EINVAL when
 * cap is too small. */
int craft_world_render_text(const struct craft_world *w, char *buf,
                            size_t cap);

/* ---- the batch (struct of arrays) ----------------------------------------- */

/* Totals of finished episodes, accumulated by the step calls it is given
 * to (PufferLib-style log). Caller-owned; zero it to start. */
struct craft_log {
    uint64_t episodes;
    uint64_t successes;   /* terminated episodes */
    uint64_t steps;       /* sum of finished episodes' lengths */
    double return_sum;
};

/* Per-step outputs of craft_batch_step; every pointer is caller-owned and
 * indexed by world j in [0, n); any may be NULL to skip it. A finished
 * episode's success is terminated[j] (task done; truncated = time limit). */
struct craft_batch_out {
    float *obs;              /* [n, CRAFT_OBS_SIZE]: observation after the
                                step (of the new episode after a reset) */
    float *reward;           /* [n] */
    uint8_t *terminated;     /* [n] */
    uint8_t *truncated;      /* [n] */
    float *episode_return;   /* [n] finished episode's return, set where
                                terminated or truncated */
    uint16_t *episode_length;/* [n] its length, idem */
};

struct craft_batch {
    int n;                    /* worlds */
    int cells;                /* W * H */
    struct craft_config config;
    int n_tasks;
    struct craft_task *tasks; /* [n_tasks]; world j runs tasks[j % n_tasks] */
    uint64_t base_seed;       /* S of craft.md §9 */
    /* state, struct of arrays; world j's slice */
    uint8_t *grid;            /* [n, W*H] x-major, like craft_world.grid */
    uint8_t *x, *y, *dir;     /* [n] */
    uint8_t *k;               /* [n] subtask progress */
    uint8_t *task;            /* [n] index into tasks */
    uint16_t *t;              /* [n] steps taken in the current episode */
    uint16_t *inventory;      /* [n, CRAFT_N_KINDS] */
    float *ret;               /* [n] return of the current episode so far */
    uint64_t *episode;        /* [n] episode number of world j (n of §9) */
    uint64_t *seed;           /* [n] seed of world j's current episode */
};

/* Allocates n worlds (1..65535) running tasks[j % n_tasks] (1..255 tasks,
 * copied) under `config`, and resets them all: world j starts episode 0
 * with seed craft_episode_seed(base_seed, j, 0). GR_EINVAL / GR_ENOMEM.
 * Writes the first observations into obs[n, CRAFT_OBS_SIZE] unless NULL. */
int craft_batch_init(struct craft_batch *b, const struct craft_config *config,
                     const struct craft_task *tasks, int n_tasks, int n,
                     uint64_t base_seed, float *obs);

void craft_batch_free(struct craft_batch *b);

/* Steps every world with actions[n] (values 0..4). A world whose episode
 * ends (terminated or truncated) adds it to *log (unless NULL), reports its
 * return and length in out, and is reset to its next episode
 * (craft_episode_seed(base_seed, j, episode + 1)) before its observation is
 * written. GR_EINVAL naming the world when an action is out of range (no
 * world is stepped then). */
int craft_batch_step(struct craft_batch *b, const uint8_t *actions,
                     const struct craft_batch_out *out, struct craft_log *log);

/* Like craft_batch_step for worlds [begin, end) only (actions and out are
 * still indexed by the global j), so threads can share a batch. */
int craft_batch_step_range(struct craft_batch *b, int begin, int end,
                           const uint8_t *actions,
                           const struct craft_batch_out *out,
                           struct craft_log *log);

/* Writes world j's observation: obs[CRAFT_OBS_SIZE]. */
void craft_batch_observe(const struct craft_batch *b, int j, float *obs);

/* Copies world j into a single world (for the expert, the renderer,
 * replays); seed and episode_return are world j's. */
void craft_batch_get(const struct craft_batch *b, int j, struct craft_world *w);

#endif
