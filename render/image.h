/* render/image.h — an RGBA pixel buffer and the primitives that draw on it.
 *
 * Everything grove shows is first drawn into a struct render_image: 8-bit
 * R, G, B, A per pixel, in that byte order, rows top to bottom, `width`
 * pixels per row with no padding (byte offset of (x, y) = 4·(y·width + x)).
 * The SDL window and the PNG writer are two thin consumers of these pixels
 * (STYLE §1), so a PNG export and a window screenshot of the same frame are
 * the same bytes.
 *
 * Colours are uint32_t 0xRRGGBBAA (render_rgb / render_rgba build them).
 * Every primitive clips to the image, so any coordinates are safe; a colour
 * with alpha < 255 is blended "source over" onto the pixels, alpha 255
 * replaces them. Coordinates are pixels, x to the right, y down.
 *
 * Memory: render_image_init allocates width·height·4 bytes that
 * render_image_free releases; the caller owns the struct. The drawing
 * functions never allocate. Thread safety: none per image; distinct images
 * are independent. Errors: only render_image_init can fail (GR_EINVAL for a
 * size out of range, GR_ENOMEM), with a message for gr_last_error().
 *
 *   struct render_image img;
 *   if (render_image_init(&img, 320, 200) < 0) return -1;
 *   render_fill(&img, render_rgb(255, 255, 255));
 *   render_rect(&img, 10, 10, 50, 20, render_rgb(200, 40, 40));
 *   render_line_aa(&img, 0.5f, 0.5f, 100.5f, 80.5f, 2.0f, RENDER_BLACK);
 *   render_image_free(&img);
 */
#ifndef GROVE_RENDER_IMAGE_H
#define GROVE_RENDER_IMAGE_H

#include <stdint.h>

/* Images larger than this on a side are refused (a sanity bound). */
#define RENDER_IMAGE_MAX_SIDE 16384

struct render_image {
    int width;     /* pixels */
    int height;    /* pixels */
    uint8_t *rgba; /* width·height·4 bytes, caller-owned via init/free */
};

static inline uint32_t render_rgba(unsigned r, unsigned g, unsigned b,
                                   unsigned a)
{
    return ((uint32_t)(r & 255) << 24) | ((uint32_t)(g & 255) << 16) |
           ((uint32_t)(b & 255) << 8) | (uint32_t)(a & 255);
}

static inline uint32_t render_rgb(unsigned r, unsigned g, unsigned b)
{
    return render_rgba(r, g, b, 255);
}

#define RENDER_BLACK 0x000000ffu
#define RENDER_WHITE 0xffffffffu

/* Allocates a width×height image, every pixel transparent black.
 * 1 ≤ width, height ≤ RENDER_IMAGE_MAX_SIDE. */
int render_image_init(struct render_image *img, int width, int height);

/* Releases the pixels; the struct becomes an empty image. Safe twice. */
void render_image_free(struct render_image *img);

/* 1 if both images have the same size and identical bytes. */
int render_image_equal(const struct render_image *a,
                       const struct render_image *b);

/* The colour at (x, y) as 0xRRGGBBAA; 0 outside the image. */
uint32_t render_get_pixel(const struct render_image *img, int x, int y);

/* Blends one pixel (clipped). */
void render_pixel(struct render_image *img, int x, int y, uint32_t color);

/* Blends one pixel with `color`'s alpha scaled by coverage in [0, 1]. */
void render_pixel_cover(struct render_image *img, int x, int y,
                        uint32_t color, float coverage);

/* Sets every pixel to `color` (no blending). */
void render_fill(struct render_image *img, uint32_t color);

/* Filled rectangle [x, x+w) × [y, y+h), clipped, blended. */
void render_rect(struct render_image *img, int x, int y, int w, int h,
                 uint32_t color);

/* Rectangle outline `thickness` pixels wide, inside [x, x+w) × [y, y+h). */
void render_rect_outline(struct render_image *img, int x, int y, int w,
                         int h, int thickness, uint32_t color);

/* One-pixel line from (x0, y0) to (x1, y1), both ends drawn (Bresenham). */
void render_line(struct render_image *img, int x0, int y0, int x1, int y1,
                 uint32_t color);

/* Anti-aliased line segment of `width` pixels with round caps, between two
 * points in pixel coordinates (pixel (i, j) has its centre at i+0.5,
 * j+0.5). Coverage is exact-ish distance-based. */
void render_line_aa(struct render_image *img, float x0, float y0, float x1,
                    float y1, float width, uint32_t color);

/* Filled disc of radius r (pixels) centred on (cx, cy) in pixel
 * coordinates, anti-aliased at the edge. */
void render_disc(struct render_image *img, float cx, float cy, float r,
                 uint32_t color);

/* Filled triangle with vertices in pixel coordinates; a pixel is inside
 * when its centre is (top-left rule, no anti-aliasing). */
void render_triangle(struct render_image *img, float x0, float y0, float x1,
                     float y1, float x2, float y2, uint32_t color);

/* Copies `src` onto `dst` at (dx, dy), each source pixel becoming a
 * scale×scale block (scale ≥ 1), clipped, blended by source alpha. */
void render_blit(struct render_image *dst, int dx, int dy,
                 const struct render_image *src, int scale);

/* Draws `src` shrunk by an integer `factor` (box average of factor×factor
 * blocks) onto `dst` at (dx, dy); for contact sheets and thumbnails. */
void render_blit_shrink(struct render_image *dst, int dx, int dy,
                        const struct render_image *src, int factor);

#endif
