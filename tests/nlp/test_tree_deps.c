/* SST's constituency trees as dependency trees (nlp/data/sst_deps.h) and
 * the Child-Sum Tree-LSTM on them (issue 25):
 *   - the punctuation test of the head rule, word by word;
 *   - hand-built SST sentences converted and checked arc by arc, with the
 *     labels of the maximal projections, and subtrees (the nodes unit);
 *   - every tree of SST train/dev/test (when ../shared/data is there): one
 *     root, no cycle, projective, the root's label is the sentence's, the
 *     root is never punctuation unless the whole sentence is;
 *   - Child-Sum on converted trees (every node reads its word, nodes with
 *     0-3 dependents): level batching equal to node-by-node evaluation
 *     (states and every gradient), and both equal to a float64 evaluation
 *     of hybrid_and_trees.md §3.1 written out here node by node.
 *   test_nlp_tree_deps [SST_DIR] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "kernels/tape.h"
#include "nlp/data/sst.h"
#include "nlp/data/sst_deps.h"
#include "nlp/models/treenets.h"
#include "tests/test.h"

static void check_punct(void)
{
    const char *yes[] = {".", ",", ":", ";", "!", "?", "--", "...", "`",
                         "``", "''", "'", "-LRB-", "-RRB-", "-LCB-", "\\/",
                         "$", "&", "-", "*"};
    const char *no[] = {"'s", "n't", "1\\/2", "a", "U.S.", "A.", "-lrb-",
                        "2", "", "8\xc2\xa0" "1\\/2"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        CHECK_MSG(nlp_sst_punct(yes[i]) == 1, "'%s' is punctuation", yes[i]);
    }
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        CHECK_MSG(nlp_sst_punct(no[i]) == 0, "'%s' is a word", no[i]);
    }
}

/* The sentences of the hand-built checks, one tree per line. */
static const char hand_text[] =
    /* 0: The movie is not bad . */
    "(4 (1 (3 The) (2 movie)) (3 (3 (2 is) (1 (2 not) (0 bad))) (2 .)))\n"
    /* 1: punctuation on the right, itself a punctuation phrase */
    "(2 (2 yes) (2 (2 !) (2 !)))\n"
    /* 2: a sentence of punctuation only */
    "(2 (2 .) (2 .))\n"
    /* 3: one word */
    "(3 good)\n"
    /* 4: brackets around a number */
    "(2 (2 -LRB-) (2 (2 1\\/2) (2 -RRB-)))\n"
    /* 5: right branching: the last word heads three dependents */
    "(1 (2 a) (1 (2 b) (1 (2 c) (0 d))))\n";

struct expect {
    int tree, node, n;
    int32_t head[8];
    int8_t label[8];
    const char *rule; /* what the case pins */
};

static void check_hand(const struct nlp_sst *s)
{
    static const struct expect cases[] = {
        {0, 0, 6, {1, 4, 4, 4, -1, 4}, {3, 1, 2, 2, 4, 2},
         "right child heads (The->movie, not->bad, is->bad, movie->bad); a "
         "punctuation right child does not ('.'->bad); each word labelled "
         "by its maximal projection (movie: the NP's 1, bad: the root's 4)"},
        {0, 7, 2, {1, -1}, {2, 1},
         "a subtree (not bad) alone: bad heads, labelled by (not bad)"},
        {0, 4, 4, {2, 2, -1, 2}, {2, 2, 3, 2},
         "the subtree (is not bad .): bad heads, '.' attaches to it"},
        {1, 0, 3, {-1, 2, 0}, {2, 2, 2},
         "an all-punctuation right phrase: its right '!' heads it, and it "
         "depends on 'yes'"},
        {2, 0, 2, {1, -1}, {2, 2},
         "both children punctuation: the right one heads"},
        {3, 0, 1, {-1}, {3}, "one word: the root, the sentence's label"},
        {4, 0, 3, {1, -1, 1}, {2, 2, 2},
         "-LRB- and -RRB- are punctuation, 1\\/2 is a word and heads"},
        {5, 0, 4, {3, 3, 3, -1}, {2, 2, 2, 1},
         "right branching: the last word heads every other word"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const struct expect *e = &cases[c];
        const struct nlp_sst_tree *t = &s->trees[NLP_TRAIN][e->tree];
        int32_t head[8];
        int8_t label[8];
        memset(head, 0x7f, sizeof head);
        memset(label, 0x7f, sizeof label);
        int rc = nlp_sst_dependency(t, e->node, &s->vocab, head, label);
        CHECK_MSG(rc == 0, "case %zu: %s", c, gr_last_error());
        CHECK_MSG(t->nodes[e->node].end - t->nodes[e->node].start == e->n,
                  "case %zu spans %d words", c, e->n);
        for (int j = 0; j < e->n; j++) {
            CHECK_MSG(head[j] == e->head[j],
                      "case %zu word %d ('%s'): head %d, expected %d (%s)", c,
                      j,
                      nlp_vocab_word(&s->vocab,
                                     t->words[t->nodes[e->node].start + j]),
                      (int)head[j], (int)e->head[j], e->rule);
            CHECK_MSG(label[j] == e->label[j],
                      "case %zu word %d: label %d, expected %d (%s)", c, j,
                      (int)label[j], (int)e->label[j], e->rule);
        }
    }
    /* a node index outside the tree is an error, not a read past it */
    int32_t head[8];
    int8_t label[8];
    CHECK(nlp_sst_dependency(&s->trees[NLP_TRAIN][0], 11, &s->vocab, head,
                             label) == GR_EINVAL);
    CHECK(nlp_sst_dependency(&s->trees[NLP_TRAIN][0], -1, &s->vocab, head,
                             label) == GR_EINVAL);
}

/* Every tree of the real data: a projective, single-rooted tree over the
 * words, the root's label the sentence's. */
static void check_data(const char *dir)
{
    struct nlp_sst s;
    if (nlp_sst_load(&s, dir) < 0) {
        CHECK_MSG(0, "%s", gr_last_error());
        return;
    }
    int64_t trees = 0, words = 0, punct_roots = 0, deps_max = 0;
    int32_t cap = 0;
    int32_t *head = NULL, *word = NULL, *lo = NULL, *hi = NULL, *size = NULL;
    int8_t *label = NULL;
    for (int sp = 0; sp < NLP_N_SPLITS; sp++) {
        for (int32_t i = 0; i < s.n_trees[sp]; i++) {
            const struct nlp_sst_tree *t = &s.trees[sp][i];
            int32_t n = t->n_words;
            if (n > cap) {
                cap = 2 * n;
                free(head);
                free(word);
                free(lo);
                free(hi);
                free(size);
                free(label);
                head = malloc((size_t)cap * sizeof *head);
                word = malloc((size_t)cap * sizeof *word);
                lo = malloc((size_t)cap * sizeof *lo);
                hi = malloc((size_t)cap * sizeof *hi);
                size = malloc((size_t)cap * sizeof *size);
                label = malloc((size_t)cap);
            }
            if (nlp_sst_dependency(t, 0, &s.vocab, head, label) < 0) {
                CHECK_MSG(0, "%s", gr_last_error());
                continue;
            }
            char name[64];
            snprintf(name, sizeof name, "%s line %d", nlp_split_name((enum nlp_split)sp),
                     (int)t->line);
            for (int32_t j = 0; j < n; j++) {
                word[j] = t->words[j];
            }
            struct nlp_tree tr = {n, head, word, NULL, name};
            if (nlp_tree_check(&tr, 0, s.vocab.size) < 0) {
                CHECK_MSG(0, "%s", gr_last_error());
                continue;
            }
            /* projective: every word's subtree is a contiguous span */
            int32_t root = -1, all_punct = 1, root_punct = 0;
            for (int32_t j = 0; j < n; j++) {
                lo[j] = hi[j] = j;
                size[j] = 0;
                all_punct &= nlp_sst_punct(nlp_vocab_word(&s.vocab,
                                                          word[j]));
            }
            for (int32_t j = 0; j < n; j++) {
                for (int32_t a = j; a >= 0; a = head[a]) {
                    lo[a] = j < lo[a] ? j : lo[a];
                    hi[a] = j > hi[a] ? j : hi[a];
                    size[a]++;
                }
                if (head[j] < 0) {
                    root = j;
                }
            }
            int proj = 1;
            for (int32_t j = 0; j < n; j++) {
                proj &= hi[j] - lo[j] + 1 == size[j];
                int32_t nd = 0;
                for (int32_t q = 0; q < n; q++) {
                    nd += head[q] == j;
                }
                deps_max = nd > deps_max ? nd : deps_max;
            }
            CHECK_MSG(proj, "%s: not projective", name);
            CHECK_MSG(root >= 0 && label[root] == t->nodes[0].label,
                      "%s: the root's label %d, the sentence's %d", name,
                      root >= 0 ? label[root] : -9, t->nodes[0].label);
            if (root < 0) {
                continue; /* counted above */
            }
            root_punct = nlp_sst_punct(nlp_vocab_word(&s.vocab, word[root]));
            CHECK_MSG(!root_punct || all_punct,
                      "%s: punctuation '%s' is the root", name,
                      nlp_vocab_word(&s.vocab, word[root]));
            punct_roots += root_punct;
            trees++;
            words += n;
        }
    }
    printf("sst: %lld trees, %lld words converted; at most %lld dependents "
           "of a word; %lld all-punctuation sentences\n",
           (long long)trees, (long long)words, (long long)deps_max,
           (long long)punct_roots);
    CHECK(trees == 8544 + 1101 + 2210);
    free(head);
    free(word);
    free(lo);
    free(hi);
    free(size);
    free(label);
    nlp_sst_free(&s);
}

/* ---- Child-Sum on dependency trees ---- */

static double sig(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

/* y[r] = b[r] + Σ_c W[r, c] x[c] (W row-major [R, C]) */
static void affine(const float *W, const float *b, const double *x, int R,
                   int C, double *y)
{
    for (int r = 0; r < R; r++) {
        double a = b[r];
        for (int c = 0; c < C; c++) {
            a += (double)W[(size_t)r * C + c] * x[c];
        }
        y[r] = a;
    }
}

static float *host(const struct gr_tensor *t)
{
    float *v = malloc((size_t)t->numel * sizeof *v);
    gr_tensor_to_host(t, v);
    return v;
}

/* h, c of node j of tree t (float64, §3.1), children first by recursion;
 * done[j] marks the computed ones. */
struct ref {
    int E, H;
    float *emb, *W, *Wb, *Ui, *Uib, *Uf, *Ufb;
};

static void ref_node(const struct ref *r, const struct nlp_tree *t, int32_t j,
                     double *h, double *c, uint8_t *done)
{
    int H = r->H, E = r->E;
    double x[64], ax[256], hs[64], z[192], f[64], u[64];
    for (int32_t k = 0; k < t->n_nodes; k++) {
        if (t->parent[k] == j && !done[k]) {
            ref_node(r, t, k, h, c, done);
        }
    }
    for (int e = 0; e < E; e++) {
        x[e] = r->emb[(size_t)t->word[j] * E + e];
    }
    affine(r->W, r->Wb, x, 4 * H, E, ax); /* [a_i; a_o; a_u; a_f] */
    for (int q = 0; q < H; q++) {
        hs[q] = 0.0;
    }
    for (int32_t k = 0; k < t->n_nodes; k++) {
        if (t->parent[k] == j) {
            for (int q = 0; q < H; q++) {
                hs[q] += h[(size_t)k * H + q];
            }
        }
    }
    affine(r->Ui, r->Uib, hs, 3 * H, H, z);
    double *cj = c + (size_t)j * H, *hj = h + (size_t)j * H;
    for (int q = 0; q < H; q++) {
        double i = sig(z[q] + ax[q]);
        u[q] = tanh(z[2 * H + q] + ax[2 * H + q]);
        cj[q] = i * u[q];
    }
    for (int32_t k = 0; k < t->n_nodes; k++) {
        if (t->parent[k] != j) {
            continue;
        }
        affine(r->Uf, r->Ufb, h + (size_t)k * H, H, H, f);
        for (int q = 0; q < H; q++) {
            cj[q] += sig(f[q] + ax[3 * H + q]) * c[(size_t)k * H + q];
        }
    }
    for (int q = 0; q < H; q++) {
        hj[q] = sig(z[H + q] + ax[H + q]) * tanh(cj[q]);
    }
    done[j] = 1;
}

static void check_childsum(const struct nlp_sst *s)
{
    enum { B = 4, H = 6, E = 5 };
    const int which[B] = {0, 5, 1, 3}; /* the hand-built sentences */
    int32_t parent[B][8], word[B][8];
    int8_t label[8];
    struct nlp_tree trees[B];
    int32_t total = 0, V = s->vocab.size;
    for (int b = 0; b < B; b++) {
        const struct nlp_sst_tree *t = &s->trees[NLP_TRAIN][which[b]];
        CHECK(nlp_sst_dependency(t, 0, &s->vocab, parent[b], label) == 0);
        for (int32_t j = 0; j < t->n_words; j++) {
            word[b][j] = t->words[j];
        }
        trees[b] = (struct nlp_tree){t->n_words, parent[b], word[b], NULL,
                                     "hand"};
        total += t->n_words;
    }
    float *out[2] = {NULL, NULL}, *grads[2] = {NULL, NULL};
    int64_t n_par = 0;
    float rn[32 * H], rr[B * H];
    for (int i = 0; i < total * H; i++) {
        rn[i] = (float)sin(0.37 * i + 0.1);
    }
    for (int i = 0; i < B * H; i++) {
        rr[i] = (float)cos(0.91 * i);
    }
    double worst_ref = 0.0;
    for (int mode = 0; mode < 2; mode++) {
        struct gr_ctx_config cfg = gr_ctx_config_default();
        cfg.device = GR_DEVICE_CPU;
        cfg.step_chunk_bytes = 1 << 20;
        struct gr_ctx *ctx = NULL;
        if (gr_ctx_new(&ctx, &cfg) < 0) {
            CHECK_MSG(0, "%s", gr_last_error());
            return;
        }
        struct gr_tensor *emb = gr_param_new(ctx, "emb", gr_shape2(V, E));
        gr_init_uniform(emb, -0.8f, 0.8f, gr_rng_make(5, 1));
        struct nlp_treenet m;
        CHECK(nlp_treenet_init(&m, ctx, "enc", NLP_TREE_CHILDSUM, emb, H,
                                gr_rng_make(5, 2)) == 0);
        struct gr_tensor *nodes = NULL, *roots = NULL;
        CHECK(nlp_treenet_forward(&m, ctx, trees, B, mode, &nodes, &roots) ==
              0);
        if (nodes == NULL || roots == NULL) {
            nlp_treenet_free(&m);
            gr_ctx_free(ctx);
            return;
        }
        struct gr_tensor *loss = gr_add(
            ctx,
            gr_sum(ctx, gr_mul(ctx, nodes,
                               gr_tensor_from_host(ctx, GR_F32,
                                                   gr_tensor_shape(nodes),
                                                   rn))),
            gr_sum(ctx, gr_mul(ctx, roots,
                               gr_tensor_from_host(ctx, GR_F32,
                                                   gr_tensor_shape(roots),
                                                   rr))));
        CHECK(loss != NULL && gr_backward(ctx, loss) == 0);
        out[mode] = host(nodes);
        n_par = gr_param_count(ctx, NULL);
        grads[mode] = malloc((size_t)n_par * sizeof(float));
        int64_t at = 0;
        for (int i = 0; i < gr_ctx_n_named(ctx); i++) {
            struct gr_tensor *p = gr_ctx_named(ctx, i);
            if (p->kind == GR_KIND_PARAM) {
                gr_tensor_to_host(p->grad, grads[mode] + at);
                at += p->numel;
            }
        }
        /* the float64 reference of §3.1, node by node */
        struct ref r = {E, H, host(emb), host(m.W_w), host(m.W_b),
                        host(m.Uiou_w), host(m.Uiou_b), host(m.Uf_w),
                        host(m.Uf_b)};
        int64_t off = 0;
        for (int b = 0; b < B; b++) {
            double h[8 * H], c[8 * H];
            uint8_t done[8] = {0};
            for (int32_t j = 0; j < trees[b].n_nodes; j++) {
                if (!done[j]) {
                    ref_node(&r, &trees[b], j, h, c, done);
                }
            }
            for (int32_t j = 0; j < trees[b].n_nodes * H; j++) {
                worst_ref = fmax(worst_ref,
                                 fabs(h[j] - (double)out[mode][off + j]));
            }
            off += (int64_t)trees[b].n_nodes * H;
        }
        float *rs[] = {r.emb, r.W, r.Wb, r.Ui, r.Uib, r.Uf, r.Ufb};
        for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++) {
            free(rs[i]);
        }
        nlp_treenet_free(&m);
        gr_ctx_free(ctx);
    }
    double worst = 0.0, gworst = 0.0, gscale = 0.0;
    for (int i = 0; out[0] && out[1] && i < total * H; i++) {
        worst = fmax(worst, fabs(out[0][i] - out[1][i]));
    }
    for (int64_t i = 0; grads[0] && grads[1] && i < n_par; i++) {
        gworst = fmax(gworst, fabs(grads[0][i] - grads[1][i]));
        gscale = fmax(gscale, fabs(grads[1][i]));
    }
    printf("childsum on dependency trees: by level vs node by node: states "
           "%.2e, gradients %.2e (of %.2e); vs float64 reference %.2e\n",
           worst, gworst, gscale, worst_ref);
    CHECK_MSG(worst <= 1e-6, "states differ by %g", worst);
    CHECK_MSG(gscale > 1e-3 && gworst <= 1e-5 * gscale,
              "gradients differ by %g (scale %g)", gworst, gscale);
    CHECK_MSG(worst_ref <= 1e-5, "states differ from the float64 reference "
              "by %g", worst_ref);
    for (int k = 0; k < 2; k++) {
        free(out[k]);
        free(grads[k]);
    }
}

int main(int argc, char **argv)
{
    check_punct();
    struct nlp_sst s;
    nlp_sst_init(&s);
    int rc = nlp_sst_read_text(&s, NLP_TRAIN, hand_text, strlen(hand_text),
                               "hand.txt");
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc == 0) {
        check_hand(&s);
        check_childsum(&s);
    }
    nlp_sst_free(&s);
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/train.txt", argc > 1 ? argv[1] : ".");
    FILE *f = argc > 1 ? fopen(probe, "r") : NULL;
    if (f != NULL) {
        fclose(f);
        check_data(argv[1]);
    } else if (test_absent(TEST_NEED_DATA, "no SST at %s: the conversion "
                           "of the real trees is not checked",
                           argc > 1 ? argv[1] : "(no path)")) {
        return test_report("nlp_tree_deps");
    }
    return test_report("nlp_tree_deps");
}
