/* render/deptree.h: arcs where the heads say, in the colour the gold
 * says, nothing where there is no arc; bad heads refused; deterministic. */
#include <stdio.h>
#include <string.h>

#include "render/deptree.h"
#include "render/image.h"
#include "tests/test.h"

/* The colour at the apex of the arc between words a and b (above: dir -1,
 * below: +1): the pixel there, or the one above or below it when that one
 * is fully covered (the 2-pixel stroke straddles rows); white if none. */
static uint32_t apex(const struct render_image *img, const char *const *w,
                     int n, const int32_t *pred, const int32_t *gold, int a,
                     int b, int dir)
{
    float ca, cb, top, bottom;
    render_deptree_layout(w, n, pred, gold, NULL, a, &ca, &top, &bottom);
    render_deptree_layout(w, n, pred, gold, NULL, b, &cb, &top, &bottom);
    float y = dir < 0 ? top - (float)render_deptree_rise(a, b)
                      : bottom + (float)render_deptree_rise(a, b);
    int x = (int)((ca + cb) / 2.0f);
    const uint32_t cs[3] = {RENDER_DEPTREE_OK, RENDER_DEPTREE_BAD,
                            RENDER_DEPTREE_GOLD};
    for (int dy = -1; dy <= 1; dy++) {
        uint32_t p = render_get_pixel(img, x, (int)y + dy);
        for (int k = 0; k < 3; k++) {
            if (p == cs[k]) {
                return p;
            }
        }
    }
    return render_get_pixel(img, x, (int)y);
}

int main(void)
{
    const char *w[4] = {"the", "dog", "saw", "cats"};
    const int32_t gold[4] = {1, 2, 2, 2};
    const int32_t pred[4] = {1, 2, 2, 1}; /* cats <- dog: wrong */
    struct render_image img;
    CHECK(render_deptree(&img, w, 4, pred, gold, NULL) == 0);
    /* above: the dog -> the (right), saw -> dog (right), dog -> cats (bad) */
    CHECK(apex(&img, w, 4, pred, gold, 0, 1, -1) == RENDER_DEPTREE_OK);
    CHECK(apex(&img, w, 4, pred, gold, 1, 2, -1) == RENDER_DEPTREE_OK);
    CHECK(apex(&img, w, 4, pred, gold, 1, 3, -1) == RENDER_DEPTREE_BAD);
    /* no predicted arc between saw and cats, nor the and saw */
    CHECK(apex(&img, w, 4, pred, gold, 2, 3, -1) == RENDER_WHITE);
    CHECK(apex(&img, w, 4, pred, gold, 0, 2, -1) == RENDER_WHITE);
    /* below: the gold arcs, grey, and none between dog and cats */
    CHECK(apex(&img, w, 4, pred, gold, 2, 3, 1) == RENDER_DEPTREE_GOLD);
    CHECK(apex(&img, w, 4, pred, gold, 0, 1, 1) == RENDER_DEPTREE_GOLD);
    CHECK(apex(&img, w, 4, pred, gold, 1, 3, 1) == RENDER_WHITE);
    /* the same arrays give the same pixels; another tree other pixels */
    struct render_image b;
    CHECK(render_deptree(&b, w, 4, pred, gold, NULL) == 0);
    CHECK(render_image_equal(&img, &b));
    render_image_free(&b);
    CHECK(render_deptree(&b, w, 4, gold, gold, NULL) == 0);
    CHECK(!render_image_equal(&img, &b));
    render_image_free(&b);
    render_image_free(&img);
    /* a title widens nothing below; bad input refused */
    CHECK(render_deptree(&img, w, 4, pred, NULL, "a title") == 0);
    render_image_free(&img);
    const int32_t bad[4] = {1, 2, 9, 2};
    CHECK(render_deptree(&img, w, 4, bad, gold, NULL) < 0);
    CHECK(render_deptree(&img, w, 0, pred, gold, NULL) < 0);
    return test_report("render_deptree");
}
