/* render/image.h and render/font.h: clipping, blending arithmetic, lines,
 * shapes, blits, and the font's metrics — each against a count or a value
 * worked out by hand or by a brute-force loop written here. */
#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "render/font.h"
#include "render/image.h"
#include "tests/test.h"

static long count_color(const struct render_image *img, uint32_t c)
{
    long n = 0;
    for (int y = 0; y < img->height; y++) {
        for (int x = 0; x < img->width; x++) {
            n += render_get_pixel(img, x, y) == c;
        }
    }
    return n;
}

static void test_init_and_clip(void)
{
    struct render_image img;
    CHECK(render_image_init(&img, 0, 5) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "0x5");
    CHECK(render_image_init(&img, RENDER_IMAGE_MAX_SIDE + 1, 1) == GR_EINVAL);
    CHECK(render_image_init(&img, 20, 10) == 0);
    CHECK(render_get_pixel(&img, 3, 3) == 0); /* transparent black */
    render_fill(&img, RENDER_WHITE);
    CHECK(count_color(&img, RENDER_WHITE) == 200);
    /* a rectangle hanging over every edge is clipped, not wrapped */
    uint32_t red = render_rgb(255, 0, 0);
    render_rect(&img, -5, -5, 10, 100, red);
    CHECK(count_color(&img, red) == 5 * 10);
    render_rect(&img, 18, 8, 50, 50, red);
    CHECK(count_color(&img, red) == 50 + 2 * 2);
    render_rect(&img, 100, 100, 5, 5, red); /* fully outside: nothing */
    render_rect(&img, 3, 3, -4, 2, red);    /* negative size: nothing */
    CHECK(count_color(&img, red) == 54);
    render_pixel(&img, -1, 0, red);
    render_pixel(&img, 20, 0, red);
    CHECK(count_color(&img, red) == 54);
    CHECK(render_get_pixel(&img, 99, 0) == 0);
    /* outline: perimeter pixels of a 6x4 box, thickness 1 */
    render_fill(&img, RENDER_WHITE);
    render_rect_outline(&img, 7, 3, 6, 4, 1, red);
    CHECK(count_color(&img, red) == 2 * 6 + 2 * 2);
    render_image_free(&img);
    render_image_free(&img); /* twice is fine */
    CHECK(img.rgba == NULL);
}

static void test_blend(void)
{
    struct render_image img;
    CHECK(render_image_init(&img, 2, 1) == 0);
    render_fill(&img, RENDER_WHITE);
    /* 50 % black over white: (0·128 + 255·127 + 127) / 255 = 127 */
    render_pixel(&img, 0, 0, render_rgba(0, 0, 0, 128));
    uint32_t p = render_get_pixel(&img, 0, 0);
    CHECK_EQ_U64(p >> 8, (127u << 16) | (127u << 8) | 127u);
    CHECK((p & 255) == 255);
    /* alpha 0 changes nothing; coverage scales alpha */
    render_pixel(&img, 1, 0, render_rgba(0, 0, 0, 0));
    CHECK(render_get_pixel(&img, 1, 0) == RENDER_WHITE);
    render_pixel_cover(&img, 1, 0, RENDER_BLACK, 0.5f); /* alpha 128 */
    CHECK(render_get_pixel(&img, 1, 0) == render_get_pixel(&img, 0, 0));
    render_pixel_cover(&img, 1, 0, RENDER_BLACK, 2.0f); /* clamped to 1 */
    CHECK(render_get_pixel(&img, 1, 0) == RENDER_BLACK);
    /* onto transparent: alpha accumulates a + d(255-a)/255 */
    struct render_image t;
    CHECK(render_image_init(&t, 1, 1) == 0);
    render_pixel(&t, 0, 0, render_rgba(255, 255, 255, 100));
    CHECK((render_get_pixel(&t, 0, 0) & 255) == 100);
    render_image_free(&t);
    render_image_free(&img);
}

static void test_lines_and_shapes(void)
{
    struct render_image img;
    CHECK(render_image_init(&img, 40, 30) == 0);
    render_fill(&img, RENDER_WHITE);
    /* Bresenham: both ends drawn, one pixel per major-axis step */
    render_line(&img, 2, 3, 31, 17, RENDER_BLACK);
    CHECK(render_get_pixel(&img, 2, 3) == RENDER_BLACK);
    CHECK(render_get_pixel(&img, 31, 17) == RENDER_BLACK);
    CHECK(count_color(&img, RENDER_BLACK) == 30);
    render_fill(&img, RENDER_WHITE);
    render_line(&img, 5, 25, 5, 2, RENDER_BLACK); /* vertical, upwards */
    CHECK(count_color(&img, RENDER_BLACK) == 24);
    /* a line far outside never writes out of bounds (ASan checks) */
    render_line(&img, -1000, -50, 2000, 900, RENDER_BLACK);
    render_line_aa(&img, -1e6f, 3.0f, 1e6f, 3.0f, 3.0f, RENDER_BLACK);

    /* filled triangle: pixel centres inside the right triangle
     * (0,0)-(20,0)-(0,20) number 210 (centres i+j+1 <= 20) */
    render_fill(&img, RENDER_WHITE);
    render_triangle(&img, 0, 0, 20, 0, 0, 20, RENDER_BLACK);
    long brute = 0;
    for (int j = 0; j < 30; j++) {
        for (int i = 0; i < 40; i++) {
            float x = (float)i + 0.5f, y = (float)j + 0.5f;
            brute += (x + y <= 20.0f);
        }
    }
    CHECK(brute == 210);
    CHECK(count_color(&img, RENDER_BLACK) == brute);
    /* either winding fills the same pixels */
    struct render_image img2;
    CHECK(render_image_init(&img2, 40, 30) == 0);
    render_fill(&img2, RENDER_WHITE);
    render_triangle(&img2, 0, 0, 0, 20, 20, 0, RENDER_BLACK);
    CHECK(render_image_equal(&img, &img2));

    /* disc: fully covered pixels lie within r - 0.5 of the centre; partly
     * covered ones within r + 0.5 */
    render_fill(&img, RENDER_WHITE);
    render_disc(&img, 20.0f, 15.0f, 6.0f, RENDER_BLACK);
    for (int j = 0; j < 30; j++) {
        for (int i = 0; i < 40; i++) {
            float dx = (float)i + 0.5f - 20.0f, dy = (float)j + 0.5f - 15.0f;
            float d = sqrtf(dx * dx + dy * dy);
            uint32_t p = render_get_pixel(&img, i, j);
            if (d <= 5.5f) {
                CHECK_MSG(p == RENDER_BLACK, "(%d,%d) d=%.2f", i, j, d);
            } else if (d >= 6.5f) {
                CHECK_MSG(p == RENDER_WHITE, "(%d,%d) d=%.2f", i, j, d);
            }
        }
    }
    /* anti-aliased horizontal line of width 2 on pixel boundaries: two
     * full rows */
    render_fill(&img, RENDER_WHITE);
    render_line_aa(&img, 5.5f, 10.0f, 30.5f, 10.0f, 2.0f, RENDER_BLACK);
    CHECK(render_get_pixel(&img, 15, 9) == RENDER_BLACK);
    CHECK(render_get_pixel(&img, 15, 10) == RENDER_BLACK);
    CHECK(render_get_pixel(&img, 15, 8) == RENDER_WHITE);
    CHECK(render_get_pixel(&img, 15, 11) == RENDER_WHITE);
    render_image_free(&img2);
    render_image_free(&img);
}

static void test_blit(void)
{
    struct render_image src, dst, back;
    CHECK(render_image_init(&src, 3, 2) == 0);
    for (int y = 0; y < 2; y++) {
        for (int x = 0; x < 3; x++) {
            render_pixel(&src, x, y, render_rgb(40 * x, 100 * y, 7));
        }
    }
    CHECK(render_image_init(&dst, 9, 6) == 0);
    render_blit(&dst, 0, 0, &src, 3);
    for (int y = 0; y < 6; y++) {
        for (int x = 0; x < 9; x++) {
            CHECK(render_get_pixel(&dst, x, y) ==
                  render_get_pixel(&src, x / 3, y / 3));
        }
    }
    /* shrinking an upscaled image by the same factor gives it back */
    CHECK(render_image_init(&back, 3, 2) == 0);
    render_blit_shrink(&back, 0, 0, &dst, 3);
    CHECK(render_image_equal(&back, &src));
    /* box average of a 2x2 block */
    struct render_image four, one;
    CHECK(render_image_init(&four, 2, 2) == 0);
    CHECK(render_image_init(&one, 1, 1) == 0);
    render_pixel(&four, 0, 0, render_rgb(0, 0, 0));
    render_pixel(&four, 1, 0, render_rgb(100, 0, 0));
    render_pixel(&four, 0, 1, render_rgb(100, 0, 0));
    render_pixel(&four, 1, 1, render_rgb(200, 0, 0));
    render_blit_shrink(&one, 0, 0, &four, 2);
    CHECK(render_get_pixel(&one, 0, 0) == render_rgb(100, 0, 0));
    render_image_free(&src);
    render_image_free(&dst);
    render_image_free(&back);
    render_image_free(&four);
    render_image_free(&one);
}

static void test_font(void)
{
    CHECK(render_text_width("", 1) == 0);
    CHECK(render_text_width("a", 1) == 5);
    CHECK(render_text_width("abc", 1) == 17);
    CHECK(render_text_width("abc", 2) == 34);
    CHECK(render_text_width("ab\nabcd\nx", 1) == 23);
    CHECK(render_text_height("x", 1) == 9);
    CHECK(render_text_height("x\ny", 1) == 20);
    /* every printable glyph except space has ink, and no two glyphs are
     * the same picture */
    for (int c = 33; c < 127; c++) {
        int ink = 0;
        for (int r = 0; r < RENDER_FONT_GLYPH_H; r++) {
            for (int k = 0; k < RENDER_FONT_GLYPH_W; k++) {
                ink += render_font_ink(c, k, r);
            }
        }
        CHECK_MSG(ink > 0, "glyph '%c' is empty", c);
        for (int d = 33; d < c; d++) {
            int same = 1;
            for (int r = 0; r < RENDER_FONT_GLYPH_H && same; r++) {
                for (int k = 0; k < RENDER_FONT_GLYPH_W && same; k++) {
                    same = render_font_ink(c, k, r) == render_font_ink(d, k, r);
                }
            }
            CHECK_MSG(!same, "glyphs '%c' and '%c' are identical", c, d);
        }
    }
    /* drawing puts ink exactly where the glyph has it, scaled */
    struct render_image img;
    CHECK(render_image_init(&img, 40, 30) == 0);
    render_fill(&img, RENDER_WHITE);
    int end = render_text(&img, 3, 2, "Kg", RENDER_BLACK, 2);
    CHECK(end == 3 + 2 * 2 * RENDER_FONT_ADVANCE);
    for (int y = 0; y < 30; y++) {
        for (int x = 0; x < 40; x++) {
            int gx = (x - 3) / 2, gy = (y - 2) / 2, want = 0;
            if (x >= 3 && y >= 2 && gy < RENDER_FONT_GLYPH_H) {
                int ch = gx < RENDER_FONT_ADVANCE ? 'K' : 'g';
                int col = gx % RENDER_FONT_ADVANCE;
                want = gx < 2 * RENDER_FONT_ADVANCE && render_font_ink(ch, col, gy);
            }
            CHECK_MSG((render_get_pixel(&img, x, y) == RENDER_BLACK) == want,
                      "pixel (%d,%d)", x, y);
        }
    }
    /* a character the font lacks draws the box, not nothing */
    render_fill(&img, RENDER_WHITE);
    render_text(&img, 0, 0, "\x01", RENDER_BLACK, 1);
    CHECK(count_color(&img, RENDER_BLACK) == 2 * 5 + 2 * 5);
    render_image_free(&img);
}

int main(void)
{
    test_init_and_clip();
    test_blend();
    test_lines_and_shapes();
    test_blit();
    test_font();
    return test_report("render_image");
}
