/* compILE's latent success matrix (see agents/compile.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agents/bc.h"
#include "agents/compile.h"
#include "agents/demos.h"
#include "agents/ocn.h"
#include "core/error.h"
#include "envs/craft.h"

/* Index of s in subs[0..n), or -1. */
static int sub_index(const struct craft_subtask *subs, int n,
                     struct craft_subtask s)
{
    for (int i = 0; i < n; i++) {
        if (subs[i].op == s.op && subs[i].kind == s.kind) {
            return i;
        }
    }
    return -1;
}

/* Adds every segment's latent of the packed batch b (of ds) to acc[label]
 * where label is the subtask most of its steps work on (the segment of a
 * step: its largest share). */
static void add_latents(const struct demo_set *ds, const struct demo_batch *b,
                        const float *z, const float *seg, int S, int d,
                        const struct craft_subtask *subs, int n_subs,
                        double *acc, int64_t *found, float *first_z,
                        int *first_label)
{
    int votes[16][CRAFT_MAX_SUBTASKS];
    for (int j = 0; j < b->B; j++) {
        memset(votes, 0, sizeof votes);
        const int64_t demo = b->demo[j];
        const struct craft_task *task = &ds->tasks[ds->task[demo]];
        for (int t = 0; t < b->len[j]; t++) {
            const float *share = seg + (b->row_off[t] + j) * S;
            int best = 0;
            for (int s = 1; s < S; s++) {
                best = share[s] > share[best] ? s : best;
            }
            int k = ds->subtask[ds->first[demo] + t];
            int label = k < task->n ? sub_index(subs, n_subs, task->sub[k])
                                    : -1;
            if (label >= 0) {
                votes[best][label]++;
            }
        }
        for (int s = 0; s < S; s++) {
            int label = -1, most = 0;
            for (int l = 0; l < n_subs; l++) {
                if (votes[s][l] > most) {
                    most = votes[s][l];
                    label = l;
                }
            }
            const float *zs = z + ((int64_t)s * b->B + j) * d;
            if (s == 0) { /* the segment the demonstration starts in */
                memcpy(first_z + demo * d, zs, (size_t)d * sizeof *zs);
                first_label[demo] = label;
            }
            if (label < 0) {
                continue; /* a segment no step falls in */
            }
            for (int i = 0; i < d; i++) {
                acc[(int64_t)label * d + i] += zs[i];
            }
            found[label]++;
        }
    }
}

/* The mean latent of each subtask's segments over `demos` expert
 * demonstrations per training task. */
static int mean_latents(struct compile_model *m, const struct demo_set *dsp,
                        const struct craft_subtask *subs, int n_subs,
                        float *mean, int64_t *found, float *first_z,
                        int *first_label)
{
    const int S = m->cfg.max_segs, d = m->cfg.hidden;
    const struct demo_set ds = *dsp;
    int rc = 0;
    double *acc = calloc((size_t)n_subs * d, sizeof *acc);
    int64_t *ids = malloc(256 * sizeof *ids);
    float *z = NULL, *seg = NULL;
    struct demo_batch b;
    memset(&b, 0, sizeof b);
    if (acc == NULL || ids == NULL) {
        rc = gr_error(GR_ENOMEM, "latent success matrix: out of memory");
    }
    for (int i = 0; i < n_subs; i++) {
        found[i] = 0;
    }
    for (int64_t first = 0; rc == 0 && first < ds.n; first += 256) {
        int n = (int)(ds.n - first < 256 ? ds.n - first : 256);
        for (int i = 0; i < n; i++) {
            ids[i] = first + i;
        }
        rc = demo_batch_build(&b, &ds, ids, n);
        free(z);
        free(seg);
        z = rc == 0 ? malloc((size_t)S * b.B * d * sizeof *z) : NULL;
        seg = rc == 0 ? malloc((size_t)b.rows * S * sizeof *seg) : NULL;
        if (rc == 0 && (z == NULL || seg == NULL)) {
            rc = gr_error(GR_ENOMEM, "latent success matrix: out of memory");
        }
        if (rc == 0) {
            rc = compile_latents(m, &b, z, seg);
        }
        if (rc == 0) {
            add_latents(&ds, &b, z, seg, S, d, subs, n_subs, acc, found,
                        first_z, first_label);
        }
    }
    for (int l = 0; rc == 0 && l < n_subs; l++) {
        for (int i = 0; i < d; i++) {
            mean[(int64_t)l * d + i] =
                found[l] > 0 ? (float)(acc[(int64_t)l * d + i] / found[l])
                             : 0.0f;
        }
    }
    free(acc);
    free(ids);
    free(z);
    free(seg);
    demo_batch_free(&b);
    return rc;
}

/* The decoder plays worlds w[0..E) greedily, world x with the latent
 * zr[x], until each has done its first subtask or its episode ends. */
static int play_greedy(struct compile_model *m, struct craft_world *w, int E,
                       const float *zr)
{
    const int A = CRAFT_N_ACTIONS, O = CRAFT_OBS_SIZE;
    float *obs = malloc((size_t)E * O * sizeof *obs);
    int32_t *idx = malloc((size_t)E * O * sizeof *idx);
    float *val = malloc((size_t)E * O * sizeof *val);
    float *probs = malloc((size_t)E * A * sizeof *probs);
    uint8_t *done = calloc((size_t)E, 1);
    int rc = 0;
    if (!obs || !idx || !val || !probs || !done) {
        rc = gr_error(GR_ENOMEM, "latent success matrix: out of memory");
    }
    int left = E;
    while (rc == 0 && left > 0) {
        for (int x = 0; x < E; x++) {
            craft_world_observe(&w[x], obs + (int64_t)x * O);
        }
        int nz = ocn_sparse_rows(obs, E, O, idx, val);
        rc = compile_decode(m, idx, val, E, nz, zr, probs);
        for (int x = 0; rc == 0 && x < E; x++) {
            if (done[x]) {
                continue;
            }
            const float *p = probs + (int64_t)x * A;
            int a = 0;
            for (int k = 1; k < A; k++) {
                a = p[k] > p[a] ? k : a;
            }
            struct craft_step st;
            rc = craft_world_step(&w[x], a, &st);
            if (st.terminated || st.truncated || w[x].k >= 1) {
                done[x] = 1;
                left--;
            }
        }
    }
    free(obs);
    free(idx);
    free(val);
    free(probs);
    free(done);
    return rc;
}

/* The first segment of every demonstration played again from the
 * demonstration's start (its map and task) with three latents: its own,
 * its subtask's mean, zero. replay[v] the share that does the first
 * subtask; *n_replayed the demonstrations with a labelled first segment. */
static int replay_first(struct compile_model *m, const struct demo_set *ds,
                        const float *first_z, const int *first_label,
                        const float *mean, double *replay, int *n_replayed)
{
    const int d = m->cfg.hidden;
    int n = 0, rc = 0;
    for (int64_t i = 0; i < ds->n; i++) {
        n += first_label[i] >= 0;
    }
    *n_replayed = n;
    for (int v = 0; v < 3; v++) {
        replay[v] = 0.0;
    }
    if (n == 0) {
        return 0;
    }
    struct craft_world *w = malloc((size_t)3 * n * sizeof *w);
    float *zr = calloc((size_t)3 * n * d, sizeof *zr);
    if (w == NULL || zr == NULL) {
        rc = gr_error(GR_ENOMEM, "latent success matrix: out of memory");
    }
    int x = 0;
    for (int64_t i = 0; rc == 0 && i < ds->n; i++) {
        if (first_label[i] < 0) {
            continue;
        }
        const struct craft_task *task = &ds->tasks[ds->task[i]];
        struct craft_config cfg;
        craft_config_for_task(&ds->config, task, &cfg);
        for (int v = 0; v < 3 && rc == 0; v++) {
            rc = craft_world_reset(&w[v * n + x], &cfg, ds->seed[i], task);
        }
        memcpy(zr + ((int64_t)0 * n + x) * d, first_z + i * d,
               (size_t)d * sizeof *zr);
        memcpy(zr + ((int64_t)1 * n + x) * d,
               mean + (int64_t)first_label[i] * d, (size_t)d * sizeof *zr);
        x++; /* the third: zeros */
    }
    if (rc == 0) {
        rc = play_greedy(m, w, 3 * n, zr);
    }
    for (int v = 0; rc == 0 && v < 3; v++) {
        int done = 0;
        for (int i = 0; i < n; i++) {
            done += w[v * n + i].k >= 1;
        }
        replay[v] = (double)done / n;
    }
    free(w);
    free(zr);
    return rc;
}

int compile_latent_matrix(struct compile_model *m,
                          const struct craft_config *world, int demos,
                          int episodes, uint64_t base_seed,
                          struct craft_subtask *subs, int *n_subs,
                          double *rate, int64_t *found, double *replay,
                          int *n_replayed)
{
    const int d = m->cfg.hidden, A = CRAFT_N_ACTIONS, O = CRAFT_OBS_SIZE;
    if (demos < 1 || episodes < 1) {
        return gr_error(GR_EINVAL, "latent success matrix: %d demonstrations, "
                                   "%d episodes",
                        demos, episodes);
    }
    if (m->cfg.obs_size != O || m->cfg.n_actions != A) {
        return gr_error(GR_EINVAL, "latent success matrix: a model of %d "
                                   "observations and %d actions, not Craft's",
                        m->cfg.obs_size, m->cfg.n_actions);
    }
    struct craft_task tasks[OCN_MAX_TASKS];
    int n_tasks = m->cfg.n_tasks, S = 0, rc = 0;
    for (int i = 0; i < n_tasks && rc == 0; i++) {
        rc = craft_task_parse(m->cfg.task_names[i], &tasks[i]);
        for (int k = 0; rc == 0 && k < tasks[i].n; k++) {
            if (sub_index(subs, S, tasks[i].sub[k]) < 0) {
                subs[S++] = tasks[i].sub[k];
            }
        }
    }
    if (rc < 0 || n_tasks < 1) {
        return gr_error(GR_EFORMAT, "latent success matrix: the model names "
                                    "no training task");
    }
    *n_subs = S;
    struct demo_set ds;
    memset(&ds, 0, sizeof ds);
    rc = demo_set_generate(&ds, world, tasks, n_tasks, demos,
                           COMPILE_PROBE_DEMO_SEED, NULL, NULL);
    if (rc < 0) {
        return gr_error_wrap(rc, "latent success matrix: demonstrations");
    }
    float *mean = malloc((size_t)S * d * sizeof *mean);
    float *first_z = calloc((size_t)ds.n * d, sizeof *first_z);
    int *first_label = malloc((size_t)ds.n * sizeof *first_label);
    const int per = S * episodes, E = S * per;
    struct craft_world *w = malloc((size_t)E * sizeof *w);
    float *zr = malloc((size_t)E * d * sizeof *zr);
    uint64_t *seeds = malloc((size_t)episodes * sizeof *seeds);
    if (!mean || !first_z || !first_label || !w || !zr || !seeds) {
        rc = gr_error(GR_ENOMEM, "latent success matrix: out of memory");
    }
    for (int64_t i = 0; rc == 0 && i < ds.n; i++) {
        first_label[i] = -1;
    }
    if (rc == 0) {
        rc = mean_latents(m, &ds, subs, S, mean, found, first_z,
                          first_label);
    }
    /* world (i, j, n): subtask i's mean latent, subtask j's task, map n */
    for (int j = 0; j < S && rc == 0; j++) {
        struct craft_task task;
        rc = craft_task_from_subtasks(&subs[j], 1, NULL, &task);
        struct craft_config cfg;
        craft_config_for_task(world, &task, &cfg);
        if (rc == 0) {
            rc = bc_solvable_seeds(&cfg, &task, j, episodes, base_seed, seeds,
                                   NULL);
        }
        for (int n = 0; n < episodes && rc == 0; n++) {
            for (int i = 0; i < S && rc == 0; i++) {
                int x = i * per + j * episodes + n;
                rc = craft_world_reset(&w[x], &cfg, seeds[n], &task);
                memcpy(zr + (int64_t)x * d, mean + (int64_t)i * d,
                       (size_t)d * sizeof *zr);
            }
        }
    }
    if (rc == 0) {
        rc = play_greedy(m, w, E, zr);
    }
    for (int i = 0; rc == 0 && i < S; i++) {
        for (int j = 0; j < S; j++) {
            int s = 0;
            for (int n = 0; n < episodes; n++) {
                const struct craft_world *x = &w[i * per + j * episodes + n];
                s += x->k >= x->task.n;
            }
            rate[i * S + j] = (double)s / episodes;
        }
    }
    if (rc == 0) {
        rc = replay_first(m, &ds, first_z, first_label, mean, replay,
                          n_replayed);
    }
    free(mean);
    free(first_z);
    free(first_label);
    free(w);
    free(zr);
    free(seeds);
    demo_set_free(&ds);
    return rc;
}
