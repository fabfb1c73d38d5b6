/* render/deptree.h — a dependency tree drawn as arcs over its words, from
 * plain arrays (render/ never includes nlp/: the caller hands words and
 * head indices). Gold arcs are drawn above the words, predicted arcs below
 * them (green where the predicted head equals the gold one, red where it
 * does not), so an induced tree can be read beside the gold tree of the
 * same sentence.
 *
 * Heads are 0-based with the root pointing to itself (nlp/data/deptree.h's
 * convention); -1 also marks a root. A root gets a vertical stub ending in
 * a dot instead of an arc. An arc from dependent i to head h is half an
 * ellipse between the two words' centres, of height `unit`·|i - h| plus
 * unit/2, with an arrowhead at the dependent.
 *
 * The picture is at least as wide as its one-line legend; a title longer
 * than the picture is clipped.
 *
 * Errors: GR_EINVAL (n < 1, a NULL or empty word, a head out of range,
 * naming which array and word), GR_ENOMEM; as core/error.h. The image is
 * allocated by render_deptree_draw (render_image_free it).
 *
 *   const char *w[] = {"the", "cat", "sat"};
 *   int32_t gold[] = {1, 2, 2}, pred[] = {1, 2, 2};
 *   render_deptree_png("tree.png", w, 3, gold, pred, "sentence 4", 0);
 */
#ifndef GROVE_RENDER_DEPTREE_H
#define GROVE_RENDER_DEPTREE_H

#include <stdint.h>

#include "render/image.h"

#define RENDER_DEPTREE_GOLD 0x2a5ac8ffu  /* blue */
#define RENDER_DEPTREE_RIGHT 0x1e9632ffu /* predicted = gold: green */
#define RENDER_DEPTREE_WRONG 0xd22828ffu /* predicted != gold: red */
#define RENDER_DEPTREE_BG 0xffffffffu

/* Where things are, for a caller that annotates the picture and for tests. */
struct render_deptree_layout {
    int width, height;
    int word_top;  /* y of the top of the word row */
    int gold_base; /* y where gold arcs leave the words (above them) */
    int pred_base; /* y where predicted arcs leave the words (below) */
    int unit;      /* arc height per word of distance, pixels */
};

/* The layout of n words; xc[n] receives each word's centre x (may be
 * NULL). gold_span / pred_span: the longest arc (in words) above / below,
 * 0 when there are none. */
int render_deptree_layout(const char *const *words, int32_t n,
                          int32_t gold_span, int32_t pred_span, float *xc,
                          struct render_deptree_layout *out);

/* Draws the sentence into *img (allocated here). gold or pred may be NULL
 * (no arcs on that side); title may be NULL. */
int render_deptree_draw(struct render_image *img, const char *const *words,
                        int32_t n, const int32_t *gold, const int32_t *pred,
                        const char *title);

/* render_deptree_draw, then render/pngfile.h's atomic write (refusing an
 * existing path unless force). */
int render_deptree_png(const char *path, const char *const *words, int32_t n,
                       const int32_t *gold, const int32_t *pred,
                       const char *title, int force);

#endif
