/* render/deptree.h: a small sentence with a gold and a predicted tree
 * (one head wrong) drawn and written as PNG: the file reads back with the
 * layout's size and the same pixels; the apex of every gold arc (above the
 * words) is blue, of every predicted arc (below) green when its head is
 * right and red when wrong; a root's stub is drawn and nothing is drawn
 * above a word span no arc crosses; the words are inked; an existing file
 * is refused without force; bad heads and empty words give a message. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "render/deptree.h"
#include "render/image.h"
#include "render/pngfile.h"
#include "tests/test.h"

static int rgb_r(uint32_t c) { return (int)(c >> 24); }
static int rgb_g(uint32_t c) { return (int)((c >> 16) & 255); }
static int rgb_b(uint32_t c) { return (int)((c >> 8) & 255); }

/* The strongest colour within 1 pixel of (x, y): 'b', 'g', 'r', 'k'
 * (dark), or 'w' (background only). */
static char colour_near(const struct render_image *img, float fx, float fy)
{
    int x0 = (int)fx, y0 = (int)fy;
    char best = 'w';
    int strength = 0;
    for (int dy = -1; dy <= 1; dy++) {
        for (int dx = -1; dx <= 1; dx++) {
            uint32_t c = render_get_pixel(img, x0 + dx, y0 + dy);
            int r = rgb_r(c), g = rgb_g(c), b = rgb_b(c);
            int s;
            char k;
            if (b - r > 60 && b - g > 30) {
                k = 'b';
                s = b - r;
            } else if (g - r > 60 && g - b > 60) {
                k = 'g';
                s = g - r;
            } else if (r - g > 60 && r - b > 60) {
                k = 'r';
                s = r - g;
            } else if (r + g + b < 200) {
                k = 'k';
                s = 400 - r - g - b;
            } else {
                continue;
            }
            if (s > strength) {
                strength = s;
                best = k;
            }
        }
    }
    return best;
}

int main(void)
{
    /* "the cat sat on the mat": gold det/nsubj/root/prep/det/pobj */
    const char *words[6] = {"the", "cat", "sat", "on", "the", "mat"};
    const int32_t gold[6] = {1, 2, 2, 2, 5, 3};
    const int32_t pred[6] = {1, 2, 2, 2, 5, 2}; /* "mat" -> "sat": wrong */
    float xc[6];
    struct render_deptree_layout lay;
    CHECK(render_deptree_layout(words, 6, 2, 3, xc, &lay) == 0);
    char path[] = "/tmp/grove_deptree_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    unlink(path);
    CHECK(render_deptree_png(path, words, 6, gold, pred, "sentence 1", 0) ==
          0);
    struct render_image img, mem;
    CHECK(render_png_read(path, &img) == 0);
    CHECK(img.width == lay.width && img.height == lay.height);
    CHECK(render_deptree_draw(&mem, words, 6, gold, pred, "sentence 1") == 0);
    CHECK(render_image_equal(&img, &mem));
    for (int i = 0; i < 6; i++) {
        CHECK(xc[i] > 0.0f && xc[i] < (float)img.width &&
              (i == 0 || xc[i] > xc[i - 1]));
    }
    for (int i = 0; i < 6; i++) {
        int h = gold[i];
        if (h != i) {
            float ax = 0.5f * (xc[i] + xc[h]);
            float ay = (float)lay.gold_base -
                       (float)(lay.unit * abs(h - i) + lay.unit / 2);
            CHECK_MSG(colour_near(&img, ax, ay) == 'b', "gold arc %d -> %d: no "
                      "blue at its apex (%.0f, %.0f)", i, h, ax, ay);
        }
        int p = pred[i];
        if (p != i) {
            float ax = 0.5f * (xc[i] + xc[p]);
            float ay = (float)lay.pred_base +
                       (float)(lay.unit * abs(p - i) + lay.unit / 2);
            char want = p == gold[i] ? 'g' : 'r';
            CHECK_MSG(colour_near(&img, ax, ay) == want, "predicted arc %d -> "
                      "%d: want '%c' at its apex (%.0f, %.0f), got '%c'", i, p,
                      want, ax, ay, colour_near(&img, ax, ay));
        }
    }
    /* the root's stub above and below "sat" */
    CHECK(colour_near(&img, xc[2], (float)lay.gold_base - lay.unit) == 'b');
    CHECK(colour_near(&img, xc[2], (float)lay.pred_base + lay.unit) == 'g');
    /* above the gold arcs' highest apex nothing is drawn */
    int top_clear = 1;
    int ymax = lay.gold_base - (lay.unit * 2 + lay.unit / 2) - 4;
    for (int y = 32; y < ymax; y++) {
        for (int x = 0; x < img.width; x++) {
            top_clear &= render_get_pixel(&img, x, y) == RENDER_DEPTREE_BG;
        }
    }
    CHECK_MSG(top_clear, "pixels drawn above the highest gold arc");
    /* each word has ink in its row */
    for (int i = 0; i < 6; i++) {
        int ink = 0;
        for (int y = lay.word_top; y < lay.word_top + 18; y++) {
            for (int dx = -8; dx <= 8; dx++) {
                ink |= colour_near(&img, xc[i] + (float)dx, (float)y) == 'k';
            }
        }
        CHECK_MSG(ink, "word %d not drawn", i);
    }
    /* an existing file, bad heads, empty words */
    CHECK(render_deptree_png(path, words, 6, gold, pred, NULL, 0) ==
          GR_EEXIST);
    CHECK(render_deptree_png(path, words, 6, gold, NULL, NULL, 1) == 0);
    const int32_t bad[6] = {1, 2, 2, 9, 5, 3};
    struct render_image x;
    CHECK(render_deptree_draw(&x, words, 6, gold, bad, NULL) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "predicted head 9 of word 3");
    const char *empty[2] = {"a", ""};
    const int32_t two[2] = {0, 0};
    CHECK(render_deptree_draw(&x, empty, 2, two, NULL, NULL) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "word 1 is empty");
    CHECK(render_deptree_draw(&x, words, 0, NULL, NULL, NULL) == GR_EINVAL);
    render_image_free(&img);
    render_image_free(&mem);
    unlink(path);
    return test_report("render_deptree");
}
