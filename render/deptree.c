/* Dependency arcs over words (render/deptree.h). */
#include "render/deptree.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "render/font.h"

#define SCALE 2
#define GAP 16
#define MARGIN 12

int render_deptree_rise(int32_t i, int32_t j)
{
    int d = abs(i - j);
    return 14 + 12 * (d < 200 ? d : 200);
}

static int max_rise(const int32_t *h, int32_t n)
{
    int m = 20;
    for (int32_t i = 0; h && i < n; i++) {
        int r = h[i] == i ? 20 : render_deptree_rise(i, h[i]);
        m = r > m ? r : m;
    }
    return m;
}

struct layout {
    int width, height, text_y, text_h, up, down, title_h;
};

static void measure(const char *const *words, int32_t n, const int32_t *pred,
                    const int32_t *gold, const char *title, struct layout *L,
                    float *cx)
{
    int x = MARGIN;
    for (int32_t i = 0; i < n; i++) {
        int w = render_text_width(words[i], SCALE);
        w = w < 8 ? 8 : w;
        if (cx) {
            cx[i] = (float)x + (float)w / 2.0f;
        }
        x += w + GAP;
    }
    L->title_h = title ? RENDER_FONT_LINE * SCALE + 6 : 0;
    L->up = max_rise(pred, n) + 8;
    L->down = gold ? max_rise(gold, n) + 8 : 4;
    L->text_h = RENDER_FONT_LINE * SCALE;
    L->text_y = MARGIN + L->title_h + L->up;
    L->width = x - GAP + MARGIN;
    if (title) {
        int tw = render_text_width(title, SCALE) + 2 * MARGIN;
        L->width = tw > L->width ? tw : L->width;
    }
    L->height = L->text_y + L->text_h + L->down + MARGIN;
    if (L->width > RENDER_IMAGE_MAX_SIDE) {
        L->width = RENDER_IMAGE_MAX_SIDE;
    }
}

void render_deptree_layout(const char *const *words, int32_t n,
                           const int32_t *pred, const int32_t *gold,
                           const char *title, int32_t i, float *cx,
                           float *top, float *bottom)
{
    float *c = malloc((size_t)n * sizeof *c);
    struct layout L;
    measure(words, n, pred, gold, title, &L, c);
    *cx = c ? c[i] : 0.0f;
    *top = (float)L.text_y - 2.0f;
    *bottom = (float)(L.text_y + L.text_h) + 2.0f;
    free(c);
}

/* A half-ellipse from x0 to x1 rising `h` from base y (dir -1 up, +1
 * down), with an arrowhead at x1 (the dependent). */
static void arc(struct render_image *img, float x0, float x1, float y, int h,
                int dir, uint32_t color)
{
    const int seg = 32;
    float mx = (x0 + x1) / 2.0f, rx = (x1 - x0) / 2.0f;
    float px = x0, py = y;
    for (int k = 1; k <= seg; k++) {
        float t = 3.14159265f * (float)k / (float)seg;
        float qx = mx - rx * cosf(t);
        float qy = y + (float)dir * (float)h * sinf(t);
        render_line_aa(img, px, py, qx, qy, 2.0f, color);
        px = qx;
        py = qy;
    }
    render_triangle(img, x1 - 5.0f, y + (float)dir * 8.0f, x1 + 5.0f,
                    y + (float)dir * 8.0f, x1, y, color);
}

int render_deptree(struct render_image *img, const char *const *words,
                   int32_t n, const int32_t *pred, const int32_t *gold,
                   const char *title)
{
    memset(img, 0, sizeof *img);
    if (n < 1) {
        return gr_error(GR_EINVAL, "render_deptree: no words");
    }
    for (int32_t i = 0; i < n; i++) {
        if ((pred && (pred[i] < 0 || pred[i] >= n)) ||
            (gold && (gold[i] < 0 || gold[i] >= n))) {
            return gr_error(GR_EINVAL, "render_deptree: head of word %d out "
                            "of range 0..%d", i, n - 1);
        }
    }
    float *cx = malloc((size_t)n * sizeof *cx);
    if (!cx) {
        return gr_error(GR_ENOMEM, "render_deptree: out of memory");
    }
    struct layout L;
    measure(words, n, pred, gold, title, &L, cx);
    int rc = render_image_init(img, L.width, L.height);
    if (rc < 0) {
        free(cx);
        return rc;
    }
    render_fill(img, RENDER_WHITE);
    if (title) {
        render_text(img, MARGIN, MARGIN, title, RENDER_BLACK, SCALE);
    }
    for (int32_t i = 0; i < n; i++) {
        int w = render_text_width(words[i], SCALE);
        render_text(img, (int)(cx[i] - (float)w / 2.0f), L.text_y + 2,
                    words[i], RENDER_BLACK, SCALE);
    }
    float top = (float)L.text_y - 2.0f;
    float bottom = (float)(L.text_y + L.text_h) + 2.0f;
    for (int32_t i = 0; gold && i < n; i++) {
        uint32_t c = RENDER_DEPTREE_GOLD;
        if (gold[i] == i) {
            render_line_aa(img, cx[i], bottom, cx[i], bottom + 20.0f, 2.0f,
                           c);
        } else {
            arc(img, cx[gold[i]], cx[i], bottom, render_deptree_rise(i, gold[i]), 1, c);
        }
    }
    for (int32_t i = 0; pred && i < n; i++) {
        uint32_t c = (!gold || gold[i] == pred[i]) ? RENDER_DEPTREE_OK
                                                   : RENDER_DEPTREE_BAD;
        if (pred[i] == i) {
            render_line_aa(img, cx[i], top, cx[i], top - 20.0f, 2.0f, c);
        } else {
            arc(img, cx[pred[i]], cx[i], top, render_deptree_rise(i, pred[i]), -1, c);
        }
    }
    free(cx);
    return 0;
}
