/* Seeing things: grove plot, grove replay export, grove replay play and
 * grove craft play (render/). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/build_info.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/files.h"
#include "envs/craft.h"
#include "render/plot.h"
#include "render/pngfile.h"
#include "render/viewer.h"
#include "render/window.h"

/* --headless / --frames / --keys / --scale / --shot-dir, shared by the
 * commands that open a window. */
#define WINDOW_OPTIONS(v, headless_flag)                                     \
    CLI_FLAG("headless", "no window even when a display is there (chosen "  \
             "automatically when there is none)", &(headless_flag)),         \
        CLI_INT("frames", "N", "0", "quit after N frames (0: run until "     \
                "quit)", &(v).frames),                                       \
        CLI_STRING("keys", "K1,K2,...", NULL, "scripted key presses, one "   \
                   "per frame ('.' = none): space,right,s,q ...",           \
                   &(v).keys),                                               \
        CLI_INT("scale", "N", "0", "initial window scale (0: fit the "       \
                "screen)", &(v).scale),                                      \
        CLI_STRING("shot-dir", "DIR", ".", "folder for screenshots (key s)",  \
                   &(v).shot_dir)

static int check_window_options(const struct cli_command *cmd,
                                const struct render_view_options *v)
{
    if (v->keys != NULL) {
        char buf[4096];
        if (strlen(v->keys) >= sizeof buf) {
            return cli_usage_error(cmd, "--keys is too long");
        }
        snprintf(buf, sizeof buf, "%s", v->keys);
        for (char *p = buf, *end; p != NULL; p = end) {
            end = strchr(p, ',');
            if (end != NULL) {
                *end++ = '\0';
            }
            if (strcmp(p, ".") != 0 && render_key_parse(p) == RENDER_KEY_NONE) {
                return cli_usage_error(cmd, "--keys: unknown key '%s' (space "
                                       "left right up down plus minus home "
                                       "end n p s q esc backspace enter, or "
                                       "'.' for none)", p);
            }
        }
    }
    if (v->frames < 0) {
        return cli_usage_error(cmd, "--frames must be >= 0 (got %d)",
                               v->frames);
    }
    if (v->scale < 0 || v->scale > 16) {
        return cli_usage_error(cmd, "--scale must be 0..16 (got %d)",
                               v->scale);
    }
    return CLI_CONTINUE;
}

/* ---- grove plot ------------------------------------------------------------ */

/* The default group of a run: the name of the folder holding FILE, with
 * a trailing "_seedN" / "-seedN" removed ("runs/ocn_seed3/metrics.csv" ->
 * "ocn"); FILE's own name when it has no folder. */
static void default_group(const char *file, char *out, size_t cap)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", file);
    char *slash = strrchr(buf, '/');
    const char *name = buf;
    if (slash != NULL) {
        *slash = '\0';
        char *up = strrchr(buf, '/');
        name = up != NULL ? up + 1 : buf;
        if (*name == '\0') {
            name = slash + 1;
        }
    }
    size_t n = strlen(name);
    n = n < cap - 1 ? n : cap - 1;
    memcpy(out, name, n);
    out[n] = '\0';
    size_t d = n;
    while (d > 0 && out[d - 1] >= '0' && out[d - 1] <= '9') {
        d--;
    }
    if (d < n && d >= 5 && strncmp(out + d - 4, "seed", 4) == 0 &&
        (out[d - 5] == '_' || out[d - 5] == '-') && d > 5) {
        out[d - 5] = '\0';
    }
}

#define PLOT_MAX_RUNS 256

/* Several runs: one mean line and band per group (render_band_compute).
 * A file with grove plot --print's header is a summary: its groups are
 * drawn as printed, beside the groups of the run files (--group labels
 * the run files only). */
static int plot_runs(const struct cli_command *cmd, char **files, int n_files,
                     const char *x, const char *y, const char *groups_text,
                     const char *band, int print,
                     const struct render_plot_options *po,
                     const struct cli_common *common)
{
    enum render_band_kind kind;
    if (strcmp(band, "minmax") == 0) {
        kind = RENDER_BAND_MINMAX;
    } else if (strcmp(band, "std") == 0) {
        kind = RENDER_BAND_STD;
    } else {
        return cli_usage_error(cmd, "--band '%s' is not minmax or std", band);
    }
    if (n_files > PLOT_MAX_RUNS) {
        return cli_usage_error(cmd, "at most %d files (got %d)",
                               PLOT_MAX_RUNS, n_files);
    }
    /* every file: a summary's groups, or a run's x and y */
    static struct render_band_group groups[RENDER_PLOT_MAX_SERIES];
    int is_run[PLOT_MAX_RUNS], n_runs = 0, n_groups = 0;
    int from_summary[RENDER_PLOT_MAX_SERIES]; /* else its runs' count */
    double *xs[PLOT_MAX_RUNS], *ys[PLOT_MAX_RUNS];
    size_t ns[PLOT_MAX_RUNS];
    int rc = 0, loaded = 0;
    for (int i = 0; rc == 0 && i < n_files; i++) {
        struct render_csv csv;
        xs[i] = ys[i] = NULL;
        loaded = i + 1;
        rc = render_csv_read(files[i], &csv);
        if (rc < 0) {
            break;
        }
        is_run[i] = !render_csv_is_band_summary(&csv);
        if (!is_run[i]) {
            int got = 0;
            rc = render_band_summary_read(&csv, x, kind, groups + n_groups,
                                          RENDER_PLOT_MAX_SERIES - n_groups,
                                          &got);
            for (int g = n_groups; g < n_groups + got; g++) {
                from_summary[g] = 1;
                for (int h = 0; rc == 0 && h < n_groups; h++) {
                    if (strcmp(groups[h].name, groups[g].name) == 0) {
                        rc = gr_error(GR_EFORMAT, "%s: group '%s' is in an "
                                      "earlier summary too", files[i],
                                      groups[g].name);
                    }
                }
            }
            n_groups += got;
            render_csv_free(&csv);
            continue;
        }
        n_runs++;
        int xc = render_csv_column(&csv, x), yc = xc < 0 ? -1
                                                   : render_csv_column(&csv, y);
        xs[i] = malloc((csv.n_rows ? csv.n_rows : 1) * sizeof(double));
        ys[i] = malloc((csv.n_rows ? csv.n_rows : 1) * sizeof(double));
        ns[i] = csv.n_rows;
        if (xc < 0 || yc < 0) {
            rc = -1;
        } else if (xs[i] == NULL || ys[i] == NULL) {
            rc = gr_error(GR_ENOMEM, "out of memory reading %s", files[i]);
        } else {
            rc = render_csv_numbers(&csv, xc, xs[i]);
            if (rc == 0) {
                rc = render_csv_numbers(&csv, yc, ys[i]);
            }
        }
        render_csv_free(&csv);
    }
    /* the run files' labels */
    static char label[PLOT_MAX_RUNS][128];
    char gbuf[8192];
    if (rc == 0 && groups_text != NULL) {
        char *items[PLOT_MAX_RUNS];
        int n = -1;
        if (strlen(groups_text) < sizeof gbuf) {
            snprintf(gbuf, sizeof gbuf, "%s", groups_text);
            n = cli_split_list(gbuf, items, PLOT_MAX_RUNS);
        }
        if (n != n_runs) {
            rc = cli_usage_error(cmd, "--group names %d labels for %d files "
                                 "(one per run file, none for a summary; "
                                 "comma-separated, none empty)",
                                 n < 0 ? 0 : n, n_runs);
            goto done;
        }
        for (int i = 0, k = 0; i < n_files; i++) {
            if (is_run[i]) {
                snprintf(label[i], sizeof label[i], "%s", items[k++]);
            }
        }
    } else if (rc == 0) {
        for (int i = 0; i < n_files; i++) {
            if (is_run[i]) {
                default_group(files[i], label[i], sizeof label[i]);
            }
        }
    }
    /* the run files' groups, in order of first appearance */
    int group_of[PLOT_MAX_RUNS];
    for (int i = 0; rc == 0 && i < n_files; i++) {
        if (!is_run[i]) {
            continue;
        }
        int g = 0;
        while (g < n_groups && strcmp(groups[g].name, label[i]) != 0) {
            g++;
        }
        if (g < n_groups && from_summary[g]) {
            rc = cli_usage_error(cmd, "group '%s' is both a summary's and "
                                 "the label of %s; name the runs with "
                                 "--group", label[i], files[i]);
            goto done;
        }
        if (g == n_groups) {
            if (n_groups == RENDER_PLOT_MAX_SERIES) {
                rc = cli_usage_error(cmd, "more than %d groups (the %dth is "
                                     "'%s'); name them with --group",
                                     RENDER_PLOT_MAX_SERIES,
                                     RENDER_PLOT_MAX_SERIES + 1, label[i]);
                goto done;
            }
            memset(&groups[g], 0, sizeof groups[g]);
            snprintf(groups[g].name, sizeof groups[g].name, "%.127s", label[i]);
            from_summary[g] = 0;
            n_groups++;
        }
        groups[g].runs++;
        group_of[i] = g;
    }
    for (int g = 0; rc == 0 && g < n_groups; g++) {
        if (from_summary[g]) {
            continue;
        }
        const double *gx[PLOT_MAX_RUNS], *gy[PLOT_MAX_RUNS];
        size_t gn[PLOT_MAX_RUNS];
        int m = 0;
        for (int i = 0; i < n_files; i++) {
            if (is_run[i] && group_of[i] == g) {
                gx[m] = xs[i];
                gy[m] = ys[i];
                gn[m++] = ns[i];
            }
        }
        char what[256];
        snprintf(what, sizeof what, "group '%.127s' (%.50s against %.50s)",
                 groups[g].name, y, x);
        rc = render_band_compute(gx, gy, gn, m, kind, what, &groups[g].band);
    }
    struct render_plot_series series[RENDER_PLOT_MAX_SERIES];
    static char names[RENDER_PLOT_MAX_SERIES][160];
    for (int g = 0; rc == 0 && g < n_groups; g++) {
        const struct render_band *b = &groups[g].band;
        snprintf(names[g], sizeof names[g], "%.127s (%d run%s)", groups[g].name,
                 groups[g].runs, groups[g].runs == 1 ? "" : "s");
        series[g] = (struct render_plot_series){
            .name = names[g], .x = b->x, .y = b->mean, .n = b->n,
            .lo = b->lo, .hi = b->hi};
        if (print) {
            if (g == 0) {
                printf("group,runs,%s,mean,std,min,max,lo,hi\n", x);
            }
            for (size_t k = 0; k < b->n; k++) {
                printf("%s,%d,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n",
                       groups[g].name, groups[g].runs, b->x[k], b->mean[k],
                       b->std[k], b->min[k], b->max[k], b->lo[k], b->hi[k]);
            }
        }
    }
    struct render_image img;
    memset(&img, 0, sizeof img);
    if (rc == 0) {
        struct render_plot_options o = *po;
        char title[256];
        if (o.title == NULL) {
            snprintf(title, sizeof title, "%s: mean over runs, band %s", y,
                     kind == RENDER_BAND_STD ? "+-1 std" : "min-max");
            o.title = title;
        }
        o.x_label = x;
        rc = render_plot(&img, &o, series, n_groups);
        if (rc == 0) {
            rc = render_png_write(common->out, &img, common->force);
        }
        render_image_free(&img);
    }
done:
    for (int g = 0; g < n_groups; g++) {
        render_band_free(&groups[g].band);
    }
    for (int i = 0; i < loaded; i++) {
        free(xs[i]);
        free(ys[i]);
    }
    if (rc == CLI_EXIT_USAGE) {
        return rc;
    }
    if (rc < 0) {
        return cli_fail(cmd);
    }
    if (!print) {
        int total = 0;
        for (int g = 0; g < n_groups; g++) {
            total += groups[g].runs;
        }
        printf("wrote %s (%d group%s, %d run%s)\n", common->out, n_groups,
               n_groups == 1 ? "" : "s", total, total == 1 ? "" : "s");
    } else {
        fprintf(stderr, "wrote %s\n", common->out);
    }
    return CLI_EXIT_OK;
}

static int run_plot(const struct cli_command *cmd, int argc, char **argv)
{
    const char *x = NULL, *y = NULL, *title = NULL, *groups = NULL,
               *band = NULL;
    int width = 800, height = 480, print = 0;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING_REQUIRED("x", "COL", "column for the x axis", &x),
        CLI_STRING_REQUIRED("y", "COL[,COL...]",
                            "columns to plot against x, up to 8 (one when "
                            "several files are given)",
                            &y),
        CLI_STRING("title", "TEXT", NULL, "title (default: the file name)",
                   &title),
        CLI_INT("width", "PX", "800", "image width", &width),
        CLI_INT("height", "PX", "480", "image height", &height),
        CLI_STRING("group", "LABEL[,LABEL...]", NULL,
                   "runs mode: one label per file; files with the same "
                   "label are one group, drawn as its mean and a band "
                   "(default: the file's folder name without a trailing "
                   "_seedN, e.g. runs/ocn_seed3/metrics.csv -> ocn)",
                   &groups),
        CLI_STRING("band", "minmax|std", NULL,
                   "runs mode: the band around each group's mean: min to "
                   "max over its runs, or mean -+ one standard deviation "
                   "(population) (default minmax)",
                   &band),
        CLI_FLAG("print", "runs mode: also print each group's curve as CSV "
                          "(group, runs, x, mean, std, min, max, lo, hi)",
                 &print),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, CLI_COMMON_OUT_REQUIRED | CLI_COMMON_FORCE,
                       1, PLOT_MAX_RUNS, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (width < 160 || height < 120 || width > 8192 || height > 8192) {
        return cli_usage_error(cmd, "--width/--height must be 160..8192 and "
                               "120..8192 (got %dx%d)", width, height);
    }
    struct render_plot_options po = render_plot_defaults();
    po.width = width;
    po.height = height;
    po.title = title;
    int n_files = argc - first;
    /* one file is read here once: a summary (what --print wrote) is
     * plotted in runs mode, any other CSV as its columns below */
    struct render_csv csv;
    memset(&csv, 0, sizeof csv);
    int summary = 0;
    if (n_files == 1) {
        if (render_csv_read(argv[first], &csv) < 0) {
            return cli_fail(cmd);
        }
        summary = render_csv_is_band_summary(&csv);
    }
    if (n_files > 1 || summary || groups != NULL || band != NULL || print) {
        render_csv_free(&csv);
        if (strchr(y, ',') != NULL) {
            return cli_usage_error(cmd, "--y names one column when runs are "
                                   "averaged (got '%s'); one plot per "
                                   "column",
                                   y);
        }
        if (!common.force && gr_path_exists(common.out)) {
            gr_error(GR_EEXIST, "%s exists (use --force to overwrite)",
                     common.out);
            return cli_fail(cmd);
        }
        return plot_runs(cmd, argv + first, n_files, x, y, groups,
                         band != NULL ? band : "minmax", print, &po, &common);
    }
    char ybuf[1024];
    if (strlen(y) >= sizeof ybuf) {
        render_csv_free(&csv);
        return cli_usage_error(cmd, "--y is too long");
    }
    snprintf(ybuf, sizeof ybuf, "%s", y);
    char *ys[RENDER_PLOT_MAX_SERIES];
    int n_y = cli_split_list(ybuf, ys, RENDER_PLOT_MAX_SERIES);
    if (n_y < 0) {
        render_csv_free(&csv);
        return cli_usage_error(cmd, "--y takes 1 to %d column names separated "
                               "by commas, none empty (got '%s')",
                               RENDER_PLOT_MAX_SERIES, y);
    }
    struct render_image img;
    rc = render_plot_csv(&csv, x, (const char *const *)ys, n_y, &po, &img);
    render_csv_free(&csv);
    if (rc < 0) {
        return cli_fail(cmd);
    }
    rc = render_png_write(common.out, &img, common.force);
    render_image_free(&img);
    if (rc < 0) {
        return cli_fail(cmd);
    }
    printf("wrote %s\n", common.out);
    return CLI_EXIT_OK;
}

const struct cli_command cmd_plot = {
    "plot",
    "Line plot of CSV columns (learning curves) as a PNG; several runs as "
    "mean and band.",
    "FILE.csv [FILE.csv ...]",
    "The first line of the CSV names the columns. Empty cells are gaps in "
    "the line; any other cell that is not a number is an error naming its "
    "line.\n\n"
    "Several files (runs mode, also with --group, --band or --print): one "
    "--y column; the files are grouped (--group, or by folder name without "
    "_seedN) and each group is drawn as the mean over its runs with a "
    "shaded band (min-max, or -+1 std). The runs of a group are read on a "
    "common x grid: the union of their x values inside the range every run "
    "covers, each run interpolated linearly between its own points (exact "
    "where runs share x values, as updates do).\n\n"
    "A file that --print wrote (header group,runs,X,mean,std,min,max,lo,"
    "hi) is a summary: its groups are drawn as printed (the band from its "
    "min/max or std, as --band says), beside the groups of the run files, "
    "so a picture can hold runs that are no longer kept. Its X must be --x "
    "and it must have been printed for the same --y; --group labels the "
    "run files only.\n\n"
    "Examples:\n"
    "  grove plot runs/s1/metrics.csv --x update --y nll,train_nll --out "
    "nll.png\n"
    "  grove plot runs/dca/ocn_seed*/metrics.csv \\\n"
    "      runs/dca/flat_seed*/metrics.csv --x global_step --y eval_return "
    "\\\n      --band std --out dca.png\n"
    "  grove plot old/dca.csv runs/dca/ompn_seed*/metrics.csv --x "
    "global_step \\\n      --y eval_return --out dca_all.png",
    run_plot,
};

/* ---- grove replay export ----------------------------------------------------- */

static int run_replay_export(const struct cli_command *cmd, int argc,
                             char **argv)
{
    struct render_export_options eo;
    memset(&eo, 0, sizeof eo);
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_INT("episode", "E", "-1", "only episode E (from 0; -1: all)",
                &eo.episode),
        CLI_INT("every", "K", "1", "a frame every K steps (the last state "
                "always)", &eo.every),
        CLI_FLAG("sheet", "one contact sheet per episode instead of one PNG "
                 "per frame", &eo.sheet),
        CLI_INT("scale", "N", "1", "integer upscale of every image (1..8)",
                &eo.scale),
        CLI_FLAG("recover", "export the complete episodes of a truncated "
                 "file", &eo.recover),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_OUT_REQUIRED | CLI_COMMON_FORCE |
                           CLI_COMMON_QUIET,
                       1, 1, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (eo.every < 1) {
        return cli_usage_error(cmd, "--every must be >= 1 (got %d)", eo.every);
    }
    if (eo.scale < 1 || eo.scale > 8) {
        return cli_usage_error(cmd, "--scale must be 1..8 (got %d)", eo.scale);
    }
    if (eo.episode < -1) {
        return cli_usage_error(cmd, "--episode must be >= 0 (or -1 for all)");
    }
    eo.out_dir = common.out;
    eo.force = common.force;
    eo.quiet = common.quiet;
    eo.log = stdout;
    if (render_replay_export(argv[first], &eo, NULL) < 0) {
        return cli_fail(cmd);
    }
    return CLI_EXIT_OK;
}

const struct cli_command cmd_replay_export = {
    "replay export",
    "Write a replay's frames (or contact sheets) as PNG files; no display "
    "needed.",
    "FILE",
    "Frames are DIR/ep0003_t0012.png (episode 3, step 12); with --sheet, "
    "DIR/ep0003_sheet.png (episodes count from 0, as --episode). Existing "
    "files are refused without --force, before anything is written.\n\n"
    "Example:\n"
    "  grove replay export demos.replay --episode 0 --sheet --out frames",
    run_replay_export,
};

/* ---- grove replay play ------------------------------------------------------- */

static int run_replay_play(const struct cli_command *cmd, int argc,
                           char **argv)
{
    struct render_view_options v;
    render_view_options_default(&v);
    int headless = 0;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_INT("episode", "E", "0", "first episode shown (from 0)",
                &v.episode),
        CLI_INT("speed", "N", "8", "steps per second when playing",
                &v.speed),
        CLI_FLAG("recover", "play the complete episodes of a truncated file",
                 &v.recover),
        WINDOW_OPTIONS(v, headless),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, CLI_COMMON_FORCE, 1, 1, argc, argv,
                       &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    rc = check_window_options(cmd, &v);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (v.episode < 0) {
        return cli_usage_error(cmd, "--episode must be >= 0");
    }
    if (v.speed < 1 || v.speed > 60) {
        return cli_usage_error(cmd, "--speed must be 1..60 (got %d)", v.speed);
    }
    if (headless) {
        v.headless = 1;
    }
    v.force = common.force;
    v.log = stdout;
    if (render_replay_play(argv[first], &v) < 0) {
        return cli_fail(cmd);
    }
    return CLI_EXIT_OK;
}

const struct cli_command cmd_replay_play = {
    "replay play",
    "Watch a replay in a window: pause, step, seek, change episode.",
    "FILE",
    "Keys: space pause/resume, right/left one step forward/back, +/- speed, "
    "home/end first/last step, n/p next/previous episode, s save a PNG "
    "screenshot (in --shot-dir), q or Esc quit. The title shows the file, "
    "episode (from 0) and step. Without a display it runs headless.\n\n"
    "Example:\n"
    "  grove replay play demos.replay --episode 0",
    run_replay_play,
};

/* ---- grove craft play -------------------------------------------------------- */

#define MAX_PLAY_TASKS 32

static int run_craft_play(const struct cli_command *cmd, int argc,
                          char **argv)
{
    struct render_live_options lo;
    memset(&lo, 0, sizeof lo);
    render_view_options_default(&lo.view);
    const char *tasks_text = "AC";
    const char *record = NULL;
    int headless = 0;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING("tasks", "T1,T2,...", "AC", "tasks played in turn: OCN "
                   "letters (AC, CAD) or OMPN names (make bed)", &tasks_text),
        CLI_STRING("record", "FILE", NULL, "record finished episodes as a "
                   "replay (agent kind human)", &record),
        WINDOW_OPTIONS(lo.view, headless),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, CLI_COMMON_SEED | CLI_COMMON_FORCE, 0, 0,
                       argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    rc = check_window_options(cmd, &lo.view);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    char buf[1024];
    if (strlen(tasks_text) >= sizeof buf) {
        return cli_usage_error(cmd, "--tasks is too long");
    }
    snprintf(buf, sizeof buf, "%s", tasks_text);
    char *names[MAX_PLAY_TASKS];
    int n = cli_split_list(buf, names, MAX_PLAY_TASKS);
    if (n < 0) {
        return cli_usage_error(cmd, "--tasks takes 1 to %d task names "
                               "separated by commas (got '%s')",
                               MAX_PLAY_TASKS, tasks_text);
    }
    struct craft_task tasks[MAX_PLAY_TASKS];
    for (int i = 0; i < n; i++) {
        if (craft_task_parse(names[i], &tasks[i]) < 0) {
            return cli_usage_error(cmd, "--tasks: %s", gr_last_error());
        }
    }
    craft_config_default(&lo.config);
    lo.tasks = tasks;
    lo.n_tasks = n;
    lo.seed = common.seed;
    lo.record = record;
    lo.force = common.force;
    lo.version = GROVE_VERSION;
    lo.view.force = common.force;
    lo.view.log = stdout;
    if (headless) {
        lo.view.headless = 1;
    }
    if (render_craft_play(&lo) < 0) {
        return cli_fail(cmd);
    }
    return CLI_EXIT_OK;
}

const struct cli_command cmd_craft_play = {
    "craft play",
    "Play Craft yourself in a window (arrows, space); record it as a replay.",
    "",
    "Keys: arrows move (a move towards an occupied cell only turns), space "
    "USE on the faced cell (outlined), backspace a new episode, s screenshot, "
    "q or Esc quit; after an episode ends any key starts the next, with the "
    "next task of --tasks. Episode n uses seed mix64(mix64(S ^ 0) ^ n). "
    "With --record, every finished episode is written (agent kind human); "
    "an unfinished one is not.\n\n"
    "Example:\n"
    "  grove craft play --tasks AC --record mine.replay",
    run_craft_play,
};
