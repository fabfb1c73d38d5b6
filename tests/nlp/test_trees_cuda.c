/* The given-tree models (nlp/models/treenets.h) on CUDA against the CPU:
 * every cell, the same parameters and a batch of random trees (binary, or
 * with 1-4 children for Child-Sum), node states, root states and every
 * parameter's gradient to 1e-4 of each tensor's scale. Skipped (exit 77,
 * with the reason) without CUDA in the build or without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/device.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "kernels/tape.h"
#include "nlp/models/treenets.h"
#include "tests/test.h"

static struct gr_ctx *new_ctx(enum gr_device dev)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = dev;
    struct gr_ctx *ctx = NULL;
    if (gr_ctx_new(&ctx, &cc) < 0) {
        fprintf(stderr, "context: %s\n", gr_last_error());
        return NULL;
    }
    return ctx;
}

static double rel_diff(const struct gr_tensor *a, const struct gr_tensor *b)
{
    if (a == NULL || b == NULL || a->numel != b->numel) {
        return INFINITY;
    }
    float *x = malloc((size_t)a->numel * sizeof *x);
    float *y = malloc((size_t)b->numel * sizeof *y);
    gr_tensor_to_host(a, x);
    gr_tensor_to_host(b, y);
    double scale = 1e-12, worst = 0.0;
    for (int64_t i = 0; i < a->numel; i++) {
        scale = fmax(scale, fabs(x[i]));
    }
    for (int64_t i = 0; i < a->numel; i++) {
        worst = fmax(worst, fabs((double)x[i] - y[i]) / scale);
    }
    free(x);
    free(y);
    return worst;
}

/* a random tree of n leaves built bottom-up (binary, or 1-4 children) */
static int32_t random_tree(uint32_t *s, int32_t n_leaves, int binary,
                           int32_t *parent, int32_t *word)
{
    int32_t live[64], n_live = 0, n = 0;
    for (int32_t i = 0; i < n_leaves; i++) {
        *s = *s * 1664525u + 1013904223u;
        parent[n] = -1;
        word[n] = (int32_t)((*s >> 8) % 10);
        live[n_live++] = n++;
    }
    while (n_live > 1) {
        *s = *s * 1664525u + 1013904223u;
        int32_t k = binary ? 2 : 1 + (int32_t)((*s >> 8) % 4);
        k = k > n_live ? n_live : k;
        *s = *s * 1664525u + 1013904223u;
        int32_t at = (int32_t)((*s >> 8) % (uint32_t)(n_live - k + 1));
        int32_t node = n++;
        parent[node] = -1;
        word[node] = binary ? -1 : (int32_t)((*s >> 9) % 11) - 1;
        for (int32_t q = 0; q < k; q++) {
            parent[live[at + q]] = node;
        }
        live[at] = node;
        memmove(live + at + 1, live + at + k,
                (size_t)(n_live - at - k) * sizeof *live);
        n_live -= k - 1;
    }
    return n;
}

static void check_cell(enum nlp_tree_cell cell)
{
    enum { B = 5, H = 6, V = 10 };
    int E = cell == NLP_TREE_RNN || cell == NLP_TREE_RNTN ||
                    cell == NLP_TREE_MVRNN
                ? H
                : 4;
    int32_t parent[B][128], word[B][128];
    struct nlp_tree trees[B];
    uint32_t s = 99u + (uint32_t)cell;
    int32_t total = 0;
    for (int b = 0; b < B; b++) {
        trees[b] = (struct nlp_tree){
            random_tree(&s, 1 + (b * 5) % 11, nlp_tree_cell_binary(cell),
                        parent[b], word[b]),
            parent[b], word[b], NULL, "random"};
        total += trees[b].n_nodes;
    }
    struct gr_ctx *ctx[2] = {new_ctx(GR_DEVICE_CPU), new_ctx(GR_DEVICE_CUDA)};
    struct nlp_treenet m[2];
    struct gr_tensor *nodes[2] = {NULL, NULL}, *roots[2] = {NULL, NULL};
    if (ctx[0] == NULL || ctx[1] == NULL) {
        CHECK(0);
        return;
    }
    float *rn = malloc((size_t)total * H * sizeof *rn);
    for (int64_t i = 0; i < (int64_t)total * H; i++) {
        rn[i] = (float)sin(0.3 * (double)i);
    }
    for (int d = 0; d < 2; d++) {
        struct gr_tensor *emb = gr_param_new(ctx[d], "emb", gr_shape2(V, E));
        gr_init_uniform(emb, -0.5f, 0.5f, gr_rng_make(5, 1));
        CHECK(nlp_treenet_init(&m[d], ctx[d], "enc", cell, emb, H,
                               gr_rng_make(5, 2)) == 0);
        CHECK(nlp_treenet_forward(&m[d], ctx[d], trees, B, NLP_TREE_BY_LEVEL,
                                  &nodes[d], &roots[d]) == 0);
        struct gr_tensor *r = gr_tensor_from_host(
            ctx[d], GR_F32, gr_shape2(total, H), rn);
        struct gr_tensor *loss = gr_add(
            ctx[d], gr_sum(ctx[d], gr_mul(ctx[d], nodes[d], r)),
            gr_sum(ctx[d], roots[d]));
        CHECK(loss != NULL && gr_backward(ctx[d], loss) == 0);
    }
    CHECK_MSG(rel_diff(nodes[0], nodes[1]) < 1e-4, "cell %d: node states "
              "differ by %.3g", (int)cell, rel_diff(nodes[0], nodes[1]));
    CHECK_MSG(rel_diff(roots[0], roots[1]) < 1e-4, "cell %d: roots differ",
              (int)cell);
    for (int i = 0; i < gr_ctx_n_named(ctx[0]); i++) {
        struct gr_tensor *a = gr_ctx_named(ctx[0], i);
        struct gr_tensor *b = gr_ctx_find(ctx[1], a->name);
        CHECK_MSG(b != NULL && rel_diff(a->grad, b->grad) < 1e-4,
                  "cell %d: gradient of %s differs by %.3g", (int)cell,
                  a->name, b != NULL ? rel_diff(a->grad, b->grad) : INFINITY);
    }
    for (int d = 0; d < 2; d++) {
        nlp_treenet_free(&m[d]);
        gr_ctx_free(ctx[d]);
    }
    free(rn);
}

int main(void)
{
    if (!gr_cuda_compiled()) {
        return test_skip("nlp_tree_cuda", NULL,
                         "CUDA is not compiled into this build");
    }
    if (gr_cuda_device_count() == 0) {
        char why[256];
        gr_cuda_status(why, sizeof why);
        return test_skip("nlp_tree_cuda", TEST_NEED_GPU, "no GPU visible (%s)",
                         why);
    }
    for (int c = 0; c <= NLP_TREE_TREECELL; c++) {
        check_cell((enum nlp_tree_cell)c);
    }
    return test_report("nlp_tree_cuda");
}
