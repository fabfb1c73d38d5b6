/* train/: the run folder, metrics.csv (fixed columns, formats, NaN cells,
 * the resume cut), checkpoints and the resume config check, the
 * non-finite stop message, and the stop flag of the signal handlers (a
 * real SIGINT raised at this process). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/files.h"
#include "kernels/checkpoint.h"
#include "kernels/tensor.h"
#include "tests/test.h"
#include "train/train.h"

static const struct train_column cols[] = {
    {"update", "%.0f"}, {"loss", "%.4f"}, {"phase", NULL}, {"acc", "%.9g"}};

static char *slurp(const char *dir, const char *name)
{
    char path[GR_PATH_MAX];
    gr_path_join(path, sizeof path, dir, name);
    char *text = NULL;
    size_t n = 0;
    return gr_read_file(path, 1 << 20, &text, &n) == 0 ? text : NULL;
}

static struct train_run_spec spec_for(const char *dir, const char *config,
                                      int resume, int force)
{
    static char *argv[] = {"foo", "--out", "runs/x", "--force"};
    struct train_run_spec s = train_run_spec_default();
    s.dir = dir;
    s.resume = resume;
    s.force = force;
    s.argc = 4;
    s.argv = argv;
    s.config_text = config;
    s.check_config = 1;
    s.columns = cols;
    s.n_columns = 4;
    s.what = "train foo";
    return s;
}

static int row(struct train_run *run, int64_t u, double loss,
               const char *phase, double acc)
{
    struct train_cell c[] = {TRAIN_NUM(u), TRAIN_NUM(loss), TRAIN_TEXT(phase),
                             TRAIN_NUM(acc)};
    return train_metrics_row(run, c);
}

int main(void)
{
    char root[] = "/tmp/grove_train_XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/run", root);

    /* a fresh run: command, config, the header; the rows as formatted */
    struct train_run run;
    struct train_run_spec s = spec_for(dir, "lr 0.1\nhidden 8\n", 0, 0);
    CHECK(train_run_open(&run, &s) == 0);
    char *t = slurp(dir, "config");
    CHECK(t != NULL && strcmp(t, "lr 0.1\nhidden 8\n") == 0);
    free(t);
    t = slurp(dir, "command");
    CHECK(t != NULL && strcmp(t, "foo --out runs/x --force\n") == 0);
    free(t);
    CHECK(row(&run, 0, 1.23456, "sgd", NAN) == 0);
    CHECK(row(&run, 10, 0.5, "asgd", 0.125) == 0);
    CHECK(row(&run, 20, INFINITY, "asgd", 1.0 / 3.0) == 0);
    t = slurp(dir, "metrics.csv");
    CHECK_MSG(t != NULL && strcmp(t, "update,loss,phase,acc\n"
                                     "0,1.2346,sgd,\n"
                                     "10,0.5000,asgd,0.125\n"
                                     "20,inf,asgd,0.333333333\n") == 0,
              "metrics.csv:\n%s", t ? t : "(none)");
    free(t);
    train_run_close(&run);

    /* the folder exists: refused without --force, and nothing changes */
    CHECK(train_run_open(&run, &s) == GR_EEXIST);
    CHECK_STR_CONTAINS(gr_last_error(), "--force");

    /* checkpoints: last.ckpt with the config; resume with another config
     * names the first differing line and is a command-line error */
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    struct gr_ctx *ctx = NULL;
    CHECK(gr_ctx_new(&ctx, &cc) == 0);
    struct gr_tensor *w = gr_param_new(ctx, "w", gr_shape1(3));
    CHECK(w != NULL);
    s.force = 1;
    CHECK(train_run_open(&run, &s) == 0);
    CHECK(row(&run, 0, 2.0, "sgd", 0.1) == 0);
    CHECK(row(&run, 10, 1.0, "sgd", 0.2) == 0);
    CHECK(train_save(&run, TRAIN_LAST, ctx, s.config_text, GR_CKPT_ALL, 10) ==
          0);
    CHECK(row(&run, 20, 0.5, "sgd", 0.3) == 0); /* killed before last.ckpt */
    CHECK(run.last_saved_step == 10);
    /* non-finite: the message names the step and the checkpoint's step */
    CHECK(train_check_finite(&run, 1.5, 21) == 0);
    CHECK(train_check_finite(&run, NAN, 21) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "non-finite loss (nan) at update 21");
    CHECK_STR_CONTAINS(gr_last_error(), "last.ckpt keeps update 10");
    train_run_close(&run);

    struct train_run_spec r = spec_for(dir, "lr 0.2\nhidden 8\n", 1, 0);
    CHECK(train_run_open(&run, &r) == GR_EINVAL);
    CHECK(run.config_mismatch == 1);
    CHECK_STR_CONTAINS(gr_last_error(), "'lr 0.1' in the run, 'lr 0.2' now");
    r = spec_for(dir, "lr 0.1\nhidden 8\n", 1, 1);
    CHECK(train_run_open(&run, &r) == GR_EINVAL); /* --resume --force */
    r = spec_for(dir, "lr 0.1\nhidden 8\n", 1, 0);
    CHECK(train_run_open(&run, &r) == 0);
    CHECK(run.config_mismatch == 0);
    CHECK(run.resumed_config != NULL &&
          strcmp(run.resumed_config, "lr 0.1\nhidden 8\n") == 0);
    /* the row past the checkpoint goes; the others stay as written */
    CHECK(train_metrics_resume(&run, 10) == 0);
    t = slurp(dir, "metrics.csv");
    CHECK_MSG(t != NULL && strcmp(t, "update,loss,phase,acc\n"
                                     "0,2.0000,sgd,0.1\n"
                                     "10,1.0000,sgd,0.2\n") == 0,
              "resumed metrics.csv:\n%s", t ? t : "(none)");
    free(t);
    /* a damaged row is named by file and line */
    char path[GR_PATH_MAX];
    gr_path_join(path, sizeof path, dir, "metrics.csv");
    FILE *f = fopen(path, "a");
    CHECK(f != NULL);
    fputs("garbage,1\n", f);
    fclose(f);
    CHECK(train_metrics_resume(&run, 10) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "metrics.csv:4: not a metrics row");
    train_run_close(&run);

    /* no last.ckpt: --resume says so */
    char other[600];
    snprintf(other, sizeof other, "%s/none", root);
    r = spec_for(other, "x\n", 1, 0);
    CHECK(train_run_open(&run, &r) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "--resume");
    CHECK(!gr_path_exists(other));

    /* signals: SIGINT sets the flag instead of ending the process, and the
     * handlers go back on restore */
    train_signals_install();
    CHECK(train_stop_requested() == 0);
    raise(SIGINT);
    CHECK(train_stop_requested() == SIGINT);
    train_request_stop(0);
    raise(SIGTERM);
    CHECK(train_stop_requested() == SIGTERM);
    train_signals_restore();
    train_request_stop(0);
    struct sigaction now;
    sigaction(SIGTERM, NULL, &now);
    CHECK(now.sa_handler == SIG_DFL);

    gr_ctx_free(ctx);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
    return test_report("train_run");
}
