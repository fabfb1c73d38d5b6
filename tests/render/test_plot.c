/* render/plot.h: nice axes and tick labels, the CSV reader's errors, where
 * lines land, and the plot of a known CSV against a committed golden PNG.
 *
 *   test_render_plot FIXTURE_DIR [OUT_DIR]
 *
 * On a golden mismatch the image drawn is written to OUT_DIR (default
 * /tmp) so it can be looked at; GROVE_UPDATE_GOLDEN=1 rewrites the golden
 * instead (never in CI, and that run fails: look at it before committing,
 * then run again; tests/test.h test_update_golden). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/files.h"
#include "render/image.h"
#include "render/plot.h"
#include "render/pngfile.h"
#include "tests/test.h"

static char tmpdir[] = "/tmp/grove_test_plot_XXXXXX";

/* Writes text to a file in tmpdir; returns its path (static buffer). */
static const char *csv_file(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    unlink(path);
    CHECK(gr_write_file_atomic(path, text, strlen(text), 1) == 0);
    return path;
}

static void test_axes(void)
{
    double step, first, last;
    render_plot_nice_axis(0.0, 1.0, 5, &step, &first, &last);
    CHECK_NEAR(step, 0.2, 1e-12);
    CHECK_NEAR(first, 0.0, 1e-12);
    CHECK_NEAR(last, 1.0, 1e-12);
    render_plot_nice_axis(3.0, 97.0, 5, &step, &first, &last);
    CHECK_NEAR(step, 20.0, 1e-12);
    CHECK_NEAR(first, 0.0, 1e-12);
    CHECK_NEAR(last, 100.0, 1e-12);
    render_plot_nice_axis(-0.33, 0.41, 6, &step, &first, &last);
    CHECK_NEAR(step, 0.2, 1e-12);
    CHECK_NEAR(first, -0.4, 1e-12);
    CHECK_NEAR(last, 0.6, 1e-12);
    render_plot_nice_axis(0.0, 102400.0, 7, &step, &first, &last);
    CHECK_NEAR(step, 20000.0, 1e-9);
    CHECK_NEAR(last, 120000.0, 1e-9);
    /* a flat series gets a range around its value */
    render_plot_nice_axis(5.0, 5.0, 5, &step, &first, &last);
    CHECK(first < 5.0 && last > 5.0 && step > 0.0);
    render_plot_nice_axis(0.0, 0.0, 5, &step, &first, &last);
    CHECK(first < 0.0 && last > 0.0);
    /* every tick interval holds the data: brute force over many ranges */
    for (int i = 1; i < 200; i++) {
        double lo = -3.7 * i, hi = 11.3 * i * i;
        render_plot_nice_axis(lo, hi, 6, &step, &first, &last);
        CHECK(first <= lo && last >= hi);
        double ticks = (last - first) / step;
        CHECK(ticks >= 2.0 && ticks <= 13.0);
        CHECK(fabs(ticks - nearbyint(ticks)) < 1e-6);
    }

    char s[32];
    render_plot_format_tick(0.4, 0.2, s, sizeof s);
    CHECK(strcmp(s, "0.4") == 0);
    render_plot_format_tick(0.75, 0.25, s, sizeof s);
    CHECK(strcmp(s, "0.75") == 0);
    render_plot_format_tick(-1e-17, 0.2, s, sizeof s); /* rounding noise */
    CHECK(strcmp(s, "0.0") == 0);
    render_plot_format_tick(40.0, 20.0, s, sizeof s);
    CHECK(strcmp(s, "40") == 0);
    render_plot_format_tick(40000.0, 20000.0, s, sizeof s);
    CHECK(strcmp(s, "40k") == 0);
    render_plot_format_tick(2500.0, 500.0, s, sizeof s);
    CHECK(strcmp(s, "2500") == 0);
    render_plot_format_tick(5000.0, 2500.0, s, sizeof s);
    CHECK(strcmp(s, "5.0k") == 0);
    render_plot_format_tick(3000000.0, 1000000.0, s, sizeof s);
    CHECK(strcmp(s, "3M") == 0);
    render_plot_format_tick(0.0, 1000000.0, s, sizeof s);
    CHECK(strcmp(s, "0") == 0);
    render_plot_format_tick(2e-7, 1e-7, s, sizeof s);
    CHECK(strcmp(s, "2e-07") == 0);
}

static void test_csv_errors(void)
{
    struct render_csv csv;
    CHECK(render_csv_read(csv_file("empty.csv", ""), &csv) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "empty.csv is empty");
    CHECK(render_csv_read(csv_file("blank.csv", "\n\r\n\n"), &csv) ==
          GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "is empty");
    CHECK(render_csv_read(csv_file("head.csv", "a,b\n"), &csv) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "head.csv has a header but no data");
    CHECK(render_csv_read(csv_file("ragged.csv", "a,b\n1,2\n\n3\n"), &csv) ==
          GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "ragged.csv:4: 1 field, but the "
                                        "header has 2");
    CHECK(render_csv_read(csv_file("quote.csv", "a,b\n1,\"2\n"), &csv) ==
          GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "quote.csv:2: a quoted field is "
                                        "never closed");
    char missing[512];
    snprintf(missing, sizeof missing, "%s/nope.csv", tmpdir);
    CHECK(render_csv_read(missing, &csv) == GR_EIO);
    CHECK_STR_CONTAINS(gr_last_error(), "nope.csv");

    /* quoted fields, CRLF, blank lines, a quote inside quotes */
    CHECK(render_csv_read(csv_file("ok.csv", "step,\"loss, train\",\"say "
                                             "\"\"hi\"\"\"\r\n1,0.5,x\r\n\r\n"
                                             "2,,y\n3,0.25,z"),
                          &csv) == 0);
    CHECK(csv.n_cols == 3 && csv.n_rows == 3);
    CHECK(strcmp(csv.names[1], "loss, train") == 0);
    CHECK(strcmp(csv.names[2], "say \"hi\"") == 0);
    CHECK(csv.line_of[1] == 4 && csv.line_of[2] == 5);
    int c = render_csv_column(&csv, "loss, train");
    CHECK(c == 1);
    double v[3];
    CHECK(render_csv_numbers(&csv, c, v) == 0);
    CHECK(v[0] == 0.5 && isnan(v[1]) && v[2] == 0.25);
    /* a missing column names the columns there are */
    CHECK(render_csv_column(&csv, "loss") == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "no column 'loss' (columns: 'step', "
                                        "'loss, train', 'say \"hi\"')");
    /* a non-numeric cell names file, line, column and cell */
    CHECK(render_csv_numbers(&csv, 2, v) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "ok.csv:2: column 'say \"hi\"': 'x' "
                                        "is not a number");
    /* and through the plot entry point, before anything is drawn */
    struct render_plot_options o = render_plot_defaults();
    struct render_image img;
    const char *ys[] = {"say \"hi\""};
    CHECK(render_plot_csv(&csv, "step", ys, 1, &o, &img) == GR_EFORMAT);
    CHECK(img.rgba == NULL);
    const char *ys2[] = {"nope"};
    CHECK(render_plot_csv(&csv, "step", ys2, 1, &o, &img) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "no column 'nope'");
    render_csv_free(&csv);

    /* a column with no value at all is refused with a reason */
    CHECK(render_csv_read(csv_file("gaps.csv", "x,y\n1,\n2,\n"), &csv) == 0);
    const char *ys3[] = {"y"};
    CHECK(render_plot_csv(&csv, "x", ys3, 1, &o, &img) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "column 'y' has no row");
    render_csv_free(&csv);
}

/* Rows from `from` down where colour c appears in column x. */
static int rows_with(const struct render_image *img, int x, int from,
                     uint32_t c, int *first)
{
    int n = 0;
    *first = -1;
    for (int y = from; y < img->height; y++) {
        if (render_get_pixel(img, x, y) == c) {
            if (*first < 0) {
                *first = y;
            }
            n++;
        }
    }
    return n;
}

static void test_geometry(void)
{
    /* Two flat series: each is a horizontal band of its colour, the higher
     * value above; the gap leaves its columns empty. */
    double x[21], lo[21], hi[21];
    for (int i = 0; i < 21; i++) {
        x[i] = i;
        lo[i] = 1.2;
        hi[i] = (i >= 8 && i <= 12) ? NAN : 2.4;
    }
    struct render_plot_series s[2] = {{"low", x, lo, 21, NULL, NULL},
                                     {"high", x, hi, 21, NULL, NULL}};
    struct render_plot_options o = render_plot_defaults();
    o.width = 420;
    o.height = 300;
    struct render_image img;
    CHECK(render_plot(&img, &o, s, 2) == 0);
    uint32_t blue = 0x0072b2ffu, orange = 0xe66100ffu;
    int row_lo = -2, row_hi = -2;
    int gap_columns = 0, hi_columns = 0;
    for (int col = 80; col < 380; col++) {
        int f1, f2;
        int fb;
        if (rows_with(&img, col, 0, 0xb4b4b4ffu, &fb) > 0) {
            continue; /* the legend box (its border colour) is here */
        }
        int n1 = rows_with(&img, col, 0, blue, &f1);
        int n2 = rows_with(&img, col, 0, orange, &f2);
        if (n1 > 0) {
            if (row_lo == -2) {
                row_lo = f1;
            }
            CHECK_MSG(f1 == row_lo, "column %d: low line at %d, not %d", col,
                      f1, row_lo);
        }
        if (n2 > 0) {
            if (row_hi == -2) {
                row_hi = f2;
            }
            CHECK(f2 == row_hi);
            hi_columns++;
        } else {
            gap_columns++;
        }
    }
    CHECK(row_lo > 0 && row_hi > 0 && row_hi < row_lo);
    CHECK(gap_columns > 40); /* the NaN run left a hole */
    CHECK(hi_columns > 120);
    render_image_free(&img);

    /* nothing finite: an error, no image */
    double nan1[1] = {NAN};
    struct render_plot_series e = {"e", nan1, nan1, 1, NULL, NULL};
    CHECK(render_plot(&img, &o, &e, 1) == GR_EINVAL);
    CHECK(img.rgba == NULL);
    o.width = 50;
    CHECK(render_plot(&img, &o, s, 2) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "too small");
}

static void test_golden(const char *fixtures, const char *out_dir)
{
    char csv_path[512], golden[512], actual[512];
    snprintf(csv_path, sizeof csv_path, "%s/curve.csv", fixtures);
    snprintf(golden, sizeof golden, "%s/plot_golden.png", fixtures);
    snprintf(actual, sizeof actual, "%s/plot_actual.png", out_dir);
    struct render_csv csv;
    CHECK(render_csv_read(csv_path, &csv) == 0);
    const char *ys[] = {"charts/episodic_return", "losses/value_loss"};
    struct render_plot_options o = render_plot_defaults();
    struct render_image img;
    CHECK(render_plot_csv(&csv, "global_step", ys, 2, &o, &img) == 0);
    render_csv_free(&csv);
    if (test_update_golden(golden)) {
        CHECK(render_png_write(golden, &img, 1) == 0);
        printf("rewrote %s\n", golden);
    }
    struct render_image want;
    CHECK_MSG(render_png_read(golden, &want) == 0, "%s", gr_last_error());
    int same = render_image_equal(&img, &want);
    CHECK_MSG(same, "the plot differs from %s; wrote what was drawn to %s",
              golden, actual);
    if (!same) {
        render_png_write(actual, &img, 1);
    }
    render_image_free(&want);
    render_image_free(&img);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_render_plot FIXTURE_DIR [OUT_DIR]\n");
        return 2;
    }
    CHECK(mkdtemp(tmpdir) != NULL);
    test_axes();
    test_csv_errors();
    test_geometry();
    test_golden(argv[1], argc > 2 ? argv[2] : "/tmp");
    const char *names[] = {"empty.csv", "blank.csv", "head.csv", "ragged.csv",
                           "quote.csv", "ok.csv", "gaps.csv"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", tmpdir, names[i]);
        unlink(p);
    }
    rmdir(tmpdir);
    return test_report("render_plot");
}
