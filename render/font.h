/* render/font.h — grove's built-in bitmap font (no font dependency).
 *
 * One fixed-width face for printable ASCII (32..126): glyphs of 5×9 pixels
 * (7 rows above the baseline, 2 for descenders), drawn on a 6-pixel advance
 * and an 11-pixel line at scale 1; `scale` multiplies every pixel into a
 * scale×scale block. Characters outside 32..126 draw as a hollow box. A
 * '\n' starts a new line at the starting x. The glyphs were drawn for grove
 * as ASCII art in render/font.c.
 *
 * Memory: no allocation; the font is static const data. Thread-safe.
 * No errors: drawing clips to the image.
 *
 *   int w = render_text_width("step 12", 1);
 *   render_text(&img, img.width - w - 4, 4, "step 12", RENDER_BLACK, 1);
 */
#ifndef GROVE_RENDER_FONT_H
#define GROVE_RENDER_FONT_H

#include <stdint.h>

#include "render/image.h"

#define RENDER_FONT_GLYPH_W 5  /* pixels of ink, at scale 1 */
#define RENDER_FONT_GLYPH_H 9  /* rows, including 2 descender rows */
#define RENDER_FONT_ASCENT 7   /* rows above the baseline */
#define RENDER_FONT_ADVANCE 6  /* pixels from one character to the next */
#define RENDER_FONT_LINE 11    /* pixels from one line to the next */

/* Draws `text` with its top-left corner at (x, y); returns the x where a
 * following character would start (on the last line). */
int render_text(struct render_image *img, int x, int y, const char *text,
                uint32_t color, int scale);

/* Width in pixels of the longest line of `text` at `scale` (no trailing
 * spacing: the last character's ink ends the width). 0 for "". */
int render_text_width(const char *text, int scale);

/* Height in pixels of `text` at `scale`: lines·LINE − (LINE − GLYPH_H). */
int render_text_height(const char *text, int scale);

/* 1 if pixel (col, row) of the glyph for `ch` is ink (0 ≤ col < 5,
 * 0 ≤ row < 9); for tests and for drawing glyphs by other means. */
int render_font_ink(int ch, int col, int row);

#endif
