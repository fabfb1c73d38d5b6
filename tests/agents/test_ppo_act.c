/* PPO's host cells for acting (agents/ppo_act.h): the worlds that share
 * a cell go through it as rows of one product, in blocks of up to six rows
 * by sixteen columns.
 *   - hcell_matmul equals the one-row loop bit for bit (the same terms in
 *     the same order) for every row count 1..13 (every block size 1-6 and
 *     the splits of 7-13 rows into blocks) and column counts with and
 *     without a remainder past the last 16, and a double-precision
 *     product within 1e-5;
 *   - hcell_rows on a group of rows gives each row the bits it gets
 *     alone (so grouping worlds cannot change a rollout), with and
 *     without states, for every cell of a stack, with the skipped
 *     observation range honoured;
 *   - hcell_rows computes ocn.md §3's cell: tanh(Wx x + Wh h + b1),
 *     tanh(W2 z + b2), Wo u + bo, against that formula in double from the
 *     untransposed weights, within 1e-5;
 *   - ppo_sparse_row lists exactly the non-zeros in ascending order
 *     (-0.0 is zero; a group of eight with one non-zero among zeros), up
 *     to exactly PPO_NZ_MAX of them, and refuses one more. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/ppo.h"
#include "agents/ppo_act.h"
#include "agents/ppo_internal.h"
#include "core/error.h"
#include "tests/test.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static float uniform(float lo, float hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (float)((rng_state >> 40) * (1.0 / 16777216.0));
}

static void fill(float *x, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++) {
        x[i] = uniform(-scale, scale);
    }
}

/* The one-row loop: y[o] += x[j]·wT[j][o] in ascending j. */
static void one_row(int n_in, int n_out, const float *x, const float *wT,
                    float *y)
{
    for (int j = 0; j < n_in; j++) {
        for (int o = 0; o < n_out; o++) {
            y[o] += x[j] * wT[(size_t)j * n_out + o];
        }
    }
}

static void test_matmul(void)
{
    const int ins[] = {1, 7, 128};
    const int outs[] = {5, 16, 134};
    for (size_t a = 0; a < sizeof ins / sizeof ins[0]; a++) {
        for (size_t b = 0; b < sizeof outs / sizeof outs[0]; b++) {
            const int n_in = ins[a], n_out = outs[b];
            for (int R = 1; R <= 13; R++) {
                float *x = malloc((size_t)R * n_in * sizeof *x);
                float *wT = malloc((size_t)n_in * n_out * sizeof *wT);
                float *y = malloc((size_t)R * n_out * sizeof *y);
                float *ref = malloc((size_t)R * n_out * sizeof *ref);
                fill(x, (size_t)R * n_in, 1.0f);
                fill(wT, (size_t)n_in * n_out, 0.5f);
                fill(y, (size_t)R * n_out, 0.1f);
                memcpy(ref, y, (size_t)R * n_out * sizeof *ref);
                hcell_matmul(R, n_in, n_out, x, n_in, wT, y, n_out);
                int same = 1;
                double worst = 0.0;
                for (int r = 0; r < R; r++) {
                    float *rr = ref + (size_t)r * n_out;
                    float y0[200];
                    memcpy(y0, rr, (size_t)n_out * sizeof *y0);
                    one_row(n_in, n_out, x + (size_t)r * n_in, wT, rr);
                    for (int o = 0; o < n_out; o++) {
                        same &= memcmp(&rr[o], &y[(size_t)r * n_out + o],
                                       sizeof(float)) == 0;
                        double s = y0[o];
                        for (int j = 0; j < n_in; j++) {
                            s += (double)x[(size_t)r * n_in + j] *
                                 wT[(size_t)j * n_out + o];
                        }
                        double err = fabs(s - y[(size_t)r * n_out + o]);
                        worst = err > worst ? err : worst;
                    }
                }
                CHECK_MSG(same, "hcell_matmul R %d, %d -> %d: not the "
                                "one-row loop's bits",
                          R, n_in, n_out);
                CHECK_MSG(worst < 1e-5, "hcell_matmul R %d, %d -> %d: off "
                                        "the double product by %g",
                          R, n_in, n_out, worst);
                free(x);
                free(wT);
                free(y);
                free(ref);
            }
        }
    }
}

enum { O = 60, W = 24, D = 20, NH = 5 + D + 1, K = 3, ROWS = 7, NZ = 9 };

/* The cells in the trainer's layout and untransposed, as the model holds
 * them ([out, in]). */
struct cells {
    struct hcell c;
    float wx[K][W][O], wh[K][W][D], w2[K][W][W], wo[K][NH][W];
};

static void make_cells(struct cells *m)
{
    CHECK(hcell_alloc(&m->c, K, O, W, D, NH, K * W) == 0);
    m->c.ign_lo = 10;
    m->c.ign_hi = 14;
    fill(&m->wx[0][0][0], sizeof m->wx / sizeof(float), 0.3f);
    fill(&m->wh[0][0][0], sizeof m->wh / sizeof(float), 0.3f);
    fill(&m->w2[0][0][0], sizeof m->w2 / sizeof(float), 0.3f);
    fill(&m->wo[0][0][0], sizeof m->wo / sizeof(float), 0.3f);
    fill(m->c.b1, (size_t)K * W, 0.2f);
    fill(m->c.b2, (size_t)K * W, 0.2f);
    fill(m->c.bo, (size_t)K * NH, 0.2f); /* stride NH until padded */
    for (int k = 0; k < K; k++) {
        for (int o = 0; o < O; o++) {
            for (int i = 0; i < W; i++) {
                m->c.wx[(size_t)o * m->c.stride + (size_t)k * W + i] =
                    m->wx[k][i][o];
            }
        }
    }
    hcell_transpose(m->c.whT, &m->wh[0][0][0], K, W, D);
    hcell_transpose(m->c.w2T, &m->w2[0][0][0], K, W, W);
    hcell_transpose(m->c.woT, &m->wo[0][0][0], K, NH, W);
    hcell_pad_heads(&m->c);
}

/* ocn.md §3 in double for cell k at one row. */
static void reference(const struct cells *m, int k, const int32_t *idx,
                      const float *val, int nz, const float *h, double *head)
{
    double z[W], u[W];
    for (int i = 0; i < W; i++) {
        double s = m->c.b1[k * W + i];
        for (int j = 0; j < nz; j++) {
            if (idx[j] < m->c.ign_lo || idx[j] >= m->c.ign_hi) {
                s += (double)m->wx[k][i][idx[j]] * val[j];
            }
        }
        for (int j = 0; h != NULL && j < D; j++) {
            s += (double)m->wh[k][i][j] * h[j];
        }
        z[i] = tanh(s);
    }
    for (int i = 0; i < W; i++) {
        double s = m->c.b2[k * W + i];
        for (int j = 0; j < W; j++) {
            s += m->w2[k][i][j] * z[j];
        }
        u[i] = tanh(s);
    }
    for (int o = 0; o < NH; o++) {
        double s = m->c.bo[k * m->c.ldo + o];
        for (int j = 0; j < W; j++) {
            s += m->wo[k][o][j] * u[j];
        }
        head[o] = s;
    }
}

static void test_rows(void)
{
    static struct cells m;
    make_cells(&m);
    int32_t idx[ROWS][NZ];
    float val[ROWS][NZ], h[ROWS][D];
    int nz[ROWS];
    const int32_t *ip[ROWS];
    const float *vp[ROWS], *hp[ROWS];
    for (int r = 0; r < ROWS; r++) {
        nz[r] = 1 + r % NZ;
        for (int j = 0; j < nz[r]; j++) {
            idx[r][j] = (int32_t)(j * 6 + r) % O; /* ascending, some in
                                                    the skipped range */
            val[r][j] = j % 2 ? 1.0f : uniform(0.0f, 2.0f);
        }
        fill(h[r], D, 1.0f);
        ip[r] = idx[r];
        vp[r] = val[r];
        hp[r] = h[r];
    }
    struct hcell_scratch all, one;
    const int ldo = m.c.ldo;
    CHECK(ldo % 8 == 0 && ldo >= NH && ldo < NH + 8);
    CHECK(hcell_scratch_init(&all, ROWS, W, D, ldo) == 0);
    CHECK(hcell_scratch_init(&one, 1, W, D, ldo) == 0);
    for (int k = 0; k < K; k++) {
        for (int with_h = 0; with_h < 2; with_h++) {
            const float *const *hs = with_h ? hp : NULL;
            hcell_rows(&m.c, k, ROWS, ip, vp, nz, hs, &all);
            int same = 1;
            double worst = 0.0;
            for (int r = 0; r < ROWS; r++) {
                hcell_rows(&m.c, k, 1, &ip[r], &vp[r], &nz[r],
                           with_h ? &hp[r] : NULL, &one);
                same &= memcmp(one.y, all.y + (size_t)r * ldo,
                               NH * sizeof(float)) == 0;
                double ref[NH];
                reference(&m, k, idx[r], val[r], nz[r],
                          with_h ? h[r] : NULL, ref);
                for (int o = 0; o < NH; o++) {
                    double err = fabs(ref[o] - all.y[(size_t)r * ldo + o]);
                    worst = err > worst ? err : worst;
                }
            }
            CHECK_MSG(same, "cell %d (states %d): a row in a group of %d "
                            "differs from the row alone",
                      k, with_h, ROWS);
            CHECK_MSG(worst < 1e-5, "cell %d (states %d): off ocn.md §3 "
                                    "in double by %g",
                      k, with_h, worst);
        }
    }
    hcell_scratch_free(&all);
    hcell_scratch_free(&one);
    hcell_free(&m.c);
}

/* The naive scan ppo_sparse_row must equal. */
static int naive_sparse(const float *x, int n, int32_t *idx, float *val)
{
    int nz = 0;
    for (int i = 0; i < n; i++) {
        if (x[i] != 0.0f) {
            idx[nz] = i;
            val[nz] = x[i];
            nz++;
        }
    }
    return nz;
}

static void test_sparse_row(void)
{
    enum { OBS = 1075 }; /* the Craft observation's size */
    static float x[OBS];
    static int32_t idx[PPO_NZ_MAX], ref_idx[OBS];
    static float val[PPO_NZ_MAX], ref_val[OBS];
    /* densities from one entry to past the limit; the last counts are
     * PPO_NZ_MAX - 1, PPO_NZ_MAX and PPO_NZ_MAX + 1 */
    const int counts[] = {0, 1, 7, 70, 200, PPO_NZ_MAX - 1, PPO_NZ_MAX,
                          PPO_NZ_MAX + 1};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        for (int pad = 0; pad <= 1; pad++) {
            for (int i = 0; i < OBS; i++) {
                x[i] = (i % 3 == 0) ? -0.0f : 0.0f;
            }
            for (int placed = 0; placed < counts[c];) {
                int i = (int)uniform(0.0f, (float)OBS);
                if (i < OBS && x[i] == 0.0f) {
                    x[i] = uniform(-2.0f, 2.0f);
                    x[i] = x[i] == 0.0f ? 1.0f : x[i];
                    placed++;
                }
            }
            int want = naive_sparse(x, OBS, ref_idx, ref_val);
            int got = ppo_sparse_row(x, OBS, idx, val, pad, "test");
            if (want > PPO_NZ_MAX) {
                CHECK_MSG(got == GR_EINVAL, "%d non-zeros: %d, not the "
                                            "error past PPO_NZ_MAX",
                          want, got);
                continue;
            }
            CHECK_MSG(got == want, "%d non-zeros: counted %d", want, got);
            int same = got == want;
            for (int j = 0; same && j < got; j++) {
                same = idx[j] == ref_idx[j] &&
                       memcmp(&val[j], &ref_val[j], sizeof(float)) == 0;
            }
            for (int j = got; same && pad && j < PPO_NZ_MAX; j++) {
                same = idx[j] == -1 && val[j] == 0.0f;
            }
            CHECK_MSG(same, "%d non-zeros (pad %d): not the naive scan's "
                            "entries",
                      want, pad);
        }
    }
}

int main(void)
{
    test_matmul();
    test_rows();
    test_sparse_row();
    return test_report("agents_ppo_act");
}
