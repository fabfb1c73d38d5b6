/* nlp/tasks/lm.c — the training schedule of on_lstm.md §8 and LM
 * checkpoints (see nlp/tasks/lm.h). */
#include "nlp/tasks/lm.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"
#include "core/lines.h"
#include "core/progress.h"
#include "kernels/checkpoint.h"
#include "train/mpi.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "kernels/tape.h"

#define LM_MAGIC "grove-lm 1"

/* ---- schedule pieces ---- */

int nlp_ntasgd_should_switch(const double *history, int n, double v,
                             int nonmono)
{
    if (nonmono < 0 || n <= nonmono) {
        return 0;
    }
    double best = INFINITY;
    for (int i = 0; i < n - nonmono; i++) {
        if (history[i] < best) {
            best = history[i];
        }
    }
    return v > best;
}

struct gr_philox_stream nlp_lm_window_stream(uint64_t seed, int64_t epoch)
{
    return gr_philox_stream_init(
        gr_rng_key(nlp_lm_rng(seed, epoch, 0, NLP_LM_RNG_WINDOW, 0)), 0);
}

int32_t nlp_lm_window_length(struct gr_philox_stream *s, int32_t bptt)
{
    double u = (double)gr_philox_next_uniform(s);
    double base = u < 0.95 ? (double)bptt : (double)bptt / 2.0;
    double u1 = (double)gr_philox_next_uniform(s);
    double u2 = (double)gr_philox_next_uniform(s);
    double z = sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
    double t = trunc(base + 5.0 * z);
    if (t < 5.0) {
        t = 5.0;
    }
    if (t > 1e6) {
        t = 1e6;
    }
    return (int32_t)t;
}

void nlp_lm_train_config_default(struct nlp_lm_train_config *tc,
                                 enum nlp_lm_kind kind)
{
    memset(tc, 0, sizeof *tc);
    nlp_lm_config_default(&tc->model, kind, 10000);
    tc->lr = 30.0f;
    tc->clip = 0.25f;
    tc->epochs = 1000;
    tc->batch = 20;
    tc->bptt = 70;
    tc->wdecay = 1.2e-6f;
    tc->nonmono = 5;
    tc->n_when = 0;
    tc->finetuning = nlp_lm_kind_on_recipe(kind) ? 500 : 0;
    tc->eval_batch = 10;
    tc->test_batch = 1;
    tc->seed = 141;
}

/* ---- checkpoints ---- */

int nlp_lm_save(struct nlp_lm *lm, const char *path,
                const struct nlp_vocab *vocab, const char *extra,
                int with_optim, int force)
{
    struct nlp_text t = {0};
    int rc = nlp_text_printf(&t, "%s\n", LM_MAGIC);
    if (rc == 0) {
        rc = nlp_lm_config_write(&lm->cfg, &t);
    }
    if (rc == 0 && extra != NULL) {
        rc = nlp_text_printf(&t, "%s", extra);
    }
    if (rc == 0) {
        rc = nlp_text_printf(&t, "words %d\n", (int)vocab->size);
    }
    for (int32_t i = 0; rc == 0 && i < vocab->size; i++) {
        rc = nlp_text_printf(&t, "%s\n", nlp_vocab_word(vocab, i));
    }
    if (rc == 0) {
        unsigned what = GR_CKPT_PARAMS | (with_optim ? GR_CKPT_OPTIM : 0u);
        rc = gr_checkpoint_save(lm->ctx, path, t.s, what, force);
    }
    nlp_text_free(&t);
    return rc;
}

int nlp_lm_vocab_read(const char *config, const char *what,
                      struct nlp_vocab *v)
{
    nlp_vocab_init(v);
    const char *p = strstr(config, "\nwords ");
    if (p == NULL) {
        return gr_error(GR_EFORMAT, "%s: config has no 'words' section", what);
    }
    p += 7;
    char *end = NULL;
    errno = 0;
    long n = strtol(p, &end, 10);
    if (errno != 0 || end == p || *end != '\n' || n < 1 || n > INT32_MAX) {
        return gr_error(GR_EFORMAT, "%s: config 'words': bad count", what);
    }
    struct gr_lines it;
    gr_lines_begin(&it, end + 1);
    for (long i = 0; i < n; i++) {
        /* each word on a line of its own, ended by its '\n' */
        if (!gr_lines_next(&it) || it.len == 0 || it.line[it.len] != '\n') {
            nlp_vocab_free(v);
            return gr_error(GR_EFORMAT,
                            "%s: config 'words': word %ld of %ld missing or "
                            "empty",
                            what, i + 1, n);
        }
        int32_t id = -1;
        int rc = nlp_vocab_add(v, it.line, it.len, &id);
        if (rc < 0) {
            nlp_vocab_free(v);
            return rc;
        }
        if (id != (int32_t)i) {
            nlp_vocab_free(v);
            return gr_error(GR_EFORMAT,
                            "%s: config 'words': word %ld ('%.*s') repeats",
                            what, i + 1, (int)it.len, it.line);
        }
    }
    return 0;
}

static int make_ctx(struct gr_ctx **ctx, const struct gr_ctx_config *ctx_cfg)
{
    struct gr_ctx_config def = gr_ctx_config_default();
    return gr_ctx_new(ctx, ctx_cfg != NULL ? ctx_cfg : &def);
}

int nlp_lm_load(struct nlp_lm_loaded *out, const char *path,
                const struct gr_ctx_config *ctx_cfg)
{
    memset(out, 0, sizeof *out);
    nlp_vocab_init(&out->vocab);
    int rc = gr_checkpoint_read_config(path, &out->config);
    if (rc < 0) {
        return rc;
    }
    if (strncmp(out->config, LM_MAGIC "\n", strlen(LM_MAGIC) + 1) != 0) {
        rc = gr_error(GR_EFORMAT,
                      "%s: not a grove language-model checkpoint (its config "
                      "does not start with '%s')",
                      path, LM_MAGIC);
        goto fail;
    }
    struct nlp_lm_config cfg;
    rc = nlp_lm_config_read(out->config, path, &cfg);
    if (rc < 0) {
        goto fail;
    }
    rc = nlp_lm_vocab_read(out->config, path, &out->vocab);
    if (rc < 0) {
        goto fail;
    }
    if (out->vocab.size != cfg.vocab) {
        rc = gr_error(GR_EFORMAT, "%s: config says vocab %d but lists %d words",
                      path, (int)cfg.vocab, (int)out->vocab.size);
        goto fail;
    }
    rc = make_ctx(&out->ctx, ctx_cfg);
    if (rc < 0) {
        goto fail;
    }
    rc = nlp_lm_init(&out->lm, out->ctx, &cfg, 0);
    if (rc < 0) {
        goto fail;
    }
    rc = gr_checkpoint_load(out->ctx, path, GR_CKPT_PARAMS, NULL);
    if (rc < 0) {
        goto fail;
    }
    return 0;
fail:
    nlp_lm_loaded_free(out);
    return rc;
}

void nlp_lm_loaded_free(struct nlp_lm_loaded *l)
{
    gr_ctx_free(l->ctx);
    nlp_vocab_free(&l->vocab);
    free(l->config);
    memset(l, 0, sizeof *l);
}

/* ---- the trainer ---- */

struct trainer {
    struct nlp_lm_train_config tc; /* copy; model.vocab set */
    const struct nlp_corpus *corpus;
    struct gr_ctx *ctx;
    struct nlp_lm lm;
    int32_t *data[NLP_N_SPLITS];
    size_t rows[NLP_N_SPLITS];
    struct gr_optim *sgd;
    struct gr_optim *asgd;
    int n_asgd;
    int asgd_phase;
    double group_lr;
    double best;
    double *hist;
    int n_hist, cap_hist;
    int64_t global_step;
    double wall;
    int32_t epoch_done;
    int32_t switch_epoch;
    struct train_run run; /* when tc.out_dir is set (have_run) */
    int have_run;
    int stopped; /* a signal stopped the run inside epoch_done + 1 */
};

static struct gr_optim *current(struct trainer *tr)
{
    return tr->asgd_phase ? tr->asgd : tr->sgd;
}

static int new_asgd(struct trainer *tr)
{
    struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ASGD);
    oc.lr = tr->tc.lr; /* the flag's lr, not the current one (§8.3) */
    oc.weight_decay = tr->tc.wdecay;
    oc.asgd_lambd = 0.0f;
    oc.asgd_t0 = 0.0f;
    char name[32];
    snprintf(name, sizeof name, "asgd%d", tr->n_asgd);
    if (tr->asgd != NULL) {
        gr_optim_free(tr->asgd);
        tr->asgd = NULL;
    }
    int rc = gr_optim_new(&tr->asgd, tr->ctx, name, &oc);
    if (rc < 0) {
        return rc;
    }
    tr->n_asgd++;
    return 0;
}

static int push_hist(struct trainer *tr, double v)
{
    if (tr->n_hist == tr->cap_hist) {
        int cap = tr->cap_hist ? tr->cap_hist * 2 : 64;
        double *h = realloc(tr->hist, (size_t)cap * sizeof *h);
        if (h == NULL) {
            return gr_error(GR_ENOMEM, "out of memory");
        }
        tr->hist = h;
        tr->cap_hist = cap;
    }
    tr->hist[tr->n_hist++] = v;
    return 0;
}

/* Training configuration and schedule state, as "key value" lines. */
static int state_write(const struct trainer *tr, struct nlp_text *t)
{
    const struct nlp_lm_train_config *tc = &tr->tc;
    int rc = nlp_text_printf(
        t,
        "lr %.9g\nclip %.9g\nepochs %d\nbatch-size %d\nbptt %d\nwdecay "
        "%.9g\nnonmono %d\nfinetuning %d\neval-batch-size %d\n"
        "test-batch-size %d\nmax-batches %d\nfixed-windows %d\nseed %llu\n"
        "when",
        (double)tc->lr, (double)tc->clip, (int)tc->epochs, (int)tc->batch,
        (int)tc->bptt, (double)tc->wdecay, (int)tc->nonmono,
        (int)tc->finetuning, (int)tc->eval_batch, (int)tc->test_batch,
        (int)tc->max_batches, tc->fixed_windows ? 1 : 0,
        (unsigned long long)tc->seed);
    for (int i = 0; rc == 0 && i < tc->n_when; i++) {
        rc = nlp_text_printf(t, "%c%d", i ? ',' : ' ', (int)tc->when[i]);
    }
    if (rc == 0 && tc->n_when == 0) {
        rc = nlp_text_printf(t, " -1");
    }
    if (rc == 0) {
        rc = nlp_text_printf(
            t,
            "\nstate-epoch %d\nstate-phase %s\nstate-asgd-count %d\n"
            "state-group-lr %.17g\nstate-best %.17g\nstate-global-step %lld\n"
            "state-wall %.17g\nstate-switch-epoch %d\nstate-history",
            (int)tr->epoch_done, tr->asgd_phase ? "asgd" : "sgd", tr->n_asgd,
            tr->group_lr, tr->best, (long long)tr->global_step, tr->wall,
            (int)tr->switch_epoch);
    }
    for (int i = 0; rc == 0 && i < tr->n_hist; i++) {
        rc = nlp_text_printf(t, "%c%.17g", i ? ',' : ' ', tr->hist[i]);
    }
    if (rc == 0 && tr->n_hist == 0) {
        rc = nlp_text_printf(t, " none");
    }
    if (rc == 0) {
        rc = nlp_text_printf(t, "\n");
    }
    return rc;
}

/* A copy of a config value as a NUL-terminated string (malloc'd). */
static char *value_dup(const char *text, const char *key)
{
    size_t len = 0;
    const char *v = nlp_config_value(text, key, &len);
    if (v == NULL) {
        return NULL;
    }
    char *s = malloc(len + 1);
    if (s != NULL) {
        memcpy(s, v, len);
        s[len] = '\0';
    }
    return s;
}

static int get_double(const char *text, const char *what, const char *key,
                      double *out)
{
    char *s = value_dup(text, key);
    char *end = NULL;
    double x = s ? strtod(s, &end) : 0.0;
    int ok = s != NULL && end != s && *end == '\0';
    free(s);
    if (!ok) {
        return gr_error(GR_EFORMAT, "%s: config has no valid '%s'", what, key);
    }
    *out = x;
    return 0;
}

static int get_int(const char *text, const char *what, const char *key,
                   int32_t *out)
{
    double x = 0.0;
    int rc = get_double(text, what, key, &x);
    if (rc < 0) {
        return rc;
    }
    if (x != trunc(x) || fabs(x) > 2e9) {
        return gr_error(GR_EFORMAT, "%s: config '%s' is not an integer", what,
                        key);
    }
    *out = (int32_t)x;
    return 0;
}

/* Restores the training configuration (except epochs, quiet, paths) and
 * the schedule state from a last.ckpt config text. */
static int state_read(struct trainer *tr, const char *text, const char *what)
{
    struct nlp_lm_train_config *tc = &tr->tc;
    double d = 0.0;
    int32_t i32 = 0;
    int rc = 0;
#define GETF(key, dst)                                                        \
    if (rc == 0 && (rc = get_double(text, what, key, &d)) == 0) {             \
        dst = (float)d;                                                       \
    }
#define GETI(key, dst)                                                        \
    if (rc == 0 && (rc = get_int(text, what, key, &i32)) == 0) {              \
        dst = i32;                                                            \
    }
    GETF("lr", tc->lr);
    GETF("clip", tc->clip);
    GETI("batch-size", tc->batch);
    GETI("bptt", tc->bptt);
    GETF("wdecay", tc->wdecay);
    GETI("nonmono", tc->nonmono);
    GETI("finetuning", tc->finetuning);
    GETI("eval-batch-size", tc->eval_batch);
    GETI("test-batch-size", tc->test_batch);
    GETI("max-batches", tc->max_batches);
    char *fw = value_dup(text, "fixed-windows"); /* absent before 2026-11 */
    tc->fixed_windows = fw != NULL && atoi(fw) != 0;
    free(fw);
    if (rc == 0 && (rc = get_double(text, what, "seed", &d)) == 0) {
        tc->seed = (uint64_t)d;
    }
    char *s = value_dup(text, "seed");
    if (s != NULL) {
        tc->seed = strtoull(s, NULL, 10); /* exact, beyond 2^53 */
        free(s);
    }
    GETI("state-epoch", tr->epoch_done);
    GETI("state-asgd-count", tr->n_asgd);
    GETI("state-switch-epoch", tr->switch_epoch);
    if (rc == 0 && (rc = get_double(text, what, "state-group-lr", &d)) == 0) {
        tr->group_lr = d;
    }
    if (rc == 0 && (rc = get_double(text, what, "state-best", &d)) == 0) {
        tr->best = d;
    }
    if (rc == 0 &&
        (rc = get_double(text, what, "state-global-step", &d)) == 0) {
        tr->global_step = (int64_t)d;
    }
    if (rc == 0 && (rc = get_double(text, what, "state-wall", &d)) == 0) {
        tr->wall = d;
    }
#undef GETF
#undef GETI
    if (rc < 0) {
        return rc;
    }
    char *phase = value_dup(text, "state-phase");
    if (phase == NULL ||
        (strcmp(phase, "sgd") != 0 && strcmp(phase, "asgd") != 0)) {
        free(phase);
        return gr_error(GR_EFORMAT, "%s: config has no valid 'state-phase'",
                        what);
    }
    tr->asgd_phase = strcmp(phase, "asgd") == 0;
    free(phase);
    char *when = value_dup(text, "when");
    tc->n_when = 0;
    if (when != NULL && strcmp(when, "-1") != 0) {
        char *p = when;
        while (*p && tc->n_when < NLP_LM_MAX_WHEN) {
            tc->when[tc->n_when++] = (int32_t)strtol(p, &p, 10);
            if (*p == ',') {
                p++;
            } else {
                break;
            }
        }
    }
    free(when);
    char *hist = value_dup(text, "state-history");
    if (hist == NULL) {
        return gr_error(GR_EFORMAT, "%s: config has no 'state-history'", what);
    }
    tr->n_hist = 0;
    if (strcmp(hist, "none") != 0) {
        char *p = hist;
        while (*p) {
            char *end = NULL;
            double v = strtod(p, &end);
            if (end == p || (*end != ',' && *end != '\0')) {
                free(hist);
                return gr_error(GR_EFORMAT,
                                "%s: config 'state-history' is malformed",
                                what);
            }
            if ((rc = push_hist(tr, v)) < 0) {
                free(hist);
                return rc;
            }
            p = *end == ',' ? end + 1 : end;
        }
    }
    free(hist);
    if (tr->asgd_phase && tr->n_asgd < 1) {
        return gr_error(GR_EFORMAT,
                        "%s: config says ASGD phase with no ASGD optimizer",
                        what);
    }
    return 0;
}

static int save_ckpt(struct trainer *tr, const char *path, int last)
{
    struct nlp_text t = {0};
    int rc = state_write(tr, &t);
    if (rc == 0) {
        rc = nlp_lm_save(&tr->lm, path, &tr->corpus->vocab, t.s, last, 1);
    }
    nlp_text_free(&t);
    return rc;
}

/* Trains one epoch. Fills log->train_loss, grad_norm, tokens_per_s,
 * windows. */
static int train_epoch(struct trainer *tr, int32_t epoch,
                       struct nlp_lm_epoch_log *log, double run_eta_s)
{
    const struct nlp_lm_train_config *tc = &tr->tc;
    struct gr_ctx *ctx = tr->ctx;
    const int32_t *data = tr->data[NLP_TRAIN];
    size_t rows = tr->rows[NLP_TRAIN];
    int32_t B = tc->batch;
    /* MPI (train/mpi.h): this process trains columns [c0, c1) of the
     * batchified stream; its dropout masks are its own draw (seed salted by
     * the rank), so N processes equal one only without dropout */
    int rank = train_mpi_rank(), n_ranks = train_mpi_size();
    int32_t c0 = (int32_t)((int64_t)B * rank / n_ranks);
    int32_t c1 = (int32_t)((int64_t)B * (rank + 1) / n_ranks);
    int32_t *local = NULL;
    if (n_ranks > 1) {
        local = malloc(rows * (size_t)(c1 - c0) * sizeof *local);
        if (local == NULL) {
            return gr_error(GR_ENOMEM, "out of memory splitting the batch");
        }
        for (size_t r = 0; r < rows; r++) {
            memcpy(local + r * (size_t)(c1 - c0), data + r * (size_t)B + c0,
                   (size_t)(c1 - c0) * sizeof *local);
        }
        data = local;
        B = c1 - c0;
    }
    uint64_t drop_seed = n_ranks > 1 ? tc->seed ^ gr_mix64((uint64_t)rank)
                                     : tc->seed;
    struct nlp_lm_state st;
    int rc = nlp_lm_state_init(&st, &tr->lm, "train", B);
    if (rc < 0) {
        free(local);
        return rc;
    }
    struct gr_philox_stream ws = nlp_lm_window_stream(tc->seed, epoch);
    char label[48];
    snprintf(label, sizeof label, "epoch %d/%d", (int)epoch, (int)tc->epochs);
    size_t total_rows = rows > 2 ? rows - 2 : 0;
    struct gr_progress prog;
    gr_progress_start(&prog, label, (uint64_t)total_rows * (uint64_t)B, "tok",
                      tc->quiet);
    double t0 = gr_now_seconds();
    double sum_loss = 0.0, sum_norm = 0.0;
    int64_t windows = 0, tokens = 0;
    size_t i = 0;
    while (rows >= 2 && i < rows - 2) {
        if (tc->max_batches > 0 && windows >= tc->max_batches) {
            break;
        }
        if (train_allreduce_max_int(train_stop_requested() != 0)) {
            tr->stopped = 1; /* the epoch is dropped: last.ckpt holds the
                              * previous one, and --resume redoes it */
            break;
        }
        /* main.py scales the lr by the drawn length and advances by it;
         * only the batch is cut at the end of the stream */
        int32_t drawn = tc->fixed_windows
                            ? tc->bptt
                            : nlp_lm_window_length(&ws, tc->bptt);
        int32_t T = drawn;
        if ((size_t)T > rows - 1 - i) {
            T = (int32_t)(rows - 1 - i);
        }
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct gr_tensor *in = gr_tensor_from_host(
            ctx, GR_I32, gr_shape2(T, B), data + i * (size_t)B);
        struct gr_tensor *tg = gr_tensor_from_host(
            ctx, GR_I32, gr_shape1((int64_t)T * B),
            data + (i + 1) * (size_t)B);
        struct nlp_lm_drop drop = nlp_lm_drop_train(drop_seed, epoch, windows);
        struct nlp_lm_out o;
        rc = nlp_lm_forward(&tr->lm, &st, in, tg, &drop, &o);
        if (rc < 0) {
            break;
        }
        rc = gr_backward(ctx, o.loss);
        if (rc == 0 && n_ranks > 1) {
            /* every term of the loss is a mean over this process's columns:
             * weighted by its share, the sum is the whole batch's */
            rc = train_allreduce_grads(ctx, (double)B / tc->batch);
        }
        if (rc < 0) {
            break;
        }
        float norm = 0.0f;
        if (tc->clip > 0.0f) {
            rc = gr_clip_grad_norm(ctx, NULL, tc->clip, &norm);
            if (rc < 0) {
                break;
            }
        }
        /* a non-finite loss stops before the step touches the weights;
         * last.ckpt keeps the last finished epoch */
        double ce = (double)gr_tensor_item(o.ce);
        if (n_ranks > 1) {
            double part = ce * B / tc->batch;
            rc = train_allreduce_sum(&part, 1);
            ce = part;
        }
        if (rc < 0) {
            break;
        }
        if (!isfinite(ce)) {
            rc = tr->have_run ? train_check_finite(&tr->run, ce, epoch)
                              : gr_error(GR_EINVAL, "the training loss is %g",
                                         ce);
            rc = gr_error_wrap(rc, "window %lld (diverged; try a smaller "
                                   "--lr or --clip)",
                               (long long)windows);
            break;
        }
        struct gr_optim *opt = current(tr);
        gr_optim_set_lr(opt, (float)(tr->group_lr * drawn / tc->bptt));
        rc = gr_optim_step(opt);
        gr_optim_set_lr(opt, (float)tr->group_lr);
        if (rc < 0) {
            break;
        }
        sum_loss += ce;
        sum_norm += (double)norm;
        windows++;
        tokens += (int64_t)T * tc->batch;
        tr->global_step++;
        i += (size_t)drawn;
        if (!tc->quiet) {
            char extra[96], eta[32];
            gr_format_duration(run_eta_s, eta, sizeof eta);
            snprintf(extra, sizeof extra, "loss %.3f ppl %.1f lr %.3g%s%s",
                     sum_loss / (double)windows,
                     exp(sum_loss / (double)windows), tr->group_lr,
                     run_eta_s > 0 ? " | run ETA " : "",
                     run_eta_s > 0 ? eta : "");
            gr_progress_set_extra(&prog, extra);
            gr_progress_update(&prog, (uint64_t)(i < total_rows ? i
                                                                : total_rows) *
                                          (uint64_t)B);
        }
    }
    gr_progress_finish(&prog);
    gr_step_reset(ctx);
    free(local);
    if (rc < 0) {
        return rc;
    }
    double dt = gr_now_seconds() - t0;
    log->windows = windows;
    log->train_loss = windows ? sum_loss / (double)windows : NAN;
    log->grad_norm = windows ? sum_norm / (double)windows : NAN;
    log->tokens_per_s = dt > 0 ? (double)tokens / dt : 0.0;
    return 0;
}

static int validate(struct trainer *tr, struct nlp_lm_eval_result *ev)
{
    return nlp_lm_evaluate(&tr->lm, tr->data[NLP_VALID], tr->rows[NLP_VALID],
                           tr->tc.eval_batch, tr->tc.bptt, "valid",
                           "validation", tr->tc.quiet, ev);
}

/* metrics.csv of an LM run (nlp/README.md). */
static const struct train_column lm_columns[] = {
    {"epoch", "%.0f"},          {"global_step", "%.0f"},
    {"wall_s", "%.3f"},         {"phase", NULL},
    {"lr", "%.9g"},             {"train_loss", "%.6f"},
    {"train_ppl", "%.4f"},      {"val_loss", "%.6f"},
    {"val_ppl", "%.4f"},        {"val_ppl_compat", "%.4f"},
    {"grad_norm", "%.5f"},      {"tokens_per_s", "%.1f"},
    {"windows", "%.0f"},        {"best", "%.0f"},
};

static int write_metrics_row(struct train_run *run,
                             const struct nlp_lm_epoch_log *e)
{
    struct train_cell c[] = {
        TRAIN_NUM(e->epoch),         TRAIN_NUM(e->global_step),
        TRAIN_NUM(e->wall_s),        TRAIN_TEXT(e->asgd ? "asgd" : "sgd"),
        TRAIN_NUM(e->lr),            TRAIN_NUM(e->train_loss),
        TRAIN_NUM(exp(e->train_loss)), TRAIN_NUM(e->val_loss),
        TRAIN_NUM(e->val_ppl),       TRAIN_NUM(e->val_ppl_compat),
        TRAIN_NUM(e->grad_norm),     TRAIN_NUM(e->tokens_per_s),
        TRAIN_NUM(e->windows),       TRAIN_NUM(e->best),
    };
    return train_metrics_row(run, c);
}

static int vocab_equal(const struct nlp_vocab *a, const struct nlp_vocab *b)
{
    if (a->size != b->size) {
        return 0;
    }
    for (int32_t i = 0; i < a->size; i++) {
        if (strcmp(nlp_vocab_word(a, i), nlp_vocab_word(b, i)) != 0) {
            return 0;
        }
    }
    return 1;
}

static int prepare_data(struct trainer *tr)
{
    const struct nlp_corpus *c = tr->corpus;
    int32_t batches[NLP_N_SPLITS] = {tr->tc.batch, tr->tc.eval_batch,
                                     tr->tc.test_batch};
    int32_t limits[NLP_N_SPLITS] = {tr->tc.train_rows, tr->tc.valid_rows, 0};
    for (int s = 0; s < NLP_N_SPLITS; s++) {
        if (batches[s] < 1) {
            return gr_error(GR_EINVAL, "%s batch size must be >= 1",
                            nlp_split_name((enum nlp_split)s));
        }
        size_t rows = nlp_batchify_rows(c->n_tokens[s], batches[s]);
        if (rows < 3) {
            return gr_error(GR_EINVAL,
                            "%s: %zu tokens are too few for batch %d",
                            nlp_split_name((enum nlp_split)s), c->n_tokens[s],
                            (int)batches[s]);
        }
        tr->data[s] = malloc(rows * (size_t)batches[s] * sizeof(int32_t));
        if (tr->data[s] == NULL) {
            return gr_error(GR_ENOMEM, "out of memory batchifying");
        }
        int rc = nlp_batchify(c->ids[s], c->n_tokens[s], batches[s],
                              tr->data[s]);
        if (rc < 0) {
            return rc;
        }
        if (limits[s] > 0 && (size_t)limits[s] < rows) {
            rows = (size_t)limits[s];
        }
        tr->rows[s] = rows;
    }
    return 0;
}

static void trainer_free(struct trainer *tr)
{
    if (tr->have_run) {
        train_run_close(&tr->run);
    }
    gr_optim_free(tr->sgd);
    gr_optim_free(tr->asgd);
    gr_ctx_free(tr->ctx);
    for (int s = 0; s < NLP_N_SPLITS; s++) {
        free(tr->data[s]);
    }
    free(tr->hist);
}

/* Creates the optimizers a fresh run or a resumed one needs. */
static int make_optimizers(struct trainer *tr, int n_asgd)
{
    struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_SGD);
    oc.lr = tr->tc.lr;
    oc.weight_decay = tr->tc.wdecay;
    int rc = gr_optim_new(&tr->sgd, tr->ctx, "sgd", &oc);
    tr->n_asgd = 0;
    for (int k = 0; rc == 0 && k < n_asgd; k++) {
        rc = new_asgd(tr);
    }
    return rc;
}

static int run_dir_setup(struct trainer *tr, const struct nlp_lm_train_config *tc)
{
    struct nlp_text t = {0};
    int rc = 0;
    if (!tc->resume) {
        rc = nlp_text_printf(&t, "%s\n", LM_MAGIC);
        if (rc == 0) {
            rc = nlp_lm_config_write(&tr->tc.model, &t);
        }
        if (rc == 0) {
            rc = state_write(tr, &t);
        }
    }
    struct train_run_spec spec = train_run_spec_default();
    spec.dir = tc->out_dir;
    spec.force = tc->force;
    spec.resume = tc->resume;
    spec.argc = tc->argc;
    spec.argv = tc->argv;
    spec.config_text = t.s;
    spec.check_config = 0; /* --resume takes the model from last.ckpt */
    spec.columns = lm_columns;
    spec.n_columns = (int)(sizeof lm_columns / sizeof lm_columns[0]);
    spec.what = "nlp lm train";
    spec.step_unit = "epoch";
    if (rc == 0) {
        rc = train_run_open(&tr->run, &spec);
        tr->have_run = rc == 0;
    }
    nlp_text_free(&t);
    return rc;
}

/* --resume: reads last.ckpt, rebuilds the model and optimizers, loads. */
static int resume_setup(struct trainer *tr,
                        const struct gr_ctx_config *ctx_cfg)
{
    const char *path_last = tr->run.path_last;
    const char *text = tr->run.resumed_config;
    int rc = 0;
    struct nlp_vocab v;
    nlp_vocab_init(&v);
    if (strncmp(text, LM_MAGIC "\n", strlen(LM_MAGIC) + 1) != 0) {
        rc = gr_error(GR_EFORMAT, "%s: not a grove LM checkpoint",
                      path_last);
    }
    enum nlp_lm_kind want = tr->tc.model.kind;
    if (rc == 0) {
        rc = nlp_lm_config_read(text, path_last, &tr->tc.model);
    }
    if (rc == 0 && tr->tc.model_given && tr->tc.model.kind != want) {
        rc = gr_error(GR_EINVAL, "%s holds a %s model; --model %s cannot "
                      "resume it",
                      path_last, nlp_lm_kind_name(tr->tc.model.kind),
                      nlp_lm_kind_name(want));
    }
    if (rc == 0) {
        rc = state_read(tr, text, path_last);
    }
    if (rc == 0) {
        rc = nlp_lm_vocab_read(text, path_last, &v);
    }
    if (rc == 0 && !vocab_equal(&v, &tr->corpus->vocab)) {
        rc = gr_error(GR_EINVAL,
                      "%s: its vocabulary (%d words) differs from the "
                      "corpus's (%d words)",
                      path_last, (int)v.size,
                      (int)tr->corpus->vocab.size);
    }
    nlp_vocab_free(&v);
    if (rc < 0) {
        return rc;
    }
    int n_asgd = tr->n_asgd;
    if ((rc = make_ctx(&tr->ctx, ctx_cfg)) < 0 ||
        (rc = nlp_lm_init(&tr->lm, tr->ctx, &tr->tc.model, tr->tc.seed)) < 0 ||
        (rc = make_optimizers(tr, n_asgd)) < 0) {
        return rc;
    }
    rc = gr_checkpoint_load(tr->ctx, path_last,
                            GR_CKPT_PARAMS | GR_CKPT_OPTIM, NULL);
    if (rc < 0) {
        return rc;
    }
    gr_optim_set_lr(current(tr), (float)tr->group_lr);
    train_note_last_saved(&tr->run, tr->epoch_done);
    return train_mpi_rank() == 0
               ? train_metrics_resume(&tr->run, tr->epoch_done)
               : 0;
}

static int in_when(const struct nlp_lm_train_config *tc, int32_t epoch)
{
    for (int i = 0; i < tc->n_when; i++) {
        if (tc->when[i] == epoch) {
            return 1;
        }
    }
    return 0;
}

int nlp_lm_train(const struct nlp_lm_train_config *tc_in,
                 const struct nlp_corpus *corpus,
                 const struct gr_ctx_config *ctx_cfg, nlp_lm_epoch_fn on_epoch,
                 void *user, struct nlp_lm_train_result *res)
{
    memset(res, 0, sizeof *res);
    res->test_loss = res->test_ppl = res->test_ppl_compat = NAN;
    struct trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.tc = *tc_in;
    tr.tc.model.vocab = corpus->vocab.size;
    tr.corpus = corpus;
    tr.best = INFINITY;
    tr.group_lr = tr.tc.lr;
    int rc = 0;
    if (tr.tc.resume && tr.tc.out_dir == NULL) {
        return gr_error(GR_EINVAL, "--resume needs the run folder (--out)");
    }
    /* with MPI, process 0 writes the run folder; the others only read
     * last.ckpt on --resume */
    int writer = train_mpi_rank() == 0;
    if (tr.tc.bptt < 1 || tr.tc.epochs < 0 || tr.tc.lr <= 0.0f) {
        return gr_error(GR_EINVAL, "bptt must be >= 1, epochs >= 0, lr > 0");
    }
    if (tr.tc.resume) {
        /* the model comes from last.ckpt; the folder exists already */
        int32_t epochs = tr.tc.epochs;
        int quiet = tr.tc.quiet;
        rc = run_dir_setup(&tr, &tr.tc);
        if (rc == 0) {
            rc = resume_setup(&tr, ctx_cfg);
        }
        tr.tc.epochs = epochs;
        tr.tc.quiet = quiet;
        if (rc == 0) {
            rc = prepare_data(&tr);
        }
    } else {
        /* every check (model, device, data) before the run folder: a
         * failed start leaves nothing behind */
        if ((rc = nlp_lm_config_check(&tr.tc.model)) == 0 &&
            (rc = make_ctx(&tr.ctx, ctx_cfg)) == 0 &&
            (rc = nlp_lm_init(&tr.lm, tr.ctx, &tr.tc.model, tr.tc.seed)) ==
                0) {
            rc = make_optimizers(&tr, 0);
        }
        if (rc == 0) {
            rc = prepare_data(&tr);
        }
        if (rc == 0 && tr.tc.out_dir != NULL && writer) {
            rc = run_dir_setup(&tr, &tr.tc);
        }
    }
    if (rc < 0) {
        trainer_free(&tr);
        return rc;
    }
    const struct nlp_lm_train_config *tc = &tr.tc;
    /* A fresh run's last.ckpt starts as the initial model: --resume from
     * it equals the fresh run, and --epochs 0 exports the initial weights
     * (the deterministic comparison in bench/nlp reads them). */
    if (!tc->resume && tr.have_run && writer &&
        ((rc = save_ckpt(&tr, tr.run.path_last, 1)) < 0 ||
         (tc->epochs == 0 &&
          (rc = save_ckpt(&tr, tr.run.path_best, 0)) < 0))) {
        trainer_free(&tr);
        return rc;
    }
    if (tr.have_run && !tc->resume) {
        train_note_last_saved(&tr.run, 0);
    }
    if (!tc->quiet && writer) {
        char line[160];
        nlp_lm_param_report(&tc->model, line, sizeof line);
        printf("model:      %s, %s\n", nlp_lm_kind_name(tc->model.kind),
               line);
        fflush(stdout);
    }
    int stop = 0;
    int32_t n_run = 0; /* epochs run by this invocation */
    double t_run0 = gr_now_seconds();
    for (int32_t epoch = tr.epoch_done + 1; epoch <= tc->epochs && !stop;
         epoch++) {
        double t0 = gr_now_seconds();
        struct nlp_lm_epoch_log log;
        memset(&log, 0, sizeof log);
        log.epoch = epoch;
        /* run ETA: mean epoch time of this invocation x epochs left */
        double eta = 0.0;
        if (n_run > 0) {
            eta = (gr_now_seconds() - t_run0) / n_run *
                  (double)(tc->epochs - epoch + 1);
        }
        rc = train_epoch(&tr, epoch, &log, eta);
        if (rc < 0) {
            break;
        }
        if (tr.stopped) {
            if (tr.have_run && writer) {
                train_print_stopped(&tr.run, tr.epoch_done);
            }
            break;
        }
        struct nlp_lm_eval_result ev;
        if (tr.asgd_phase) {
            rc = gr_optim_swap_average(tr.asgd);
            if (rc == 0) {
                rc = validate(&tr, &ev);
            }
            if (rc == 0 && ev.loss_compat < tr.best) {
                tr.best = ev.loss_compat;
                log.best = 1;
                if (tr.have_run && writer) {
                    rc = save_ckpt(&tr, tr.run.path_best, 0);
                }
            }
            int rc2 = gr_optim_swap_average(tr.asgd);
            if (rc == 0) {
                rc = rc2;
            }
            if (rc == 0 && tc->finetuning > 0 && epoch == tc->finetuning) {
                if (!tc->quiet) {
                    fprintf(stderr, "epoch %d: restarting ASGD (finetuning)\n",
                            (int)epoch);
                }
                rc = new_asgd(&tr);
                gr_optim_set_lr(tr.asgd, (float)tr.group_lr);
                tr.n_hist = 0;
            }
            if (rc == 0 && nlp_lm_kind_on_recipe(tc->model.kind) &&
                tc->finetuning > 0 && epoch > tc->finetuning &&
                nlp_ntasgd_should_switch(tr.hist, tr.n_hist, ev.loss_compat,
                                         tc->nonmono)) {
                stop = 1; /* the reference's "Done!" (never seen in practice) */
            }
        } else {
            rc = validate(&tr, &ev);
            if (rc == 0 && ev.loss_compat < tr.best) {
                tr.best = ev.loss_compat;
                log.best = 1;
                if (tr.have_run && writer) {
                    rc = save_ckpt(&tr, tr.run.path_best, 0);
                }
            }
            if (rc == 0 && nlp_ntasgd_should_switch(tr.hist, tr.n_hist,
                                                    ev.loss_compat,
                                                    tc->nonmono)) {
                if (!tc->quiet) {
                    fprintf(stderr, "epoch %d: switching to ASGD\n",
                            (int)epoch);
                }
                rc = new_asgd(&tr);
                tr.asgd_phase = 1;
                tr.switch_epoch = epoch;
                tr.group_lr = tc->lr;
            }
            if (rc == 0 && in_when(tc, epoch)) {
                tr.group_lr /= 10.0;
                gr_optim_set_lr(current(&tr), (float)tr.group_lr);
                if (!tc->quiet) {
                    fprintf(stderr, "epoch %d: dividing the learning rate by "
                                    "10 (now %g)\n",
                            (int)epoch, tr.group_lr);
                }
            }
            if (rc == 0) {
                rc = push_hist(&tr, ev.loss_compat);
            }
        }
        if (rc < 0) {
            break;
        }
        double dt = gr_now_seconds() - t0;
        tr.wall += dt;
        tr.epoch_done = epoch;
        n_run++;
        log.global_step = tr.global_step;
        log.wall_s = tr.wall;
        log.asgd = tr.asgd_phase;
        log.lr = tr.group_lr;
        log.val_loss = ev.loss;
        log.val_ppl = ev.ppl;
        log.val_ppl_compat = ev.ppl_compat;
        if (!tc->quiet) {
            fprintf(stderr,
                    "| end of epoch %3d | %7.1f s | train ppl %8.2f | valid "
                    "ppl %8.2f (compat %8.2f) | %s lr %g%s\n",
                    (int)epoch, dt, exp(log.train_loss), ev.ppl,
                    ev.ppl_compat, tr.asgd_phase ? "asgd" : "sgd",
                    tr.group_lr, log.best ? " | saved best" : "");
        }
        if (tr.have_run && writer &&
            (rc = write_metrics_row(&tr.run, &log)) < 0) {
            break;
        }
        if (tr.have_run && writer) {
            if ((rc = save_ckpt(&tr, tr.run.path_last, 1)) < 0) {
                break;
            }
            train_note_last_saved(&tr.run, epoch);
        }
        if (on_epoch != NULL && on_epoch(user, &log) != 0) {
            stop = 1;
        }
    }
    res->epochs_done = tr.epoch_done;
    res->stopped = tr.stopped;
    res->best_val_loss = tr.best;
    res->best_val_ppl = exp(tr.best);
    res->asgd = tr.asgd_phase;
    res->asgd_switch_epoch = tr.switch_epoch;
    res->wall_s = tr.wall;
    /* no epoch at all (--epochs 0): nothing is evaluated */
    if (rc == 0 && !tc->skip_test && !tr.stopped && tr.epoch_done > 0) {
        if (tr.have_run && gr_path_exists(tr.run.path_best)) {
            rc = gr_checkpoint_load(tr.ctx, tr.run.path_best, GR_CKPT_PARAMS,
                                    NULL);
        }
        struct nlp_lm_eval_result ev;
        if (rc == 0) {
            rc = nlp_lm_evaluate(&tr.lm, tr.data[NLP_TEST], tr.rows[NLP_TEST],
                                 tc->test_batch, tc->bptt, "test", "test",
                                 tc->quiet, &ev);
        }
        if (rc == 0) {
            res->test_loss = ev.loss;
            res->test_ppl = ev.ppl;
            res->test_ppl_compat = ev.ppl_compat;
        }
    }
    trainer_free(&tr);
    return rc;
}
