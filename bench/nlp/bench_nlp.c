/* bench/nlp/bench_nlp.c — ON-LSTM LM training throughput, grove vs the
 * PyTorch reference in the same run (see bench_nlp.h). */
#define _POSIX_C_SOURCE 200809L
#include "bench/nlp/bench_nlp.h"
#include "bench/bench_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"
#include "core/progress.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "kernels/tape.h"
#include "nlp/models/onlstm.h"

#ifndef GROVE_SOURCE_DIR
#define GROVE_SOURCE_DIR "."
#endif

struct bench_case {
    const char *name;
    const char *what;
    int emsize, nhid, nlayers, chunk, batch, bptt, vocab;
};

static const struct bench_case full_cases[] = {
    {"published", "published size: 400/1150/400, chunk 10, B 20, T 70", 400,
     1150, 3, 10, 20, 70, 10000},
    {"batch1", "published size at batch 1", 400, 1150, 3, 10, 1, 70, 10000},
    {"small", "hidden 256: 128/256/128, chunk 8, B 20, T 70", 128, 256, 3, 8,
     20, 70, 10000},
};

static const struct bench_case quick_cases[] = {
    {"published", "quick: 40/60/40, chunk 10, B 4, T 10", 40, 60, 3, 10, 4,
     10, 500},
    {"batch1", "quick: 40/60/40 at batch 1", 40, 60, 3, 10, 1, 10, 500},
    {"small", "quick: 16/32/16, chunk 8, B 4, T 10", 16, 32, 3, 8, 4, 10,
     500},
};

#define N_CASES 3

void bench_nlp_options_default(struct bench_nlp_options *o)
{
    memset(o, 0, sizeof *o);
    o->windows = 3;
    o->warmup = 1;
    o->rounds = 3;
    o->device = GR_DEVICE_CPU;
    o->baseline = 1;
    o->python = "/usr/bin/python3";
    o->build = "?";
    o->commit = "?";
}

const char *bench_nlp_case_names(void)
{
    return "published,batch1,small";
}

/* grove: median seconds per training window. */
static int run_grove(const struct bench_case *bc,
                     const struct bench_nlp_options *o, enum nlp_lm_kind kind,
                     double *sec)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = o->device;
    cc.threads = o->threads;
    struct gr_ctx *ctx = NULL;
    int rc = gr_ctx_new(&ctx, &cc);
    if (rc < 0) {
        return rc;
    }
    struct nlp_lm_config cfg;
    nlp_lm_config_default(&cfg, kind, bc->vocab);
    cfg.emsize = bc->emsize;
    cfg.nhid = bc->nhid;
    cfg.nlayers = bc->nlayers;
    cfg.chunk = bc->chunk;
    struct nlp_lm lm;
    struct nlp_lm_state st;
    struct gr_optim *opt = NULL;
    struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_SGD);
    oc.lr = 30.0f;
    oc.weight_decay = 1.2e-6f;
    int n = o->warmup + o->windows;
    double *times = calloc((size_t)n, sizeof *times);
    int32_t *ids = malloc((size_t)(bc->bptt + 1) * bc->batch * sizeof *ids);
    if (times == NULL || ids == NULL) {
        rc = gr_error(GR_ENOMEM, "out of memory");
    }
    if (rc == 0) {
        rc = nlp_lm_init(&lm, ctx, &cfg, 141);
    }
    if (rc == 0) {
        rc = nlp_lm_state_init(&st, &lm, "bench", bc->batch);
    }
    if (rc == 0) {
        rc = gr_optim_new(&opt, ctx, "sgd", &oc);
    }
    struct gr_philox_stream s = gr_philox_stream_init(7, 0);
    for (int i = 0; rc == 0 && i < (bc->bptt + 1) * bc->batch; i++) {
        ids[i] = (int32_t)(gr_philox_next_u32(&s) % (uint32_t)bc->vocab);
    }
    for (int k = 0; rc == 0 && k < n; k++) {
        gr_ctx_sync(ctx);
        double t0 = gr_now_seconds();
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct gr_tensor *in = gr_tensor_from_host(
            ctx, GR_I32, gr_shape2(bc->bptt, bc->batch), ids);
        struct gr_tensor *tg = gr_tensor_from_host(
            ctx, GR_I32, gr_shape1((int64_t)bc->bptt * bc->batch),
            ids + bc->batch);
        struct nlp_lm_drop drop = nlp_lm_drop_train(141, 1, k);
        struct nlp_lm_out out;
        rc = nlp_lm_forward(&lm, &st, in, tg, &drop, &out);
        if (rc == 0) {
            rc = gr_backward(ctx, out.loss);
        }
        if (rc == 0) {
            rc = gr_clip_grad_norm(ctx, NULL, 0.25f, NULL);
        }
        if (rc == 0) {
            rc = gr_optim_step(opt);
        }
        gr_ctx_sync(ctx);
        times[k] = gr_now_seconds() - t0;
    }
    if (rc == 0) {
        qsort(times + o->warmup, (size_t)o->windows, sizeof *times,
              bench_cmp_double);
        *sec = times[o->warmup + o->windows / 2];
    }
    gr_optim_free(opt);
    gr_ctx_free(ctx);
    free(times);
    free(ids);
    return rc;
}

/* The reference's result line: its median seconds per window. */
static int parse_result(const char *line, void *arg)
{
    double tps = 0.0, s = 0.0;
    if (sscanf(line, "tokens_per_s %lf seconds_per_window %lf", &tps, &s) !=
        2) {
        return 0;
    }
    *(double *)arg = s;
    return 1;
}

/* The PyTorch reference: median seconds per window, or a reason. */
static int run_baseline(const struct bench_case *bc,
                        const struct bench_nlp_options *o, const char *cell,
                        double *sec, char *why, size_t cap, char *blas,
                        size_t blas_cap)
{
    char script[GR_PATH_MAX];
    snprintf(script, sizeof script, "%s",
             o->script ? o->script
                       : GROVE_SOURCE_DIR "/bench/nlp/onlstm_ref.py");
    if (!gr_path_exists(script)) {
        snprintf(why, cap, "%.300s not found", script);
        return -1;
    }
    /* torch.set_num_threads does not reach the BLAS: pin its threads
     * through the environment too. */
    char env[96];
    bench_thread_env(o->threads, env, sizeof env);
    char cmd[GR_PATH_MAX * 2 + 640];
    snprintf(cmd, sizeof cmd,
             "%s'%s' '%s' speed --vocab %d --emsize %d --nhid %d --nlayers %d "
             "--chunk %d --batch %d --bptt %d --windows %d --warmup %d "
             "--threads %d --device %s --model %s 2>&1",
             env, o->python, script, bc->vocab, bc->emsize, bc->nhid, bc->nlayers,
             bc->chunk, bc->batch, bc->bptt, o->windows, o->warmup,
             o->threads, o->device == GR_DEVICE_CUDA ? "cuda" : "cpu", cell);
    return bench_run_baseline(cmd, o->python, "the PyTorch reference",
                              parse_result, sec, blas, blas_cap, why, cap);
}

static int selected(const char *list, const char *name)
{
    if (list == NULL || list[0] == '\0') {
        return 1;
    }
    size_t n = strlen(name);
    const char *p = list;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) {
            return 1;
        }
        p += len + (comma ? 1 : 0);
    }
    return 0;
}

#define MAX_MODELS 5

/* The kinds of o->models (default onlstm); GR_EINVAL naming a bad one. */
static int parse_models(const struct bench_nlp_options *o,
                        enum nlp_lm_kind *kinds, int *n)
{
    *n = 0;
    const char *p = o->models && o->models[0] ? o->models : "onlstm";
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char name[16];
        if (len == 0 || len >= sizeof name || *n == MAX_MODELS) {
            return gr_error(GR_EINVAL, "--models: '%s' is not a list of up "
                            "to %d of %s", o->models, MAX_MODELS,
                            NLP_LM_KINDS);
        }
        memcpy(name, p, len);
        name[len] = '\0';
        if (nlp_lm_kind_parse(name, &kinds[*n]) < 0) {
            char msg[256];
            snprintf(msg, sizeof msg, "%s", gr_last_error());
            return gr_error(GR_EINVAL, "--models: %s", msg);
        }
        (*n)++;
        p += len + (comma ? 1 : 0);
    }
    return 0;
}

int bench_nlp_models_check(const struct bench_nlp_options *o)
{
    enum nlp_lm_kind kinds[MAX_MODELS];
    int n = 0;
    return parse_models(o, kinds, &n);
}

int bench_nlp_run(const struct bench_nlp_options *o, FILE *out)
{
    enum nlp_lm_kind kinds[MAX_MODELS];
    int n_models = 0;
    int prc = parse_models(o, kinds, &n_models);
    if (prc < 0) {
        return prc;
    }
    if (o->windows < 1 || o->warmup < 0 || o->rounds < 1 ||
        o->rounds > BENCH_MAX_ROUNDS) {
        return gr_error(GR_EINVAL, "windows must be >= 1, warmup >= 0, "
                        "rounds in [1, %d]", BENCH_MAX_ROUNDS);
    }
    const struct bench_case *cases = o->quick ? quick_cases : full_cases;
    /* unknown case names */
    if (o->cases != NULL) {
        const char *p = o->cases;
        while (*p) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            int ok = 0;
            for (int i = 0; i < N_CASES; i++) {
                ok |= strlen(cases[i].name) == len &&
                      strncmp(cases[i].name, p, len) == 0;
            }
            if (!ok) {
                return gr_error(GR_EINVAL, "unknown case '%.*s' (cases: %s)",
                                (int)len, p, bench_nlp_case_names());
            }
            p += len + (comma ? 1 : 0);
        }
    }
    char cpu[256], blas[1024];
    bench_cpu_name(cpu, sizeof cpu);
    bench_process_blas(blas, sizeof blas);
    fprintf(out, "# ON-LSTM LM training throughput (tokens/s: forward, "
                 "backward, clip, SGD step of one window)\n");
    fprintf(out, "cpu: %s; threads: %d%s; device: %s; build: %s; commit: "
                 "%s\n",
            cpu, o->threads, o->threads == 0 ? " (all cores)" : "",
            gr_device_name(o->device), o->build, o->commit);
    fprintf(out, "grove BLAS: %s\n", blas);
    fprintf(out, "baseline: PyTorch reference bench/nlp/onlstm_ref.py "
                 "(%s; %s); %d warm-up + median of %d windows each; the two "
                 "sides alternate, %d round%s per case\n\n",
            o->baseline ? o->python : "not run",
            o->same_cell ? "each row's own cell" : "its ON-LSTM for every row",
            o->warmup, o->windows, o->rounds, o->rounds == 1 ? "" : "s");
    fprintf(out, "| case | grove | baseline | ratio | spread |\n");
    fprintf(out, "|---|---|---|---|---|\n");
    fflush(out);
    char notes[N_CASES][512];
    memset(notes, 0, sizeof notes);
    int n_notes = 0;
    char base_blas[1024] = "";
    for (int i = 0; i < N_CASES; i++) {
        const struct bench_case *bc = &cases[i];
        if (!selected(o->cases, bc->name)) {
            continue;
        }
        /* grove (every model), baseline, grove, baseline, ...: tokens/s
         * of each round */
        double gm[MAX_MODELS][BENCH_MAX_ROUNDS];
        double bm[MAX_MODELS][BENCH_MAX_ROUNDS];
        int have_bm[MAX_MODELS];
        char why[400] = "";
        const double tokens = (double)bc->batch * bc->bptt;
        /* the PyTorch cell of each row: the ON-LSTM reference, or with
         * same_cell the row's own cell where the script has it */
        const char *cells[MAX_MODELS];
        for (int m = 0; m < n_models; m++) {
            const char *nm = nlp_lm_kind_name(kinds[m]);
            cells[m] = "onlstm";
            have_bm[m] = o->baseline;
            if (o->same_cell) {
                cells[m] = nm;
                if (strcmp(nm, "onlstm") != 0 && strcmp(nm, "ft") != 0 &&
                    strcmp(nm, "fft") != 0) {
                    have_bm[m] = 0;
                    snprintf(why, sizeof why, "onlstm_ref.py has no %s cell",
                             nm);
                }
            }
        }
        for (int r = 0; r < o->rounds; r++) {
            double gs = 0.0, bs = 0.0;
            for (int m = 0; m < n_models; m++) {
                int rc = run_grove(bc, o, kinds[m], &gs);
                if (rc < 0) {
                    return gr_error_wrap(rc, "case %s, model %s", bc->name,
                                         nlp_lm_kind_name(kinds[m]));
                }
                gm[m][r] = tokens / gs;
                bm[m][r] = -1.0;
                if (have_bm[m] && (o->same_cell || m == 0)) {
                    have_bm[m] = run_baseline(bc, o, cells[m], &bs, why,
                                              sizeof why, base_blas,
                                              sizeof base_blas) == 0;
                    bm[m][r] = have_bm[m] ? tokens / bs : -1.0;
                } else if (have_bm[m]) {
                    /* one ON-LSTM reference per round for every row */
                    have_bm[m] = have_bm[0];
                    bm[m][r] = bm[0][r];
                }
            }
        }
        int have_b = 0;
        for (int m = 0; m < n_models; m++) {
            have_b |= have_bm[m];
        }
        double on_tps = 0.0; /* grove's ON-LSTM, when it is in the list */
        for (int m = 0; m < n_models; m++) {
            struct bench_pair p = bench_pair_summary(gm[m], bm[m], o->rounds);
            if (kinds[m] == NLP_LM_ONLSTM) {
                on_tps = p.grove;
            }
        }
        for (int m = 0; m < n_models; m++) {
            const double *g = gm[m];
            struct bench_pair p = bench_pair_summary(g, bm[m], o->rounds);
            char spread[160], label[64] = "";
            bench_spread_cell(&p, spread, sizeof spread);
            if (n_models > 1 || kinds[m] != NLP_LM_ONLSTM) {
                /* epoch time relative to grove's ON-LSTM (same run) and
                 * to the PyTorch ON-LSTM reference */
                int k = snprintf(label, sizeof label, " %s",
                                 nlp_lm_kind_name(kinds[m]));
                if (on_tps > 0.0 && kinds[m] != NLP_LM_ONLSTM) {
                    k += snprintf(label + k, sizeof label - (size_t)k,
                                  ", time %.2f of onlstm", on_tps / p.grove);
                }
                if (have_bm[m] && p.grove > 0.0) {
                    snprintf(label + k, sizeof label - (size_t)k,
                             ", %.2f of ref", p.baseline / p.grove);
                }
            }
            if (have_bm[m]) {
                fprintf(out, "| %s%s (%s) | %.0f tok/s | %.0f tok/s | %.2fx "
                        "| %s |\n", bc->name, label, bc->what, p.grove,
                        p.baseline, p.ratio, spread);
            } else {
                fprintf(out, "| %s%s (%s) | %.0f tok/s | n/a | n/a | %s |\n",
                        bc->name, label, bc->what, p.grove, spread);
            }
        }
        if ((!have_b || why[0]) && o->baseline && n_notes < N_CASES) {
            snprintf(notes[n_notes++], sizeof notes[0], "%.20s: %.400s",
                     bc->name, why);
        }
        fflush(out);
    }
    if (o->baseline) {
        fprintf(out, "\nbaseline BLAS: %s\n",
                base_blas[0] ? base_blas
                             : "not reported (the baseline did not run)");
    }
    for (int i = 0; i < n_notes; i++) {
        fprintf(out, "\nbaseline n/a for %s\n", notes[i]);
    }
    return 0;
}
