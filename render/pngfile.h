/* render/pngfile.h — PNG files of render_image buffers, through libpng.
 *
 * Writing is atomic (core/files.h): the PNG is written to a temporary file
 * beside PATH and renamed over it only when complete, so a reader never sees
 * half an image and a failure leaves nothing behind. An existing PATH is
 * refused unless `force` (GR_EEXIST, "... already exists (use --force to
 * overwrite)"); an unwritable path is GR_EIO naming the path and the
 * system's reason. Images are written as 8-bit RGBA, or RGB when every pixel
 * is opaque (smaller files, same pixels when read back).
 *
 * Reading accepts any PNG libpng reads (palette, grey, 16-bit, interlaced)
 * and converts it to 8-bit RGBA; a damaged file is GR_EFORMAT naming the
 * file and libpng's reason. Used by tests (golden images) and tools.
 *
 * Memory: render_png_read allocates the image (render_image_free it).
 * Thread safety: distinct calls are independent (libpng state is per call).
 *
 *   if (render_png_write("frame.png", &img, force) < 0)
 *       fprintf(stderr, "%s\n", gr_last_error());
 */
#ifndef GROVE_RENDER_PNGFILE_H
#define GROVE_RENDER_PNGFILE_H

#include "render/image.h"

/* Writes `img` to `path` (atomic; refuses an existing path unless force). */
int render_png_write(const char *path, const struct render_image *img,
                     int force);

/* Reads the PNG at `path` into `img` (allocated here, 8-bit RGBA). */
int render_png_read(const char *path, struct render_image *img);

#endif
