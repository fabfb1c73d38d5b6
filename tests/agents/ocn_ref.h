/* tests/agents/ocn_ref.h — a second, independent implementation of
 * spec/ocn.md §3-6 in double precision, written from the spec's equations
 * as plainly as possible: one demonstration at a time, dense observation
 * vectors, the first layer as the full matrix U1 [w, O + d] applied to the
 * concatenation [x ; h], one cell call per component per step (the switch
 * branch's options recomputed at every step, as the equations read). It
 * shares nothing with agents/ocn.c but the parameter layout, which it reads
 * through the accessors below. Used for the reference comparison and the
 * finite-difference gradient check (test_ocn.c).
 */
#ifndef GROVE_TESTS_AGENTS_OCN_REF_H
#define GROVE_TESTS_AGENTS_OCN_REF_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define REF_MAX 64

/* The parameters as 15 double arrays in agents/ocn.c's layout (the order
 * of its names: ctrl.l1.wx, ctrl.l1.wh, ctrl.l1.bias, ctrl.l2.weight,
 * ctrl.l2.bias, ctrl.head.weight, ctrl.head.bias, ctrl.h_init, opt.l1.wx,
 * opt.l1.wh, opt.l1.bias, opt.l2.weight, opt.l2.bias, opt.head.weight,
 * opt.head.bias). */
struct ref_model {
    int K, d, w, O, A, n_tasks, moe;
    double tau;
    double balance; /* weight of the option-balance term (ocn_config) */
    double *p[15];
    long n[15];
};

/* U1 of component c (-1: controller, i: option i), row j, column col of
 * [x ; h]. */
static double ref_u1(const struct ref_model *m, int c, int j, int col)
{
    if (c < 0) {
        return col < m->O ? m->p[0][(long)col * m->w + j]
                          : m->p[1][(long)j * m->d + (col - m->O)];
    }
    return col < m->O ? m->p[8][(long)col * m->K * m->w + (long)c * m->w + j]
                      : m->p[9][((long)c * m->w + j) * m->d + (col - m->O)];
}

/* One cell (ocn.md §3): x[O], h[d] -> pi[N_c], h_new[d], e (options). */
static void ref_cell(const struct ref_model *m, int c, const double *x,
                     const double *h, double *pi, double *h_new, double *e)
{
    int w = m->w, d = m->d, O = m->O;
    double in[REF_MAX * 4], z[REF_MAX], u[REF_MAX];
    for (int i = 0; i < O; i++) {
        in[i] = x[i];
    }
    for (int i = 0; i < d; i++) {
        in[O + i] = h[i];
    }
    for (int j = 0; j < w; j++) {
        double s = c < 0 ? m->p[2][j] : m->p[10][(long)c * w + j];
        for (int col = 0; col < O + d; col++) {
            s += ref_u1(m, c, j, col) * in[col];
        }
        z[j] = tanh(s);
    }
    for (int j = 0; j < w; j++) {
        double s = c < 0 ? m->p[4][j] : m->p[12][(long)c * w + j];
        for (int k = 0; k < w; k++) {
            s += (c < 0 ? m->p[3][(long)j * w + k]
                        : m->p[11][((long)c * w + j) * w + k]) *
                 z[k];
        }
        u[j] = tanh(s);
    }
    int N = c < 0 ? m->K : m->A;
    int rows = c < 0 ? m->K + d : m->A + d + 1;
    double out[REF_MAX * 2];
    for (int r = 0; r < rows; r++) {
        const double *W = c < 0 ? m->p[5] + (long)r * w
                                : m->p[13] + ((long)c * rows + r) * w;
        double s = c < 0 ? m->p[6][r] : m->p[14][(long)c * rows + r];
        for (int k = 0; k < w; k++) {
            s += W[k] * u[k];
        }
        out[r] = s;
    }
    double tau = c < 0 ? m->tau : 1.0;
    double mx = -INFINITY, sum = 0.0;
    for (int a = 0; a < N; a++) {
        mx = fmax(mx, out[a] / tau);
    }
    for (int a = 0; a < N; a++) {
        pi[a] = exp(out[a] / tau - mx);
        sum += pi[a];
    }
    for (int a = 0; a < N; a++) {
        pi[a] /= sum;
    }
    for (int i = 0; i < d; i++) {
        h_new[i] = tanh(out[N + i]);
    }
    if (e != NULL && c >= 0) {
        *e = 1.0 / (1.0 + exp(-out[N + d]));
    }
}

/* One demonstration: x[T][O] (dense), actions[T], task -> Σ_t log max(π_t
 * [a_t], 1e-12); per step (when not NULL) pi_out[T][A], end_out[T],
 * pic_out[T][K] (Π^C_t). */
static double ref_demo(const struct ref_model *m, const double *x,
                       const int *actions, int T, int task, double *pi_out,
                       double *end_out, double *pic_out)
{
    int K = m->K, d = m->d, A = m->A, O = m->O;
    double hc[REF_MAX], pic[REF_MAX], ho[REF_MAX][REF_MAX];
    double zero[REF_MAX];
    memset(zero, 0, sizeof zero);
    for (int i = 0; i < d; i++) {
        hc[i] = m->p[7][(long)task * d + i];
    }
    double ll = 0.0;
    for (int t = 0; t < T; t++) {
        const double *xt = x + (long)t * O;
        double e = 1.0, pibar[REF_MAX], hbar[REF_MAX][REF_MAX];
        memset(pibar, 0, sizeof pibar);
        if (t >= 1 && !m->moe) {
            /* continue branch (5.2.11-13) */
            e = 0.0;
            for (int i = 0; i < K; i++) {
                double pi_i[REF_MAX], ei;
                ref_cell(m, i, xt, ho[i], pi_i, hbar[i], &ei);
                e += pic[i] * ei;
                for (int a = 0; a < A; a++) {
                    pibar[a] += pic[i] * pi_i[a];
                }
            }
        }
        /* switch branch (5.2.14-16) */
        double pc[REF_MAX], hchat[REF_MAX], pihat[REF_MAX], hhat[REF_MAX][REF_MAX];
        ref_cell(m, -1, xt, hc, pc, hchat, NULL);
        memset(pihat, 0, sizeof pihat);
        for (int i = 0; i < K; i++) {
            double pi_i[REF_MAX], ei;
            ref_cell(m, i, xt, zero, pi_i, hhat[i], &ei);
            for (int a = 0; a < A; a++) {
                pihat[a] += pc[i] * pi_i[a];
            }
        }
        /* mix (5.2.17) */
        double pi[REF_MAX];
        for (int a = 0; a < A; a++) {
            pi[a] = e * pihat[a] + (1.0 - e) * pibar[a];
        }
        for (int i = 0; i < K; i++) {
            pic[i] = t == 0 || m->moe ? pc[i] : e * pc[i] + (1.0 - e) * pic[i];
        }
        for (int i = 0; i < d; i++) {
            hc[i] = e * hchat[i] + (1.0 - e) * hc[i];
        }
        for (int i = 0; i < K; i++) {
            for (int j = 0; j < d; j++) {
                ho[i][j] = t == 0 || m->moe
                               ? hhat[i][j]
                               : e * hhat[i][j] + (1.0 - e) * hbar[i][j];
            }
        }
        ll += log(fmax(pi[actions[t]], 1e-12));
        if (pi_out != NULL) {
            memcpy(pi_out + (long)t * A, pi, (size_t)A * sizeof *pi);
        }
        if (end_out != NULL) {
            end_out[t] = e;
        }
        if (pic_out != NULL) {
            memcpy(pic_out + (long)t * K, pic, (size_t)K * sizeof *pic);
        }
    }
    return ll;
}

#endif
