/* tests/agents/ocn_testutil.h — small helpers shared by the OCN tests: a
 * hand-made demonstration set with any observation size, the model's
 * parameters as host arrays, and a CPU context. */
#ifndef GROVE_TESTS_AGENTS_OCN_TESTUTIL_H
#define GROVE_TESTS_AGENTS_OCN_TESTUTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agents/demos.h"
#include "agents/ocn.h"
#include "core/random.h"
#include "kernels/tensor.h"

/* A demo set of n demonstrations with lengths len[], tasks task[], random
 * sparse observations of size O (about a third non-zero, some values 2)
 * and random actions in [0, A), from `seed`. Dense copies of the
 * observations go to *dense (malloc'd, [Σ T, O]) when not NULL. */
static inline void tu_make_demos(struct demo_set *ds, int n, const int *len,
                          const int *task, int n_tasks, int O, int A,
                          uint64_t seed, double **dense)
{
    memset(ds, 0, sizeof *ds);
    ds->n_tasks = n_tasks;
    ds->n = n;
    int64_t steps = 0;
    for (int i = 0; i < n; i++) {
        steps += len[i];
    }
    ds->n_steps = steps;
    ds->task = malloc((size_t)n * sizeof *ds->task);
    ds->len = malloc((size_t)n * sizeof *ds->len);
    ds->first = malloc((size_t)n * sizeof *ds->first);
    ds->seed = calloc((size_t)n, sizeof *ds->seed);
    ds->action = malloc((size_t)steps);
    ds->subtask = calloc((size_t)steps, 1);
    ds->boundary = calloc((size_t)steps, 1);
    ds->nz_first = malloc((size_t)(steps + 1) * sizeof *ds->nz_first);
    ds->nz_idx = malloc((size_t)(steps * O) * sizeof *ds->nz_idx);
    ds->nz_val = malloc((size_t)(steps * O) * sizeof *ds->nz_val);
    double *dn = calloc((size_t)(steps * O), sizeof *dn);
    struct gr_philox_stream r = gr_philox_stream_init(seed, 0);
    int64_t s = 0, nz = 0;
    ds->nz_first[0] = 0;
    for (int i = 0; i < n; i++) {
        ds->task[i] = task[i];
        ds->len[i] = len[i];
        ds->first[i] = s;
        ds->max_len = len[i] > ds->max_len ? len[i] : ds->max_len;
        for (int t = 0; t < len[i]; t++, s++) {
            int c = 0;
            for (int o = 0; o < O; o++) {
                uint32_t u = gr_philox_next_u32(&r);
                if (u % 3 == 0 || (o == t % O && c == 0)) {
                    float v = (u % 7 == 0) ? 2.0f : 1.0f;
                    ds->nz_idx[nz] = (uint16_t)o;
                    ds->nz_val[nz] = v;
                    dn[s * O + o] = v;
                    nz++;
                    c++;
                }
            }
            ds->max_nz = c > ds->max_nz ? c : ds->max_nz;
            ds->nz_first[s + 1] = nz;
            ds->action[s] = (uint8_t)(gr_philox_next_u32(&r) % (uint32_t)A);
        }
        ds->boundary[s - 1] = 1;
    }
    if (dense != NULL) {
        *dense = dn;
    } else {
        free(dn);
    }
}

/* The 15 parameters in agents/ocn.c's order. */
static inline struct gr_tensor *tu_param(const struct ocn_model *m, int i)
{
    struct gr_tensor *const p[15] = {m->c_wx, m->c_wh, m->c_b1, m->c_w2,
                                     m->c_b2, m->c_wo, m->c_bo, m->h_init,
                                     m->o_wx, m->o_wh, m->o_b1, m->o_w2,
                                     m->o_b2, m->o_wo, m->o_bo};
    return p[i];
}

static const char *const tu_param_names[15] = {
    "ctrl.l1.wx", "ctrl.l1.wh", "ctrl.l1.bias", "ctrl.l2.weight",
    "ctrl.l2.bias", "ctrl.head.weight", "ctrl.head.bias", "ctrl.h_init",
    "opt.l1.wx", "opt.l1.wh", "opt.l1.bias", "opt.l2.weight",
    "opt.l2.bias", "opt.head.weight", "opt.head.bias"};

static inline struct gr_ctx *tu_ctx(enum gr_device dev)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = dev;
    cc.step_chunk_bytes = 4u << 20;
    struct gr_ctx *ctx = NULL;
    if (gr_ctx_new(&ctx, &cc) < 0) {
        return NULL;
    }
    return ctx;
}

static inline void tu_tiny_config(struct ocn_config *c, int K, float tau,
                           enum ocn_kind kind)
{
    ocn_config_default(c);
    c->kind = kind;
    c->n_options = K;
    c->hidden = 4;
    c->width = 4;
    c->obs_size = 7;
    c->n_actions = 5;
    c->tau = tau;
    c->n_tasks = 2;
    strcpy(c->task_names[0], "AC");
    strcpy(c->task_names[1], "CD");
}

#endif
