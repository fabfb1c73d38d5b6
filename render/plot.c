/* Line plots and their CSV reader (render/plot.h). */
#define _POSIX_C_SOURCE 200809L
#include "render/plot.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"
#include "render/font.h"

#define CSV_MAX_BYTES ((size_t)256 << 20)

/* ---- CSV ----------------------------------------------------------------- */

void render_csv_free(struct render_csv *csv)
{
    free(csv->names);
    free(csv->cells);
    free(csv->line_of);
    free(csv->text);
    memset(csv, 0, sizeof *csv);
}

struct cell_list {
    char **items;
    size_t n, cap;
};

static int push_cell(struct cell_list *l, char *cell)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        char **p = realloc(l->items, cap * sizeof *p);
        if (p == NULL) {
            return GR_ENOMEM;
        }
        l->items = p;
        l->cap = cap;
    }
    l->items[l->n++] = cell;
    return 0;
}

/* Splits one record starting at src[*pos] into cells written to dst[*out];
 * advances *pos past the line end and *line by the newlines consumed.
 * Returns the number of fields, or a negative code. */
static long parse_record(const char *path, const char *src, size_t n,
                         size_t *pos, char *dst, size_t *out, size_t *line,
                         struct cell_list *cells)
{
    long fields = 0;
    size_t i = *pos, o = *out;
    for (;;) {
        if (push_cell(cells, dst + o) < 0) {
            return gr_error(GR_ENOMEM, "out of memory reading %s", path);
        }
        fields++;
        if (i < n && src[i] == '"') {
            size_t start_line = *line;
            i++;
            for (;;) {
                if (i >= n) {
                    return gr_error(GR_EFORMAT,
                                    "%s:%zu: a quoted field is never closed",
                                    path, start_line);
                }
                if (src[i] == '"') {
                    if (i + 1 < n && src[i + 1] == '"') {
                        dst[o++] = '"';
                        i += 2;
                        continue;
                    }
                    i++;
                    break;
                }
                if (src[i] == '\n') {
                    (*line)++;
                }
                dst[o++] = src[i++];
            }
            if (i < n && src[i] != ',' && src[i] != '\n' && src[i] != '\r') {
                return gr_error(GR_EFORMAT,
                                "%s:%zu: text after a closing quote", path,
                                *line);
            }
        } else {
            while (i < n && src[i] != ',' && src[i] != '\n' &&
                   !(src[i] == '\r' && (i + 1 == n || src[i + 1] == '\n'))) {
                dst[o++] = src[i++];
            }
        }
        dst[o++] = '\0';
        if (i < n && src[i] == ',') {
            i++;
            continue;
        }
        if (i < n && src[i] == '\r') {
            i++;
        }
        if (i < n && src[i] == '\n') {
            i++;
        }
        break;
    }
    *pos = i;
    *out = o;
    return fields;
}

static int line_is_blank(const char *src, size_t n, size_t i)
{
    return i < n && (src[i] == '\n' || (src[i] == '\r' && i + 1 < n &&
                                         src[i + 1] == '\n'));
}

int render_csv_read(const char *path, struct render_csv *csv)
{
    memset(csv, 0, sizeof *csv);
    snprintf(csv->path, sizeof csv->path, "%s", path);
    char *src = NULL;
    size_t n = 0;
    int rc = gr_read_file(path, CSV_MAX_BYTES, &src, &n);
    if (rc < 0) {
        return rc;
    }
    csv->text = malloc(n + 1);
    struct cell_list cells = {NULL, 0, 0};
    size_t *lines = NULL;
    size_t lines_cap = 0, n_records = 0;
    if (csv->text == NULL) {
        free(src);
        return gr_error(GR_ENOMEM, "out of memory reading %s", path);
    }
    size_t pos = 0, out = 0, line = 1;
    long header_fields = -1;
    while (pos < n) {
        if (line_is_blank(src, n, pos)) {
            pos += src[pos] == '\r' ? 2 : 1;
            line++;
            continue;
        }
        size_t record_line = line;
        long f = parse_record(path, src, n, &pos, csv->text, &out, &line,
                              &cells);
        if (f < 0) {
            rc = (int)f;
            goto fail;
        }
        line++;
        if (header_fields < 0) {
            header_fields = f;
        } else {
            if (f != header_fields) {
                rc = gr_error(GR_EFORMAT,
                              "%s:%zu: %ld field%s, but the header has %ld",
                              path, record_line, f, f == 1 ? "" : "s",
                              header_fields);
                goto fail;
            }
            if (n_records == lines_cap) {
                size_t cap = lines_cap ? 2 * lines_cap : 64;
                size_t *p = realloc(lines, cap * sizeof *p);
                if (p == NULL) {
                    rc = gr_error(GR_ENOMEM, "out of memory reading %s", path);
                    goto fail;
                }
                lines = p;
                lines_cap = cap;
            }
            lines[n_records++] = record_line;
        }
    }
    if (header_fields < 0) {
        rc = gr_error(GR_EFORMAT, "%s is empty: no header line", path);
        goto fail;
    }
    if (n_records == 0) {
        rc = gr_error(GR_EFORMAT, "%s has a header but no data rows", path);
        goto fail;
    }
    free(src);
    csv->n_cols = (int)header_fields;
    csv->names = malloc((size_t)header_fields * sizeof *csv->names);
    if (csv->names == NULL) {
        free(cells.items);
        free(lines);
        render_csv_free(csv);
        return gr_error(GR_ENOMEM, "out of memory reading %s", path);
    }
    memcpy(csv->names, cells.items, (size_t)header_fields * sizeof(char *));
    memmove(cells.items, cells.items + header_fields,
            n_records * (size_t)header_fields * sizeof(char *));
    csv->cells = cells.items;
    csv->n_rows = n_records;
    csv->line_of = lines;
    return 0;
fail:
    free(src);
    free(cells.items);
    free(lines);
    render_csv_free(csv);
    return rc;
}

int render_csv_column(const struct render_csv *csv, const char *name)
{
    for (int c = 0; c < csv->n_cols; c++) {
        if (strcmp(csv->names[c], name) == 0) {
            return c;
        }
    }
    char list[512];
    size_t used = 0;
    list[0] = '\0';
    for (int c = 0; c < csv->n_cols && used + 8 < sizeof list; c++) {
        int w = snprintf(list + used, sizeof list - used, "%s'%s'",
                         c ? ", " : "", csv->names[c]);
        if (w < 0) {
            break;
        }
        used += (size_t)w;
    }
    if (used >= sizeof list) {
        memcpy(list + sizeof list - 4, "...", 4);
    }
    return gr_error(GR_EINVAL, "%s has no column '%s' (columns: %s)",
                    csv->path, name, list);
}

int render_csv_numbers(const struct render_csv *csv, int col, double *out)
{
    for (size_t r = 0; r < csv->n_rows; r++) {
        const char *cell = csv->cells[r * (size_t)csv->n_cols + (size_t)col];
        const char *p = cell;
        while (isspace((unsigned char)*p)) {
            p++;
        }
        if (*p == '\0') {
            out[r] = NAN;
            continue;
        }
        char *end = NULL;
        double v = strtod(p, &end);
        while (end != NULL && isspace((unsigned char)*end)) {
            end++;
        }
        if (end == p || end == NULL || *end != '\0') {
            return gr_error(GR_EFORMAT,
                            "%s:%zu: column '%s': '%.40s' is not a number",
                            csv->path, csv->line_of[r], csv->names[col], cell);
        }
        out[r] = v;
    }
    return 0;
}

/* ---- axes ------------------------------------------------------------------ */

void render_plot_nice_axis(double lo, double hi, int target, double *step,
                           double *first, double *last)
{
    if (target < 2) {
        target = 2;
    }
    if (!(hi > lo)) {
        double pad = fabs(lo) > 0.0 ? fabs(lo) * 0.1 : 1.0;
        lo -= pad;
        hi += pad;
    }
    double raw = (hi - lo) / target;
    double mag = pow(10.0, floor(log10(raw)));
    double norm = raw / mag;
    double nice;
    if (norm <= 1.0) {
        nice = 1.0;
    } else if (norm <= 2.0) {
        nice = 2.0;
    } else if (norm <= 5.0) {
        nice = 5.0;
    } else {
        nice = 10.0;
    }
    *step = nice * mag;
    /* Tolerate rounding: a bound within 1e-9 of a tick sits on it. */
    *first = floor(lo / *step + 1e-9) * *step;
    *last = ceil(hi / *step - 1e-9) * *step;
    if (*last <= *first) {
        *last = *first + *step;
    }
}

static int decimals_for(double step)
{
    for (int d = 0; d <= 12; d++) {
        double s = step * pow(10.0, d);
        if (s >= 0.999 && fabs(s - nearbyint(s)) <= 1e-6 * s) {
            return d;
        }
    }
    return 12;
}

void render_plot_format_tick(double v, double step, char *out, size_t cap)
{
    if (fabs(v) < step * 1e-6) {
        v = 0.0;
    }
    if (step >= 1e6) {
        snprintf(out, cap, "%.*fM", decimals_for(step / 1e6), v / 1e6);
    } else if (step >= 1e3) {
        snprintf(out, cap, "%.*fk", decimals_for(step / 1e3), v / 1e3);
    } else {
        int d = decimals_for(step);
        if (d > 5) {
            snprintf(out, cap, "%.2g", v);
        } else {
            snprintf(out, cap, "%.*f", d, v);
        }
    }
    if (strcmp(out, "0k") == 0 || strcmp(out, "0M") == 0) {
        snprintf(out, cap, "0");
    }
}

/* ---- drawing ---------------------------------------------------------------- */

struct render_plot_options render_plot_defaults(void)
{
    struct render_plot_options o = {800, 480, NULL, NULL, NULL};
    return o;
}

static const uint32_t palette[RENDER_PLOT_MAX_SERIES] = {
    0x0072b2ffu, /* blue */
    0xe66100ffu, /* orange */
    0x009650ffu, /* green */
    0xc81e3cffu, /* crimson */
    0x7846aaffu, /* purple */
    0x8c5a28ffu, /* brown */
    0xdc3ca0ffu, /* magenta */
    0x5a5a5affu, /* grey */
};

#define COLOR_BG 0xffffffffu
#define COLOR_GRID 0xe4e4e4ffu
#define COLOR_AXIS 0x303030ffu
#define COLOR_TEXT 0x202020ffu
#define LINE_WIDTH 2.0f
#define BAND_ALPHA 0.22f

struct frame {
    int left, top, pw, ph; /* the plot area, in pixels */
    double x0, x1, y0, y1; /* data limits (first and last ticks) */
};

static float map_x(const struct frame *f, double v)
{
    return (float)((double)f->left + 0.5 +
                   (v - f->x0) / (f->x1 - f->x0) * (double)(f->pw - 1));
}

static float map_y(const struct frame *f, double v)
{
    return (float)((double)f->top + 0.5 + (double)(f->ph - 1) -
                   (v - f->y0) / (f->y1 - f->y0) * (double)(f->ph - 1));
}

/* Max-combines the coverage of a segment (or a dot, when both ends are the
 * same point) into mask[ph][pw] over the plot area. */
static void mask_segment(float *mask, const struct frame *f, float ax,
                         float ay, float bx, float by, float width)
{
    float half = width * 0.5f, pad = half + 1.0f;
    int i0 = (int)floorf(fminf(ax, bx) - pad) - f->left;
    int i1 = (int)ceilf(fmaxf(ax, bx) + pad) - f->left;
    int j0 = (int)floorf(fminf(ay, by) - pad) - f->top;
    int j1 = (int)ceilf(fmaxf(ay, by) + pad) - f->top;
    i0 = i0 < 0 ? 0 : i0;
    j0 = j0 < 0 ? 0 : j0;
    i1 = i1 >= f->pw ? f->pw - 1 : i1;
    j1 = j1 >= f->ph ? f->ph - 1 : j1;
    float vx = bx - ax, vy = by - ay, len2 = vx * vx + vy * vy;
    for (int j = j0; j <= j1; j++) {
        for (int i = i0; i <= i1; i++) {
            float px = (float)(f->left + i) + 0.5f - ax;
            float py = (float)(f->top + j) + 0.5f - ay;
            float u = len2 > 0.0f ? (px * vx + py * vy) / len2 : 0.0f;
            u = u < 0.0f ? 0.0f : (u > 1.0f ? 1.0f : u);
            float dx = px - u * vx, dy = py - u * vy;
            float c = half + 0.5f - sqrtf(dx * dx + dy * dy);
            if (c > 1.0f) {
                c = 1.0f;
            }
            float *m = &mask[(size_t)j * (size_t)f->pw + (size_t)i];
            if (c > *m) {
                *m = c;
            }
        }
    }
}

static int finite_point(const struct render_plot_series *s, size_t i)
{
    return isfinite(s->x[i]) && isfinite(s->y[i]);
}

static int band_point(const struct render_plot_series *s, size_t i)
{
    return s->lo != NULL && s->hi != NULL && isfinite(s->x[i]) &&
           isfinite(s->lo[i]) && isfinite(s->hi[i]);
}

/* Max-combines into mask the coverage of the area between lo and hi of
 * consecutive band points (a pixel column is sampled at its centre; the
 * top and bottom pixels get their fractional overlap). */
static void mask_band(float *mask, const struct frame *f,
                      const struct render_plot_series *se)
{
    for (size_t k = 0; k + 1 < se->n; k++) {
        if (!band_point(se, k) || !band_point(se, k + 1)) {
            continue;
        }
        float ax = map_x(f, se->x[k]), bx = map_x(f, se->x[k + 1]);
        if (!(bx > ax)) {
            continue;
        }
        float at = map_y(f, se->hi[k]), ab = map_y(f, se->lo[k]);
        float bt = map_y(f, se->hi[k + 1]), bb = map_y(f, se->lo[k + 1]);
        int i0 = (int)floorf(ax) - f->left, i1 = (int)ceilf(bx) - f->left;
        i0 = i0 < 0 ? 0 : i0;
        i1 = i1 >= f->pw ? f->pw - 1 : i1;
        for (int i = i0; i <= i1; i++) {
            float cx = (float)(f->left + i) + 0.5f;
            if (cx < ax || cx > bx) {
                continue;
            }
            float u = (cx - ax) / (bx - ax);
            float top = at + u * (bt - at), bot = ab + u * (bb - ab);
            int j0 = (int)floorf(top) - f->top, j1 = (int)ceilf(bot) - f->top;
            j0 = j0 < 0 ? 0 : j0;
            j1 = j1 >= f->ph ? f->ph - 1 : j1;
            for (int j = j0; j <= j1; j++) {
                float py = (float)(f->top + j);
                float c = fminf(py + 1.0f, bot) - fmaxf(py, top);
                if (c <= 0.0f) {
                    continue;
                }
                c = c > 1.0f ? 1.0f : c;
                float *m = &mask[(size_t)j * (size_t)f->pw + (size_t)i];
                if (c > *m) {
                    *m = c;
                }
            }
        }
    }
}

int render_plot(struct render_image *img,
                const struct render_plot_options *opts,
                const struct render_plot_series *series, int n_series)
{
    img->rgba = NULL;
    img->width = img->height = 0;
    if (n_series < 1 || n_series > RENDER_PLOT_MAX_SERIES) {
        return gr_error(GR_EINVAL, "a plot takes 1 to %d series (got %d)",
                        RENDER_PLOT_MAX_SERIES, n_series);
    }
    if (opts->width < 160 || opts->height < 120) {
        return gr_error(GR_EINVAL, "plot size %dx%d is too small (at least "
                        "160x120)", opts->width, opts->height);
    }
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY,
           ymax = -INFINITY;
    for (int s = 0; s < n_series; s++) {
        for (size_t i = 0; i < series[s].n; i++) {
            if (finite_point(&series[s], i)) {
                xmin = fmin(xmin, series[s].x[i]);
                xmax = fmax(xmax, series[s].x[i]);
                ymin = fmin(ymin, series[s].y[i]);
                ymax = fmax(ymax, series[s].y[i]);
            }
            if (band_point(&series[s], i)) {
                ymin = fmin(ymin, series[s].lo[i]);
                ymax = fmax(ymax, series[s].hi[i]);
            }
        }
    }
    if (!(xmin <= xmax)) {
        return gr_error(GR_EINVAL, "nothing to plot: no row has both an x "
                        "and a y value");
    }
    int rc = render_image_init(img, opts->width, opts->height);
    if (rc < 0) {
        return rc;
    }
    render_fill(img, COLOR_BG);

    struct frame f;
    double xstep, ystep;
    render_plot_nice_axis(xmin, xmax, opts->width / 110, &xstep, &f.x0, &f.x1);
    render_plot_nice_axis(ymin, ymax, opts->height / 70, &ystep, &f.y0, &f.y1);
    int nx = (int)lround((f.x1 - f.x0) / xstep);
    int ny = (int)lround((f.y1 - f.y0) / ystep);

    /* Margins from the text they hold. */
    char label[64];
    int ylab_w = 0;
    for (int k = 0; k <= ny; k++) {
        render_plot_format_tick(f.y0 + k * ystep, ystep, label, sizeof label);
        int w = render_text_width(label, 1);
        ylab_w = w > ylab_w ? w : ylab_w;
    }
    render_plot_format_tick(f.x1, xstep, label, sizeof label);
    int last_xlab = render_text_width(label, 1);
    f.top = 14;
    if (opts->title != NULL) {
        f.top += 2 * RENDER_FONT_GLYPH_H + 10;
    }
    if (opts->y_label != NULL) {
        f.top += RENDER_FONT_LINE + 4;
    }
    f.left = 12 + ylab_w + 9;
    int right = last_xlab / 2 + 14;
    int bottom = 8 + RENDER_FONT_GLYPH_H + 10;
    if (opts->x_label != NULL) {
        bottom += RENDER_FONT_LINE + 4;
    }
    f.pw = opts->width - f.left - right;
    f.ph = opts->height - f.top - bottom;
    if (f.pw < 40 || f.ph < 40) {
        render_image_free(img);
        return gr_error(GR_EINVAL, "plot size %dx%d leaves no room for the "
                        "data", opts->width, opts->height);
    }

    /* Grid, ticks and tick labels. */
    for (int k = 0; k <= nx; k++) {
        double v = f.x0 + k * xstep;
        int px = (int)floorf(map_x(&f, v));
        render_rect(img, px, f.top, 1, f.ph, COLOR_GRID);
        render_rect(img, px, f.top + f.ph, 1, 5, COLOR_AXIS);
        render_plot_format_tick(v, xstep, label, sizeof label);
        render_text(img, px - render_text_width(label, 1) / 2,
                    f.top + f.ph + 8, label, COLOR_TEXT, 1);
    }
    for (int k = 0; k <= ny; k++) {
        double v = f.y0 + k * ystep;
        int py = (int)floorf(map_y(&f, v));
        render_rect(img, f.left, py, f.pw, 1, COLOR_GRID);
        render_rect(img, f.left - 5, py, 5, 1, COLOR_AXIS);
        render_plot_format_tick(v, ystep, label, sizeof label);
        render_text(img, f.left - 9 - render_text_width(label, 1),
                    py - RENDER_FONT_ASCENT / 2, label, COLOR_TEXT, 1);
    }
    render_rect(img, f.left - 1, f.top, 1, f.ph + 1, COLOR_AXIS);
    render_rect(img, f.left - 1, f.top + f.ph, f.pw + 1, 1, COLOR_AXIS);

    /* Series: one coverage mask each, so joints are not drawn twice. */
    float *mask = malloc((size_t)f.pw * (size_t)f.ph * sizeof *mask);
    unsigned char *ink = calloc((size_t)f.pw * (size_t)f.ph, 1);
    if (mask == NULL || ink == NULL) {
        free(mask);
        free(ink);
        render_image_free(img);
        return gr_error(GR_ENOMEM, "out of memory drawing a plot");
    }
    /* Bands first, translucent, under every line. */
    for (int s = 0; s < n_series; s++) {
        if (series[s].lo == NULL || series[s].hi == NULL) {
            continue;
        }
        memset(mask, 0, (size_t)f.pw * (size_t)f.ph * sizeof *mask);
        mask_band(mask, &f, &series[s]);
        for (int j = 0; j < f.ph; j++) {
            for (int i = 0; i < f.pw; i++) {
                float c = mask[(size_t)j * (size_t)f.pw + (size_t)i];
                if (c > 0.0f) {
                    render_pixel_cover(img, f.left + i, f.top + j,
                                       palette[s], BAND_ALPHA * c);
                }
            }
        }
    }
    for (int s = 0; s < n_series; s++) {
        const struct render_plot_series *se = &series[s];
        memset(mask, 0, (size_t)f.pw * (size_t)f.ph * sizeof *mask);
        for (size_t i = 0; i < se->n; i++) {
            if (!finite_point(se, i)) {
                continue;
            }
            float ax = map_x(&f, se->x[i]), ay = map_y(&f, se->y[i]);
            int prev = i > 0 && finite_point(se, i - 1);
            int next = i + 1 < se->n && finite_point(se, i + 1);
            if (next) {
                mask_segment(mask, &f, ax, ay, map_x(&f, se->x[i + 1]),
                             map_y(&f, se->y[i + 1]), LINE_WIDTH);
            } else if (!prev) {
                mask_segment(mask, &f, ax, ay, ax, ay, 2.0f * LINE_WIDTH);
            }
        }
        for (int j = 0; j < f.ph; j++) {
            for (int i = 0; i < f.pw; i++) {
                float c = mask[(size_t)j * (size_t)f.pw + (size_t)i];
                if (c > 0.0f) {
                    render_pixel_cover(img, f.left + i, f.top + j,
                                       palette[s], c);
                    if (c > 0.25f) {
                        ink[(size_t)j * (size_t)f.pw + (size_t)i] = 1;
                    }
                }
            }
        }
    }
    free(mask);

    /* Legend where it hides the fewest data pixels: the four corners
     * first, then a scan of the plot area (ties keep the earlier place). */
    int name_w = 0;
    for (int s = 0; s < n_series; s++) {
        int w = render_text_width(series[s].name ? series[s].name : "", 1);
        name_w = w > name_w ? w : name_w;
    }
    int lw = 8 + 18 + 6 + name_w + 8;
    int lh = 6 + n_series * RENDER_FONT_LINE + 3;
    int xs[2] = {f.pw - lw - 8, 8}, ys[2] = {8, f.ph - lh - 8};
    int best_x = xs[0], best_y = ys[0];
    long best_count = -1;
    for (int c = 0; c < 4 + 81; c++) {
        int cx, cy;
        if (c < 4) {
            cx = xs[c % 2];
            cy = ys[c / 2];
        } else {
            cx = 8 + (f.pw - lw - 16) * ((c - 4) % 9) / 8;
            cy = 8 + (f.ph - lh - 16) * ((c - 4) / 9) / 8;
        }
        long count = 0;
        for (int j = 0; j < lh; j++) {
            for (int i = 0; i < lw; i++) {
                int x = cx + i, y = cy + j;
                if (x >= 0 && y >= 0 && x < f.pw && y < f.ph) {
                    count += ink[(size_t)y * (size_t)f.pw + (size_t)x];
                }
            }
        }
        if (best_count < 0 || count < best_count) {
            best_x = cx;
            best_y = cy;
            best_count = count;
        }
    }
    free(ink);
    int lx = f.left + best_x, ly = f.top + best_y;
    render_rect(img, lx, ly, lw, lh, 0xffffffe6u);
    render_rect_outline(img, lx, ly, lw, lh, 1, 0xb4b4b4ffu);
    for (int s = 0; s < n_series; s++) {
        int y = ly + 6 + s * RENDER_FONT_LINE;
        float mid = (float)y + 3.5f;
        render_line_aa(img, (float)lx + 8.0f, mid, (float)lx + 26.0f, mid,
                       LINE_WIDTH, palette[s]);
        render_text(img, lx + 8 + 18 + 6, y, series[s].name ? series[s].name : "",
                    COLOR_TEXT, 1);
    }

    /* Title and axis labels. */
    if (opts->title != NULL) {
        int w = render_text_width(opts->title, 2);
        int x = f.left + (f.pw - w) / 2;
        render_text(img, x < 4 ? 4 : x, 12, opts->title, COLOR_TEXT, 2);
    }
    if (opts->y_label != NULL) {
        render_text(img, 12, f.top - RENDER_FONT_LINE - 4, opts->y_label,
                    COLOR_TEXT, 1);
    }
    if (opts->x_label != NULL) {
        int w = render_text_width(opts->x_label, 1);
        render_text(img, f.left + (f.pw - w) / 2,
                    f.top + f.ph + 8 + RENDER_FONT_GLYPH_H + 8, opts->x_label,
                    COLOR_TEXT, 1);
    }
    return 0;
}

int render_plot_csv(const struct render_csv *csv, const char *x,
                    const char *const *ys, int n_y,
                    const struct render_plot_options *opts,
                    struct render_image *img)
{
    img->rgba = NULL;
    if (n_y < 1 || n_y > RENDER_PLOT_MAX_SERIES) {
        return gr_error(GR_EINVAL, "plot 1 to %d y columns (got %d)",
                        RENDER_PLOT_MAX_SERIES, n_y);
    }
    int xc = render_csv_column(csv, x);
    if (xc < 0) {
        return xc;
    }
    int yc[RENDER_PLOT_MAX_SERIES];
    for (int s = 0; s < n_y; s++) {
        yc[s] = render_csv_column(csv, ys[s]);
        if (yc[s] < 0) {
            return yc[s];
        }
    }
    double *vals = malloc((size_t)(n_y + 1) * csv->n_rows * sizeof *vals);
    if (vals == NULL) {
        return gr_error(GR_ENOMEM, "out of memory plotting %s", csv->path);
    }
    int rc = render_csv_numbers(csv, xc, vals);
    struct render_plot_series series[RENDER_PLOT_MAX_SERIES];
    for (int s = 0; rc == 0 && s < n_y; s++) {
        double *yv = vals + (size_t)(s + 1) * csv->n_rows;
        rc = render_csv_numbers(csv, yc[s], yv);
        series[s].name = ys[s];
        series[s].x = vals;
        series[s].y = yv;
        series[s].n = csv->n_rows;
        series[s].lo = series[s].hi = NULL;
        int any = 0;
        for (size_t i = 0; rc == 0 && i < csv->n_rows && !any; i++) {
            any = isfinite(vals[i]) && isfinite(yv[i]);
        }
        if (rc == 0 && !any) {
            rc = gr_error(GR_EINVAL, "%s: column '%s' has no row with both "
                          "an x ('%s') and a y value to plot", csv->path,
                          ys[s], x);
        }
    }
    if (rc == 0) {
        struct render_plot_options o = *opts;
        if (o.x_label == NULL) {
            o.x_label = x;
        }
        if (o.title == NULL) {
            const char *base = strrchr(csv->path, '/');
            o.title = base ? base + 1 : csv->path;
        }
        rc = render_plot(img, &o, series, n_y);
    }
    free(vals);
    return rc;
}

/* ---- several runs: mean and band ------------------------------------------- */

void render_band_free(struct render_band *b)
{
    free(b->x);
    free(b->mean);
    free(b->lo);
    free(b->hi);
    free(b->std);
    free(b->min);
    free(b->max);
    memset(b, 0, sizeof *b);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : (x > y ? 1 : 0);
}

/* run r's value at x (inside its range), by linear interpolation between
 * its finite points; *cursor walks forward as x grows */
static double run_at(const double *xs, const double *ys, size_t n,
                     size_t *cursor, double x)
{
    size_t i = *cursor;
    for (;;) {
        while (i < n && !(isfinite(xs[i]) && isfinite(ys[i]))) {
            i++;
        }
        size_t j = i + 1;
        while (j < n && !(isfinite(xs[j]) && isfinite(ys[j]))) {
            j++;
        }
        if (i >= n) {
            return NAN;
        }
        if (xs[i] == x || j >= n) {
            *cursor = i;
            return xs[i] == x ? ys[i] : NAN;
        }
        if (xs[j] > x) {
            *cursor = i;
            double t = (x - xs[i]) / (xs[j] - xs[i]);
            return ys[i] + t * (ys[j] - ys[i]);
        }
        i = j;
    }
}

int render_band_compute(const double *const *xs, const double *const *ys,
                        const size_t *ns, int n_runs,
                        enum render_band_kind kind, const char *what,
                        struct render_band *out)
{
    memset(out, 0, sizeof *out);
    if (n_runs < 1) {
        return gr_error(GR_EINVAL, "%s: no runs", what);
    }
    double lo_x = -INFINITY, hi_x = INFINITY;
    size_t total = 0;
    for (int r = 0; r < n_runs; r++) {
        double first = NAN, last = NAN;
        for (size_t i = 0; i < ns[r]; i++) {
            if (!(isfinite(xs[r][i]) && isfinite(ys[r][i]))) {
                continue;
            }
            if (isfinite(last) && xs[r][i] < last) {
                return gr_error(GR_EINVAL, "%s: run %d: x decreases (%g "
                                "after %g)", what, r + 1, xs[r][i], last);
            }
            if (!isfinite(first)) {
                first = xs[r][i];
            }
            last = xs[r][i];
            total++;
        }
        if (!isfinite(first)) {
            return gr_error(GR_EINVAL, "%s: run %d has no point with both "
                            "an x and a y value", what, r + 1);
        }
        lo_x = fmax(lo_x, first);
        hi_x = fmin(hi_x, last);
    }
    if (lo_x > hi_x) {
        return gr_error(GR_EINVAL, "%s: the runs' x ranges do not overlap "
                        "(one ends at %g, another starts at %g)",
                        what, hi_x, lo_x);
    }
    double *grid = malloc((total > 0 ? total : 1) * sizeof *grid);
    if (grid == NULL) {
        return gr_error(GR_ENOMEM, "out of memory for %s", what);
    }
    size_t g = 0;
    for (int r = 0; r < n_runs; r++) {
        for (size_t i = 0; i < ns[r]; i++) {
            if (isfinite(xs[r][i]) && isfinite(ys[r][i]) &&
                xs[r][i] >= lo_x && xs[r][i] <= hi_x) {
                grid[g++] = xs[r][i];
            }
        }
    }
    qsort(grid, g, sizeof *grid, cmp_double);
    size_t n = 0;
    for (size_t i = 0; i < g; i++) {
        if (n == 0 || grid[i] != grid[n - 1]) {
            grid[n++] = grid[i];
        }
    }
    out->n = n;
    out->x = grid;
    double **arrs[6] = {&out->mean, &out->lo, &out->hi, &out->std, &out->min,
                        &out->max};
    for (int a = 0; a < 6; a++) {
        *arrs[a] = malloc(n * sizeof(double));
        if (*arrs[a] == NULL) {
            render_band_free(out);
            return gr_error(GR_ENOMEM, "out of memory for %s", what);
        }
    }
    size_t *cursor = calloc((size_t)n_runs, sizeof *cursor);
    double *v = malloc((size_t)n_runs * sizeof *v);
    if (cursor == NULL || v == NULL) {
        free(cursor);
        free(v);
        render_band_free(out);
        return gr_error(GR_ENOMEM, "out of memory for %s", what);
    }
    for (size_t k = 0; k < n; k++) {
        double sum = 0.0, mn = INFINITY, mx = -INFINITY;
        for (int r = 0; r < n_runs; r++) {
            v[r] = run_at(xs[r], ys[r], ns[r], &cursor[r], grid[k]);
            sum += v[r];
            mn = fmin(mn, v[r]);
            mx = fmax(mx, v[r]);
        }
        double mean = sum / n_runs, ss = 0.0;
        for (int r = 0; r < n_runs; r++) {
            ss += (v[r] - mean) * (v[r] - mean);
        }
        double sd = sqrt(ss / n_runs);
        out->mean[k] = mean;
        out->std[k] = sd;
        out->min[k] = mn;
        out->max[k] = mx;
        out->lo[k] = kind == RENDER_BAND_STD ? mean - sd : mn;
        out->hi[k] = kind == RENDER_BAND_STD ? mean + sd : mx;
    }
    free(cursor);
    free(v);
    return 0;
}

/* ---- a band summary read back ---------------------------------------------- */

static const char *const SUMMARY_TAIL[6] = {"mean", "std", "min",
                                            "max",  "lo",  "hi"};

int render_csv_is_band_summary(const struct render_csv *csv)
{
    if (csv->n_cols != 9 || strcmp(csv->names[0], "group") != 0 ||
        strcmp(csv->names[1], "runs") != 0) {
        return 0;
    }
    for (int c = 0; c < 6; c++) {
        if (strcmp(csv->names[3 + c], SUMMARY_TAIL[c]) != 0) {
            return 0;
        }
    }
    return 1;
}

static void groups_free(struct render_band_group *g, int n)
{
    for (int i = 0; i < n; i++) {
        render_band_free(&g[i].band);
    }
}

int render_band_summary_read(const struct render_csv *csv, const char *x,
                             enum render_band_kind kind,
                             struct render_band_group *out, int cap,
                             int *n_out)
{
    *n_out = 0;
    if (!render_csv_is_band_summary(csv)) {
        return gr_error(GR_EFORMAT, "%s: not a band summary (the header of "
                        "grove plot --print: group,runs,X,mean,std,min,max,"
                        "lo,hi)", csv->path);
    }
    if (strcmp(csv->names[2], x) != 0) {
        return gr_error(GR_EFORMAT, "%s: the summary's x is '%s', not '%s'",
                        csv->path, csv->names[2], x);
    }
    if (csv->n_rows == 0) {
        return gr_error(GR_EFORMAT, "%s: a summary with no rows", csv->path);
    }
    /* columns 1..8 (runs, x, mean, std, min, max, lo, hi) as numbers,
     * column c of row r at num[(c - 1) * n_rows + r]; every one finite
     * (a printed band point has all its numbers) */
    const size_t R = csv->n_rows;
    double *num = malloc(8 * R * sizeof *num);
    if (num == NULL) {
        return gr_error(GR_ENOMEM, "%s: out of memory", csv->path);
    }
    int rc = 0;
    for (int c = 1; rc == 0 && c <= 8; c++) {
        double *col = num + (size_t)(c - 1) * R;
        rc = render_csv_numbers(csv, c, col);
        for (size_t r = 0; rc == 0 && r < R; r++) {
            if (!isfinite(col[r])) {
                rc = gr_error(GR_EFORMAT, "%s:%zu: column '%s': '%.40s' is "
                              "not a finite number", csv->path,
                              csv->line_of[r], csv->names[c],
                              csv->cells[r * 9 + (size_t)c]);
            }
        }
    }
    int n = 0;
    size_t r = 0;
    while (rc == 0 && r < R) {
        const char *name = csv->cells[r * 9];
        size_t end = r;
        while (end < R && strcmp(csv->cells[end * 9], name) == 0) {
            end++;
        }
        for (int g = 0; rc == 0 && g < n; g++) {
            if (strcmp(out[g].name, name) == 0) {
                rc = gr_error(GR_EFORMAT, "%s:%zu: group '%.60s' again after "
                              "other groups (a group's rows are together)",
                              csv->path, csv->line_of[r], name);
            }
        }
        if (rc == 0 && (n == cap || *name == '\0' ||
                        strlen(name) >= RENDER_SUMMARY_NAME_MAX)) {
            rc = gr_error(GR_EFORMAT, n == cap
                          ? "%s:%zu: more than %d groups"
                          : "%s:%zu: a group name must be 1 to %d characters",
                          csv->path, csv->line_of[r],
                          n == cap ? cap : RENDER_SUMMARY_NAME_MAX - 1);
        }
        if (rc < 0) {
            break;
        }
        struct render_band_group *grp = &out[n++];
        memset(grp, 0, sizeof *grp);
        snprintf(grp->name, sizeof grp->name, "%s", name);
        struct render_band *b = &grp->band;
        const size_t k = end - r;
        /* the band's arrays in the columns' order 2..8 */
        double **cols[7] = {&b->x,   &b->mean, &b->std, &b->min,
                            &b->max, &b->lo,   &b->hi};
        for (int c = 0; c < 7; c++) {
            *cols[c] = malloc(k * sizeof(double));
            if (*cols[c] == NULL) {
                rc = gr_error(GR_ENOMEM, "%s: out of memory", csv->path);
            }
        }
        b->n = k;
        const double *runs = num + r;
        for (size_t i = 0; rc == 0 && i < k; i++) {
            for (int c = 0; c < 7; c++) {
                (*cols[c])[i] = num[(size_t)(c + 1) * R + r + i];
            }
            if (runs[i] < 1 || runs[i] > 1e6 ||
                runs[i] != (double)(int)runs[i] || runs[i] != runs[0]) {
                rc = gr_error(GR_EFORMAT, "%s:%zu: runs '%s' is not the "
                              "group's run count (a positive integer, the "
                              "same on every row)", csv->path,
                              csv->line_of[r + i], csv->cells[(r + i) * 9 + 1]);
                break;
            }
            grp->runs = (int)runs[i];
            if (i > 0 && b->x[i] < b->x[i - 1]) {
                rc = gr_error(GR_EFORMAT, "%s:%zu: x decreases within group "
                              "'%s' (%g after %g)", csv->path,
                              csv->line_of[r + i], grp->name, b->x[i],
                              b->x[i - 1]);
                break;
            }
            if (kind == RENDER_BAND_MINMAX) {
                b->lo[i] = b->min[i];
                b->hi[i] = b->max[i];
            } else {
                b->lo[i] = b->mean[i] - b->std[i];
                b->hi[i] = b->mean[i] + b->std[i];
            }
        }
        r = end;
    }
    free(num);
    if (rc < 0) {
        groups_free(out, n);
        return rc;
    }
    *n_out = n;
    return 0;
}
