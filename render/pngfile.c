/* PNG output and input with libpng (render/pngfile.h). libpng reports
 * errors by longjmp; the handlers below keep its message so that the grove
 * error names the file and libpng's reason. */
#include "render/pngfile.h"

#include <png.h>
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"

struct png_err {
    jmp_buf jump;
    char message[256];
};

static void on_png_error(png_structp png, png_const_charp msg)
{
    struct png_err *e = png_get_error_ptr(png);
    snprintf(e->message, sizeof e->message, "%s", msg);
    longjmp(e->jump, 1);
}

static void on_png_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg; /* warnings (e.g. unknown chunks) are not errors for grove */
}

static int all_opaque(const struct render_image *img)
{
    size_t n = (size_t)img->width * (size_t)img->height;
    for (size_t i = 0; i < n; i++) {
        if (img->rgba[4 * i + 3] != 255) {
            return 0;
        }
    }
    return 1;
}

/* Writes the PNG stream to an open file; 0 or GR_EIO with e->message. */
static int write_stream(FILE *fp, const struct render_image *img,
                        struct png_err *e)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, e,
                                              on_png_error, on_png_warning);
    if (png == NULL) {
        snprintf(e->message, sizeof e->message, "libpng: out of memory");
        return GR_ENOMEM;
    }
    png_infop info = png_create_info_struct(png);
    uint8_t *volatile row = NULL;
    if (info == NULL || setjmp(e->jump)) {
        if (info == NULL) {
            snprintf(e->message, sizeof e->message, "libpng: out of memory");
        }
        png_destroy_write_struct(&png, info ? &info : NULL);
        free(row);
        return GR_EIO;
    }
    int opaque = all_opaque(img);
    png_init_io(png, fp);
    png_set_IHDR(png, info, (png_uint_32)img->width,
                 (png_uint_32)img->height, 8,
                 opaque ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_RGBA,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    row = malloc((size_t)img->width * 4);
    if (row == NULL) {
        png_error(png, "out of memory for a row");
    }
    for (int y = 0; y < img->height; y++) {
        const uint8_t *src = img->rgba + (size_t)y * img->width * 4;
        if (opaque) {
            for (int x = 0; x < img->width; x++) {
                memcpy(row + 3 * x, src + 4 * x, 3);
            }
            png_write_row(png, row);
        } else {
            png_write_row(png, (png_const_bytep)src);
        }
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(row);
    return 0;
}

int render_png_write(const char *path, const struct render_image *img,
                     int force)
{
    if (img->rgba == NULL || img->width < 1 || img->height < 1) {
        return gr_error(GR_EINVAL, "cannot write %s: the image is empty",
                        path);
    }
    struct gr_atomic_file af;
    int rc = gr_atomic_open(&af, path, force);
    if (rc < 0) {
        return rc;
    }
    struct png_err e;
    e.message[0] = '\0';
    rc = write_stream(af.fp, img, &e);
    if (rc < 0) {
        gr_atomic_abort(&af);
        return gr_error(rc, "writing PNG %s failed: %s", path, e.message);
    }
    return gr_atomic_commit(&af);
}

int render_png_read(const char *path, struct render_image *img)
{
    img->width = 0;
    img->height = 0;
    img->rgba = NULL;
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) {
        return gr_error(GR_EIO, "cannot open %s: %s", path,
                        strerror(errno));
    }
    unsigned char sig[8];
    size_t got = fread(sig, 1, sizeof sig, fp);
    if (got != sizeof sig || png_sig_cmp(sig, 0, sizeof sig) != 0) {
        fclose(fp);
        return gr_error(GR_EFORMAT, "%s is not a PNG file (bad signature)",
                        path);
    }
    struct png_err e;
    e.message[0] = '\0';
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &e,
                                             on_png_error, on_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (png == NULL || info == NULL) {
        png_destroy_read_struct(&png, NULL, NULL);
        fclose(fp);
        return gr_error(GR_ENOMEM, "reading %s: libpng out of memory", path);
    }
    png_bytep *volatile rows = NULL;
    struct render_image *volatile out = img;
    if (setjmp(e.jump)) {
        png_destroy_read_struct(&png, &info, NULL);
        fclose(fp);
        free(rows);
        render_image_free(out);
        return gr_error(GR_EFORMAT, "%s is a damaged PNG: %s", path,
                        e.message);
    }
    png_init_io(png, fp);
    png_set_sig_bytes(png, sizeof sig);
    png_read_info(png, info);
    png_uint_32 w = png_get_image_width(png, info);
    png_uint_32 h = png_get_image_height(png, info);
    if (w < 1 || h < 1 || w > RENDER_IMAGE_MAX_SIDE ||
        h > RENDER_IMAGE_MAX_SIDE) {
        png_destroy_read_struct(&png, &info, NULL);
        fclose(fp);
        return gr_error(GR_EFORMAT, "%s: image size %ux%u is out of range",
                        path, (unsigned)w, (unsigned)h);
    }
    int color = png_get_color_type(png, info);
    if (png_get_bit_depth(png, info) == 16) {
        png_set_strip_16(png);
    }
    if (color == PNG_COLOR_TYPE_PALETTE) {
        png_set_palette_to_rgb(png);
    }
    if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) {
        if (png_get_bit_depth(png, info) < 8) {
            png_set_expand_gray_1_2_4_to_8(png);
        }
        png_set_gray_to_rgb(png);
    }
    if (png_get_valid(png, info, PNG_INFO_tRNS)) {
        png_set_tRNS_to_alpha(png);
    }
    png_set_filler(png, 0xff, PNG_FILLER_AFTER);
    (void)png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != (size_t)w * 4) {
        png_error(png, "unexpected row size after conversion to RGBA");
    }
    if (render_image_init(img, (int)w, (int)h) < 0) {
        png_error(png, "out of memory for the image");
    }
    rows = malloc(sizeof *rows * h);
    if (rows == NULL) {
        png_error(png, "out of memory for row pointers");
    }
    for (png_uint_32 y = 0; y < h; y++) {
        rows[y] = img->rgba + (size_t)y * w * 4;
    }
    png_read_image(png, rows);
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    fclose(fp);
    free(rows);
    return 0;
}
