/* render/deptree.h — a dependency tree drawn as arcs over words, from
 * plain arrays (words, heads): the predicted tree above the words, the
 * gold tree mirrored below them, each predicted arc green when the gold
 * has it (same head) and red when not, gold arcs grey; an arrowhead on the
 * dependent; a root as a vertical stroke. render/ knows nothing of nlp/:
 * the caller hands 0-based heads with the root pointing to itself.
 *
 * Layout (scale 2 text): words left to right with 16-pixel gaps; an arc
 * between positions i and j rises 14 + 12·|i − j| pixels (capped so the
 * image stays below RENDER_IMAGE_MAX_SIDE). The image is allocated here
 * (render_image_free by the caller), white, with an optional title line.
 *
 * Errors: 0, or a negative code (core/error.h) for n < 1, a head out of
 * range, or an image that cannot be allocated. Thread-safe.
 *
 *   struct render_image img;
 *   render_deptree(&img, words, n, pred, gold, "sentence 3: chuliu");
 *   render_png_write("tree.png", &img, 0);
 *   render_image_free(&img);
 */
#ifndef GROVE_RENDER_DEPTREE_H
#define GROVE_RENDER_DEPTREE_H

#include <stdint.h>

#include "render/image.h"

/* colours as 0xRRGGBBAA (render_rgba) */
#define RENDER_DEPTREE_OK 0x228B22FFu   /* predicted arc in the gold tree */
#define RENDER_DEPTREE_BAD 0xD03030FFu  /* predicted arc not in the gold */
#define RENDER_DEPTREE_GOLD 0x808080FFu /* gold arcs, below the words */

/* words [n], pred [n] (or NULL: gold only), gold [n] (or NULL: no lower
 * half, every predicted arc drawn green); title may be NULL. */
int render_deptree(struct render_image *img, const char *const *words,
                   int32_t n, const int32_t *pred, const int32_t *gold,
                   const char *title);

/* The x centre of word i, the y of the top of the words' line, and the
 * ys where arcs start above (top) and below (bottom) the words, in an
 * image drawn by render_deptree with the same arguments (for tests). */
void render_deptree_layout(const char *const *words, int32_t n,
                           const int32_t *pred, const int32_t *gold,
                           const char *title, int32_t i, float *cx,
                           float *top, float *bottom);

/* How high an arc between positions i and j rises, in pixels. */
int render_deptree_rise(int32_t i, int32_t j);

#endif
