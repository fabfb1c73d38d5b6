/* bench/nlp/bench_om.c — Ordered Memory training throughput, grove vs the
 * PyTorch reference on the same batches (see bench_om.h). */
#define _POSIX_C_SOURCE 200809L
#include "bench/nlp/bench_om.h"

#include "bench/bench_util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "core/error.h"
#include "core/files.h"
#include "core/progress.h"
#include "core/random.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "kernels/tape.h"
#include "nlp/models/heads.h"
#include "nlp/models/om.h"

#ifndef GROVE_SOURCE_DIR
#define GROVE_SOURCE_DIR "."
#endif

#define PAD 11

void bench_om_options_default(struct bench_om_options *o)
{
    memset(o, 0, sizeof *o);
    o->batches = 3;
    o->warmup = 1;
    o->threads = 1;
    o->device = GR_DEVICE_CPU;
    o->baseline = 1;
    o->pairs = 128;
    o->nslot = 12;
    o->nhid = 200;
    o->rounds = 3;
    o->python = "/usr/bin/python3";
    o->build = "?";
    o->commit = "?";
}

/* ---- batches ---- */

struct seq {
    int32_t *ids;
    int32_t n;
};

struct pool {
    struct seq *a, *b; /* premise, hypothesis */
    int32_t *label;
    int64_t n, cap;
};

static int tok_id(const char *w, size_t len)
{
    static const char *const names[11] = {"(", ")", "a", "b", "c", "d",
                                          "e", "f", "or", "and", "not"};
    for (int i = 0; i < 11; i++) {
        if (strlen(names[i]) == len && strncmp(names[i], w, len) == 0) {
            return i;
        }
    }
    return -1;
}

static int parse_seq(const char *s, const char *end, struct seq *out)
{
    int32_t buf[512];
    int32_t n = 0;
    while (s < end) {
        while (s < end && *s == ' ') {
            s++;
        }
        const char *w = s;
        while (s < end && *s != ' ') {
            s++;
        }
        if (s > w) {
            int id = tok_id(w, (size_t)(s - w));
            if (id < 0 || n == 512) {
                return -1;
            }
            buf[n++] = id;
        }
    }
    if (n == 0) {
        return -1;
    }
    out->ids = malloc((size_t)n * sizeof *out->ids);
    if (out->ids == NULL) {
        return -1;
    }
    memcpy(out->ids, buf, (size_t)n * sizeof *buf);
    out->n = n;
    return 0;
}

static int pool_push(struct pool *p)
{
    if (p->n == p->cap) {
        int64_t cap = p->cap ? 2 * p->cap : 4096;
        struct seq *a = realloc(p->a, (size_t)cap * sizeof *a);
        if (a != NULL) {
            p->a = a;
        }
        struct seq *b = realloc(p->b, (size_t)cap * sizeof *b);
        if (b != NULL) {
            p->b = b;
        }
        int32_t *l = realloc(p->label, (size_t)cap * sizeof *l);
        if (l != NULL) {
            p->label = l;
        }
        if (a == NULL || b == NULL || l == NULL) {
            return gr_error(GR_ENOMEM, "bench om: out of memory");
        }
        p->cap = cap;
    }
    return 0;
}

/* The pairs of train0..train6 ("REL\tP\tH" lines). */
static int read_logic(const char *dir, struct pool *p)
{
    static const char rels[] = "<>=^|#v";
    for (int k = 0; k <= 6; k++) {
        char path[GR_PATH_MAX + 16];
        snprintf(path, sizeof path, "%.4000s/train%d", dir, k);
        char *text = NULL;
        size_t size = 0;
        int rc = gr_read_file(path, (size_t)64 << 20, &text, &size);
        if (rc < 0) {
            return rc;
        }
        int64_t line_no = 0;
        char *line = text;
        while (line != NULL && *line) {
            char *eol = strchr(line, '\n');
            char *end = eol ? eol : line + strlen(line);
            line_no++;
            if (end > line) {
                char *t1 = memchr(line, '\t', (size_t)(end - line));
                char *t2 = t1 ? memchr(t1 + 1, '\t',
                                       (size_t)(end - t1 - 1))
                              : NULL;
                const char *r = t1 ? memchr(rels, line[0], 7) : NULL;
                if ((rc = pool_push(p)) < 0) {
                    free(text);
                    return rc;
                }
                if (t2 == NULL || r == NULL || t1 != line + 1 ||
                    parse_seq(t1 + 1, t2, &p->a[p->n]) < 0 ||
                    parse_seq(t2 + 1, end, &p->b[p->n]) < 0) {
                    free(text);
                    return gr_error(GR_EFORMAT, "%s:%lld: not a logic pair "
                                                "(REL<TAB>premise<TAB>"
                                                "hypothesis)",
                                    path, (long long)line_no);
                }
                p->label[p->n++] = (int32_t)(r - rels);
            }
            line = eol ? eol + 1 : NULL;
        }
        free(text);
    }
    return 0;
}

static int synthetic(struct pool *p, int64_t n)
{
    struct gr_philox_stream s = gr_philox_stream_init(1111, 1);
    for (int64_t i = 0; i < n; i++) {
        int rc = pool_push(p);
        if (rc < 0) {
            return rc;
        }
        struct seq *q[2] = {&p->a[p->n], &p->b[p->n]};
        for (int j = 0; j < 2; j++) {
            q[j]->n = 3 + (int32_t)(gr_philox_next_u32(&s) % 33u);
            q[j]->ids = malloc((size_t)q[j]->n * sizeof *q[j]->ids);
            if (q[j]->ids == NULL) {
                return gr_error(GR_ENOMEM, "bench om: out of memory");
            }
            for (int32_t t = 0; t < q[j]->n; t++) {
                q[j]->ids[t] = (int32_t)(gr_philox_next_u32(&s) % 11u);
            }
        }
        p->label[p->n++] = (int32_t)(gr_philox_next_u32(&s) % 7u);
    }
    return 0;
}

static void pool_free(struct pool *p)
{
    for (int64_t i = 0; i < p->n; i++) {
        free(p->a[i].ids);
        free(p->b[i].ids);
    }
    free(p->a);
    free(p->b);
    free(p->label);
}

struct batch {
    int32_t T, B, P;
    int32_t *ids; /* [T, B] */
    int32_t *labels;
    int64_t tokens;
};

static int make_batches(const struct pool *p, int n, int pairs,
                        struct batch *out)
{
    struct gr_philox_stream s = gr_philox_stream_init(1111, 2);
    for (int k = 0; k < n; k++) {
        struct batch *b = &out[k];
        b->P = pairs;
        b->B = 2 * pairs;
        int64_t *pick = malloc((size_t)pairs * sizeof *pick);
        b->labels = malloc((size_t)pairs * sizeof *b->labels);
        if (pick == NULL || b->labels == NULL) {
            free(pick);
            return gr_error(GR_ENOMEM, "bench om: out of memory");
        }
        b->T = 1;
        for (int i = 0; i < pairs; i++) {
            pick[i] = (int64_t)(gr_philox_next_u32(&s) % (uint32_t)p->n);
            b->labels[i] = p->label[pick[i]];
            b->T = p->a[pick[i]].n > b->T ? p->a[pick[i]].n : b->T;
            b->T = p->b[pick[i]].n > b->T ? p->b[pick[i]].n : b->T;
        }
        b->ids = malloc((size_t)b->T * b->B * sizeof *b->ids);
        if (b->ids == NULL) {
            free(pick);
            return gr_error(GR_ENOMEM, "bench om: out of memory");
        }
        b->tokens = 0;
        for (int i = 0; i < b->B; i++) {
            const struct seq *q = i < pairs ? &p->a[pick[i]]
                                            : &p->b[pick[i - pairs]];
            for (int32_t t = 0; t < b->T; t++) {
                b->ids[(size_t)t * b->B + i] = t < q->n ? q->ids[t] : PAD;
            }
            b->tokens += q->n;
        }
        free(pick);
    }
    return 0;
}

/* ---- grove ---- */

struct result {
    double tokens_per_s;
    double seconds;
    double cpu_tokens_per_s; /* per second of process CPU time */
    double arena_mib; /* grove: params + state + peak step */
    double rss_mib;
};

static int run_grove(const struct bench_om_options *o,
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
    struct nlp_om_config cfg;
    nlp_om_config_default(&cfg, NLP_OM_LOGIC);
    cfg.emsize = o->nhid;
    cfg.nhid = o->nhid;
    cfg.nslot = o->nslot;
    struct nlp_head_config hc = {NLP_HEAD_PAIR, o->nhid, o->nhid, 7, 0.3f};
    struct nlp_om om;
    struct nlp_head head;
    struct gr_optim *opt = NULL;
    struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
    oc.lr = 1e-3f;
    oc.beta1 = 0.0f;
    oc.beta2 = 0.999f;
    oc.eps = 1e-9f;
    oc.weight_decay = 1.2e-6f;
    rc = nlp_om_init(&om, ctx, &cfg, 1111);
    if (rc == 0) {
        rc = nlp_head_init(&head, ctx, "mlp", &hc, 1111);
    }
    if (rc == 0) {
        rc = gr_optim_new(&opt, ctx, "adam", &oc);
    }
    struct bench_clock clk = {0.0, 0.0, 0.0, 0.0};
    int64_t tokens = 0;
    /* The warm-up ends with one more step of batch 0 (the largest): the
     * warm-up leaves the step arena in several chunks, and the next reset
     * coalesces them into one fresh chunk whose first touch (page faults,
     * the kernel's zeroing) that step pays. Without it, the first timed
     * batch did. Batch k keeps its dropout seeds. */
    int extra = o->warmup > 0 ? 1 : 0;
    for (int j = 0; rc == 0 && j < n + extra; j++) {
        int k = j < o->warmup ? j : (j < o->warmup + extra ? 0 : j - extra);
        int timed = j >= o->warmup + extra;
        const struct batch *b = &bs[k];
        gr_ctx_sync(ctx);
        bench_clock_start(&clk);
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct nlp_om_run run = nlp_om_run_train(1111, k, cfg.nslot);
        struct gr_tensor *enc = NULL;
        rc = nlp_om_encode(&om, b->ids, b->T, b->B, &run, &enc);
        if (rc == 0) {
            struct gr_tensor *logits = nlp_head_forward(
                ctx, &head, enc, 1, gr_rng_make(1111, (uint64_t)k));
            struct gr_tensor *tg = gr_tensor_from_host(
                ctx, GR_I32, gr_shape1(b->P), b->labels);
            rc = gr_backward(ctx, gr_cross_entropy(ctx, logits, tg, -1));
        }
        if (rc == 0) {
            rc = gr_clip_grad_norm(ctx, NULL, 1.0f, NULL);
        }
        if (rc == 0) {
            rc = gr_optim_step(opt);
        }
        gr_ctx_sync(ctx);
        bench_clock_stop(&clk, timed);
        if (getenv("GROVE_BENCH_OM_DEBUG")) {
            struct gr_mem_stats ms;
            gr_ctx_memory(ctx, &ms);
            struct rusage ru;
            getrusage(RUSAGE_SELF, &ru);
            fprintf(stderr, "batch %d%s: step peak %zu cap %zu used %zu "
                            "minflt %ld\n",
                    k, timed ? "" : " (warm-up)", ms.step_peak_bytes,
                    ms.step_capacity, ms.step_bytes, ru.ru_minflt);
        }
        if (timed) {
            tokens += b->tokens;
        }
    }
    if (rc == 0) {
        struct gr_mem_stats ms;
        gr_ctx_memory(ctx, &ms);
        res->seconds = clk.wall;
        res->tokens_per_s =
            clk.wall > 0.0 ? (double)tokens / clk.wall : 0.0;
        res->cpu_tokens_per_s =
            clk.cpu > 0.0 ? (double)tokens / clk.cpu : 0.0;
        res->arena_mib = (double)(ms.param_bytes + ms.state_bytes +
                                  ms.step_peak_bytes) /
                         (1024.0 * 1024.0);
        res->rss_mib = bench_peak_rss_mib();
    }
    gr_optim_free(opt);
    nlp_om_free(&om);
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
        fprintf(f, "%d %d %d\n", (int)b->T, (int)b->B, (int)b->P);
        for (int32_t t = 0; t < b->T; t++) {
            for (int32_t i = 0; i < b->B; i++) {
                fprintf(f, "%d%c", (int)b->ids[(size_t)t * b->B + i],
                        i + 1 < b->B ? ' ' : '\n');
            }
        }
        for (int32_t i = 0; i < b->P; i++) {
            fprintf(f, "%d%c", (int)b->labels[i], i + 1 < b->P ? ' ' : '\n');
        }
    }
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        return gr_error(GR_EIO, "writing %s failed", path);
    }
    return 0;
}

/* The reference's result line: tokens/s by both clocks, the timed
 * seconds, peak RSS. */
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
    res->seconds = s;
    res->rss_mib = kb / 1024.0;
    return 1;
}

static int run_baseline(const struct bench_om_options *o, const char *file,
                        struct result *res, char *info, size_t icap,
                        char *why, size_t cap)
{
    char script[GR_PATH_MAX];
    snprintf(script, sizeof script, "%s",
             o->script ? o->script : GROVE_SOURCE_DIR "/bench/nlp/om_ref.py");
    if (!gr_path_exists(script)) {
        snprintf(why, cap, "%.300s not found", script);
        return -1;
    }
    char env[96];
    bench_thread_env(o->threads, env, sizeof env);
    char cmd[GR_PATH_MAX * 3 + 512];
    snprintf(cmd, sizeof cmd,
             "%s'%s' '%s' speed --batches '%s' --emsize %d --nhid %d "
             "--nslot %d --warmup %d --threads %d --device %s 2>&1",
             env, o->python, script, file, o->nhid, o->nhid, o->nslot,
             o->warmup, o->threads,
             o->device == GR_DEVICE_CUDA ? "cuda" : "cpu");
    return bench_run_baseline(cmd, o->python, "the PyTorch reference",
                              parse_result, res, info, icap, why, cap);
}

/* The two sides of a round (bench_alternate): tokens/s by the wall and
 * by process CPU time; memory kept aside. */
struct sides {
    const struct bench_om_options *o;
    const struct batch *bs;
    int n;
    const char *file;
    char *info, *why;
    size_t icap, cap;
    struct result g, b;
};

static int grove_side(void *arg, double rate[2])
{
    struct sides *s = arg;
    struct result r;
    memset(&r, 0, sizeof r);
    int rc = run_grove(s->o, s->bs, s->n, &r);
    if (rc == 0) {
        rate[0] = r.tokens_per_s;
        rate[1] = r.cpu_tokens_per_s;
        s->g.arena_mib = fmax(s->g.arena_mib, r.arena_mib);
        s->g.rss_mib = fmax(s->g.rss_mib, r.rss_mib);
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
    s->b.rss_mib = fmax(s->b.rss_mib, r.rss_mib);
    return 0;
}

int bench_om_run(const struct bench_om_options *o, FILE *out)
{
    if (o->batches < 1 || o->warmup < 0 || o->pairs < 1 || o->nslot < 2 ||
        o->nhid < 1) {
        return gr_error(GR_EINVAL, "bench om: batches >= 1, warmup >= 0, "
                                   "pairs >= 1, nslot >= 2, nhid >= 1");
    }
    struct pool pool;
    memset(&pool, 0, sizeof pool);
    int real = 0, rc = 0;
    char data_dir[GR_PATH_MAX];
    snprintf(data_dir, sizeof data_dir, "%s",
             o->data ? o->data
                     : GROVE_SOURCE_DIR "/../shared/data/logic_inference");
    char probe[GR_PATH_MAX + 16];
    snprintf(probe, sizeof probe, "%s/train6", data_dir);
    if (!o->quick && gr_path_exists(probe)) {
        rc = read_logic(data_dir, &pool);
        real = 1;
    } else if (o->data != NULL && !o->quick) {
        return gr_error(GR_EIO, "bench om: %s has no train6", o->data);
    } else {
        rc = synthetic(&pool, 4096);
    }
    int n = o->warmup + o->batches;
    struct batch *bs = calloc((size_t)n, sizeof *bs);
    if (rc == 0 && bs == NULL) {
        rc = gr_error(GR_ENOMEM, "bench om: out of memory");
    }
    if (rc == 0) {
        rc = make_batches(&pool, n, o->pairs, bs);
    }
    /* The batch needing the most memory warms up (when there is a
     * warm-up): grove's step arena then has its steady size, as in a
     * training run past its first batches, and the reference's allocator
     * has seen the largest tensors. Memory ~ the per-step slot tensors
     * (T·B·N) plus the cells of the real tokens. */
    if (rc == 0 && o->warmup > 0) {
        int big = 0;
        double best = -1.0;
        for (int k = 0; k < n; k++) {
            double need = 12.0 * o->nslot * bs[k].T * bs[k].B +
                          560.0 * (double)bs[k].tokens;
            if (need > best) {
                best = need;
                big = k;
            }
        }
        struct batch tmp = bs[0];
        bs[0] = bs[big];
        bs[big] = tmp;
    }
    int64_t timed_tokens = 0, timed_cells = 0;
    for (int k = o->warmup; rc == 0 && k < n; k++) {
        timed_tokens += bs[k].tokens;
        timed_cells += (int64_t)bs[k].T * bs[k].B;
    }
    char cpu[256];
    bench_cpu_name(cpu, sizeof cpu);
    if (rc == 0) {
        fprintf(out, "# Ordered Memory training throughput (logic "
                     "classifier: encode, pair head, backward, clip, Adam)\n");
        fprintf(out, "cpu: %s; threads: %d; device: %s; build: %s; commit: "
                     "%s\n",
                cpu, o->threads, gr_device_name(o->device), o->build,
                o->commit);
        fprintf(out, "size: D = D_in = %d, %d pairs (%d sequences), %d "
                     "slots, dropouts 0.2/0.2/0.1/0.3; data: %s; %d warm-up "
                     "(grove: and the largest again, to settle its arena) "
                     "+ %d timed batches, %lld real tokens of %lld "
                     "positions timed; %d round%s (grove, baseline, ...)\n",
                o->nhid, o->pairs, 2 * o->pairs, o->nslot,
                real ? data_dir : "synthetic (lengths 3-35)", o->warmup,
                o->batches, (long long)timed_tokens,
                (long long)timed_cells, o->rounds,
                o->rounds == 1 ? "" : "s");
        fflush(out);
    }
    char why[512] = "", info[1024] = "";
    char file[GR_PATH_MAX];
    bench_temp_file("om", file, sizeof file);
    int wrote = 0;
    if (rc == 0 && o->baseline) {
        wrote = write_batches(file, bs, n) == 0;
        if (!wrote) {
            snprintf(why, sizeof why, "%.500s", gr_last_error());
        }
    }
    /* Rounds alternate the two sides (bench/bench_util.h): medians, and
     * the range of the rounds' ratios as the spread. */
    int rounds = o->rounds > 0 ? o->rounds : 1;
    if (rounds > BENCH_MAX_ROUNDS) {
        rounds = BENCH_MAX_ROUNDS;
    }
    double gr[2][BENCH_MAX_ROUNDS], br[2][BENCH_MAX_ROUNDS];
    struct sides sd;
    memset(&sd, 0, sizeof sd);
    sd.o = o;
    sd.bs = bs;
    sd.n = n;
    sd.file = file;
    sd.info = info;
    sd.why = why;
    sd.icap = sizeof info;
    sd.cap = sizeof why;
    if (rc == 0) {
        rc = bench_alternate(rounds, grove_side,
                             wrote ? baseline_side : NULL, &sd, 0, gr, br);
    }
    const struct result g = sd.g, b = sd.b;
    struct bench_pair pw = bench_pair_summary(gr[0], br[0],
                                              rc == 0 ? rounds : 0);
    struct bench_pair pc = bench_pair_summary(gr[1], br[1],
                                              rc == 0 ? rounds : 0);
    /* a baseline in every round (bench_pair_summary: n/a otherwise) */
    int have_b = pw.baseline > 0;
    if (wrote) {
        remove(file);
    }
    if (rc == 0) {
        char gblas[1024];
        bench_process_blas(gblas, sizeof gblas);
        fprintf(out, "grove BLAS: %s\n", gblas);
        fprintf(out, "baseline: %s; %s\n\n",
                o->baseline ? "bench/nlp/om_ref.py" : "not run",
                info[0] ? info : (o->baseline ? o->python : "-"));
        fprintf(out, "| case | grove | baseline | ratio | spread | grove "
                     "peak memory | baseline peak memory |\n");
        fprintf(out, "|---|---|---|---|---|---|---|\n");
        char gm[128];
        snprintf(gm, sizeof gm, "%.1f MiB arenas, %.1f MiB RSS", g.arena_mib,
                 g.rss_mib);
        for (int c = 0; c < 2; c++) {
            const struct bench_pair *pp = c ? &pc : &pw;
            char cell[160];
            bench_spread_cell(pp, cell, sizeof cell);
            char name[64];
            snprintf(name, sizeof name, "%s, %s", o->quick ? "quick" : "logic",
                     c ? "process CPU time" : "wall");
            if (have_b) {
                fprintf(out, "| %s | %.0f tok/s | %.0f tok/s | %.2fx | %s | "
                             "%s | %.1f MiB RSS |\n",
                        name, pp->grove, pp->baseline, pp->ratio, cell, gm,
                        b.rss_mib);
            } else {
                fprintf(out, "| %s | %.0f tok/s | n/a | n/a | %s | %s | n/a "
                             "|\n",
                        name, pp->grove, cell, gm);
            }
        }
        fprintf(out, "\n(wall: timed batches' elapsed time; process CPU "
                     "time: the same batches' user + system CPU seconds, "
                     "the fairer clock on a shared machine with one thread "
                     "a side)\n");
        if (!have_b && o->baseline) {
            fprintf(out, "\nbaseline n/a: %s\n", why);
        }
    }
    for (int k = 0; bs != NULL && k < n; k++) {
        free(bs[k].ids);
        free(bs[k].labels);
    }
    free(bs);
    pool_free(&pool);
    return rc;
}
