/* The run folder, metrics.csv and checkpoints of a trainer: see
 * train/train.h. */
#define _POSIX_C_SOURCE 200809L
#include "train/train.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "kernels/checkpoint.h"

struct train_run_spec train_run_spec_default(void)
{
    struct train_run_spec s;
    memset(&s, 0, sizeof s);
    s.what = "train";
    s.step_unit = "update";
    return s;
}

static int write_header(FILE *f, const struct train_run_spec *s)
{
    for (int i = 0; i < s->n_columns; i++) {
        if (fprintf(f, "%s%s", i ? "," : "", s->columns[i].name) < 0) {
            return GR_EIO;
        }
    }
    return fputc('\n', f) == EOF ? GR_EIO : 0;
}

static int write_header_file(const struct train_run *run)
{
    struct gr_atomic_file af;
    int rc = gr_atomic_open(&af, run->path_metrics, 1);
    if (rc < 0) {
        return rc;
    }
    if (write_header(af.fp, &run->spec) < 0) {
        gr_atomic_abort(&af);
        return gr_error(GR_EIO, "%s: write failed", run->path_metrics);
    }
    return gr_atomic_commit(&af);
}

void train_config_first_difference(const char *a, const char *b, char *out,
                                   size_t cap)
{
    while (*a != '\0' || *b != '\0') {
        const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
        size_t la = ea ? (size_t)(ea - a) : strlen(a);
        size_t lb = eb ? (size_t)(eb - b) : strlen(b);
        if (la != lb || strncmp(a, b, la) != 0) {
            snprintf(out, cap, "'%.*s' in the run, '%.*s' now", (int)la, a,
                     (int)lb, b);
            return;
        }
        a += la + (ea != NULL);
        b += lb + (eb != NULL);
    }
    snprintf(out, cap, "(none)");
}

int train_run_check(const struct train_run_spec *spec)
{
    if (spec->dir == NULL || spec->dir[0] == '\0') {
        return gr_error(GR_EINVAL, "%s: the run folder (--out) is required",
                        spec->what);
    }
    if (spec->resume && spec->force) {
        return gr_error(GR_EINVAL, "--resume and --force exclude each other");
    }
    struct stat st;
    if (spec->resume) {
        char last[GR_PATH_MAX];
        int rc = gr_path_join(last, sizeof last, spec->dir, "last.ckpt");
        if (rc < 0) {
            return rc;
        }
        if (stat(last, &st) != 0) {
            return gr_error(GR_EIO, "--resume: %s: %s", last,
                            strerror(errno));
        }
        return 0;
    }
    if (stat(spec->dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            return gr_error(GR_EEXIST, "%s exists and is not a folder",
                            spec->dir);
        }
        if (!spec->force) {
            return gr_error(GR_EEXIST, "run folder %s already exists (use "
                                       "--force to reuse it, --resume to "
                                       "continue it, or pick another --out)",
                            spec->dir);
        }
    }
    return 0;
}

int train_run_open(struct train_run *run, const struct train_run_spec *spec)
{
    memset(run, 0, sizeof *run);
    run->spec = *spec;
    run->last_saved_step = -1;
    if (spec->dir == NULL || spec->dir[0] == '\0') {
        return gr_error(GR_EINVAL, "%s: the run folder (--out) is required",
                        spec->what);
    }
    if (spec->n_columns < 1 || spec->n_columns > TRAIN_MAX_COLUMNS ||
        spec->columns == NULL) {
        return gr_error(GR_EINVAL, "%s: metrics.csv needs 1..%d columns",
                        spec->what, TRAIN_MAX_COLUMNS);
    }
    if (spec->resume && spec->force) {
        return gr_error(GR_EINVAL, "--resume and --force exclude each other");
    }
    int rc;
    if ((rc = gr_path_join(run->path_metrics, sizeof run->path_metrics,
                           spec->dir, "metrics.csv")) < 0 ||
        (rc = gr_path_join(run->path_best, sizeof run->path_best, spec->dir,
                           "best.ckpt")) < 0 ||
        (rc = gr_path_join(run->path_last, sizeof run->path_last, spec->dir,
                           "last.ckpt")) < 0) {
        return rc;
    }
    if (spec->resume) {
        rc = gr_checkpoint_read_config(run->path_last, &run->resumed_config);
        if (rc < 0) {
            return gr_error_wrap(rc, "--resume");
        }
        if (spec->check_config && spec->config_text != NULL &&
            strcmp(run->resumed_config, spec->config_text) != 0) {
            char diff[512];
            train_config_first_difference(run->resumed_config,
                                          spec->config_text, diff,
                                          sizeof diff);
            free(run->resumed_config);
            run->resumed_config = NULL;
            run->config_mismatch = 1;
            return gr_error(GR_EINVAL, "--resume: the options differ from "
                                       "the run's (first difference: %s)",
                            diff);
        }
        return 0;
    }
    rc = gr_run_dir_create(spec->dir, spec->force, spec->argc, spec->argv,
                           spec->config_text);
    if (rc < 0) {
        return rc;
    }
    return write_header_file(run);
}

void train_run_close(struct train_run *run)
{
    free(run->resumed_config);
    run->resumed_config = NULL;
}

int train_metrics_resume(struct train_run *run, int64_t upto)
{
    char *text = NULL;
    size_t size = 0;
    if (!gr_path_exists(run->path_metrics)) {
        return write_header_file(run);
    }
    int rc = gr_read_file(run->path_metrics, (size_t)1 << 30, &text, &size);
    if (rc < 0) {
        return gr_error_wrap(rc, "resuming");
    }
    struct gr_atomic_file af;
    rc = gr_atomic_open(&af, run->path_metrics, 1);
    if (rc < 0) {
        free(text);
        return rc;
    }
    rc = write_header(af.fp, &run->spec) < 0
             ? gr_error(GR_EIO, "%s: write failed", run->path_metrics)
             : 0;
    char *p = text;
    int line = 0;
    while (rc == 0 && *p != '\0') {
        char *eol = strchr(p, '\n');
        size_t len = eol != NULL ? (size_t)(eol - p) + 1 : strlen(p);
        line++;
        if (line > 1) {
            char *end;
            long long key = strtoll(p, &end, 10);
            if (end == p || (*end != ',' && *end != '\n' && *end != '\0')) {
                rc = gr_error(GR_EFORMAT, "%s:%d: not a metrics row",
                              run->path_metrics, line);
                break;
            }
            if (key <= upto && eol != NULL &&
                fwrite(p, 1, len, af.fp) != len) {
                rc = gr_error(GR_EIO, "%s: write failed", run->path_metrics);
            }
        }
        p += len;
    }
    free(text);
    if (rc == 0) {
        return gr_atomic_commit(&af);
    }
    gr_atomic_abort(&af);
    return rc;
}

int train_metrics_row(struct train_run *run, const struct train_cell *cells)
{
    FILE *f = fopen(run->path_metrics, "a");
    if (f == NULL) {
        return gr_error(GR_EIO, "%s: cannot append: %s", run->path_metrics,
                        strerror(errno));
    }
    const struct train_run_spec *s = &run->spec;
    int bad = 0;
    for (int i = 0; i < s->n_columns; i++) {
        const struct train_cell *c = &cells[i];
        const char *sep = i + 1 < s->n_columns ? "," : "\n";
        if (s->columns[i].format == NULL || c->text != NULL) {
            bad |= fprintf(f, "%s%s", c->text ? c->text : "", sep) < 0;
        } else if (isnan(c->num)) {
            bad |= fputs(sep, f) == EOF;
        } else {
            bad |= fprintf(f, s->columns[i].format, c->num) < 0;
            bad |= fputs(sep, f) == EOF;
        }
    }
    if (fclose(f) != 0 || bad) {
        return gr_error(GR_EIO, "%s: write failed", run->path_metrics);
    }
    return 0;
}

const char *train_path(const struct train_run *run, enum train_which which)
{
    return which == TRAIN_BEST ? run->path_best : run->path_last;
}

int train_save(struct train_run *run, enum train_which which,
               struct gr_ctx *ctx, const char *config_text, unsigned what,
               int64_t step)
{
    int rc = gr_checkpoint_save(ctx, train_path(run, which), config_text,
                                what, 1);
    if (rc == 0 && which == TRAIN_LAST) {
        run->last_saved_step = step;
    }
    return rc;
}

void train_note_last_saved(struct train_run *run, int64_t step)
{
    run->last_saved_step = step;
}

int train_check_finite(const struct train_run *run, double loss, int64_t step)
{
    if (isfinite(loss)) {
        return 0;
    }
    const char *unit = run->spec.step_unit ? run->spec.step_unit : "update";
    if (run->last_saved_step >= 0) {
        return gr_error(GR_EINVAL, "non-finite loss (%g) at %s %lld; "
                                   "stopped, %s keeps %s %lld",
                        loss, unit, (long long)step, run->path_last, unit,
                        (long long)run->last_saved_step);
    }
    return gr_error(GR_EINVAL, "non-finite loss (%g) at %s %lld; stopped "
                               "(no checkpoint was written yet)",
                    loss, unit, (long long)step);
}
