/* RGBA buffer and drawing primitives (render/image.h). Integer blending,
 * float geometry compiled with -ffp-contract=off so that golden images are
 * the same bytes in every build. */
#include "render/image.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

int render_image_init(struct render_image *img, int width, int height)
{
    img->width = 0;
    img->height = 0;
    img->rgba = NULL;
    if (width < 1 || height < 1 || width > RENDER_IMAGE_MAX_SIDE ||
        height > RENDER_IMAGE_MAX_SIDE) {
        return gr_error(GR_EINVAL,
                        "image size %dx%d is out of range (1..%d a side)",
                        width, height, RENDER_IMAGE_MAX_SIDE);
    }
    img->rgba = calloc((size_t)width * (size_t)height, 4);
    if (img->rgba == NULL) {
        return gr_error(GR_ENOMEM, "out of memory for a %dx%d image", width,
                        height);
    }
    img->width = width;
    img->height = height;
    return 0;
}

void render_image_free(struct render_image *img)
{
    free(img->rgba);
    img->rgba = NULL;
    img->width = 0;
    img->height = 0;
}

int render_image_equal(const struct render_image *a,
                       const struct render_image *b)
{
    if (a->width != b->width || a->height != b->height) {
        return 0;
    }
    size_t n = (size_t)a->width * (size_t)a->height * 4;
    return n == 0 || memcmp(a->rgba, b->rgba, n) == 0;
}

uint32_t render_get_pixel(const struct render_image *img, int x, int y)
{
    if (x < 0 || y < 0 || x >= img->width || y >= img->height) {
        return 0;
    }
    const uint8_t *p = img->rgba + 4 * ((size_t)y * img->width + x);
    return render_rgba(p[0], p[1], p[2], p[3]);
}

/* Source-over with 8-bit integer arithmetic; `a` is the source alpha. */
static void blend(uint8_t *p, uint32_t color, unsigned a)
{
    unsigned r = color >> 24, g = (color >> 16) & 255, b = (color >> 8) & 255;
    if (a >= 255) {
        p[0] = (uint8_t)r;
        p[1] = (uint8_t)g;
        p[2] = (uint8_t)b;
        p[3] = 255;
        return;
    }
    if (a == 0) {
        return;
    }
    unsigned na = 255 - a;
    p[0] = (uint8_t)((r * a + p[0] * na + 127) / 255);
    p[1] = (uint8_t)((g * a + p[1] * na + 127) / 255);
    p[2] = (uint8_t)((b * a + p[2] * na + 127) / 255);
    p[3] = (uint8_t)(a + (p[3] * na + 127) / 255);
}

void render_pixel(struct render_image *img, int x, int y, uint32_t color)
{
    if (x < 0 || y < 0 || x >= img->width || y >= img->height) {
        return;
    }
    blend(img->rgba + 4 * ((size_t)y * img->width + x), color, color & 255);
}

void render_pixel_cover(struct render_image *img, int x, int y,
                        uint32_t color, float coverage)
{
    if (x < 0 || y < 0 || x >= img->width || y >= img->height ||
        !(coverage > 0.0f)) {
        return;
    }
    if (coverage > 1.0f) {
        coverage = 1.0f;
    }
    unsigned a = (unsigned)lrintf((float)(color & 255) * coverage);
    blend(img->rgba + 4 * ((size_t)y * img->width + x), color, a);
}

void render_fill(struct render_image *img, uint32_t color)
{
    size_t n = (size_t)img->width * (size_t)img->height;
    uint8_t px[4] = {(uint8_t)(color >> 24), (uint8_t)(color >> 16),
                     (uint8_t)(color >> 8), (uint8_t)color};
    for (size_t i = 0; i < n; i++) {
        memcpy(img->rgba + 4 * i, px, 4);
    }
}

/* Clips [x, x+w) × [y, y+h) to the image; 0 when nothing is left. */
static int clip(const struct render_image *img, int *x, int *y, int *w,
                int *h)
{
    long x0 = *x, y0 = *y, x1 = (long)*x + *w, y1 = (long)*y + *h;
    if (x0 < 0) {
        x0 = 0;
    }
    if (y0 < 0) {
        y0 = 0;
    }
    if (x1 > img->width) {
        x1 = img->width;
    }
    if (y1 > img->height) {
        y1 = img->height;
    }
    if (x1 <= x0 || y1 <= y0) {
        return 0;
    }
    *x = (int)x0;
    *y = (int)y0;
    *w = (int)(x1 - x0);
    *h = (int)(y1 - y0);
    return 1;
}

void render_rect(struct render_image *img, int x, int y, int w, int h,
                 uint32_t color)
{
    if (!clip(img, &x, &y, &w, &h)) {
        return;
    }
    for (int j = y; j < y + h; j++) {
        uint8_t *row = img->rgba + 4 * ((size_t)j * img->width);
        for (int i = x; i < x + w; i++) {
            blend(row + 4 * i, color, color & 255);
        }
    }
}

void render_rect_outline(struct render_image *img, int x, int y, int w,
                         int h, int thickness, uint32_t color)
{
    if (w <= 0 || h <= 0 || thickness <= 0) {
        return;
    }
    if (2 * thickness >= w || 2 * thickness >= h) {
        render_rect(img, x, y, w, h, color);
        return;
    }
    render_rect(img, x, y, w, thickness, color);
    render_rect(img, x, y + h - thickness, w, thickness, color);
    render_rect(img, x, y + thickness, thickness, h - 2 * thickness, color);
    render_rect(img, x + w - thickness, y + thickness, thickness,
                h - 2 * thickness, color);
}

void render_line(struct render_image *img, int x0, int y0, int x1, int y1,
                 uint32_t color)
{
    long dx = labs((long)x1 - x0), dy = -labs((long)y1 - y0);
    int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    long err = dx + dy;
    for (;;) {
        render_pixel(img, x0, y0, color);
        if (x0 == x1 && y0 == y1) {
            return;
        }
        long e2 = 2 * err;
        if (e2 >= dy) {
            err += dy;
            x0 += sx;
        }
        if (e2 <= dx) {
            err += dx;
            y0 += sy;
        }
    }
}

/* Distance from (px, py) to the segment (x0, y0)-(x1, y1). */
static float segment_distance(float px, float py, float x0, float y0,
                              float x1, float y1)
{
    float vx = x1 - x0, vy = y1 - y0;
    float wx = px - x0, wy = py - y0;
    float len2 = vx * vx + vy * vy;
    float u = 0.0f;
    if (len2 > 0.0f) {
        u = (wx * vx + wy * vy) / len2;
        if (u < 0.0f) {
            u = 0.0f;
        } else if (u > 1.0f) {
            u = 1.0f;
        }
    }
    float dx = wx - u * vx, dy = wy - u * vy;
    return sqrtf(dx * dx + dy * dy);
}

static int clamp_int(float v, int lo, int hi)
{
    if (!(v >= (float)lo)) {
        return lo;
    }
    if (v > (float)hi) {
        return hi;
    }
    return (int)v;
}

void render_line_aa(struct render_image *img, float x0, float y0, float x1,
                    float y1, float width, uint32_t color)
{
    float half = width * 0.5f;
    float pad = half + 1.0f;
    int ix0 = clamp_int(floorf(fminf(x0, x1) - pad), 0, img->width - 1);
    int ix1 = clamp_int(ceilf(fmaxf(x0, x1) + pad), 0, img->width - 1);
    int iy0 = clamp_int(floorf(fminf(y0, y1) - pad), 0, img->height - 1);
    int iy1 = clamp_int(ceilf(fmaxf(y0, y1) + pad), 0, img->height - 1);
    for (int j = iy0; j <= iy1; j++) {
        for (int i = ix0; i <= ix1; i++) {
            float d = segment_distance((float)i + 0.5f, (float)j + 0.5f, x0,
                                       y0, x1, y1);
            float c = half + 0.5f - d;
            if (c > 0.0f) {
                render_pixel_cover(img, i, j, color, c);
            }
        }
    }
}

void render_disc(struct render_image *img, float cx, float cy, float r,
                 uint32_t color)
{
    int ix0 = clamp_int(floorf(cx - r - 1.0f), 0, img->width - 1);
    int ix1 = clamp_int(ceilf(cx + r + 1.0f), 0, img->width - 1);
    int iy0 = clamp_int(floorf(cy - r - 1.0f), 0, img->height - 1);
    int iy1 = clamp_int(ceilf(cy + r + 1.0f), 0, img->height - 1);
    for (int j = iy0; j <= iy1; j++) {
        for (int i = ix0; i <= ix1; i++) {
            float dx = (float)i + 0.5f - cx, dy = (float)j + 0.5f - cy;
            float c = r + 0.5f - sqrtf(dx * dx + dy * dy);
            if (c > 0.0f) {
                render_pixel_cover(img, i, j, color, c);
            }
        }
    }
}

/* Edge function: twice the signed area of (a, b, p). */
static float edge(float ax, float ay, float bx, float by, float px, float py)
{
    return (bx - ax) * (py - ay) - (by - ay) * (px - ax);
}

void render_triangle(struct render_image *img, float x0, float y0, float x1,
                     float y1, float x2, float y2, uint32_t color)
{
    float area = edge(x0, y0, x1, y1, x2, y2);
    if (area == 0.0f) {
        return;
    }
    if (area < 0.0f) { /* make the winding consistent */
        float tx = x1, ty = y1;
        x1 = x2;
        y1 = y2;
        x2 = tx;
        y2 = ty;
    }
    int ix0 = clamp_int(floorf(fminf(x0, fminf(x1, x2))), 0, img->width - 1);
    int ix1 = clamp_int(ceilf(fmaxf(x0, fmaxf(x1, x2))), 0, img->width - 1);
    int iy0 = clamp_int(floorf(fminf(y0, fminf(y1, y2))), 0, img->height - 1);
    int iy1 = clamp_int(ceilf(fmaxf(y0, fmaxf(y1, y2))), 0, img->height - 1);
    for (int j = iy0; j <= iy1; j++) {
        for (int i = ix0; i <= ix1; i++) {
            float px = (float)i + 0.5f, py = (float)j + 0.5f;
            if (edge(x0, y0, x1, y1, px, py) >= 0.0f &&
                edge(x1, y1, x2, y2, px, py) >= 0.0f &&
                edge(x2, y2, x0, y0, px, py) >= 0.0f) {
                render_pixel(img, i, j, color);
            }
        }
    }
}

void render_blit(struct render_image *dst, int dx, int dy,
                 const struct render_image *src, int scale)
{
    if (scale < 1) {
        scale = 1;
    }
    for (int j = 0; j < src->height; j++) {
        for (int i = 0; i < src->width; i++) {
            const uint8_t *s = src->rgba + 4 * ((size_t)j * src->width + i);
            uint32_t c = render_rgba(s[0], s[1], s[2], s[3]);
            if (scale == 1) {
                render_pixel(dst, dx + i, dy + j, c);
            } else {
                render_rect(dst, dx + i * scale, dy + j * scale, scale, scale,
                            c);
            }
        }
    }
}

void render_blit_shrink(struct render_image *dst, int dx, int dy,
                        const struct render_image *src, int factor)
{
    if (factor < 1) {
        factor = 1;
    }
    int w = src->width / factor, h = src->height / factor;
    unsigned n = (unsigned)(factor * factor);
    for (int j = 0; j < h; j++) {
        for (int i = 0; i < w; i++) {
            unsigned sum[4] = {0, 0, 0, 0};
            for (int v = 0; v < factor; v++) {
                const uint8_t *s =
                    src->rgba +
                    4 * ((size_t)(j * factor + v) * src->width + i * factor);
                for (int u = 0; u < factor; u++) {
                    for (int c = 0; c < 4; c++) {
                        sum[c] += s[4 * u + c];
                    }
                }
            }
            render_pixel(dst, dx + i, dy + j,
                         render_rgba((sum[0] + n / 2) / n, (sum[1] + n / 2) / n,
                                     (sum[2] + n / 2) / n,
                                     (sum[3] + n / 2) / n));
        }
    }
}
