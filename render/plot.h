/* render/plot.h — line plots (learning curves) drawn into a render_image,
 * and the small CSV reader that feeds them.
 *
 * A plot has axes with "nice" ticks (steps of 1, 2 or 5 × 10^k that enclose
 * the data), light grid lines, one anti-aliased line per series in a fixed
 * palette, a legend naming each series, a title and an x-axis label. A
 * series point whose x or y is not finite (NaN: an empty CSV cell) breaks
 * the line there; an isolated point is drawn as a dot.
 *
 * CSV: the first line names the columns; fields are separated by commas,
 * may be double-quoted ("a,b", "" for a quote), lines end in \n or \r\n.
 * Every line must have the header's number of fields. Cells of the columns
 * a plot uses must be numbers (strtod syntax) or empty (a gap); anything
 * else is an error naming the file, line, column and cell. Errors are
 * GR_EFORMAT/GR_EINVAL/GR_EIO with a message for gr_last_error().
 *
 * Memory: render_csv_read allocates (render_csv_free releases); render_plot
 * draws into the caller's image and allocates one scratch mask per call
 * (not a hot path). Thread safety: none shared; distinct objects are
 * independent. Drawing is deterministic: the same data gives the same
 * pixels in every build (the golden test depends on it).
 *
 *   struct render_csv csv;
 *   if (render_csv_read("metrics.csv", &csv) < 0) return -1;
 *   const char *ys[] = {"losses/value_loss"};
 *   struct render_plot_options o = render_plot_defaults();
 *   rc = render_plot_csv(&csv, "global_step", ys, 1, &o, &img);
 *   render_csv_free(&csv);
 */
#ifndef GROVE_RENDER_PLOT_H
#define GROVE_RENDER_PLOT_H

#include <stddef.h>

#include "render/image.h"

#define RENDER_PLOT_MAX_SERIES 8

struct render_plot_series {
    const char *name; /* shown in the legend */
    const double *x;  /* [n] */
    const double *y;  /* [n]; non-finite = gap */
    size_t n;
    /* optional band around the line, [n] each (NULL: none): the area
     * between lo and hi is shaded in the series' colour, translucent,
     * under every line; a point where either is not finite breaks it */
    const double *lo, *hi;
};

struct render_plot_options {
    int width, height;   /* image size in pixels (default 800 × 480) */
    const char *title;   /* NULL: none */
    const char *x_label; /* NULL: none */
    const char *y_label; /* NULL: none */
};

/* Default options: 800 × 480, no title or labels. */
struct render_plot_options render_plot_defaults(void);

/* Allocates `img` (opts->width × opts->height) and draws the plot.
 * 1 ≤ n_series ≤ RENDER_PLOT_MAX_SERIES; at least one finite point in all.
 * GR_EINVAL when there is nothing to plot or the size is too small. */
int render_plot(struct render_image *img,
                const struct render_plot_options *opts,
                const struct render_plot_series *series, int n_series);

/* "Nice" axis for [lo, hi] with about `target` ticks: the tick step and
 * the first and last tick (enclosing lo and hi). lo == hi is widened. */
void render_plot_nice_axis(double lo, double hi, int target, double *step,
                           double *first, double *last);

/* Formats a tick value v for an axis whose step is `step` ("0.25", "20k",
 * "1.5M", "1e-05") into out[cap]. */
void render_plot_format_tick(double v, double step, char *out, size_t cap);

struct render_csv {
    char path[256];   /* for messages */
    int n_cols;
    char **names;     /* [n_cols] */
    size_t n_rows;    /* data rows (the header excluded) */
    char **cells;     /* [n_rows · n_cols], row-major, NUL-terminated */
    size_t *line_of;  /* [n_rows]: the 1-based file line of each row */
    char *text;       /* owns the strings */
};

/* Reads and splits a CSV file (bounded to 256 MiB). Empty file, header
 * only, or a row with the wrong number of fields: GR_EFORMAT naming the
 * file and line. */
int render_csv_read(const char *path, struct render_csv *csv);

void render_csv_free(struct render_csv *csv);

/* Index of the column called `name`, or GR_EINVAL with a message listing
 * the columns the file has. */
int render_csv_column(const struct render_csv *csv, const char *name);

/* Converts column `col` into out[n_rows]: numbers, NaN for empty cells;
 * a non-numeric cell is GR_EFORMAT "FILE:LINE: column 'C': 'abc' is not a
 * number". */
int render_csv_numbers(const struct render_csv *csv, int col, double *out);

/* The plot of CSV columns: x against each of ys[0..n_y). Errors of the
 * functions above; x_label defaults to x, title to the file's name. */
int render_plot_csv(const struct render_csv *csv, const char *x,
                    const char *const *ys, int n_y,
                    const struct render_plot_options *opts,
                    struct render_image *img);

/* ---- several runs of one curve: mean and band ----------------------------- */

enum render_band_kind {
    RENDER_BAND_MINMAX = 0, /* lo, hi = min and max over the runs */
    RENDER_BAND_STD = 1,    /* lo, hi = mean ∓ std (population, ddof 0) */
};

/* The mean curve of n_runs runs and its band, on a common x grid: the
 * union of the runs' x values (points with a non-finite x or y dropped)
 * that lie inside every run's range [its first x, its last x], each run
 * read there by linear interpolation between its own points (exact at
 * them; x must not decrease within a run). All arrays are malloc'd
 * (render_band_free). GR_EINVAL naming `what` when a run has no finite
 * point, x decreases, or the runs' ranges do not overlap. */
struct render_band {
    size_t n;
    double *x, *mean, *lo, *hi, *std, *min, *max;
};

int render_band_compute(const double *const *xs, const double *const *ys,
                        const size_t *ns, int n_runs,
                        enum render_band_kind kind, const char *what,
                        struct render_band *out);
void render_band_free(struct render_band *b);

/* ---- a band summary read back ---------------------------------------------- */

/* grove plot --print writes each group's band as CSV rows with the header
 * group,runs,X,mean,std,min,max,lo,hi (X the x column). Reading such a
 * file back lets a picture show groups whose runs are no longer kept
 * beside new runs. */
#define RENDER_SUMMARY_NAME_MAX 128

struct render_band_group {
    char name[RENDER_SUMMARY_NAME_MAX];
    int runs;
    struct render_band band; /* lo, hi as `kind` asks: min-max or mean ∓ std */
};

/* Whether csv has the summary header above (any X). */
int render_csv_is_band_summary(const struct render_csv *csv);

/* The groups of a summary, in file order, at most cap. GR_EFORMAT naming
 * the file and line: X is not x, a group's rows are not together, x
 * decreases within a group, runs is not a positive integer or changes
 * within a group, a cell is not a number, more than cap groups. */
int render_band_summary_read(const struct render_csv *csv, const char *x,
                             enum render_band_kind kind,
                             struct render_band_group *out, int cap,
                             int *n_out);

#endif
