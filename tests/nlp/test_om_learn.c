/* Ordered Memory learns (issue 27 §6: a small learning test per task).
 *
 *   test_nlp_om_learn listops|logic
 *
 * listops: ListOps expressions of depth 1 to 3 (2-5 arguments a list,
 * formal_tasks.md §2) drawn by nlp_listops_generate, restricted to those
 * whose every operator is [MIN or [MAX (about 2,500 distinct ones; most
 * are flat: the generator makes a leaf with probability 3/4); an OM
 * encoder (D 32, 6 slots, no dropout, the ListOps form: left padding,
 * y_{T-1} readout) with the linear ListOps head, Adam (lr 5e-3, betas
 * (0, 0.999)), 300 batches of 32; the accuracy on 256 held-out examples
 * (never trained on) must exceed 90 % (majority class ~16 %; measured
 * 95 %, 86 % on the 51 nested ones, which are printed, not asserted). About 4 s of CPU in Release. OM_LEARN_STEPS / OM_LEARN_DEPTH
 * override the step count and the depth bound for experiments. [MED and
 * [SM are left out: they do not reach 90 % in a test's budget.
 *
 * logic: 3,000 distinct logical-inference pairs with k <= 2 operators
 * drawn by nlp_logic_generate (seed 11; formal_tasks.md §1.7), the first
 * 256 held out; the logic form of OM (right padding, readout at the last
 * real token) at D 32, 6 slots, no dropout, with the pair head
 * [u; v; u⊙v; |u−v|], Adam as above, 300 batches of 32 pairs; the
 * held-out accuracy must exceed 80 % (majority class 57.2 %; measured
 * 90.2 %). OM_LEARN_K / OM_LEARN_PAIRS / OM_LEARN_STEPS override the
 * operator bound, the pair count and the step count.
 *
 * sst DIR: SST-2 phrases (nlp/data/sst.h: distinct non-neutral phrases of
 * the trees) of 2-10 words. Training: 9,600 of the 47,452 train phrases
 * (seeded shuffle), each seen once, over a vocabulary of the words they
 * hold (about 8,500; other words <unk>). Held out: 512 of the 6,165 dev
 * phrases of 2-10 words that are no train phrase (word for word; 427 of
 * the 6,592 are), so none was trained on. The logic form of OM (right
 * padding, readout at the last real token) at D 32, 6 slots, no dropout,
 * a linear head, Adam as above, 300 batches of 32: about 1.5 s of CPU in
 * Release. The held-out accuracy must exceed 70 %: over seeds 1-15
 * (OM_LEARN_SEED, which draws the data, the initialisation and the
 * held-out sample) it measured 75.8-82.8 % (mean 79.3 %; the binomial
 * spread of 512 examples alone is 1.8 points), the majority class
 * 52.7-59.4 %, and 35 steps (1,120 phrases) give 62.1 %: the threshold is
 * 5.8 points under the lowest seed and 10.6 over the highest majority
 * class. The default seed, 5, measured 78.9 %. Exits 77 without DIR's
 * train.txt.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/random.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "kernels/tape.h"
#include "nlp/data/listops.h"
#include "nlp/data/logic.h"
#include "nlp/data/sst.h"
#include "nlp/models/heads.h"
#include "nlp/models/om.h"
#include "tests/test.h"

#define BATCH 32
#define LOGIC_THRESHOLD 0.80
/* measured 75.8-82.8 % over seeds 1-15 (majority class 52.7-59.4 %;
 * 62.1 % after 35 steps): see the header */
#define SST_THRESHOLD 0.70

/* Left-padded [T, B] batch of examples sel[0..n) (ids as the model takes
 * them); T = the longest. */
static int32_t make_batch(const struct nlp_listops_set *s, const int32_t *sel,
                          int n, int32_t *ids, int32_t *labels)
{
    int32_t T = 0;
    for (int b = 0; b < n; b++) {
        int32_t len = s->examples[sel[b]].n_tokens;
        T = len > T ? len : T;
    }
    for (int b = 0; b < n; b++) {
        const struct nlp_listops_example *e = &s->examples[sel[b]];
        int32_t pad = T - e->n_tokens;
        for (int32_t t = 0; t < T; t++) {
            ids[t * n + b] = t < pad ? NLP_LISTOPS_PAD
                                     : (int32_t)s->tokens[e->tokens + t - pad];
        }
        labels[b] = e->answer;
    }
    return T;
}

static int learn_listops(void)
{
    const int max_depth = getenv("OM_LEARN_DEPTH")
                              ? atoi(getenv("OM_LEARN_DEPTH"))
                              : 3;
    struct nlp_listops_set all;
    CHECK_MSG(nlp_listops_generate(&all, 12000, 7, max_depth + 1, NULL) == 0,
              "%s", gr_last_error());
    /* keep lists whose every operator is [MIN or [MAX */
    int32_t *keep = malloc((size_t)all.n * sizeof *keep);
    int n = 0;
    for (int32_t i = 0; i < all.n; i++) {
        const struct nlp_listops_example *e = &all.examples[i];
        int ok = e->depth >= 1 && e->depth <= max_depth && e->n_tokens <= 16;
        for (int32_t t = 0; ok && t < e->n_tokens; t++) {
            int id = all.tokens[e->tokens + t];
            ok = id < NLP_LISTOPS_MIN || id == NLP_LISTOPS_MIN ||
                 id == NLP_LISTOPS_MAX || id == NLP_LISTOPS_CLOSE;
        }
        if (ok) {
            keep[n++] = i;
        }
    }
    const int n_test = 256, n_train = n - n_test;
    CHECK_MSG(n_train >= 1000, "only %d flat MIN/MAX lists generated", n);
    int count[10] = {0};
    for (int i = 0; i < n; i++) {
        count[all.examples[keep[i]].answer]++;
    }
    int major = 0;
    for (int k = 0; k < 10; k++) {
        major = count[k] > major ? count[k] : major;
    }

    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    struct gr_ctx *ctx = NULL;
    CHECK(gr_ctx_new(&ctx, &cc) == 0);
    struct nlp_om_config c;
    nlp_om_config_default(&c, NLP_OM_LISTOPS);
    c.emsize = 32;
    c.nhid = 32;
    c.nslot = c.nslot_eval = 6;
    c.dropout = c.dropoutm = c.dropouti = 0.0f;
    struct nlp_om om;
    struct nlp_head head;
    struct nlp_head_config hc = {NLP_HEAD_LINEAR, 32, 32, 10, 0.0f};
    CHECK(nlp_om_init(&om, ctx, &c, 3) == 0);
    CHECK(nlp_head_init(&head, ctx, "mlp", &hc, 3) == 0);
    struct gr_optim *opt = NULL;
    struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
    oc.lr = 5e-3f;
    oc.beta1 = 0.0f;
    oc.eps = 1e-9f;
    CHECK(gr_optim_new(&opt, ctx, "adam", &oc) == 0);
    const int steps = getenv("OM_LEARN_STEPS") ? atoi(getenv("OM_LEARN_STEPS"))
                                               : 300;
    int32_t ids[16 * BATCH], labels[BATCH], sel[BATCH];
    float first = 0.0f, last = 0.0f;
    for (int step = 0; step < steps; step++) {
        for (int b = 0; b < BATCH; b++) {
            sel[b] = keep[n_test + (step * BATCH + b) % n_train];
        }
        int32_t T = make_batch(&all, sel, BATCH, ids, labels);
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct nlp_om_run r = nlp_om_run_train(1, step, c.nslot);
        struct gr_tensor *enc = NULL;
        CHECK(nlp_om_encode(&om, ids, T, BATCH, &r, &enc) == 0);
        struct gr_tensor *logits = nlp_head_forward(
            ctx, &head, enc, 1, gr_rng_make(1, (uint64_t)step));
        struct gr_tensor *loss = gr_cross_entropy(
            ctx, logits,
            gr_tensor_from_host(ctx, GR_I32, gr_shape1(BATCH), labels), -1);
        if (loss == NULL || gr_backward(ctx, loss) < 0) {
            CHECK_MSG(0, "step %d: %s", step, gr_last_error());
            break;
        }
        CHECK(gr_clip_grad_norm(ctx, NULL, 1.0f, NULL) == 0);
        CHECK(gr_optim_step(opt) == 0);
        last = gr_tensor_item(loss);
        first = step == 0 ? last : first;
    }
    /* held-out accuracy */
    int right = 0, nested = 0, nested_right = 0;
    for (int k = 0; k < n_test; k += BATCH) {
        for (int b = 0; b < BATCH; b++) {
            sel[b] = keep[k + b];
        }
        int32_t T = make_batch(&all, sel, BATCH, ids, labels);
        gr_step_reset(ctx);
        struct nlp_om_run r = nlp_om_run_eval(c.nslot_eval);
        struct gr_tensor *enc = NULL;
        CHECK(nlp_om_encode(&om, ids, T, BATCH, &r, &enc) == 0);
        struct gr_tensor *logits = nlp_head_forward(ctx, &head, enc, 0,
                                                    gr_rng_make(0, 0));
        float lg[BATCH * 10];
        CHECK(logits != NULL && gr_tensor_to_host(logits, lg) == 0);
        for (int b = 0; b < BATCH; b++) {
            int best = 0;
            for (int j = 1; j < 10; j++) {
                best = lg[b * 10 + j] > lg[b * 10 + best] ? j : best;
            }
            right += best == labels[b];
            if (all.examples[sel[b]].depth >= 2) {
                nested++;
                nested_right += best == labels[b];
            }
        }
    }
    double acc = (double)right / n_test;
    printf("listops MIN/MAX depth <= %d: %d train / %d held out, majority class "
           "%.1f %%; %d steps of %d: loss %.3f -> %.3f, held-out accuracy "
           "%.1f %%\n",
           max_depth, n_train, n_test, 100.0 * major / n, steps, BATCH, (double)first,
           (double)last, 100.0 * acc);
    printf("  of which nested (depth 2-3): %d, accuracy %.1f %%\n", nested,
           nested ? 100.0 * nested_right / nested : 0.0);
    CHECK_MSG(acc > 0.90, "held-out accuracy %.3f <= 0.90", acc);
    gr_optim_free(opt);
    nlp_om_free(&om);
    gr_ctx_free(ctx);
    free(keep);
    nlp_listops_free(&all);
    return test_report("nlp_om_learn_listops");
}

/* Right-padded [T, 2B] batch of pairs sel[0..n): the n premises, then
 * the n hypotheses; T = the longest side. */
static int32_t make_pair_batch(const struct nlp_logic_set *s,
                               const int32_t *sel, int n, int32_t *ids,
                               int32_t *labels, int32_t cap_t)
{
    int32_t T = 0;
    for (int b = 0; b < n; b++) {
        const struct nlp_logic_pair *pr = &s->pairs[sel[b]];
        T = pr->n_left > T ? pr->n_left : T;
        T = pr->n_right > T ? pr->n_right : T;
    }
    if (T > cap_t) {
        return -1;
    }
    for (int b = 0; b < n; b++) {
        const struct nlp_logic_pair *pr = &s->pairs[sel[b]];
        for (int32_t t = 0; t < T; t++) {
            ids[t * 2 * n + b] = t < pr->n_left ? s->tokens[pr->left + t]
                                                : NLP_LOGIC_PAD;
            ids[t * 2 * n + n + b] = t < pr->n_right
                                         ? s->tokens[pr->right + t]
                                         : NLP_LOGIC_PAD;
        }
        labels[b] = pr->label;
    }
    return T;
}

static int learn_logic(void)
{
    const int max_k = getenv("OM_LEARN_K") ? atoi(getenv("OM_LEARN_K")) : 2;
    const int n_all = getenv("OM_LEARN_PAIRS")
                          ? atoi(getenv("OM_LEARN_PAIRS"))
                          : 3000;
    struct nlp_logic_set all;
    nlp_logic_set_init(&all);
    CHECK_MSG(nlp_logic_generate(&all, n_all, 0, max_k, 11, NULL) == 0,
              "%s", gr_last_error());
    const int n = all.n, n_test = 256, n_train = n - n_test;
    CHECK_MSG(n_train >= 1000, "only %d pairs generated", n);
    if (n_train < 1000) {
        nlp_logic_set_free(&all);
        return test_report("nlp_om_learn_logic");
    }
    int count[NLP_LOGIC_N_RELATIONS] = {0};
    for (int i = 0; i < n; i++) {
        count[all.pairs[i].label]++;
    }
    int major = 0;
    for (int k = 0; k < NLP_LOGIC_N_RELATIONS; k++) {
        major = count[k] > major ? count[k] : major;
    }

    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    struct gr_ctx *ctx = NULL;
    CHECK(gr_ctx_new(&ctx, &cc) == 0);
    struct nlp_om_config c;
    nlp_om_config_default(&c, NLP_OM_LOGIC);
    c.emsize = 32;
    c.nhid = 32;
    c.nslot = c.nslot_eval = 6;
    c.dropout = c.dropoutm = c.dropouti = 0.0f;
    struct nlp_om om;
    struct nlp_head head;
    struct nlp_head_config hc = {NLP_HEAD_PAIR, 32, 32,
                                 NLP_LOGIC_N_RELATIONS, 0.0f};
    CHECK(nlp_om_init(&om, ctx, &c, 3) == 0);
    CHECK(nlp_head_init(&head, ctx, "mlp", &hc, 3) == 0);
    struct gr_optim *opt = NULL;
    struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
    oc.lr = 5e-3f;
    oc.beta1 = 0.0f;
    oc.eps = 1e-9f;
    CHECK(gr_optim_new(&opt, ctx, "adam", &oc) == 0);
    const int steps = getenv("OM_LEARN_STEPS") ? atoi(getenv("OM_LEARN_STEPS"))
                                               : 300;
    enum { CAP_T = 64 };
    static int32_t ids[CAP_T * 2 * BATCH];
    int32_t labels[BATCH], sel[BATCH];
    float first = 0.0f, last = 0.0f;
    for (int step = 0; step < steps; step++) {
        for (int b = 0; b < BATCH; b++) {
            sel[b] = n_test + (step * BATCH + b) % n_train;
        }
        int32_t T = make_pair_batch(&all, sel, BATCH, ids, labels, CAP_T);
        CHECK(T > 0);
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct nlp_om_run r = nlp_om_run_train(1, step, c.nslot);
        struct gr_tensor *enc = NULL;
        CHECK(T > 0 && nlp_om_encode(&om, ids, T, 2 * BATCH, &r, &enc) == 0);
        struct gr_tensor *logits = nlp_head_forward(
            ctx, &head, enc, 1, gr_rng_make(1, (uint64_t)step));
        struct gr_tensor *loss = gr_cross_entropy(
            ctx, logits,
            gr_tensor_from_host(ctx, GR_I32, gr_shape1(BATCH), labels), -1);
        if (loss == NULL || gr_backward(ctx, loss) < 0) {
            CHECK_MSG(0, "step %d: %s", step, gr_last_error());
            break;
        }
        CHECK(gr_clip_grad_norm(ctx, NULL, 1.0f, NULL) == 0);
        CHECK(gr_optim_step(opt) == 0);
        last = gr_tensor_item(loss);
        first = step == 0 ? last : first;
    }
    /* held-out accuracy (pairs 0..n_test, never trained on) */
    int right = 0;
    for (int k = 0; k < n_test; k += BATCH) {
        for (int b = 0; b < BATCH; b++) {
            sel[b] = k + b;
        }
        int32_t T = make_pair_batch(&all, sel, BATCH, ids, labels, CAP_T);
        gr_step_reset(ctx);
        struct nlp_om_run r = nlp_om_run_eval(c.nslot_eval);
        struct gr_tensor *enc = NULL;
        CHECK(T > 0 && nlp_om_encode(&om, ids, T, 2 * BATCH, &r, &enc) == 0);
        struct gr_tensor *logits = nlp_head_forward(ctx, &head, enc, 0,
                                                    gr_rng_make(0, 0));
        float lg[BATCH * NLP_LOGIC_N_RELATIONS];
        CHECK(logits != NULL && gr_tensor_to_host(logits, lg) == 0);
        for (int b = 0; b < BATCH; b++) {
            int best = 0;
            for (int j = 1; j < NLP_LOGIC_N_RELATIONS; j++) {
                best = lg[b * NLP_LOGIC_N_RELATIONS + j] >
                               lg[b * NLP_LOGIC_N_RELATIONS + best]
                           ? j
                           : best;
            }
            right += best == labels[b];
        }
    }
    double acc = (double)right / n_test;
    printf("logic k <= %d (generated, seed 11): %d train / %d held out, "
           "majority class %.1f %%; %d steps of %d pairs: loss %.3f -> "
           "%.3f, held-out accuracy %.1f %%\n",
           max_k, n_train, n_test, 100.0 * major / n, steps, BATCH,
           (double)first, (double)last, 100.0 * acc);
    CHECK_MSG(acc > LOGIC_THRESHOLD, "held-out accuracy %.3f <= %.2f", acc,
              LOGIC_THRESHOLD);
    gr_optim_free(opt);
    nlp_om_free(&om);
    gr_ctx_free(ctx);
    nlp_logic_set_free(&all);
    return test_report("nlp_om_learn_logic");
}

/* ---- sst: SST-2 phrases ------------------------------------------------ */

enum { SST_MIN_LEN = 2, SST_MAX_LEN = 10, SST_TEST = 512 };

static uint64_t sst_hash(const int32_t *w, int32_t n)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)n;
    for (int32_t i = 0; i < n; i++) {
        h = (h ^ (uint32_t)w[i]) * 0x100000001b3ull;
    }
    return h;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static const int32_t *sst_words(const struct nlp_sst *s, int split,
                                const struct nlp_sst_item *it, int32_t *n)
{
    const struct nlp_sst_tree *t = &s->trees[split][it->tree];
    const struct nlp_sst_node *nd = &t->nodes[it->node];
    *n = nd->end - nd->start;
    return t->words + nd->start;
}

/* Seeded Fisher-Yates over items. */
static void sst_shuffle(struct nlp_sst_item *it, int32_t n, uint64_t seed)
{
    struct gr_philox_stream r = gr_philox_stream_init(seed, 0);
    for (int32_t i = n - 1; i > 0; i--) {
        int32_t j = (int32_t)(gr_philox_next_u32(&r) % (uint32_t)(i + 1));
        struct nlp_sst_item x = it[i];
        it[i] = it[j];
        it[j] = x;
    }
}

/* Right-padded [T, n] batch of items it[0..n) through the compact ids
 * map[] (unknown words: unk). */
static int32_t sst_batch(const struct nlp_sst *s, int split,
                         const struct nlp_sst_item *it, int n,
                         const int32_t *map, int32_t unk, int32_t pad,
                         int32_t *ids, int32_t *labels)
{
    int32_t T = 0;
    for (int b = 0; b < n; b++) {
        int32_t len;
        sst_words(s, split, &it[b], &len);
        T = len > T ? len : T;
    }
    for (int b = 0; b < n; b++) {
        int32_t len;
        const int32_t *w = sst_words(s, split, &it[b], &len);
        for (int32_t t = 0; t < T; t++) {
            ids[t * n + b] = t >= len ? pad : map[w[t]] >= 0 ? map[w[t]] : unk;
        }
        labels[b] = it[b].label;
    }
    return T;
}

static int learn_sst(const char *dir)
{
    struct nlp_sst s;
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/train.txt", dir ? dir : "");
    FILE *fp = dir ? fopen(probe, "rb") : NULL;
    if (fp == NULL) {
        return test_skip("nlp_om_learn_sst", TEST_NEED_DATA,
                         "no SST trees at %s", dir ? dir : "(no path)");
    }
    fclose(fp);
    if (nlp_sst_load(&s, dir) < 0) {
        CHECK_MSG(0, "%s", gr_last_error());
        return test_report("nlp_om_learn_sst");
    }
    const uint64_t seed = getenv("OM_LEARN_SEED")
                              ? strtoull(getenv("OM_LEARN_SEED"), NULL, 10)
                              : 5;
    const int steps = getenv("OM_LEARN_STEPS") ? atoi(getenv("OM_LEARN_STEPS"))
                                               : 300;
    /* training phrases: SST-2 train phrases of 2-10 words, shuffled */
    struct nlp_sst_item *tr_all = NULL, *dv_all = NULL;
    int32_t n_tr_all = 0, n_dv_all = 0;
    CHECK(nlp_sst_items(&s, NLP_TRAIN, NLP_SST2, NLP_SST_PHRASES, &tr_all,
                        &n_tr_all, NULL, NULL) == 0);
    CHECK(nlp_sst_items(&s, NLP_VALID, NLP_SST2, NLP_SST_PHRASES, &dv_all,
                        &n_dv_all, NULL, NULL) == 0);
    uint64_t *seen = malloc(((size_t)n_tr_all + 1) * sizeof *seen);
    struct nlp_sst_item *tr = malloc(((size_t)n_tr_all + 1) * sizeof *tr);
    struct nlp_sst_item *te = malloc(((size_t)n_dv_all + 1) * sizeof *te);
    int32_t *map = malloc((size_t)s.vocab.size * sizeof *map);
    CHECK(seen && tr && te && map);
    int32_t n_tr = 0, n_te = 0, n_seen = 0, V = 0;
    for (int32_t i = 0; i < n_tr_all; i++) {
        int32_t len;
        const int32_t *w = sst_words(&s, NLP_TRAIN, &tr_all[i], &len);
        seen[n_seen++] = sst_hash(w, len);
        if (len >= SST_MIN_LEN && len <= SST_MAX_LEN) {
            tr[n_tr++] = tr_all[i];
        }
    }
    qsort(seen, (size_t)n_seen, sizeof *seen, cmp_u64);
    /* held out: dev phrases of 2-10 words that are no train phrase */
    int32_t n_dv_len = 0;
    for (int32_t i = 0; i < n_dv_all; i++) {
        int32_t len;
        const int32_t *w = sst_words(&s, NLP_VALID, &dv_all[i], &len);
        if (len < SST_MIN_LEN || len > SST_MAX_LEN) {
            continue;
        }
        n_dv_len++;
        uint64_t h = sst_hash(w, len);
        if (bsearch(&h, seen, (size_t)n_seen, sizeof h, cmp_u64) == NULL) {
            te[n_te++] = dv_all[i];
        }
    }
    sst_shuffle(tr, n_tr, seed);
    sst_shuffle(te, n_te, 1000 + seed);
    const int32_t n_train = steps * BATCH < n_tr ? steps * BATCH : n_tr;
    CHECK_MSG(n_te >= SST_TEST && n_train >= 1000, "%d train, %d held-out "
              "phrases", n_train, n_te);
    /* the compact vocabulary of the phrases trained on; the others <unk> */
    for (int32_t i = 0; i < s.vocab.size; i++) {
        map[i] = -1;
    }
    for (int32_t i = 0; i < n_train; i++) {
        int32_t len;
        const int32_t *w = sst_words(&s, NLP_TRAIN, &tr[i], &len);
        for (int32_t t = 0; t < len; t++) {
            if (map[w[t]] < 0) {
                map[w[t]] = V++;
            }
        }
    }
    const int32_t unk = V, pad = V + 1;
    int pos_test = 0;
    for (int i = 0; i < SST_TEST && i < n_te; i++) {
        pos_test += te[i].label;
    }

    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    struct gr_ctx *ctx = NULL;
    CHECK(gr_ctx_new(&ctx, &cc) == 0);
    struct nlp_om_config c;
    nlp_om_config_default(&c, NLP_OM_LOGIC);
    c.vocab = V + 2;
    c.pad_id = pad;
    c.emsize = 32;
    c.nhid = 32;
    c.nslot = c.nslot_eval = 6;
    c.dropout = c.dropoutm = c.dropouti = 0.0f;
    struct nlp_om om;
    struct nlp_head head;
    struct nlp_head_config hc = {NLP_HEAD_LINEAR, 32, 32, 2, 0.0f};
    CHECK(nlp_om_init(&om, ctx, &c, seed) == 0);
    CHECK(nlp_head_init(&head, ctx, "mlp", &hc, seed) == 0);
    struct gr_optim *opt = NULL;
    struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
    oc.lr = 5e-3f;
    oc.beta1 = 0.0f;
    oc.eps = 1e-9f;
    CHECK(gr_optim_new(&opt, ctx, "adam", &oc) == 0);
    int32_t ids[SST_MAX_LEN * BATCH], labels[BATCH];
    float first = 0.0f, last = 0.0f;
    for (int step = 0; step < steps && n_train >= BATCH; step++) {
        struct nlp_sst_item bi[BATCH];
        for (int b = 0; b < BATCH; b++) {
            bi[b] = tr[(step * BATCH + b) % n_train];
        }
        int32_t T = sst_batch(&s, NLP_TRAIN, bi, BATCH, map, unk, pad, ids,
                              labels);
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct nlp_om_run r = nlp_om_run_train(seed, step, c.nslot);
        struct gr_tensor *enc = NULL;
        CHECK(nlp_om_encode(&om, ids, T, BATCH, &r, &enc) == 0);
        struct gr_tensor *logits = nlp_head_forward(
            ctx, &head, enc, 1, gr_rng_make(seed, (uint64_t)step));
        struct gr_tensor *loss = gr_cross_entropy(
            ctx, logits,
            gr_tensor_from_host(ctx, GR_I32, gr_shape1(BATCH), labels), -1);
        if (loss == NULL || gr_backward(ctx, loss) < 0) {
            CHECK_MSG(0, "step %d: %s", step, gr_last_error());
            break;
        }
        CHECK(gr_clip_grad_norm(ctx, NULL, 1.0f, NULL) == 0);
        CHECK(gr_optim_step(opt) == 0);
        last = gr_tensor_item(loss);
        first = step == 0 ? last : first;
    }
    /* held-out accuracy */
    int right = 0, tested = 0, unknown = 0;
    for (int k = 0; k + BATCH <= SST_TEST && k + BATCH <= n_te; k += BATCH) {
        int32_t T = sst_batch(&s, NLP_VALID, te + k, BATCH, map, unk, pad,
                              ids, labels);
        for (int32_t i = 0; i < T * BATCH; i++) {
            unknown += ids[i] == unk;
        }
        gr_step_reset(ctx);
        struct nlp_om_run r = nlp_om_run_eval(c.nslot_eval);
        struct gr_tensor *enc = NULL;
        CHECK(nlp_om_encode(&om, ids, T, BATCH, &r, &enc) == 0);
        struct gr_tensor *logits = nlp_head_forward(ctx, &head, enc, 0,
                                                    gr_rng_make(0, 0));
        float lg[BATCH * 2];
        CHECK(logits != NULL && gr_tensor_to_host(logits, lg) == 0);
        for (int b = 0; b < BATCH; b++) {
            right += (lg[b * 2 + 1] > lg[b * 2]) == labels[b];
        }
        tested += BATCH;
    }
    double acc = tested ? (double)right / tested : 0.0;
    double major = tested ? (double)(pos_test > tested - pos_test
                                         ? pos_test
                                         : tested - pos_test) /
                                tested
                          : 1.0;
    printf("sst2 phrases of %d-%d words (seed %llu): %d train phrases (of "
           "%d), vocabulary %d; %d held out (of the %d of %d dev phrases "
           "that are no train phrase), majority class %.1f %%, %d unknown "
           "words; %d steps of %d: loss %.3f -> %.3f, held-out accuracy "
           "%.1f %%\n",
           SST_MIN_LEN, SST_MAX_LEN, (unsigned long long)seed, n_train, n_tr,
           V, tested, n_te, n_dv_len, 100.0 * major, unknown, steps, BATCH,
           (double)first, (double)last, 100.0 * acc);
    CHECK_MSG(acc > SST_THRESHOLD, "held-out accuracy %.3f <= %.2f", acc,
              SST_THRESHOLD);
    gr_optim_free(opt);
    nlp_om_free(&om);
    gr_ctx_free(ctx);
    free(seen);
    free(tr);
    free(te);
    free(map);
    free(tr_all);
    free(dv_all);
    nlp_sst_free(&s);
    return test_report("nlp_om_learn_sst");
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "sst") == 0) {
        return learn_sst(argc > 2 ? argv[2] : NULL);
    }
    if (argc > 1 && strcmp(argv[1], "listops") == 0) {
        return learn_listops();
    }
    if (argc > 1 && strcmp(argv[1], "logic") == 0) {
        return learn_logic();
    }
    fprintf(stderr, "usage: test_nlp_om_learn listops|logic|sst SST_DIR\n");
    return 2;
}
