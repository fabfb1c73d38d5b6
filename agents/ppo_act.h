/* agents/ppo_act.h — host copies of the OCN cells for acting in PPO
 * (agents/ppo.c), internal to agents/.
 *
 * Acting runs one frame of many worlds at a time on the CPU: the worlds
 * that share a cell (an option, or the controller) go through it together
 * as the rows of one small matrix product, so each weight is loaded once
 * for all of them instead of once a world. Every output element sums its
 * terms in the same order (bias, the sparse observation's entries, then
 * the state's, then the layers above), with a separate multiply and add,
 * whether a row goes alone or with others: the rows give the same bits in
 * any grouping (tests/agents/test_ppo_act.c).
 *
 * Errors: 0 or a negative GR_E* code with a message (core/error.h). */
#ifndef GROVE_AGENTS_PPO_ACT_H
#define GROVE_AGENTS_PPO_ACT_H

#include <stdint.h>

/* n stacked cells of ocn.md §3 (x, h -> tanh layer 1 -> tanh layer 2 ->
 * heads), every matrix transposed so the inner loops run over contiguous
 * output columns. */
struct hcell {
    int n, O, w, d, nh, stride;
    int ldo;            /* nh rounded up to 8: the heads' row stride in woT,
                           bo and hcell_rows's output (the columns past nh
                           are zero weights, so whole vectors cover them) */
    int ign_lo, ign_hi; /* observation features layer 1 skips */
    float *wx;          /* [O, stride]: row o, columns k·w.. for cell k */
    float *whT;         /* [n, d, w] */
    float *b1;          /* [n, w] */
    float *w2T;         /* [n, w, w] (in, out) */
    float *b2;          /* [n, w] */
    float *woT;         /* [n, w, ldo] */
    float *bo;          /* [n, ldo] */
    float *h_init;      /* controller: [d] */
};

int hcell_alloc(struct hcell *c, int n, int O, int w, int d, int nh,
                int stride);
void hcell_free(struct hcell *c);

/* woT and bo written with row stride nh (the model's layout, transposed)
 * are moved to row stride ldo, zero-padded. */
void hcell_pad_heads(struct hcell *c);

/* out[k][j][i] = in[k][i][j] for n matrices in [rows, cols]. */
void hcell_transpose(float *out, const float *in, int n, int rows, int cols);

/* x[i] = tanh(x[i]) for i < n, vectorised, within a few ulp of tanhf. */
void hcell_tanh(float *x, int n);

/* Scratch of hcell_rows for up to `cap` rows. */
struct hcell_scratch {
    int cap, w, d, nh;
    float *h, *z, *u, *y; /* [cap4, d], [cap4, w], [cap4, w], [cap4, nh]
                             (nh: the largest ldo of the cells) */
};

int hcell_scratch_init(struct hcell_scratch *s, int cap, int w, int d,
                       int nh);
void hcell_scratch_free(struct hcell_scratch *s);

/* Cell k on R rows: row r's sparse observation (idx[r], val[r], nz[r]
 * entries) and state h[r] (h NULL: zeros for every row). The heads
 * (pre-activation, nh a row) land in s->y, row r at s->y + r·c->ldo.
 * R <= s->cap. */
void hcell_rows(const struct hcell *c, int k, int R,
                const int32_t *const *idx, const float *const *val,
                const int *nz, const float *const *h,
                struct hcell_scratch *s);

/* y[r][o] += Σ_j x[r][j]·wT[j][o] (r < R, o < n_out), the terms added in
 * ascending j: the product hcell_rows uses, exposed for its test. */
void hcell_matmul(int R, int n_in, int n_out, const float *x, int ldx,
                  const float *wT, float *y, int ldy);

#endif
