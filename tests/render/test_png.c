/* render/pngfile.h: round trips (opaque → RGB file, translucent → RGBA
 * file), refusal to overwrite, --force, unwritable paths, no temporary file
 * left behind, and damaged or foreign files on reading. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/files.h"
#include "render/image.h"
#include "render/pngfile.h"
#include "tests/test.h"

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    }
    if (d != NULL) {
        closedir(d);
    }
    return n;
}

static void pattern(struct render_image *img, int translucent)
{
    for (int y = 0; y < img->height; y++) {
        for (int x = 0; x < img->width; x++) {
            unsigned a = translucent ? (unsigned)((x * 37 + y * 11) % 256) : 255;
            uint8_t *p = img->rgba + 4 * ((size_t)y * img->width + x);
            p[0] = (uint8_t)(x * 7);
            p[1] = (uint8_t)(y * 13);
            p[2] = (uint8_t)(x ^ y);
            p[3] = (uint8_t)a;
        }
    }
}

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

int main(void)
{
    char root[] = "/tmp/grove_test_png_XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    char path[512], path2[512], bad[512];
    snprintf(path, sizeof path, "%s/a.png", root);
    snprintf(path2, sizeof path2, "%s/b.png", root);

    /* Round trips, exact pixels, both encodings. */
    for (int translucent = 0; translucent <= 1; translucent++) {
        struct render_image img, back;
        CHECK(render_image_init(&img, 37, 23) == 0);
        pattern(&img, translucent);
        const char *p = translucent ? path2 : path;
        CHECK(render_png_write(p, &img, 0) == 0);
        CHECK(render_png_read(p, &back) == 0);
        CHECK(render_image_equal(&img, &back));
        render_image_free(&back);
        render_image_free(&img);
    }
    /* The opaque image was stored as RGB: colour type byte 25 of IHDR is
     * 2 (RGB); the translucent one as 6 (RGBA). */
    unsigned char head[32];
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL && fread(head, 1, 32, f) == 32);
    if (f) fclose(f);
    CHECK(head[25] == 2);
    f = fopen(path2, "rb");
    CHECK(f != NULL && fread(head, 1, 32, f) == 32);
    if (f) fclose(f);
    CHECK(head[25] == 6);

    /* An existing file is refused without force, and left untouched. */
    struct render_image img;
    CHECK(render_image_init(&img, 5, 4) == 0);
    render_fill(&img, render_rgb(1, 2, 3));
    long before = file_size(path);
    CHECK(render_png_write(path, &img, 0) == GR_EEXIST);
    CHECK_STR_CONTAINS(gr_last_error(), path);
    CHECK_STR_CONTAINS(gr_last_error(), "--force");
    CHECK(file_size(path) == before);
    /* with force it is replaced */
    CHECK(render_png_write(path, &img, 1) == 0);
    struct render_image back;
    CHECK(render_png_read(path, &back) == 0);
    CHECK(render_image_equal(&img, &back));
    render_image_free(&back);

    /* Unwritable: a folder that does not exist, a "folder" that is a file,
     * and a path that is a folder. Each names the path. */
    snprintf(bad, sizeof bad, "%s/no/such/dir/x.png", root);
    CHECK(render_png_write(bad, &img, 0) == GR_EIO);
    CHECK_STR_CONTAINS(gr_last_error(), bad);
    CHECK_STR_CONTAINS(gr_last_error(), "No such file");
    snprintf(bad, sizeof bad, "%s/a.png/x.png", root);
    CHECK(render_png_write(bad, &img, 1) == GR_EIO);
    CHECK_STR_CONTAINS(gr_last_error(), bad);
    CHECK_STR_CONTAINS(gr_last_error(), "Not a directory");
    CHECK(render_png_write(root, &img, 1) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "is a folder");
    /* An empty image is refused. */
    struct render_image empty = {0, 0, NULL};
    CHECK(render_png_write(path2, &empty, 1) == GR_EINVAL);
    /* No temporary files were left behind: exactly a.png and b.png. */
    CHECK(count_entries(root) == 2);

    /* Reading: missing, not a PNG, truncated, corrupted. */
    snprintf(bad, sizeof bad, "%s/missing.png", root);
    CHECK(render_png_read(bad, &back) == GR_EIO);
    CHECK_STR_CONTAINS(gr_last_error(), "missing.png");
    snprintf(bad, sizeof bad, "%s/text.png", root);
    CHECK(gr_write_file_atomic(bad, "hello, not an image", 19, 0) == 0);
    CHECK(render_png_read(bad, &back) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "not a PNG");
    CHECK(back.rgba == NULL);
    char *data = NULL;
    size_t n = 0;
    CHECK(gr_read_file(path2, 1 << 20, &data, &n) == 0);
    snprintf(bad, sizeof bad, "%s/cut.png", root);
    CHECK(gr_write_file_atomic(bad, data, n / 2, 0) == 0);
    CHECK(render_png_read(bad, &back) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "damaged PNG");
    CHECK(back.rgba == NULL);
    data[40] ^= 0x5a; /* inside IHDR or the first IDAT: a CRC error */
    snprintf(bad, sizeof bad, "%s/flip.png", root);
    CHECK(gr_write_file_atomic(bad, data, n, 0) == 0);
    CHECK(render_png_read(bad, &back) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "flip.png");
    free(data);
    render_image_free(&img);

    /* clean up */
    const char *names[] = {"a.png", "b.png", "text.png", "cut.png",
                           "flip.png"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(bad, sizeof bad, "%s/%s", root, names[i]);
        unlink(bad);
    }
    rmdir(root);
    return test_report("render_png");
}
