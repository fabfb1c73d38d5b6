/* train/train.h — what every trainer shares: the run folder, metrics.csv,
 * best/last checkpoints, --resume with its config check, stopping on a
 * non-finite loss, and stopping on SIGINT/SIGTERM at an update boundary.
 *
 * A trainer (BC, the LM, PPO, the classifiers) describes its metrics.csv
 * once, as a fixed column list whose first column is the integer step key
 * (update, epoch, global_step), opens its run, and then only calls
 * train_metrics_row and train_save at its own boundaries:
 *
 *   static const struct train_column cols[] = {
 *       {"update", "%.0f"}, {"loss", "%.9g"}, {"phase", NULL}, // NULL: text
 *   };
 *   struct train_run run;
 *   struct train_run_spec s = train_run_spec_default();
 *   s.dir = out; s.force = force; s.resume = resume; s.argc = argc;
 *   s.argv = argv; s.config_text = cfg; s.check_config = 1;
 *   s.columns = cols; s.n_columns = 3; s.what = "train foo";
 *   if (train_run_open(&run, &s) < 0) return -1;      // creates or resumes
 *   if (resume) { load(run.path_last); train_metrics_resume(&run, step); }
 *   train_signals_install();
 *   while (step < total && !train_stop_requested()) {
 *       loss = one_update();
 *       if (train_check_finite(&run, loss, step + 1) < 0) break; // keeps last
 *       ...
 *       train_metrics_row(&run, cells);  // the row first,
 *       train_save(&run, TRAIN_LAST, ctx, cfg, GR_CKPT_ALL, step);  // then last
 *   }
 *   if (train_stop_requested()) { save last; train_print_stopped(&run, step); }
 *   train_signals_restore();
 *   train_run_close(&run);
 *
 * The order "metrics row, then last.ckpt" makes a run killed in between
 * resume from the previous checkpoint and write the row again: no update is
 * lost or counted twice (train_metrics_resume drops rows past the
 * checkpoint's step).
 *
 * Errors follow core/error.h: int 0 or a negative GR_E* code with
 * gr_last_error() set. A --resume whose options differ from the run's is
 * GR_EINVAL with the first differing config line in the message.
 */
#ifndef GROVE_TRAIN_TRAIN_H
#define GROVE_TRAIN_TRAIN_H

#include <stdint.h>

#include "core/files.h"
#include "kernels/tensor.h"

/* One metrics.csv column: its header name and the printf format of its
 * numeric cells ("%.9g", "%.0f" for integers, "%.4f", ...); NULL makes it a
 * text column. A NaN number is written as an empty cell. */
struct train_column {
    const char *name;
    const char *format;
};

/* One cell of a row: a number, or text when `text` is not NULL. */
struct train_cell {
    double num;
    const char *text;
};

#define TRAIN_NUM(x) ((struct train_cell){(double)(x), NULL})
#define TRAIN_TEXT(s) ((struct train_cell){0.0, (s)})

#define TRAIN_MAX_COLUMNS 64

struct train_run_spec {
    const char *dir;         /* the run folder (--out) */
    int force;               /* reuse an existing folder (--force) */
    int resume;              /* continue dir/last.ckpt (--resume) */
    int argc;                /* the command line, written to dir/command */
    char *const *argv;
    const char *config_text; /* written to dir/config on a fresh run */
    int check_config;        /* --resume: config_text must equal last.ckpt's
                              * config (else the trainer checks it itself) */
    const struct train_column *columns; /* columns[0]: the integer step key */
    int n_columns;
    const char *what;        /* the command, for messages ("train bc") */
    const char *step_unit;   /* "update" or "epoch", for messages */
};

struct train_run_spec train_run_spec_default(void);

struct train_run {
    struct train_run_spec spec;
    char path_metrics[GR_PATH_MAX];
    char path_best[GR_PATH_MAX];
    char path_last[GR_PATH_MAX];
    char *resumed_config; /* last.ckpt's config text on --resume (owned) */
    int64_t last_saved_step; /* step of the last last.ckpt written, or -1 */
    int config_mismatch;  /* train_run_open failed: --resume with options
                           * that differ (a command-line error, exit 2) */
};

/* Fresh run: creates the folder (refused when it exists unless force),
 * writes `command` and `config`, and metrics.csv with its header. Resume:
 * reads last.ckpt's config into run->resumed_config and, with check_config,
 * refuses a config that differs. Writes nothing on failure of a check. */
int train_run_open(struct train_run *run, const struct train_run_spec *spec);

/* The checks of train_run_open that read nothing big and write nothing,
 * for a trainer to run first, before its data, device and model: --out
 * given, not --resume with --force; a fresh run's folder absent (or a
 * folder, with force); a resumed run's last.ckpt present, and with
 * check_config its config equal to config_text (GR_EINVAL otherwise, as
 * for the other usage errors; GR_EIO and others when a file cannot be
 * read). A trainer then
 * checks everything else it can and calls train_run_open last, so a start
 * that fails leaves no folder behind (issue 21 §2). */
int train_run_check(const struct train_run_spec *spec);

void train_run_close(struct train_run *run);

/* On resume: rewrites metrics.csv as the header and the rows whose step key
 * is <= upto (rows past the checkpoint would be written again). A missing
 * metrics.csv is recreated with its header; a row that does not start with
 * an integer key is an error naming the file and line. */
int train_metrics_resume(struct train_run *run, int64_t upto);

/* Appends one row of spec.n_columns cells and flushes it to disk. */
int train_metrics_row(struct train_run *run, const struct train_cell *cells);

enum train_which { TRAIN_BEST, TRAIN_LAST };

const char *train_path(const struct train_run *run, enum train_which which);

/* Saves the context's tensors of the kinds in `what` (GR_CKPT_*) with the
 * config text to best.ckpt or last.ckpt (atomically, replacing the old
 * one). `step` is remembered for TRAIN_LAST (the non-finite message). */
int train_save(struct train_run *run, enum train_which which,
               struct gr_ctx *ctx, const char *config_text, unsigned what,
               int64_t step);

/* Tells train_save's bookkeeping that the caller wrote last.ckpt itself
 * (a trainer with its own checkpoint layout, like the LM's vocabulary). */
void train_note_last_saved(struct train_run *run, int64_t step);

/* 0 when `loss` is finite; else GR_EINVAL with the message "non-finite
 * loss (nan) at update N; stopped, last.ckpt keeps update M". */
int train_check_finite(const struct train_run *run, double loss,
                       int64_t step);

/* First line where two config texts differ, as "'a' in the run, 'b' now". */
void train_config_first_difference(const char *run_text, const char *now,
                                   char *out, size_t cap);

/* ---- signals ---------------------------------------------------------------- */

/* SIGINT and SIGTERM set a flag that trainers poll at update boundaries (a
 * second SIGINT ends the process at once, as usual). Restore puts the
 * previous handlers back. Not reentrant: one trainer per process. */
void train_signals_install(void);
void train_signals_restore(void);

/* The signal number that asked to stop (SIGINT, SIGTERM), or 0. */
int train_stop_requested(void);

/* For tests: as if `sig` had arrived (0 clears). */
void train_request_stop(int sig);

/* Prints to stderr "grove train bc: SIGINT: stopped at update N, last.ckpt
 * written; continue with: <the command with --resume>", the command
 * prefixed with "mpirun -np P" when P > 1 MPI processes run it. */
void train_print_stopped(const struct train_run *run, int64_t step);

#endif
