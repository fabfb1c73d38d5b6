/* The given-tree models of nlp/models/treenets.h: the schedule (levels of a
 * batch of trees, bank positions, children gathered by index) and the two
 * Tree-LSTM cells on kernels/ ops. */
#include "nlp/models/treenets.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "nlp/tasks/parse.h"

static const char *tname(const struct nlp_tree *t)
{
    return t->name != NULL ? t->name : "(unnamed)";
}

int nlp_tree_check(const struct nlp_tree *t, int binary, int32_t vocab)
{
    int32_t n = t->n_nodes;
    if (n < 1 || t->parent == NULL || t->word == NULL) {
        return gr_error(GR_EINVAL, "tree %s: no nodes", tname(t));
    }
    int32_t *nch = calloc((size_t)n, sizeof *nch);
    if (nch == NULL) {
        return gr_error(GR_ENOMEM, "tree %s: out of memory", tname(t));
    }
    int rc = 0;
    int32_t roots = 0;
    for (int32_t j = 0; j < n && rc == 0; j++) {
        int32_t p = t->parent[j];
        if (p == -1) {
            roots++;
        } else if (p < 0 || p >= n || p == j) {
            rc = gr_error(GR_EINVAL, "tree %s: node %d has parent %d (of %d "
                          "nodes)", tname(t), (int)j, (int)p, (int)n);
        } else {
            nch[p]++;
        }
    }
    if (rc == 0 && roots != 1) {
        rc = gr_error(GR_EINVAL, "tree %s: %d roots (one expected)",
                      tname(t), (int)roots);
    }
    for (int32_t j = 0; j < n && rc == 0; j++) {
        /* no cycle: the root is reached within n steps */
        int32_t p = j, steps = 0;
        while (p != -1 && steps <= n) {
            p = t->parent[p];
            steps++;
        }
        if (p != -1) {
            rc = gr_error(GR_EINVAL, "tree %s: node %d is on a cycle",
                          tname(t), (int)j);
        } else if (nch[j] == 0 && t->word[j] < 0) {
            rc = gr_error(GR_EINVAL, "tree %s: leaf %d has no word",
                          tname(t), (int)j);
        } else if (vocab > 0 && t->word[j] >= vocab) {
            rc = gr_error(GR_EINVAL, "tree %s: node %d reads word %d "
                          "(vocabulary %d)", tname(t), (int)j,
                          (int)t->word[j], (int)vocab);
        } else if (binary && nch[j] != 0 && nch[j] != 2) {
            rc = gr_error(GR_EINVAL, "tree %s: node %d has %d %s; the binary "
                          "model needs 0 or 2 (use childsum, or binarise "
                          "the tree)", tname(t), (int)j, (int)nch[j],
                          nch[j] == 1 ? "child (a unary chain)" : "children");
        }
    }
    free(nch);
    return rc;
}

/* ---- brackets to parent arrays ---- */

struct item {
    int32_t start, end, node, leaf;
};

static int item_order(const void *pa, const void *pb)
{
    const struct item *a = pa, *b = pb;
    if (a->start != b->start) {
        return a->start < b->start ? -1 : 1;
    }
    if (a->end != b->end) {
        return a->end > b->end ? -1 : 1;
    }
    if (a->leaf != b->leaf) {
        return a->leaf - b->leaf; /* spans before the leaf they cover */
    }
    return a->node < b->node ? -1 : a->node > b->node;
}

int nlp_tree_from_spans(int32_t n_leaves, const struct nlp_span *spans,
                        int32_t n_spans, int32_t *parent)
{
    int32_t n = n_leaves + n_spans;
    struct item *it = malloc((size_t)(n > 0 ? n : 1) * sizeof *it);
    int32_t *stack = malloc((size_t)(n > 0 ? n : 1) * sizeof *stack);
    if (it == NULL || stack == NULL) {
        free(it);
        free(stack);
        return gr_error(GR_ENOMEM, "tree from brackets: out of memory");
    }
    for (int32_t i = 0; i < n_leaves; i++) {
        it[i] = (struct item){i, i + 1, i, 1};
    }
    for (int32_t i = 0; i < n_spans; i++) {
        it[n_leaves + i] = (struct item){spans[i].start, spans[i].end,
                                         n_leaves + i, 0};
    }
    qsort(it, (size_t)n, sizeof *it, item_order);
    int32_t top = 0; /* stack of open spans (indices into it[]) */
    for (int32_t k = 0; k < n; k++) {
        while (top > 0 && !(it[stack[top - 1]].start <= it[k].start &&
                            it[k].end <= it[stack[top - 1]].end)) {
            top--;
        }
        parent[it[k].node] = top > 0 ? it[stack[top - 1]].node : -1;
        if (!it[k].leaf) {
            stack[top++] = k;
        }
    }
    free(it);
    free(stack);
    return 0;
}

/* ---- parameters ---- */

static struct gr_tensor *param(struct gr_ctx *ctx, const char *prefix,
                               const char *name, struct gr_shape s,
                               float bound, struct gr_rng rng, int *rc)
{
    char full[128];
    snprintf(full, sizeof full, "%s.%s", prefix, name);
    struct gr_tensor *t = gr_param_new(ctx, full, s);
    if (t == NULL) {
        *rc = gr_error(GR_EINVAL, "tree model: parameter %s: %s", full,
                       gr_ctx_error(ctx));
        return NULL;
    }
    if (*rc == 0) {
        *rc = gr_init_uniform(t, -bound, bound, rng);
    }
    return t;
}

int nlp_treenet_init(struct nlp_treenet *m, struct gr_ctx *ctx,
                      const char *prefix, enum nlp_tree_cell cell,
                      struct gr_tensor *emb, int32_t H, struct gr_rng rng)
{
    memset(m, 0, sizeof *m);
    if (emb == NULL || emb->ndim != 2 || H < 1) {
        return gr_error(GR_EINVAL, "tree model: bad embedding or size %d",
                        (int)H);
    }
    m->cell = cell;
    m->emb = emb;
    m->E = (int32_t)emb->shape[1];
    m->H = H;
    int32_t E = m->E;
    float be = 1.0f / sqrtf((float)E), bh = 1.0f / sqrtf((float)H);
    int rc = 0;
    if (cell == NLP_TREE_BINARY_LSTM) {
        m->leaf_w = param(ctx, prefix, "leaf.weight", gr_shape2(2 * H, E), be,
                          rng, &rc);
        m->leaf_b = param(ctx, prefix, "leaf.bias", gr_shape1(2 * H), be, rng,
                          &rc);
        /* each of U^(L), U^(R) is a Linear(H, 5H) in the reference */
        m->comp_w = param(ctx, prefix, "comp.weight", gr_shape2(5 * H, 2 * H),
                          bh, rng, &rc);
        m->comp_bl = param(ctx, prefix, "comp.bias_l", gr_shape1(5 * H), bh,
                           rng, &rc);
        m->comp_br = param(ctx, prefix, "comp.bias_r", gr_shape1(5 * H), bh,
                           rng, &rc);
    } else if (cell != NLP_TREE_CHILDSUM) {
        float b2 = 1.0f / sqrtf((float)(2 * H));
        int word_leaf = cell == NLP_TREE_RNN || cell == NLP_TREE_RNTN ||
                        cell == NLP_TREE_MVRNN;
        if (word_leaf && E != H) {
            return gr_error(GR_EINVAL, "tree model: the word vectors are the "
                            "leaves, so emsize %d must equal the state size "
                            "%d", (int)E, (int)H);
        }
        if (!word_leaf) {
            m->leaf_w = param(ctx, prefix, "leaf.weight", gr_shape2(H, E), be,
                              rng, &rc);
            m->leaf_b = param(ctx, prefix, "leaf.bias", gr_shape1(H), be, rng,
                              &rc);
        }
        if (cell == NLP_TREE_TREECELL) {
            float b4 = 1.0f / sqrtf((float)(4 * H));
            m->fc1_w = param(ctx, prefix, "cell.fc1.weight",
                             gr_shape2(4 * H, 2 * H), b2, rng, &rc);
            m->fc1_b = param(ctx, prefix, "cell.fc1.bias", gr_shape1(4 * H),
                             b2, rng, &rc);
            m->fc2_w = param(ctx, prefix, "cell.fc2.weight",
                             gr_shape2(4 * H, 4 * H), b4, rng, &rc);
            m->fc2_b = param(ctx, prefix, "cell.fc2.bias", gr_shape1(4 * H),
                             b4, rng, &rc);
            m->ln_g = param(ctx, prefix, "ln.weight", gr_shape1(H), 0.0f, rng,
                            &rc);
            m->ln_b = param(ctx, prefix, "ln.bias", gr_shape1(H), 0.0f, rng,
                            &rc);
            if (rc == 0) {
                rc = gr_tensor_fill(m->ln_g, 1.0f);
            }
            return rc;
        }
        m->comp_w = param(ctx, prefix, "comp.weight", gr_shape2(H, 2 * H), b2,
                          rng, &rc);
        m->comp_b = param(ctx, prefix, "comp.bias", gr_shape1(H), b2, rng,
                          &rc);
        if (cell == NLP_TREE_RNTN) {
            m->V = param(ctx, prefix, "comp.V", gr_shape3(2 * H, H, 2 * H),
                         1.0f / (float)(2 * H), rng, &rc);
        }
        if (cell == NLP_TREE_MVRNN) {
            m->WM = param(ctx, prefix, "comp.WM", gr_shape2(H, 2 * H), b2, rng,
                          &rc);
            int64_t V = emb->shape[0];
            m->wmat = param(ctx, prefix, "wmat", gr_shape2(V, (int64_t)H * H),
                            0.01f, rng, &rc);
            if (rc == 0) {
                /* identity plus the uniform noise */
                float *w = malloc((size_t)(V * H * H) * sizeof *w);
                if (w == NULL) {
                    return gr_error(GR_ENOMEM, "tree model: out of memory");
                }
                gr_tensor_to_host(m->wmat, w);
                for (int64_t v = 0; v < V; v++) {
                    for (int32_t i = 0; i < H; i++) {
                        w[(v * H + i) * H + i] += 1.0f;
                    }
                }
                rc = gr_tensor_set_host(m->wmat, w);
                free(w);
            }
        }
    } else {
        m->W_w = param(ctx, prefix, "W.weight", gr_shape2(4 * H, E), be, rng,
                       &rc);
        m->W_b = param(ctx, prefix, "W.bias", gr_shape1(4 * H), be, rng, &rc);
        m->Uiou_w = param(ctx, prefix, "U_iou.weight", gr_shape2(3 * H, H),
                          bh, rng, &rc);
        m->Uiou_b = param(ctx, prefix, "U_iou.bias", gr_shape1(3 * H), bh, rng,
                          &rc);
        m->Uf_w = param(ctx, prefix, "U_f.weight", gr_shape2(H, H), bh, rng,
                        &rc);
        m->Uf_b = param(ctx, prefix, "U_f.bias", gr_shape1(H), bh, rng, &rc);
    }
    return rc;
}

int nlp_tree_cell_binary(enum nlp_tree_cell cell)
{
    return cell != NLP_TREE_CHILDSUM;
}

void nlp_treenet_free(struct nlp_treenet *m)
{
    free(m->buf);
    m->buf = NULL;
    m->buf_cap = 0;
}

/* ---- the schedule ---- */

struct plan {
    int32_t N, B;
    int32_t *level;  /* [N] */
    int32_t *first;  /* [N+1] children CSR, global ids */
    int32_t *child;  /* [N] */
    int32_t *word;   /* [N] */
    int32_t *order;  /* [N] global ids in schedule order */
    int32_t *pos;    /* [N] rank of each node in the schedule */
    int32_t *grp;    /* [N] group of each node */
    int32_t *rowin;  /* [N] row of each node within its group */
    int32_t *gstart; /* [n_groups + 1] into order */
    int32_t n_groups;
    int32_t *root;   /* [B] global id of each root */
    int32_t *mark;   /* [n_groups] scratch: source groups seen */
    int32_t *srcs;   /* [n_groups] scratch: source groups of one group */
    int32_t *scnt;   /* [n_groups] scratch: children per source group */
    int32_t *soff;   /* [n_groups] scratch: their offset */
    int32_t *idx;    /* [N * max_children] scratch for one group */
    int32_t *idx2;   /* [N * max_children] scratch for one group */
    int32_t max_children;
};

static int plan_build(struct nlp_treenet *m, const struct nlp_tree *trees,
                      int32_t B, int mode, struct plan *p)
{
    int64_t N = 0;
    for (int32_t b = 0; b < B; b++) {
        int rc = nlp_tree_check(&trees[b], nlp_tree_cell_binary(m->cell),
                                (int32_t)m->emb->shape[0]);
        if (rc < 0) {
            return rc;
        }
        N += trees[b].n_nodes;
    }
    if (N > INT32_MAX / 16) {
        return gr_error(GR_EINVAL, "tree model: %lld nodes in one batch",
                        (long long)N);
    }
    /* the most children of a node in the batch (the group scratch) */
    int32_t maxc = 1;
    int64_t need = 18 * N + 2 * (int64_t)B + 16;
    int32_t *cnt = calloc((size_t)N + 1, sizeof *cnt);
    if (cnt == NULL) {
        return gr_error(GR_ENOMEM, "tree model: out of memory");
    }
    for (int32_t b = 0, off = 0; b < B; off += trees[b].n_nodes, b++) {
        for (int32_t j = 0; j < trees[b].n_nodes; j++) {
            if (trees[b].parent[j] >= 0) {
                cnt[off + trees[b].parent[j]]++;
            }
        }
    }
    for (int64_t g = 0; g < N; g++) {
        maxc = cnt[g] > maxc ? cnt[g] : maxc;
    }
    need += 2 * N * (int64_t)maxc;
    if (need > m->buf_cap) {
        int32_t *nb = realloc(m->buf, (size_t)need * sizeof *nb);
        if (nb == NULL) {
            free(cnt);
            return gr_error(GR_ENOMEM, "tree model: out of memory");
        }
        m->buf = nb;
        m->buf_cap = need;
    }
    int32_t *w = m->buf;
    p->N = (int32_t)N;
    p->B = B;
    p->max_children = maxc;
    p->level = w, w += N;
    p->first = w, w += N + 1;
    p->child = w, w += N;
    p->word = w, w += N;
    p->order = w, w += N;
    p->pos = w, w += N;
    p->grp = w, w += N;
    p->rowin = w, w += N;
    p->gstart = w, w += N + 1;
    p->root = w, w += B;
    p->mark = w, w += N;
    p->srcs = w, w += N;
    p->scnt = w, w += N;
    p->soff = w, w += N;
    int32_t *pending = w;
    w += N;
    int32_t *queue = w;
    w += N + 1;
    p->idx = w;
    w += N * (int64_t)maxc;
    p->idx2 = w;
    /* CSR of children in index order */
    p->first[0] = 0;
    for (int64_t g = 0; g < N; g++) {
        p->first[g + 1] = p->first[g] + cnt[g];
        pending[g] = cnt[g];
        cnt[g] = p->first[g]; /* fill cursor */
    }
    int32_t qn = 0;
    for (int32_t b = 0, off = 0; b < B; off += trees[b].n_nodes, b++) {
        for (int32_t j = 0; j < trees[b].n_nodes; j++) {
            int32_t par = trees[b].parent[j];
            p->word[off + j] = trees[b].word[j];
            p->level[off + j] = 0;
            p->pos[off + j] = par >= 0 ? off + par : -1; /* parent, for now */
            if (par >= 0) {
                p->child[cnt[off + par]++] = off + j;
            } else {
                p->root[b] = off + j;
            }
        }
    }
    free(cnt);
    for (int64_t g = 0; g < N; g++) {
        if (pending[g] == 0) {
            queue[qn++] = (int32_t)g;
        }
    }
    /* Kahn upwards: a parent's level is 1 + its highest child's */
    int32_t max_level = 0;
    for (int32_t qi = 0; qi < qn; qi++) {
        int32_t g = queue[qi];
        max_level = p->level[g] > max_level ? p->level[g] : max_level;
        int32_t par = p->pos[g];
        if (par >= 0) {
            if (p->level[g] + 1 > p->level[par]) {
                p->level[par] = p->level[g] + 1;
            }
            if (--pending[par] == 0) {
                queue[qn++] = par;
            }
        }
    }
    /* schedule order: by level, then global id (counting sort) */
    int32_t L = max_level + 1;
    int32_t *lstart = queue; /* L + 1 <= N + 1 entries */
    memset(lstart, 0, (size_t)(L + 1) * sizeof *lstart);
    for (int64_t g = 0; g < N; g++) {
        lstart[p->level[g] + 1]++;
    }
    for (int32_t l = 0; l < L; l++) {
        lstart[l + 1] += lstart[l];
    }
    for (int64_t g = 0; g < N; g++) {
        p->order[lstart[p->level[g]]++] = (int32_t)g;
    }
    for (int32_t r = 0; r < (int32_t)N; r++) {
        p->pos[p->order[r]] = r;
    }
    if (mode == NLP_TREE_NODE_BY_NODE) {
        p->n_groups = (int32_t)N;
        for (int32_t r = 0; r <= (int32_t)N; r++) {
            p->gstart[r] = r;
        }
    } else {
        p->n_groups = L;
        p->gstart[0] = 0;
        int32_t gi = 0;
        for (int32_t r = 0; r < (int32_t)N; r++) {
            if (r > 0 && p->level[p->order[r]] != p->level[p->order[r - 1]]) {
                p->gstart[++gi] = r;
            }
        }
        p->gstart[L] = (int32_t)N;
    }
    for (int32_t gi = 0; gi < p->n_groups; gi++) {
        p->mark[gi] = -1;
        for (int32_t r = p->gstart[gi]; r < p->gstart[gi + 1]; r++) {
            p->grp[p->order[r]] = gi;
            p->rowin[p->order[r]] = r - p->gstart[gi];
        }
    }
    return 0;
}

/* i32 tensor from host values */
static struct gr_tensor *ids(struct gr_ctx *ctx, const int32_t *v,
                             struct gr_shape s)
{
    return gr_tensor_from_host(ctx, GR_I32, s, v);
}

/* The children's states of group gi's n nodes (from row g0 of the
 * schedule), k slots each, [n, k, H]: from every group the children come
 * from, one gather of just those rows out of that group's states S[src];
 * the pieces are concatenated under a zero row (the absent child) and one
 * more gather puts every child in its slot. Each child's state is copied a
 * constant number of times, whatever the depth and the batch. */
static struct gr_tensor *gather_children(struct gr_ctx *ctx,
                                         struct gr_tensor *const *S,
                                         const struct plan *p, int32_t gi,
                                         int32_t k, int32_t H)
{
    int32_t g0 = p->gstart[gi], n = p->gstart[gi + 1] - g0;
    int32_t ns = 0;
    for (int32_t a = 0; a < n; a++) {
        int32_t g = p->order[g0 + a];
        for (int32_t c = p->first[g]; c < p->first[g + 1]; c++) {
            int32_t src = p->grp[p->child[c]];
            if (p->mark[src] < 0) {
                p->mark[src] = ns;
                p->srcs[ns] = src;
                p->scnt[ns++] = 0;
            }
            p->scnt[p->mark[src]]++;
        }
    }
    if (ns == 0) {
        return gr_zeros(ctx, gr_shape3(n, k, H));
    }
    int32_t total = 0;
    for (int32_t si = 0; si < ns; si++) {
        p->soff[si] = total;
        total += p->scnt[si];
        p->scnt[si] = 0; /* cursor */
    }
    /* idx2: the rows of each source's piece; idx: each slot's row in
     * [0; pieces] */
    for (int32_t a = 0; a < n; a++) {
        int32_t g = p->order[g0 + a];
        int32_t c0 = p->first[g], nc = p->first[g + 1] - c0;
        for (int32_t q = 0; q < k; q++) {
            if (q >= nc) {
                p->idx[a * k + q] = 0;
                continue;
            }
            int32_t ch = p->child[c0 + q];
            int32_t si = p->mark[p->grp[ch]];
            int32_t at = p->soff[si] + p->scnt[si]++;
            p->idx2[at] = p->rowin[ch];
            p->idx[a * k + q] = 1 + at;
        }
    }
    struct gr_tensor *pieces[65];
    struct gr_tensor *all = NULL;
    int32_t np = 0;
    pieces[np++] = gr_zeros(ctx, gr_shape2(1, H));
    for (int32_t si = 0; si < ns; si++) {
        pieces[np++] = gr_embedding(
            ctx, S[p->srcs[si]],
            ids(ctx, p->idx2 + p->soff[si], gr_shape1(p->scnt[si])));
        if (np == 65 || si == ns - 1) {
            /* at most 64 pieces per concat: fold the prefix */
            all = gr_concat(ctx, np, pieces, 0);
            pieces[0] = all;
            np = 1;
        }
    }
    for (int32_t si = 0; si < ns; si++) {
        p->mark[p->srcs[si]] = -1; /* for the next call (h, then c) */
    }
    return gr_embedding(ctx, all, ids(ctx, p->idx, gr_shape2(n, k)));
}

/* The word vectors of ids, with the word dropout of a training forward
 * (a mask per group from the caller's rng) */
static struct gr_tensor *words(struct nlp_treenet *m, struct gr_ctx *ctx,
                               struct gr_tensor *wid, int32_t gi)
{
    struct gr_tensor *x = gr_embedding(ctx, m->emb, wid);
    if (x != NULL && m->dropout_in > 0.0f) {
        x = gr_dropout(ctx, x, m->dropout_in,
                       gr_rng_make(m->rng.seed,
                                   gr_rng_stream(m->rng.stream, 31,
                                                 (uint64_t)gi, 0)));
    }
    return x;
}

static int forward_binary(struct nlp_treenet *m, struct gr_ctx *ctx,
                          const struct plan *p, struct gr_tensor **hs,
                          struct gr_tensor **hp, struct gr_tensor **cp)
{
    int32_t H = m->H;
    struct gr_tensor *bias = gr_add(ctx, m->comp_bl, m->comp_br);
    for (int32_t gi = 0; gi < p->n_groups; gi++) {
        int32_t g0 = p->gstart[gi], n = p->gstart[gi + 1] - g0;
        struct gr_tensor *h, *c;
        if (p->level[p->order[g0]] == 0) {
            for (int32_t a = 0; a < n; a++) {
                p->idx[a] = p->word[p->order[g0 + a]];
            }
            struct gr_tensor *x =
                words(m, ctx, ids(ctx, p->idx, gr_shape1(n)), gi);
            struct gr_tensor *z = gr_linear(ctx, x, m->leaf_w, m->leaf_b);
            struct gr_tensor *part[2] = {NULL, NULL};
            int64_t sizes[2] = {H, H};
            if (z == NULL || gr_split(ctx, z, 1, 2, sizes, part) < 0) {
                break;
            }
            c = part[0];
            h = gr_mul(ctx, gr_sigmoid(ctx, part[1]), gr_tanh(ctx, c));
        } else {
            struct gr_tensor *hlr = gr_reshape(
                ctx, gather_children(ctx, hp, p, gi, 2, H),
                gr_shape2(n, 2 * H));
            struct gr_tensor *clr = gather_children(ctx, cp, p, gi, 2, H);
            struct gr_tensor *z = gr_linear(ctx, hlr, m->comp_w, bias);
            struct gr_tensor *part[4] = {NULL, NULL, NULL, NULL};
            int64_t sizes[4] = {H, 2 * H, H, H}; /* i, (f_L f_R), o, u */
            if (z == NULL || clr == NULL ||
                gr_split(ctx, z, 1, 4, sizes, part) < 0) {
                break;
            }
            struct gr_tensor *f = gr_reshape(ctx, gr_sigmoid(ctx, part[1]),
                                             gr_shape3(n, 2, H));
            struct gr_tensor *fc = gr_sum_dim(ctx, gr_mul(ctx, f, clr), 1);
            c = gr_add(ctx, gr_mul(ctx, gr_sigmoid(ctx, part[0]),
                                   gr_tanh(ctx, part[3])),
                       fc);
            h = gr_mul(ctx, gr_sigmoid(ctx, part[2]), gr_tanh(ctx, c));
        }
        hs[gi] = h;
        hp[gi] = h;
        cp[gi] = c;
        if (hp[gi] == NULL || cp[gi] == NULL) {
            break;
        }
    }
    return gr_ctx_status(ctx);
}

/* The recursive nets: one state h (and MV-RNN's matrix, as P's second
 * state of width H*H). */
static int forward_recursive(struct nlp_treenet *m, struct gr_ctx *ctx,
                             const struct plan *p, struct gr_tensor **hs,
                             struct gr_tensor **hp, struct gr_tensor **cp)
{
    int32_t H = m->H;
    int mv = m->cell == NLP_TREE_MVRNN;
    struct gr_tensor *Vr = m->V != NULL
                               ? gr_reshape(ctx, m->V,
                                            gr_shape2(2 * H, H * 2 * H))
                               : NULL;
    for (int32_t gi = 0; gi < p->n_groups; gi++) {
        int32_t g0 = p->gstart[gi], n = p->gstart[gi + 1] - g0;
        struct gr_tensor *h, *mat = NULL;
        if (p->level[p->order[g0]] == 0) {
            for (int32_t a = 0; a < n; a++) {
                p->idx[a] = p->word[p->order[g0 + a]];
            }
            struct gr_tensor *wid = ids(ctx, p->idx, gr_shape1(n));
            struct gr_tensor *x = words(m, ctx, wid, gi);
            if (mv) {
                mat = gr_embedding(ctx, m->wmat, wid);
            }
            if (m->leaf_w != NULL) {
                x = gr_linear(ctx, x, m->leaf_w, m->leaf_b);
            }
            if (m->cell == NLP_TREE_TREECELL) {
                x = gr_layer_norm(ctx, x, m->ln_g, m->ln_b, 1e-5f);
            }
            h = x;
        } else {
            struct gr_tensor *kids = gather_children(ctx, hp, p, gi, 2, H);
            struct gr_tensor *x = gr_reshape(ctx, kids, gr_shape2(n, 2 * H));
            if (mv) {
                /* children (a, A), (b, B): [B a; A b] and P = W_M [A; B] */
                struct gr_tensor *mats = gather_children(ctx, cp, p, gi, 2,
                                                         H * H);
                struct gr_tensor *AB[2] = {NULL, NULL}, *ab[2] = {NULL, NULL};
                int64_t two[2] = {1, 1};
                if (gr_split(ctx, mats, 1, 2, two, AB) < 0 ||
                    gr_split(ctx, kids, 1, 2, two, ab) < 0) {
                    break;
                }
                struct gr_tensor *A = gr_reshape(ctx, AB[0],
                                                 gr_shape3(n, H, H));
                struct gr_tensor *Bm = gr_reshape(ctx, AB[1],
                                                  gr_shape3(n, H, H));
                struct gr_tensor *av = gr_reshape(ctx, ab[0],
                                                  gr_shape3(n, H, 1));
                struct gr_tensor *bv = gr_reshape(ctx, ab[1],
                                                  gr_shape3(n, H, 1));
                struct gr_tensor *Ba = gr_matmul(ctx, Bm, av, 0, 0);
                struct gr_tensor *Ab = gr_matmul(ctx, A, bv, 0, 0);
                struct gr_tensor *cat[2] = {
                    gr_reshape(ctx, Ba, gr_shape2(n, H)),
                    gr_reshape(ctx, Ab, gr_shape2(n, H))};
                x = gr_concat(ctx, 2, cat, 1);
                /* P^T = [A; B]^T W_M^T: [n, H, 2H] x [2H, H] */
                struct gr_tensor *stk[2] = {A, Bm};
                struct gr_tensor *ABt = gr_transpose(
                    ctx, gr_concat(ctx, 2, stk, 1), 1, 2); /* [n, H, 2H] */
                struct gr_tensor *Pt = gr_matmul(ctx, ABt, m->WM, 0, 1);
                mat = gr_reshape(ctx, gr_transpose(ctx, Pt, 1, 2),
                                 gr_shape2(n, H * H));
            }
            if (m->cell == NLP_TREE_TREECELL) {
                struct gr_tensor *z = gr_linear(
                    ctx,
                    gr_relu(ctx, gr_linear(ctx, x, m->fc1_w, m->fc1_b)),
                    m->fc2_w, m->fc2_b);
                struct gr_tensor *lr[2] = {NULL, NULL};
                int64_t hh[2] = {H, H};
                if (x == NULL || gr_split(ctx, x, 1, 2, hh, lr) < 0) {
                    break;
                }
                h = gr_layer_norm(ctx, gr_om_gate(ctx, z, lr[0], lr[1]),
                                  m->ln_g, m->ln_b, 1e-5f);
            } else {
                struct gr_tensor *pre = gr_linear(ctx, x, m->comp_w,
                                                  m->comp_b);
                if (Vr != NULL) {
                    /* x^T V^[k] x for every k: (x V) [n, H, 2H] times x */
                    struct gr_tensor *xv = gr_reshape(
                        ctx, gr_matmul(ctx, x, Vr, 0, 0),
                        gr_shape3(n, H, 2 * H));
                    struct gr_tensor *q = gr_sum_dim(
                        ctx,
                        gr_mul(ctx, xv,
                               gr_reshape(ctx, x, gr_shape3(n, 1, 2 * H))),
                        2);
                    pre = gr_add(ctx, pre, q);
                }
                h = gr_tanh(ctx, pre);
            }
        }
        hs[gi] = h;
        hp[gi] = h;
        if (mv) {
            cp[gi] = mat;
            if (cp[gi] == NULL) {
                break;
            }
        }
        if (hp[gi] == NULL) {
            break;
        }
    }
    return gr_ctx_status(ctx);
}

static int forward_childsum(struct nlp_treenet *m, struct gr_ctx *ctx,
                            const struct plan *p, struct gr_tensor **hs,
                            struct gr_tensor **hp, struct gr_tensor **cp)
{
    int32_t H = m->H, N = p->N;
    /* W x_j + b_W for every node at once, rows in schedule order; a node
     * without a word reads x = 0 */
    float *mask = malloc((size_t)N * sizeof *mask);
    if (mask == NULL) {
        return gr_error(GR_ENOMEM, "tree model: out of memory");
    }
    int masked = 0;
    for (int32_t r = 0; r < N; r++) {
        int32_t wd = p->word[p->order[r]];
        p->idx[r] = wd >= 0 ? wd : 0;
        mask[r] = wd >= 0 ? 1.0f : 0.0f;
        masked |= wd < 0;
    }
    struct gr_tensor *x = words(m, ctx, ids(ctx, p->idx, gr_shape1(N)), 0);
    if (masked) {
        x = gr_mul(ctx, x, gr_tensor_from_host(ctx, GR_F32,
                                               gr_shape2(N, 1), mask));
    }
    free(mask);
    struct gr_tensor *wx = gr_linear(ctx, x, m->W_w, m->W_b); /* [N, 4H] */
    for (int32_t gi = 0; gi < p->n_groups && wx != NULL; gi++) {
        int32_t g0 = p->gstart[gi], n = p->gstart[gi + 1] - g0;
        int32_t k = 1;
        for (int32_t a = 0; a < n; a++) {
            int32_t g = p->order[g0 + a];
            int32_t nc = p->first[g + 1] - p->first[g];
            k = nc > k ? nc : k;
        }
        struct gr_tensor *ax = g0 == 0 && n == N ? wx : gr_slice(ctx, wx, 0,
                                                                 g0, n);
        struct gr_tensor *hc = gather_children(ctx, hp, p, gi, k, H);
        struct gr_tensor *cc = gather_children(ctx, cp, p, gi, k, H);
        struct gr_tensor *hsum = gr_sum_dim(ctx, hc, 1);  /* [n, H] */
        struct gr_tensor *ap[2] = {NULL, NULL};
        int64_t asz[2] = {3 * H, H};
        if (ax == NULL || gr_split(ctx, ax, 1, 2, asz, ap) < 0) {
            break;
        }
        struct gr_tensor *ziou = gr_add(
            ctx, gr_linear(ctx, hsum, m->Uiou_w, m->Uiou_b), ap[0]);
        struct gr_tensor *f = gr_sigmoid(
            ctx, gr_add(ctx, gr_linear(ctx, hc, m->Uf_w, m->Uf_b),
                        gr_reshape(ctx, ap[1], gr_shape3(n, 1, H))));
        struct gr_tensor *part[3] = {NULL, NULL, NULL};
        int64_t sizes[3] = {H, H, H}; /* i, o, u */
        if (ziou == NULL || gr_split(ctx, ziou, 1, 3, sizes, part) < 0) {
            break;
        }
        struct gr_tensor *c = gr_add(
            ctx, gr_mul(ctx, gr_sigmoid(ctx, part[0]), gr_tanh(ctx, part[2])),
            gr_sum_dim(ctx, gr_mul(ctx, f, cc), 1));
        struct gr_tensor *h = gr_mul(ctx, gr_sigmoid(ctx, part[1]),
                                     gr_tanh(ctx, c));
        hs[gi] = h;
        hp[gi] = h;
        cp[gi] = c;
        if (hp[gi] == NULL || cp[gi] == NULL) {
            break;
        }
    }
    return gr_ctx_status(ctx);
}

int nlp_treenet_forward(struct nlp_treenet *m, struct gr_ctx *ctx,
                         const struct nlp_tree *trees, int32_t B, int mode,
                         struct gr_tensor **nodes, struct gr_tensor **roots)
{
    if (nodes != NULL) {
        *nodes = NULL;
    }
    if (roots != NULL) {
        *roots = NULL;
    }
    if (B < 1) {
        return gr_error(GR_EINVAL, "tree model: empty batch");
    }
    struct plan p;
    memset(&p, 0, sizeof p);
    int rc = plan_build(m, trees, B, mode, &p);
    if (rc < 0) {
        return rc;
    }
    /* per group: its h, and the states its parents gather from (h, and
     * c or MV-RNN's matrix) */
    struct gr_tensor **hs = calloc((size_t)p.n_groups * 3, sizeof *hs);
    if (hs == NULL) {
        return gr_error(GR_ENOMEM, "tree model: out of memory");
    }
    struct gr_tensor **hp = hs + p.n_groups, **cp = hs + 2 * p.n_groups;
    rc = m->cell == NLP_TREE_BINARY_LSTM
             ? forward_binary(m, ctx, &p, hs, hp, cp)
         : m->cell == NLP_TREE_CHILDSUM
             ? forward_childsum(m, ctx, &p, hs, hp, cp)
             : forward_recursive(m, ctx, &p, hs, hp, cp);
    /* every state in schedule order, once */
    struct gr_tensor *all = NULL;
    if (rc == 0) {
        all = p.n_groups == 1 ? hs[0] : gr_concat(ctx, p.n_groups, hs, 0);
    }
    free(hs);
    if (rc < 0 || all == NULL) {
        return gr_error(rc < 0 ? rc : GR_EINVAL, "tree model: %s",
                        gr_ctx_error(ctx));
    }
    if (nodes != NULL) {
        *nodes = gr_embedding(ctx, all, ids(ctx, p.pos, gr_shape1(p.N)));
    }
    if (roots != NULL) {
        for (int32_t b = 0; b < B; b++) {
            p.idx[b] = p.pos[p.root[b]];
        }
        *roots = gr_embedding(ctx, all, ids(ctx, p.idx, gr_shape1(B)));
    }
    if ((nodes != NULL && *nodes == NULL) ||
        (roots != NULL && *roots == NULL)) {
        return gr_error(GR_EINVAL, "tree model: %s", gr_ctx_error(ctx));
    }
    return 0;
}
