/* bench/nlp/bench_mlm.c — UDGN / StructFormer MLM training throughput,
 * grove vs the PyTorch reference on the same batches (see bench_mlm.h). */
#define _POSIX_C_SOURCE 200809L
#include "bench/nlp/bench_mlm.h"

#include "bench/bench_util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"
#include "core/progress.h"
#include "core/random.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "kernels/tape.h"
#include "nlp/data/mlm.h"
#include "nlp/tasks/mlm_task.h"

#ifndef GROVE_SOURCE_DIR
#define GROVE_SOURCE_DIR "."
#endif

void bench_mlm_options_default(struct bench_mlm_options *o)
{
    memset(o, 0, sizeof *o);
    o->model = "udgn";
    o->batches = 3;
    o->warmup = 1;
    o->rounds = 3;
    o->threads = 1;
    o->device = GR_DEVICE_CPU;
    o->baseline = 1;
    o->nemb = 256;
    o->nlayers = 4;
    o->nheads = 8;
    o->head_size = 64;
    o->parser_layers = 2;
    o->pos_classes = 5;
    o->vocab = 2000;
    o->rows = 32;
    o->min_len = 10;
    o->max_len = 30;
    o->python = "/usr/bin/python3";
    o->build = "?";
    o->commit = "?";
}

struct batch {
    int32_t B, n;
    int32_t *lens, *ids, *tg; /* [B], [B, n], [B, n] */
    int64_t tokens;
};

static void batches_free(struct batch *bs, int n)
{
    for (int k = 0; bs != NULL && k < n; k++) {
        free(bs[k].lens);
        free(bs[k].ids);
        free(bs[k].tg);
    }
    free(bs);
}

/* Synthetic batches: lengths uniform in [min_len, max_len], words uniform
 * over ids 3..V-1, each masked with probability 0.3 (<mask> only). */
static int make_batches(const struct bench_mlm_options *o, int nb,
                        struct batch *out)
{
    struct gr_philox_stream s = gr_philox_stream_init(1111, 24);
    uint32_t span = (uint32_t)(o->max_len - o->min_len + 1);
    for (int k = 0; k < nb; k++) {
        struct batch *b = &out[k];
        b->B = o->rows;
        b->lens = malloc((size_t)b->B * sizeof *b->lens);
        if (b->lens == NULL) {
            return gr_error(GR_ENOMEM, "bench mlm: out of memory");
        }
        b->n = 1;
        b->tokens = 0;
        for (int32_t r = 0; r < b->B; r++) {
            b->lens[r] = o->min_len + (int32_t)(gr_philox_next_u32(&s) % span);
            b->n = b->lens[r] > b->n ? b->lens[r] : b->n;
            b->tokens += b->lens[r];
        }
        size_t cells = (size_t)b->B * (size_t)b->n;
        b->ids = malloc(cells * sizeof *b->ids);
        b->tg = malloc(cells * sizeof *b->tg);
        if (b->ids == NULL || b->tg == NULL) {
            return gr_error(GR_ENOMEM, "bench mlm: out of memory");
        }
        for (int32_t r = 0; r < b->B; r++) {
            for (int32_t t = 0; t < b->n; t++) {
                size_t c = (size_t)r * b->n + t;
                b->ids[c] = NLP_MLM_PAD;
                b->tg[c] = -1;
                if (t < b->lens[r]) {
                    int32_t w = 3 + (int32_t)(gr_philox_next_u32(&s) %
                                              (uint32_t)(o->vocab - 3));
                    int masked = gr_philox_next_u32(&s) % 10u < 3u;
                    b->ids[c] = masked ? NLP_MLM_MASK : w;
                    b->tg[c] = masked ? w : -1;
                }
            }
        }
    }
    return 0;
}

/* ---- grove ---- */

struct result {
    double tokens_per_s, cpu_tokens_per_s, rss_mib;
    int64_t params;
};

static void model_options(const struct bench_mlm_options *o,
                          struct nlp_mlm_options *mo)
{
    nlp_mlm_options_default(mo);
    snprintf(mo->model, sizeof mo->model, "%s", o->model);
    mo->nemb = o->nemb;
    mo->nlayers = o->nlayers;
    mo->nheads = o->nheads;
    mo->head_size = o->head_size;
    mo->parser_layers = o->parser_layers;
    mo->pos_classes = o->pos_classes;
}

static int run_grove(const struct bench_mlm_options *o,
                     const struct nlp_mlm_model_entry *e,
                     const struct batch *bs, int n, struct result *res)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = o->device;
    cc.threads = o->threads;
    struct gr_ctx *ctx = NULL;
    int rc = gr_ctx_new(&ctx, &cc);
    if (rc < 0) {
        return rc;
    }
    struct nlp_mlm_options mo;
    model_options(o, &mo);
    void *model = NULL;
    struct gr_optim *opt = NULL;
    rc = e->init(&model, ctx, &mo, o->vocab, 1111);
    if (rc == 0) {
        struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
        oc.lr = 1e-3f;
        oc.eps = 1e-9f;
        oc.weight_decay = 1.2e-6f;
        rc = gr_optim_new(&opt, ctx, "adam", &oc);
    }
    struct bench_clock clk = {0.0, 0.0, 0.0, 0.0};
    int64_t tokens = 0;
    for (int k = 0; rc == 0 && k < n; k++) {
        const struct batch *b = &bs[k];
        struct nlp_mlm_input in = {b->ids, b->lens, b->tg, b->B, b->n};
        gr_ctx_sync(ctx);
        bench_clock_start(&clk);
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct gr_tensor *loss = NULL;
        int32_t nm = 0;
        rc = e->loss(model, ctx, &in, 1,
                     gr_rng_make(1111, gr_rng_stream(9, 1, (uint64_t)k, 0)),
                     &loss, &nm);
        if (rc == 0 && loss != NULL) {
            rc = gr_backward(ctx, loss);
            if (rc == 0) {
                rc = gr_clip_grad_norm(ctx, NULL, 0.25f, NULL);
            }
            if (rc == 0) {
                rc = gr_optim_step(opt);
            }
        }
        gr_ctx_sync(ctx);
        bench_clock_stop(&clk, k >= o->warmup);
        if (k >= o->warmup) {
            tokens += b->tokens;
        }
    }
    if (rc == 0) {
        res->tokens_per_s =
            clk.wall > 0.0 ? (double)tokens / clk.wall : 0.0;
        res->cpu_tokens_per_s =
            clk.cpu > 0.0 ? (double)tokens / clk.cpu : 0.0;
        res->rss_mib = bench_peak_rss_mib();
        res->params = gr_param_count(ctx, NULL);
    }
    gr_optim_free(opt);
    if (model != NULL) {
        e->free(model);
    }
    gr_ctx_free(ctx);
    return rc;
}

/* ---- the reference ---- */

static int write_batches(const char *path, const struct batch *bs, int n)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        return gr_error(GR_EIO, "cannot write %s", path);
    }
    fprintf(f, "%d\n", n);
    for (int k = 0; k < n; k++) {
        const struct batch *b = &bs[k];
        fprintf(f, "%d %d\n", (int)b->B, (int)b->n);
        for (int32_t r = 0; r < b->B; r++) {
            fprintf(f, "%d%c", (int)b->lens[r], r + 1 < b->B ? ' ' : '\n');
        }
        for (int a = 0; a < 2; a++) {
            const int32_t *v = a ? b->tg : b->ids;
            for (int32_t r = 0; r < b->B; r++) {
                for (int32_t t = 0; t < b->n; t++) {
                    fprintf(f, "%d%c", (int)v[(size_t)r * b->n + t],
                            t + 1 < b->n ? ' ' : '\n');
                }
            }
        }
    }
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        return gr_error(GR_EIO, "writing %s failed", path);
    }
    return 0;
}

/* The reference's result line: tokens/s by both clocks, peak RSS and
 * its parameter count. */
static int parse_result(const char *line, void *arg)
{
    struct result *res = arg;
    double tps = 0.0, s = 0.0, kb = 0.0, ctps = 0.0;
    if (sscanf(line, "tokens_per_s %lf seconds %lf peak_rss_kb %lf "
                     "cpu_tokens_per_s %lf",
               &tps, &s, &kb, &ctps) != 4) {
        return 0;
    }
    res->tokens_per_s = tps;
    res->cpu_tokens_per_s = ctps;
    res->rss_mib = kb / 1024.0;
    const char *pc = strstr(line, " params ");
    res->params = pc ? strtoll(pc + 8, NULL, 10) : 0;
    return 1;
}

static int run_baseline(const struct bench_mlm_options *o, const char *file,
                        struct result *res, char *info, size_t icap,
                        char *why, size_t cap)
{
    char script[GR_PATH_MAX];
    snprintf(script, sizeof script, "%s",
             o->script ? o->script
                       : GROVE_SOURCE_DIR "/bench/nlp/udgn_ref.py");
    if (!gr_path_exists(script)) {
        snprintf(why, cap, "%.300s not found", script);
        return -1;
    }
    char env[96];
    bench_thread_env(o->threads, env, sizeof env);
    char cmd[GR_PATH_MAX * 3 + 512];
    snprintf(cmd, sizeof cmd,
             "%s'%s' '%s' speed --model %s --batches '%s' --vocab %d "
             "--nemb %d --nlayers %d --nheads %d --head-size %d "
             "--parser-layers %d --pos-classes %d --warmup %d --threads %d "
             "--device %s 2>&1",
             env, o->python, script, o->model, file, o->vocab, o->nemb,
             o->nlayers, o->nheads, o->head_size, o->parser_layers,
             o->pos_classes, o->warmup, o->threads,
             o->device == GR_DEVICE_CPU ? "cpu" : "cuda");
    return bench_run_baseline(cmd, o->python, "the PyTorch reference",
                              parse_result, res, info, icap, why, cap);
}

/* The two sides of a round (bench_alternate): tokens/s by the wall and
 * by process CPU time; the peak RSS and parameter counts kept aside. */
struct sides {
    const struct bench_mlm_options *o;
    const struct nlp_mlm_model_entry *e;
    const struct batch *bs;
    int n;
    const char *file;
    char *info, *why;
    size_t icap, cap;
    double g_rss, b_rss;
    int64_t params, b_params;
};

static int grove_side(void *arg, double rate[2])
{
    struct sides *s = arg;
    struct result r;
    memset(&r, 0, sizeof r);
    int rc = run_grove(s->o, s->e, s->bs, s->n, &r);
    if (rc == 0) {
        rate[0] = r.tokens_per_s;
        rate[1] = r.cpu_tokens_per_s;
        s->g_rss = fmax(s->g_rss, r.rss_mib);
        s->params = r.params;
    }
    return rc;
}

static int baseline_side(void *arg, double rate[2])
{
    struct sides *s = arg;
    struct result r;
    memset(&r, 0, sizeof r);
    if (run_baseline(s->o, s->file, &r, s->info, s->icap, s->why, s->cap) <
        0) {
        return -1;
    }
    rate[0] = r.tokens_per_s;
    rate[1] = r.cpu_tokens_per_s;
    s->b_rss = fmax(s->b_rss, r.rss_mib);
    s->b_params = r.params;
    return 0;
}

int bench_mlm_run(const struct bench_mlm_options *in, FILE *out)
{
    struct bench_mlm_options o = *in;
    if (o.quick) {
        o.nemb = 16;
        o.nlayers = 1;
        o.nheads = 2;
        o.head_size = 8;
        o.parser_layers = 1;
        o.pos_classes = 2;
        o.vocab = 50;
        o.rows = 4;
        o.min_len = 3;
        o.max_len = 8;
    }
    if (o.model == NULL || (strcmp(o.model, "udgn") != 0 &&
                            strcmp(o.model, "structformer") != 0)) {
        return gr_error(GR_EINVAL, "bench mlm: model '%s' is not udgn or "
                        "structformer", o.model ? o.model : "(none)");
    }
    const struct nlp_mlm_model_entry *e = nlp_mlm_model_find(o.model);
    if (e == NULL) {
        return gr_error(GR_EINVAL, "bench mlm: no model '%s' in the MLM "
                        "table", o.model);
    }
    if (o.batches < 1 || o.warmup < 0 || o.rows < 1 || o.min_len < 2 ||
        o.max_len < o.min_len || o.max_len > 500 || o.vocab < 4) {
        return gr_error(GR_EINVAL, "bench mlm: batches >= 1, warmup >= 0, "
                        "rows >= 1, 2 <= min_len <= max_len <= 500, vocab "
                        ">= 4");
    }
    /* With a warm-up, the longest batch warms up twice (below): the first
     * time grove's step arena grows in chunks, and gr_step_reset then
     * frees them for one coalesced chunk whose pages the next step
     * touches for the first time; the second time takes that cost, so
     * the timed batches see the arena a long training run sees. */
    if (o.warmup > 0) {
        o.warmup++;
    }
    int n = o.warmup + o.batches;
    struct batch *bs = calloc((size_t)n, sizeof *bs);
    int rc = bs ? 0 : gr_error(GR_ENOMEM, "bench mlm: out of memory");
    if (rc == 0) {
        rc = make_batches(&o, n, bs);
    }
    /* The longest batch warms up (when there is a warm-up): grove's step
     * arena then has its steady size, as in a training run past its first
     * batches (the trainer's batches come longest first), instead of
     * growing (fresh pages, first-touch faults) inside a timed batch; the
     * reference's allocator has seen the largest tensors too. */
    if (rc == 0 && o.warmup > 0) {
        int big = 0;
        for (int k = 1; k < n; k++) {
            if ((int64_t)bs[k].B * bs[k].n > (int64_t)bs[big].B * bs[big].n) {
                big = k;
            }
        }
        struct batch t = bs[0];
        bs[0] = bs[big];
        bs[big] = t;
        /* the second warm-up: a copy of the first (own buffers) */
        struct batch *c = &bs[1];
        free(c->lens);
        free(c->ids);
        free(c->tg);
        *c = bs[0];
        size_t cells = (size_t)c->B * (size_t)c->n;
        c->lens = malloc((size_t)c->B * sizeof *c->lens);
        c->ids = malloc(cells * sizeof *c->ids);
        c->tg = malloc(cells * sizeof *c->tg);
        if (!c->lens || !c->ids || !c->tg) {
            rc = gr_error(GR_ENOMEM, "bench mlm: out of memory");
        } else {
            memcpy(c->lens, bs[0].lens, (size_t)c->B * sizeof *c->lens);
            memcpy(c->ids, bs[0].ids, cells * sizeof *c->ids);
            memcpy(c->tg, bs[0].tg, cells * sizeof *c->tg);
        }
    }
    int64_t timed_tokens = 0, timed_cells = 0;
    for (int k = o.warmup; rc == 0 && k < n; k++) {
        timed_tokens += bs[k].tokens;
        timed_cells += (int64_t)bs[k].B * bs[k].n;
    }
    char cpu[256];
    bench_cpu_name(cpu, sizeof cpu);
    if (rc == 0) {
        fprintf(out, "# %s MLM training throughput (forward with dropout, "
                     "masked cross entropy, backward, clip 0.25, Adam)\n",
                o.model);
        fprintf(out, "cpu: %s; threads: %d; device: %s; build: %s; commit: "
                     "%s\n",
                cpu, o.threads, gr_device_name(o.device), o.build, o.commit);
        char arch[160];
        if (strcmp(o.model, "udgn") == 0) {
            snprintf(arch, sizeof arch, "%d channels of %d, parser %d "
                     "BiLSTM layer%s, K %d", o.nheads, o.head_size,
                     o.parser_layers, o.parser_layers == 1 ? "" : "s",
                     o.pos_classes);
        } else {
            snprintf(arch, sizeof arch, "%d heads, ffn %d, parser %d conv "
                     "layer%s, 500 positions", o.nheads, 4 * o.nemb,
                     o.parser_layers, o.parser_layers == 1 ? "" : "s");
        }
        fprintf(out, "size: d %d, %d layers, %s, vocabulary %d; batches of "
                     "%d sentences of %d-%d tokens (synthetic, masking "
                     "0.3); %d warm-up (the longest batch) + %d timed batches, %lld real "
                     "tokens of %lld positions timed; %d round%s (grove, "
                     "baseline, ...)\n",
                o.nemb, o.nlayers, arch, o.vocab, o.rows, o.min_len,
                o.max_len, o.warmup, o.batches, (long long)timed_tokens,
                (long long)timed_cells, o.rounds, o.rounds == 1 ? "" : "s");
        fflush(out);
    }
    char why[512] = "", info[1024] = "";
    char file[GR_PATH_MAX];
    bench_temp_file("mlm", file, sizeof file);
    int wrote = 0;
    if (rc == 0 && o.baseline) {
        wrote = write_batches(file, bs, n) == 0;
        if (!wrote) {
            snprintf(why, sizeof why, "%.500s", gr_last_error());
        }
    }
    int rounds = o.rounds > 0 ? o.rounds : 1;
    if (rounds > BENCH_MAX_ROUNDS) {
        rounds = BENCH_MAX_ROUNDS;
    }
    double g[2][BENCH_MAX_ROUNDS], b[2][BENCH_MAX_ROUNDS];
    struct sides sd = {&o, e, bs, n, file, info, why, sizeof info,
                       sizeof why, 0.0, 0.0, 0, 0};
    if (rc == 0) {
        rc = bench_alternate(rounds, grove_side, wrote ? baseline_side : NULL,
                             &sd, 0, g, b);
    }
    double g_rss = sd.g_rss, b_rss = sd.b_rss;
    int64_t params = sd.params, b_params = sd.b_params;
    struct bench_pair pw = bench_pair_summary(g[0], b[0], rc == 0 ? rounds : 0);
    struct bench_pair pc = bench_pair_summary(g[1], b[1], rc == 0 ? rounds : 0);
    int have_b = pw.baseline > 0;
    if (wrote) {
        remove(file);
    }
    if (rc == 0) {
        char gblas[1024];
        bench_process_blas(gblas, sizeof gblas);
        fprintf(out, "grove: %lld parameters; BLAS: %s\n", (long long)params,
                gblas);
        char bp[64] = "";
        if (b_params > 0) {
            snprintf(bp, sizeof bp, " (%lld parameters)",
                     (long long)b_params);
        }
        fprintf(out, "baseline: %s%s; %s\n\n",
                o.baseline ? "bench/nlp/udgn_ref.py" : "not run", bp,
                info[0] ? info : (o.baseline ? o.python : "-"));
        fprintf(out, "| case | grove | baseline | ratio | spread | grove "
                     "peak RSS | baseline peak RSS |\n");
        fprintf(out, "|---|---|---|---|---|---|---|\n");
        for (int c = 0; c < 2; c++) {
            const struct bench_pair *pp = c ? &pc : &pw;
            char cell[160];
            bench_spread_cell(pp, cell, sizeof cell);
            char name[96];
            snprintf(name, sizeof name, "%s %s, %s", o.model,
                     o.quick ? "quick" : "scaled",
                     c ? "process CPU time" : "wall");
            if (have_b) {
                fprintf(out, "| %s | %.0f tok/s | %.0f tok/s | %.2fx | %s | "
                             "%.0f MiB | %.0f MiB |\n",
                        name, pp->grove, pp->baseline, pp->ratio, cell, g_rss,
                        b_rss);
            } else {
                fprintf(out, "| %s | %.0f tok/s | n/a | n/a | %s | %.0f MiB "
                             "| n/a |\n",
                        name, pp->grove, cell, g_rss);
            }
        }
        fprintf(out, "\n(wall: the timed batches' elapsed time; process CPU "
                     "time: their user + system CPU seconds, the fairer "
                     "clock on a shared machine with one thread a side)\n");
        if (!have_b && o.baseline) {
            fprintf(out, "\nbaseline n/a: %s\n", why);
        }
    }
    batches_free(bs, n);
    return rc;
}
