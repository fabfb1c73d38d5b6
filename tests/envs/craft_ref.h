/* tests/envs/craft_ref.h — second implementations of parts of craft.md,
 * written from the spec text in the plainest way (no shared code with
 * envs/ beyond the public structs), for the Craft tests to compare with.
 * Slow on purpose: clarity over speed. */
#ifndef GROVE_TESTS_ENVS_CRAFT_REF_H
#define GROVE_TESTS_ENVS_CRAFT_REF_H

#include <stdint.h>
#include <string.h>

#include "core/random.h"
#include "envs/craft.h"

/* Cell (x, y) of a world, or -1 outside the grid. */
static inline int ref_cell(const struct craft_world *w, int x, int y)
{
    if (x < 0 || y < 0 || x >= w->config.width || y >= w->config.height) {
        return -1;
    }
    return w->grid[x * w->config.height + y];
}

/* craft.md §7, literally: every block of the coarse view visits its 25
 * offsets. obs[1075]. */
static inline void ref_observe(const struct craft_world *w, float *obs)
{
    for (int i = 0; i < CRAFT_OBS_SIZE; i++) {
        obs[i] = 0.0f;
    }
    for (int i = 0; i < 5; i++) {
        for (int j = 0; j < 5; j++) {
            int kind = ref_cell(w, w->x + i - 2, w->y + j - 2);
            if (kind >= 0) {
                obs[(i * 5 + j) * 21 + kind] = 1.0f;
            }
        }
    }
    if (w->config.coarse_view) {
        for (int I = 0; I < 5; I++) {
            for (int J = 0; J < 5; J++) {
                for (int dx = 5 * I - 12; dx <= 5 * I - 8; dx++) {
                    for (int dy = 5 * J - 12; dy <= 5 * J - 8; dy++) {
                        int kind = ref_cell(w, w->x + dx, w->y + dy);
                        if (kind >= 0) {
                            obs[525 + (I * 5 + J) * 21 + kind] = 1.0f;
                        }
                    }
                }
            }
        }
    }
    for (int k = 0; k < 21; k++) {
        obs[1050 + k] = (float)w->inventory[k];
    }
    obs[1071 + w->dir] = 1.0f;
}

/* craft.md §4 and §9 from word indices: rand() call number c reads word c
 * of the Philox stream keyed by the seed (gr_philox_word_at), instead of
 * walking a stream object. Fills grid (x-major), *ax, *ay, *adir. */
struct ref_gen {
    uint64_t seed;
    uint64_t next;
};

static inline int ref_rand(struct ref_gen *g, int n)
{
    uint32_t u = gr_philox_word_at(g->seed, g->next++);
    return (int)(((uint64_t)u * (uint64_t)n) >> 32);
}

static inline void ref_generate(const struct craft_config *c, uint64_t seed,
                                uint8_t *grid, int *ax, int *ay, int *adir)
{
    struct ref_gen g = {seed, 0};
    int W = c->width, H = c->height;
#define REF_AT(x, y) grid[(x) * H + (y)]
    for (int x = 0; x < W; x++) {
        for (int y = 0; y < H; y++) {
            REF_AT(x, y) = (x == 0 || y == 0 || x == W - 1 || y == H - 1)
                               ? CRAFT_KIND_BOUNDARY
                               : CRAFT_KIND_EMPTY;
        }
    }
    if (c->treasure != CRAFT_TREASURE_NONE) {
        int gx = 1 + ref_rand(&g, W - 2), gy = 1;
        int gem = c->treasure == CRAFT_TREASURE_CAVE;
        REF_AT(gx, gy) = gem ? CRAFT_KIND_GEM : CRAFT_KIND_GOLD;
        for (int dx = -1; dx <= 1; dx++) {
            for (int dy = -1; dy <= 1; dy++) {
                if (REF_AT(gx + dx, gy + dy) == CRAFT_KIND_EMPTY) {
                    REF_AT(gx + dx, gy + dy) =
                        gem ? CRAFT_KIND_STONE : CRAFT_KIND_WATER;
                }
            }
        }
    }
    /* primitives in increasing index order, n_each each */
    for (int kind = 7; kind <= 11; kind++) {
        if (!(c->primitives & (1u << kind))) {
            continue;
        }
        for (int e = 0; e < c->n_each; e++) {
            for (;;) {
                int x = ref_rand(&g, W);
                int y = ref_rand(&g, H);
                if (REF_AT(x, y) == CRAFT_KIND_EMPTY) {
                    REF_AT(x, y) = (uint8_t)kind;
                    break;
                }
            }
        }
    }
    if (c->workshops) {
        const int shops[3] = {CRAFT_KIND_TOOLSHED, CRAFT_KIND_WORKBENCH,
                              CRAFT_KIND_FACTORY};
        for (int s = 0; s < 3; s++) {
            for (;;) {
                int x = ref_rand(&g, W);
                int y = ref_rand(&g, H);
                if (REF_AT(x, y) == CRAFT_KIND_EMPTY) {
                    REF_AT(x, y) = (uint8_t)shops[s];
                    break;
                }
            }
        }
    }
    for (;;) {
        int x = ref_rand(&g, W);
        int y = ref_rand(&g, H);
        if (REF_AT(x, y) == CRAFT_KIND_EMPTY) {
            *ax = x;
            *ay = y;
            break;
        }
    }
    *adir = ref_rand(&g, 4);
#undef REF_AT
}

/* Counts non-zero floats. */
static inline int ref_nonzeros(const float *obs, int n)
{
    int c = 0;
    for (int i = 0; i < n; i++) {
        c += obs[i] != 0.0f;
    }
    return c;
}

#endif
