/* Dependency trees as arcs over words (render/deptree.h). */
#include "render/deptree.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "render/font.h"
#include "render/pngfile.h"

#define TEXT_SCALE 2
#define MARGIN 16
#define CELL_PAD 16
#define CELL_MIN 28
#define UNIT 14
#define WORD_GAP 6 /* between the word row and the arcs' feet */
#define LINE_W 2.0f
#define LEGEND "gold above, predicted below (green: right head, red: wrong)"

static int arc_height(int32_t span) { return UNIT * span + UNIT / 2; }

static int32_t head_of(const int32_t *heads, int32_t i)
{
    return heads[i] < 0 ? i : heads[i];
}

static int32_t max_span(const int32_t *heads, int32_t n)
{
    int32_t m = 0;
    for (int32_t i = 0; heads && i < n; i++) {
        int32_t s = abs(head_of(heads, i) - i);
        m = s > m ? s : m;
    }
    return m;
}

static int check_heads(const int32_t *heads, int32_t n, const char *which)
{
    for (int32_t i = 0; heads && i < n; i++) {
        if (heads[i] < -1 || heads[i] >= n) {
            return gr_error(GR_EINVAL, "render_deptree: %s head %d of word %d "
                            "outside [0, %d) (or -1 for a root)", which,
                            heads[i], i, n);
        }
    }
    return 0;
}

int render_deptree_layout(const char *const *words, int32_t n,
                          int32_t gold_span, int32_t pred_span, float *xc,
                          struct render_deptree_layout *out)
{
    memset(out, 0, sizeof *out);
    if (words == NULL || n < 1) {
        return gr_error(GR_EINVAL, "render_deptree: no words (n = %d)", n);
    }
    int64_t x = MARGIN;
    for (int32_t i = 0; i < n; i++) {
        if (words[i] == NULL || words[i][0] == '\0') {
            return gr_error(GR_EINVAL, "render_deptree: word %d is empty", i);
        }
        int w = render_text_width(words[i], TEXT_SCALE) + CELL_PAD;
        w = w < CELL_MIN ? CELL_MIN : w;
        if (xc) {
            xc[i] = (float)x + 0.5f * (float)w;
        }
        x += w;
    }
    int top = MARGIN + RENDER_FONT_LINE + 4; /* title line */
    int above = arc_height(gold_span > 1 ? gold_span : 1) + 8;
    int below = arc_height(pred_span > 1 ? pred_span : 1) + 8;
    out->unit = UNIT;
    out->gold_base = top + above;
    out->word_top = out->gold_base + WORD_GAP;
    out->pred_base = out->word_top + RENDER_FONT_GLYPH_H * TEXT_SCALE +
                     WORD_GAP;
    int64_t h = (int64_t)out->pred_base + below + RENDER_FONT_LINE + MARGIN;
    int64_t w = x + MARGIN;
    int64_t wl = 2 * MARGIN + render_text_width(LEGEND, 1);
    w = w < wl ? wl : w;
    if (w > RENDER_IMAGE_MAX_SIDE || h > RENDER_IMAGE_MAX_SIDE) {
        return gr_error(GR_EINVAL, "render_deptree: %d words make a %lldx%lld "
                        "picture (at most %d a side)", n, (long long)w,
                        (long long)h, RENDER_IMAGE_MAX_SIDE);
    }
    out->width = (int)w;
    out->height = (int)h;
    return 0;
}

/* Half an ellipse from the dependent's foot (xd) to the head's (xh) at
 * `base`, bulging up (dir = -1) or down (dir = +1), with an arrowhead at
 * the dependent. */
static void draw_arc(struct render_image *img, float xd, float xh, int base,
                     int32_t span, int dir, uint32_t color)
{
    const float cx = 0.5f * (xd + xh), rx = 0.5f * (xd - xh);
    const float ry = (float)arc_height(span);
    const float y0 = (float)base;
    const int steps = 12 + 6 * (int)span;
    const float pi = 3.14159265358979f;
    float px = xd, py = y0;
    for (int k = 1; k <= steps; k++) {
        float th = pi * (float)k / (float)steps;
        float x = cx + rx * cosf(th);
        float y = y0 + (float)dir * ry * sinf(th);
        render_line_aa(img, px, py, x, y, LINE_W, color);
        px = x;
        py = y;
    }
    /* the arrowhead: its tip on the dependent's foot */
    render_triangle(img, xd, y0 - (float)dir, xd - 4.5f, y0 + (float)dir * 8.0f,
                    xd + 4.5f, y0 + (float)dir * 8.0f, color);
}

/* A root: a stub of one arc height ending in a dot. */
static void draw_root(struct render_image *img, float x, int base, int dir,
                      uint32_t color)
{
    float y1 = (float)base + (float)dir * (float)arc_height(1);
    render_line_aa(img, x, (float)base, x, y1, LINE_W, color);
    render_disc(img, x, y1, 3.5f, color);
}

int render_deptree_draw(struct render_image *img, const char *const *words,
                        int32_t n, const int32_t *gold, const int32_t *pred,
                        const char *title)
{
    memset(img, 0, sizeof *img);
    int rc;
    if ((rc = check_heads(gold, n, "gold")) < 0 ||
        (rc = check_heads(pred, n, "predicted")) < 0) {
        return rc;
    }
    float *xc = n > 0 ? malloc((size_t)n * sizeof *xc) : NULL;
    if (n > 0 && xc == NULL) {
        return gr_error(GR_ENOMEM, "render_deptree: out of memory");
    }
    struct render_deptree_layout lay;
    rc = render_deptree_layout(words, n, max_span(gold, n),
                               max_span(pred, n), xc, &lay);
    if (rc < 0 || (rc = render_image_init(img, lay.width, lay.height)) < 0) {
        free(xc);
        return rc;
    }
    render_fill(img, RENDER_DEPTREE_BG);
    if (title) {
        render_text(img, MARGIN, MARGIN, title, RENDER_BLACK, 1);
    }
    for (int32_t i = 0; i < n; i++) {
        int w = render_text_width(words[i], TEXT_SCALE);
        render_text(img, (int)lrintf(xc[i]) - w / 2, lay.word_top, words[i],
                    RENDER_BLACK, TEXT_SCALE);
    }
    for (int32_t i = 0; gold && i < n; i++) {
        int32_t h = head_of(gold, i);
        if (h == i) {
            draw_root(img, xc[i], lay.gold_base, -1, RENDER_DEPTREE_GOLD);
        } else {
            draw_arc(img, xc[i], xc[h], lay.gold_base, abs(h - i), -1,
                     RENDER_DEPTREE_GOLD);
        }
    }
    for (int32_t i = 0; pred && i < n; i++) {
        int32_t h = head_of(pred, i);
        uint32_t col = gold == NULL || head_of(gold, i) == h
                           ? RENDER_DEPTREE_RIGHT
                           : RENDER_DEPTREE_WRONG;
        if (h == i) {
            draw_root(img, xc[i], lay.pred_base, 1, col);
        } else {
            draw_arc(img, xc[i], xc[h], lay.pred_base, abs(h - i), 1, col);
        }
    }
    const char *legend = gold && pred
                             ? LEGEND
                             : (gold ? "gold" : (pred ? "predicted" : ""));
    render_text(img, MARGIN, lay.height - MARGIN - RENDER_FONT_GLYPH_H, legend,
                RENDER_BLACK, 1);
    free(xc);
    return 0;
}

int render_deptree_png(const char *path, const char *const *words, int32_t n,
                       const int32_t *gold, const int32_t *pred,
                       const char *title, int force)
{
    struct render_image img;
    int rc = render_deptree_draw(&img, words, n, gold, pred, title);
    if (rc == 0) {
        rc = render_png_write(path, &img, force);
    }
    render_image_free(&img);
    return rc;
}
