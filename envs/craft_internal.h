/* envs/craft_internal.h — the rules of Craft as inline functions over a bare
 * state (grid pointer plus a few integers), shared by the single-world API,
 * the batch API and the expert so that all three run the same code. Not a
 * public header: only the .c files of envs/ include it. */
#ifndef GROVE_ENVS_CRAFT_INTERNAL_H
#define GROVE_ENVS_CRAFT_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "core/random.h"
#include "envs/craft.h"

/* The agent part of a state, in plain ints while a step runs. */
struct craft_core {
    int x, y, dir, k, t;
};

/* Offset of the neighbour in direction d in an x-major grid of height H. */
static inline int craft_core_delta(int H, int d)
{
    /* DOWN y-1, UP y+1, LEFT x-1, RIGHT x+1 */
    return d == CRAFT_DIR_DOWN ? -1 : d == CRAFT_DIR_UP ? 1
           : d == CRAFT_DIR_LEFT ? -H : H;
}

/* USE at a workshop: every recipe of the table at `workshop`, in order,
 * fires when the inventory holds its ingredients at that moment (craft.md
 * §5). Returns 1 when at least one fired (the inventory changed). */
static inline int craft_core_craft(uint16_t *inv, int workshop)
{
    int changed = 0;
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
            for (int i = 0; i < rc->n_needs; i++) {
                inv[rc->need[i]] -= rc->need_count[i];
            }
            inv[rc->output] += 1;
            changed = 1;
        }
    }
    return changed;
}

/* One step of craft.md §5-6 on a bare state; the caller has checked that
 * the action is 0..4 and the episode is not over. */
static inline void craft_core_step(uint8_t *grid, int H, struct craft_core *s,
                                   uint16_t *inv,
                                   const struct craft_task *task,
                                   int max_steps, int sparse, int action,
                                   struct craft_step *out)
{
    int k0 = s->k;
    int completed = 0;
    int here = s->x * H + s->y;
    if (action != CRAFT_ACTION_USE) {
        int next = here + craft_core_delta(H, action);
        s->dir = action;
        if (grid[next] == CRAFT_KIND_EMPTY) {
            s->x += craft_dir_dx[action];
            s->y += craft_dir_dy[action];
        }
    } else {
        int f = here + craft_core_delta(H, s->dir);
        int thing = grid[f];
        if (thing >= CRAFT_FIRST_GRABBABLE || craft_kind_is_workshop(thing)) {
            /* the only cases that can change the inventory */
            const struct craft_subtask *sub = &task->sub[k0];
            int before = inv[sub->kind];
            int changed;
            if (thing >= CRAFT_FIRST_GRABBABLE) {
                inv[thing] += 1;
                grid[f] = CRAFT_KIND_EMPTY;
                changed = 1;
            } else {
                changed = craft_core_craft(inv, thing);
            }
            if (sub->op == CRAFT_OP_GET) {
                completed = inv[sub->kind] > before;
            } else {
                completed = changed && thing == sub->kind;
            }
        } else if (thing == CRAFT_KIND_WATER) {
            if (inv[CRAFT_KIND_BRIDGE] > 0) {
                grid[f] = CRAFT_KIND_EMPTY;
            }
        } else if (thing == CRAFT_KIND_STONE) {
            if (inv[CRAFT_KIND_AXE] > 0) {
                grid[f] = CRAFT_KIND_EMPTY;
            }
        }
    }
    s->t += 1;
    s->k = k0 + completed;
    int terminated = s->k >= task->n;
    out->reward = sparse ? (float)terminated : (float)completed;
    out->terminated = terminated;
    out->truncated = !terminated && s->t >= max_steps;
    out->completed = completed;
    out->subtask = k0;
}

/* rand(n) of craft.md §4: one word, multiply-shift. */
static inline int craft_core_rand(struct gr_philox_stream *st, int n)
{
    return (int)(((uint64_t)gr_philox_next_u32(st) * (uint64_t)n) >> 32);
}

/* free() of craft.md §4: a uniformly drawn empty cell (x first). */
static inline int craft_core_free(const uint8_t *grid, int W, int H,
                                  struct gr_philox_stream *st)
{
    for (;;) {
        int x = craft_core_rand(st, W);
        int y = craft_core_rand(st, H);
        if (grid[x * H + y] == CRAFT_KIND_EMPTY) {
            return x * H + y;
        }
    }
}

/* Map generation of craft.md §4 into grid[W*H] and *s; inv[N_KINDS]
 * cleared. The config must be valid. */
static inline void craft_core_reset(uint8_t *grid, uint16_t *inv,
                                    struct craft_core *s,
                                    const struct craft_config *c,
                                    uint64_t seed)
{
    const int W = c->width, H = c->height;
    struct gr_philox_stream st = gr_philox_stream_init(seed, 0);
    memset(grid, CRAFT_KIND_EMPTY, (size_t)(W * H));
    for (int y = 0; y < H; y++) {
        grid[y] = CRAFT_KIND_BOUNDARY;
        grid[(W - 1) * H + y] = CRAFT_KIND_BOUNDARY;
    }
    for (int x = 0; x < W; x++) {
        grid[x * H] = CRAFT_KIND_BOUNDARY;
        grid[x * H + H - 1] = CRAFT_KIND_BOUNDARY;
    }
    if (c->treasure != CRAFT_TREASURE_NONE) {
        int island = c->treasure == CRAFT_TREASURE_ISLAND;
        int gx = 1 + craft_core_rand(&st, W - 2), gy = 1;
        grid[gx * H + gy] = island ? CRAFT_KIND_GOLD : CRAFT_KIND_GEM;
        for (int x = gx - 1; x <= gx + 1; x++) {
            for (int y = gy - 1; y <= gy + 1; y++) {
                if (grid[x * H + y] == CRAFT_KIND_EMPTY) {
                    grid[x * H + y] =
                        island ? CRAFT_KIND_WATER : CRAFT_KIND_STONE;
                }
            }
        }
    }
    for (int kind = CRAFT_FIRST_PRIMITIVE; kind <= CRAFT_LAST_PRIMITIVE;
         kind++) {
        if (c->primitives & (1u << kind)) {
            for (int i = 0; i < c->n_each; i++) {
                grid[craft_core_free(grid, W, H, &st)] = (uint8_t)kind;
            }
        }
    }
    if (c->workshops) {
        for (int kind = CRAFT_FIRST_WORKSHOP; kind <= CRAFT_LAST_WORKSHOP;
             kind++) {
            grid[craft_core_free(grid, W, H, &st)] = (uint8_t)kind;
        }
    }
    int cell = craft_core_free(grid, W, H, &st);
    s->x = cell / H;
    s->y = cell % H;
    s->dir = craft_core_rand(&st, 4);
    s->k = 0;
    s->t = 0;
    memset(inv, 0, sizeof(uint16_t) * CRAFT_N_KINDS);
}

/* High bit of each non-zero byte of v. */
static inline uint64_t craft_core_nonzero_bytes(uint64_t v)
{
    const uint64_t low7 = 0x7f7f7f7f7f7f7f7full;
    return (v | ((v & low7) + low7)) & ~low7;
}

/* Coarse view of craft.md §7 into out[525] (already zero). Block (I, J)
 * covers cells x-12+5I .. x-8+5I, y-12+5J .. y-8+5J; channel `kind` is 1 if
 * any inside cell holds it. Instead of visiting every cell (a store per
 * cell), it uses what every state guarantees: the wall is exactly the
 * border (craft.md §4; USE never changes it). So a block holds boundary iff
 * its clipped rectangle touches the border, holds empty iff it has more
 * interior cells than non-empty ones, and the few non-empty interior cells
 * (objects) are found by scanning the interior 8 bytes at a time. */
static inline void craft_core_observe_coarse(const uint8_t *grid, int W,
                                             int H, int x, int y, float *out)
{
    /* bands b of a block: cells lo = p-12+5b .. lo+4 along one axis; only
     * the bands that meet the grid, [b0, b1], are visited. For each: does
     * it touch the border (the wall), how many interior cells it has. */
    int bx0 = x >= 8 ? 0 : (12 - x) / 5, bx1 = (W + 11 - x) / 5;
    int by0 = y >= 8 ? 0 : (12 - y) / 5, by1 = (H + 11 - y) / 5;
    bx1 = bx1 > 4 ? 4 : bx1;
    by1 = by1 > 4 ? 4 : by1;
    int edge_x[5], edge_y[5], nx[5], ny[5];
    for (int b = bx0; b <= bx1; b++) {
        int lo = x - 12 + 5 * b, hi = lo + 4;
        int ilo = lo < 1 ? 1 : lo, ihi = hi > W - 2 ? W - 2 : hi;
        edge_x[b] = lo <= 0 || hi >= W - 1;
        nx[b] = ihi >= ilo ? ihi - ilo + 1 : 0;
    }
    for (int b = by0; b <= by1; b++) {
        int lo = y - 12 + 5 * b, hi = lo + 4;
        int ilo = lo < 1 ? 1 : lo, ihi = hi > H - 2 ? H - 2 : hi;
        edge_y[b] = lo <= 0 || hi >= H - 1;
        ny[b] = ihi >= ilo ? ihi - ilo + 1 : 0;
    }
    /* objects: non-empty interior cells inside the window */
    uint8_t objects[25] = {0};
    if (W <= 10 && H >= 5 && H <= 10) {
        /* small grids (the default 10 x 10): the window holds the whole
         * grid and the interior fits in 64 bits, one byte per column: one
         * 8-byte load per column, then one loop over the objects */
        const int h = H - 2;
        const uint64_t lanes = h == 8 ? ~0ull : (1ull << (8 * h)) - 1;
        uint64_t all = 0;
        for (int c = 0; c < W - 2; c++) {
            uint64_t v;
            memcpy(&v, grid + (c + 1) * H + 1, 8);
            uint64_t m = craft_core_nonzero_bytes(v & lanes);
            all |= ((m * 0x0002040810204081ull) >> 56) << (8 * c);
        }
        while (all != 0) {
            int b = __builtin_ctzll(all);
            int cx = (b >> 3) + 1, cy = (b & 7) + 1;
            int I = (cx - x + 12) / 5, J = (cy - y + 12) / 5;
            out[(I * 5 + J) * CRAFT_N_KINDS + grid[cx * H + cy]] = 1.0f;
            objects[I * 5 + J]++;
            all &= all - 1;
        }
    } else {
        int cx0 = x - 12 > 1 ? x - 12 : 1;
        int cx1 = x + 12 < W - 2 ? x + 12 : W - 2;
        int cy0 = y - 12 > 1 ? y - 12 : 1;
        int cy1 = y + 12 < H - 2 ? y + 12 : H - 2;
        for (int cx = cx0; cx <= cx1; cx++) {
            const uint8_t *col = grid + cx * H;
            int I = (cx - x + 12) / 5;
            float *o = out + I * CRAFT_VIEW * CRAFT_N_KINDS;
            int cy = cy0;
            for (; cy + 8 <= cy1 + 1; cy += 8) {
                uint64_t v;
                memcpy(&v, col + cy, 8);
                uint64_t m = craft_core_nonzero_bytes(v);
                while (m != 0) {
                    int oy = cy + (__builtin_ctzll(m) >> 3);
                    int J = (oy - y + 12) / 5;
                    o[J * CRAFT_N_KINDS + col[oy]] = 1.0f;
                    objects[I * 5 + J]++;
                    m &= m - 1;
                }
            }
            for (; cy <= cy1; cy++) {
                if (col[cy] != CRAFT_KIND_EMPTY) {
                    int J = (cy - y + 12) / 5;
                    o[J * CRAFT_N_KINDS + col[cy]] = 1.0f;
                    objects[I * 5 + J]++;
                }
            }
        }
    }
    for (int I = bx0; I <= bx1; I++) {
        for (int J = by0; J <= by1; J++) {
            float *o = out + (I * 5 + J) * CRAFT_N_KINDS;
            if (edge_x[I] | edge_y[J]) {
                o[CRAFT_KIND_BOUNDARY] = 1.0f;
            }
            if (nx[I] * ny[J] > objects[I * 5 + J]) {
                o[CRAFT_KIND_EMPTY] = 1.0f;
            }
        }
    }
}

/* The observation of craft.md §7 into obs[CRAFT_OBS_SIZE]: clear, then set
 * only the non-zeros. */
static inline void craft_core_observe(const uint8_t *grid, int W, int H,
                                      int x, int y, int dir,
                                      const uint16_t *inv, int coarse,
                                      float *obs)
{
    memset(obs, 0, sizeof(float) * CRAFT_OBS_SIZE);
    /* local 5x5 view: cell (x+i-2, y+j-2) -> ((i*5)+j)*21 + kind */
    if (x >= 2 && x + 2 < W && y >= 2 && y + 2 < H) {
        /* the whole view inside the grid: fixed bounds, unrolled */
        const uint8_t *g = grid + (x - 2) * H + (y - 2);
        for (int i = 0; i < CRAFT_VIEW; i++) {
            const uint8_t *col = g + i * H;
            float *o = obs + CRAFT_OBS_LOCAL + i * CRAFT_VIEW * CRAFT_N_KINDS;
            for (int j = 0; j < CRAFT_VIEW; j++) {
                o[j * CRAFT_N_KINDS + col[j]] = 1.0f;
            }
        }
    } else {
        int i0 = x >= 2 ? 0 : 2 - x, i1 = x + 2 < W ? 4 : W - 1 - x + 2;
        int j0 = y >= 2 ? 0 : 2 - y, j1 = y + 2 < H ? 4 : H - 1 - y + 2;
        for (int i = i0; i <= i1; i++) {
            const uint8_t *col = grid + (x + i - 2) * H;
            float *o = obs + CRAFT_OBS_LOCAL + i * CRAFT_VIEW * CRAFT_N_KINDS;
            for (int j = j0; j <= j1; j++) {
                o[j * CRAFT_N_KINDS + col[y - 2 + j]] = 1.0f;
            }
        }
    }
    if (coarse) {
        craft_core_observe_coarse(grid, W, H, x, y, obs + CRAFT_OBS_COARSE);
    }
    /* inventory: mostly zeros, so test four counts at a time */
    for (int k4 = 0; k4 < CRAFT_N_KINDS; k4 += 4) {
        int n = CRAFT_N_KINDS - k4 < 4 ? CRAFT_N_KINDS - k4 : 4;
        uint64_t v = 0;
        memcpy(&v, inv + k4, sizeof(uint16_t) * (size_t)n);
        if (v != 0) {
            for (int kind = k4; kind < k4 + n; kind++) {
                obs[CRAFT_OBS_INVENTORY + kind] = (float)inv[kind];
            }
        }
    }
    obs[CRAFT_OBS_DIR + dir] = 1.0f;
}

/* Breadth-first search of craft.md §8 from (x, y, dir) for a state facing
 * `target`; returns the first action of the path found, or -1 when none.
 * The caller handles "already faces the target". */
int craft_core_expert_search(const uint8_t *grid, int W, int H, int x, int y,
                             int dir, int target);

#endif
