/* bench/trees/bench_trees.c — the binary Tree-LSTM's training speed,
 * grove (level-batched) against PyTorch per-node and level-batched
 * versions on the same trees (see bench_trees.h). */
#define _POSIX_C_SOURCE 200809L
#include "bench/trees/bench_trees.h"

#include "bench/bench_util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/files.h"
#include "core/progress.h"
#include "core/random.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "kernels/tape.h"
#include "nlp/data/sst.h"
#include "nlp/models/treenets.h"

#ifndef GROVE_SOURCE_DIR
#define GROVE_SOURCE_DIR "."
#endif

#define CLASSES 5

void bench_trees_options_default(struct bench_trees_options *o)
{
    memset(o, 0, sizeof *o);
    o->sentences = 100;
    o->batch = 25;
    o->emsize = 300;
    o->nhid = 150;
    o->warmup = 1;
    o->rounds = 3;
    o->threads = 1;
    o->baseline = 1;
    o->python = "/usr/bin/python3";
    o->build = "?";
    o->commit = "?";
}

/* ---- the trees ---- */

struct text {
    char *s;
    size_t len, cap;
};

static int text_add(struct text *t, const char *piece)
{
    size_t n = strlen(piece);
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 4096;
        while (cap < t->len + n + 1) {
            cap *= 2;
        }
        char *p = realloc(t->s, cap);
        if (p == NULL) {
            return gr_error(GR_ENOMEM, "bench trees: out of memory");
        }
        t->s = p;
        t->cap = cap;
    }
    memcpy(t->s + t->len, piece, n + 1);
    t->len += n;
    return 0;
}

/* A random binary tree over words [lo, hi) in SST's format. */
static int random_tree(struct text *t, struct gr_philox_stream *r, int lo,
                       int hi)
{
    char buf[32];
    snprintf(buf, sizeof buf, "(%u ", gr_philox_next_u32(r) % CLASSES);
    int rc = text_add(t, buf);
    if (rc == 0 && hi - lo == 1) {
        snprintf(buf, sizeof buf, "w%u)", gr_philox_next_u32(r) % 50u);
        return text_add(t, buf);
    }
    int mid = lo + 1 + (int)(gr_philox_next_u32(r) % (uint32_t)(hi - lo - 1));
    if (rc == 0) {
        rc = random_tree(t, r, lo, mid);
    }
    if (rc == 0) {
        rc = text_add(t, " ");
    }
    if (rc == 0) {
        rc = random_tree(t, r, mid, hi);
    }
    return rc == 0 ? text_add(t, ")") : rc;
}

/* The first n lines of DIR/train.txt, or n random trees; *real = 1 for
 * SST's. */
static int load_text(const struct bench_trees_options *o, const char *dir,
                     struct text *t, int *real)
{
    char path[GR_PATH_MAX];
    *real = 0;
    int rc = gr_path_join(path, sizeof path, dir, "train.txt");
    if (rc < 0) {
        return rc;
    }
    if (!o->quick && gr_path_exists(path)) {
        size_t size = 0;
        rc = gr_read_file(path, (size_t)64 << 20, &t->s, &size);
        if (rc < 0) {
            return rc;
        }
        size_t at = 0;
        int lines = 0;
        while (at < size && lines < o->sentences) {
            const char *nl = memchr(t->s + at, '\n', size - at);
            at = nl ? (size_t)(nl - t->s) + 1 : size;
            lines++;
        }
        if (lines < o->sentences) {
            return gr_error(GR_EINVAL, "bench trees: %s has %d trees, %d "
                            "asked for", path, lines, o->sentences);
        }
        t->s[at] = '\0';
        t->len = at;
        t->cap = size + 1;
        *real = 1;
        return 0;
    }
    if (o->data != NULL && !o->quick) {
        return gr_error(GR_EIO, "bench trees: no %s", path);
    }
    struct gr_philox_stream r = gr_philox_stream_init(1111, 25);
    for (int i = 0; i < o->sentences && rc == 0; i++) {
        int w = 3 + (int)(gr_philox_next_u32(&r) % 10u);
        rc = random_tree(t, &r, 0, w);
        if (rc == 0) {
            rc = text_add(t, "\n");
        }
    }
    return rc;
}

/* The trees of s's train split as parent arrays (pre-order nodes, as
 * nlp/tasks/classify_tasks.c gives them), labels 0-4 on every node. */
struct forest {
    struct nlp_tree *trees;
    int32_t *pool; /* parent, word, label of every node */
    int64_t nodes;
};

static int build_forest(const struct nlp_sst *s, struct forest *f)
{
    int32_t n = s->n_trees[NLP_TRAIN];
    f->nodes = 0;
    for (int32_t i = 0; i < n; i++) {
        f->nodes += s->trees[NLP_TRAIN][i].n_nodes;
    }
    f->trees = calloc((size_t)n, sizeof *f->trees);
    f->pool = malloc((size_t)f->nodes * 3 * sizeof *f->pool);
    if (f->trees == NULL || f->pool == NULL) {
        return gr_error(GR_ENOMEM, "bench trees: out of memory");
    }
    int64_t at = 0;
    for (int32_t i = 0; i < n; i++) {
        const struct nlp_sst_tree *t = &s->trees[NLP_TRAIN][i];
        int32_t m = t->n_nodes;
        int32_t *parent = f->pool + 3 * at, *word = parent + m,
                *label = word + m;
        parent[0] = -1;
        for (int32_t j = 0; j < m; j++) {
            const struct nlp_sst_node *nd = &t->nodes[j];
            word[j] = nd->left < 0 ? t->words[nd->start] : -1;
            label[j] = nd->label;
            if (nd->left >= 0) {
                parent[nd->left] = j;
                parent[nd->right] = j;
            }
        }
        f->trees[i] = (struct nlp_tree){m, parent, word, label, NULL};
        at += m;
    }
    return 0;
}

/* ---- grove ---- */

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct rate {
    double wall, cpu; /* sentences per second */
};

static int run_grove(const struct bench_trees_options *o,
                     const struct forest *f, int32_t n, int32_t vocab,
                     struct rate *res)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    cc.threads = o->threads;
    struct gr_ctx *ctx = NULL;
    int rc = gr_ctx_new(&ctx, &cc);
    if (rc < 0) {
        return rc;
    }
    struct nlp_treenet m;
    memset(&m, 0, sizeof m);
    struct gr_optim *opt = NULL;
    int32_t *labels = malloc((size_t)(f->nodes > 0 ? f->nodes : 1) *
                             sizeof *labels);
    struct gr_tensor *emb = gr_param_new(ctx, "enc.emb.weight",
                                         gr_shape2(vocab, o->emsize));
    struct gr_tensor *ow = gr_param_new(ctx, "head.weight",
                                        gr_shape2(CLASSES, o->nhid));
    struct gr_tensor *ob = gr_param_new(ctx, "head.bias",
                                        gr_shape1(CLASSES));
    if (labels == NULL || emb == NULL || ow == NULL || ob == NULL) {
        rc = gr_error(GR_ENOMEM, "bench trees: %s", gr_ctx_error(ctx));
    }
    float bh = 1.0f / sqrtf((float)o->nhid);
    if (rc == 0) {
        rc = gr_init_uniform(emb, -0.05f, 0.05f, gr_rng_make(1, 1));
    }
    if (rc == 0) {
        rc = gr_init_uniform(ow, -bh, bh, gr_rng_make(1, 2));
    }
    if (rc == 0) {
        rc = gr_init_uniform(ob, -bh, bh, gr_rng_make(1, 3));
    }
    if (rc == 0) {
        rc = nlp_treenet_init(&m, ctx, "enc", NLP_TREE_BINARY_LSTM, emb,
                              o->nhid, gr_rng_make(1, 4));
    }
    if (rc == 0) {
        struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
        oc.lr = 1e-3f;
        oc.weight_decay = 0.0f;
        rc = gr_optim_new(&opt, ctx, "adam", &oc);
    }
    double secs = 0.0, cpu = 0.0;
    int64_t done = 0;
    for (int32_t b0 = 0, k = 0; rc == 0 && b0 < n; b0 += o->batch, k++) {
        int32_t B = n - b0 < o->batch ? n - b0 : o->batch;
        double t0 = gr_now_seconds(), c0 = cpu_seconds();
        int64_t nn = 0;
        for (int32_t i = b0; i < b0 + B; i++) {
            memcpy(labels + nn, f->trees[i].label,
                   (size_t)f->trees[i].n_nodes * sizeof *labels);
            nn += f->trees[i].n_nodes;
        }
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct gr_tensor *nodes = NULL;
        rc = nlp_treenet_forward(&m, ctx, f->trees + b0, B, NLP_TREE_BY_LEVEL,
                                 &nodes, NULL);
        if (rc == 0) {
            struct gr_tensor *logits = gr_linear(ctx, nodes, ow, ob);
            struct gr_tensor *tg = gr_tensor_from_host(
                ctx, GR_I32, gr_shape1(nn), labels);
            rc = gr_backward(ctx, gr_cross_entropy(ctx, logits, tg, -1));
        }
        if (rc == 0) {
            rc = gr_optim_step(opt);
        }
        if (rc < 0 && gr_ctx_status(ctx) < 0) {
            rc = gr_error(rc, "bench trees: %s", gr_ctx_error(ctx));
        }
        if (k >= o->warmup) {
            secs += gr_now_seconds() - t0;
            cpu += cpu_seconds() - c0;
            done += B;
        }
    }
    if (rc == 0) {
        res->wall = secs > 0.0 ? (double)done / secs : 0.0;
        res->cpu = cpu > 0.0 ? (double)done / cpu : 0.0;
    }
    free(labels);
    gr_optim_free(opt);
    nlp_treenet_free(&m);
    gr_ctx_free(ctx);
    return rc;
}

/* ---- the PyTorch side ---- */

static int run_baseline(const struct bench_trees_options *o,
                        const char *file, const char *variant,
                        struct rate *res, char *info, size_t icap, char *why,
                        size_t cap)
{
    char script[GR_PATH_MAX];
    snprintf(script, sizeof script, "%s",
             o->script ? o->script
                       : GROVE_SOURCE_DIR "/bench/trees/bench_treelstm.py");
    if (!gr_path_exists(script)) {
        snprintf(why, cap, "%.300s not found", script);
        return -1;
    }
    char cmd[GR_PATH_MAX * 3 + 512];
    snprintf(cmd, sizeof cmd,
             "OMP_NUM_THREADS=%d OPENBLAS_NUM_THREADS=%d '%s' '%s' speed "
             "--trees '%s' --variant %s --emsize %d --nhid %d --batch %d "
             "--warmup %d --threads %d 2>&1",
             o->threads, o->threads, o->python, script, file, variant,
             o->emsize, o->nhid, o->batch, o->warmup, o->threads);
    FILE *p = popen(cmd, "r");
    if (p == NULL) {
        snprintf(why, cap, "cannot run %.300s", o->python);
        return -1;
    }
    char line[2048], last[1024] = "";
    int found = 0;
    while (fgets(line, sizeof line, p) != NULL) {
        double r = 0.0, s = 0.0, c = 0.0;
        if (sscanf(line, "sentences_per_s %lf seconds %lf "
                         "cpu_sentences_per_s %lf",
                   &r, &s, &c) == 3) {
            res->wall = r;
            res->cpu = c;
            found = 1;
        } else if (bench_baseline_blas_line(line)[0]) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(info, icap, "%.1000s", bench_baseline_blas_line(line));
        } else {
            line[strcspn(line, "\n")] = '\0';
            if (line[0]) {
                snprintf(last, sizeof last, "%.1000s", line);
            }
        }
    }
    int status = pclose(p);
    if (!found || status != 0) {
        snprintf(why, cap, "the PyTorch %s variant failed (%.300s)", variant,
                 last[0] ? last : "no output");
        return -1;
    }
    return 0;
}

static void cpu_name(char *out, size_t cap)
{
    snprintf(out, cap, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) {
        return;
    }
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c != NULL) {
                c += 2;
                c[strcspn(c, "\n")] = '\0';
                snprintf(out, cap, "%s", c);
            }
            break;
        }
    }
    fclose(f);
}

int bench_trees_run(const struct bench_trees_options *o, FILE *out)
{
    if (o->sentences < 1 || o->batch < 1 || o->emsize < 1 || o->nhid < 1 ||
        o->warmup < 0 || o->rounds < 1 || o->rounds > BENCH_MAX_ROUNDS) {
        return gr_error(GR_EINVAL, "bench trees: sentences, batch, emsize, "
                        "nhid >= 1, warmup >= 0, rounds in [1, %d]",
                        BENCH_MAX_ROUNDS);
    }
    if (o->warmup * o->batch >= o->sentences) {
        return gr_error(GR_EINVAL, "bench trees: %d sentences leave no "
                        "timed batch after %d warm-up batch%s of %d",
                        o->sentences, o->warmup, o->warmup == 1 ? "" : "es",
                        o->batch);
    }
    char dir[GR_PATH_MAX];
    snprintf(dir, sizeof dir, "%s",
             o->data ? o->data : GROVE_SOURCE_DIR "/../shared/data/sst2");
    struct text t;
    memset(&t, 0, sizeof t);
    int real = 0;
    int rc = load_text(o, dir, &t, &real);
    struct nlp_sst s;
    nlp_sst_init(&s);
    struct forest f;
    memset(&f, 0, sizeof f);
    if (rc == 0) {
        rc = nlp_sst_read_text(&s, NLP_TRAIN, t.s, t.len,
                               real ? "train.txt" : "random trees");
    }
    if (rc == 0) {
        rc = build_forest(&s, &f);
    }
    int32_t n = rc == 0 ? s.n_trees[NLP_TRAIN] : 0;
    /* the baseline reads the same lines */
    char file[GR_PATH_MAX];
    const char *tmp = getenv("TMPDIR");
    snprintf(file, sizeof file, "%s/grove_bench_trees_%ld.txt",
             tmp && tmp[0] ? tmp : "/tmp", (long)getpid());
    int wrote = 0;
    char why[512] = "", info[1024] = "";
    if (rc == 0 && o->baseline) {
        FILE *fp = fopen(file, "w");
        wrote = fp != NULL && fwrite(t.s, 1, t.len, fp) == t.len;
        wrote = fp != NULL && fclose(fp) == 0 && wrote;
        if (!wrote) {
            snprintf(why, sizeof why, "cannot write %.400s", file);
        }
    }
    char cpu[256];
    cpu_name(cpu, sizeof cpu);
    if (rc == 0) {
        fprintf(out, "# binary Tree-LSTM training (forward over the trees, "
                     "every node supervised, backward, Adam)\n");
        fprintf(out, "cpu: %s; threads: %d; build: %s; commit: %s\n", cpu,
                o->threads, o->build, o->commit);
        fprintf(out, "size: E %d, H %d, %d classes, batch %d; trees: %s "
                     "(%d sentences, %lld nodes, vocabulary %d); %d warm-up "
                     "batch%s per pass untimed; %d round%s (grove, per-node, "
                     "levels, ...)\n",
                o->emsize, o->nhid, CLASSES, o->batch,
                real ? "the first lines of SST train.txt"
                     : "seeded random binary trees of 3-12 words",
                (int)n, (long long)f.nodes, (int)s.vocab.size, o->warmup,
                o->warmup == 1 ? "" : "es", o->rounds,
                o->rounds == 1 ? "" : "s");
        fflush(out);
    }
    double gw[BENCH_MAX_ROUNDS] = {0}, gc[BENCH_MAX_ROUNDS] = {0};
    double bw[2][BENCH_MAX_ROUNDS] = {{0}}, bc[2][BENCH_MAX_ROUNDS] = {{0}};
    char whyv[2][512] = {"", ""};
    static const char *const variants[2] = {"pernode", "levels"};
    for (int r = 0; rc == 0 && r < o->rounds; r++) {
        struct rate g = {0, 0};
        rc = run_grove(o, &f, n, s.vocab.size, &g);
        gw[r] = g.wall;
        gc[r] = g.cpu;
        for (int v = 0; v < 2; v++) {
            struct rate b = {-1.0, -1.0};
            bw[v][r] = bc[v][r] = -1.0;
            if (rc == 0 && wrote &&
                run_baseline(o, file, variants[v], &b, info, sizeof info,
                             whyv[v], sizeof whyv[v]) == 0) {
                bw[v][r] = b.wall;
                bc[v][r] = b.cpu;
            }
        }
    }
    if (wrote) {
        remove(file);
    }
    if (rc == 0) {
        char gblas[1024];
        bench_process_blas(gblas, sizeof gblas);
        fprintf(out, "grove BLAS: %s\n", gblas);
        fprintf(out, "baseline: %s; %s\n\n",
                o->baseline ? "bench/trees/bench_treelstm.py" : "not run",
                info[0] ? info : (o->baseline ? o->python : "-"));
        fprintf(out, "| case | grove | baseline | ratio | spread |\n");
        fprintf(out, "|---|---|---|---|---|\n");
        static const char *const names[2] = {"PyTorch per-node recursion",
                                             "PyTorch level-batched"};
        for (int v = 0; v < 2; v++) {
            for (int c = 0; c < 2; c++) {
                struct bench_pair p = bench_pair_summary(
                    c ? gc : gw, c ? bc[v] : bw[v], o->rounds);
                char cell[160];
                bench_spread_cell(&p, cell, sizeof cell);
                char name[128];
                snprintf(name, sizeof name, "vs %s, %s%s", names[v],
                         c ? "process CPU time" : "wall",
                         o->quick ? " (quick)" : "");
                if (p.baseline > 0) {
                    fprintf(out, "| %s | %.1f sent/s | %.1f sent/s | %.2fx "
                                 "| %s |\n",
                            name, p.grove, p.baseline, p.ratio, cell);
                } else {
                    fprintf(out, "| %s | %.1f sent/s | n/a | n/a | %s |\n",
                            name, p.grove, cell);
                }
            }
        }
        for (int v = 0; v < 2; v++) {
            if (o->baseline && (whyv[v][0] || why[0])) {
                fprintf(out, "\nbaseline %s n/a: %s\n", variants[v],
                        why[0] ? why : whyv[v]);
            }
        }
    }
    free(f.trees);
    free(f.pool);
    nlp_sst_free(&s);
    free(t.s);
    return rc;
}
