/* Demonstrations: generation with the expert, replay loading, split and
 * packed batches (see agents/demos.h). */
#include "agents/demos.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "envs/expert.h"
#include "replays/replay.h"

int demo_obs_sparse(const float *obs, int32_t *idx, float *val)
{
    int n = 0;
    for (int i = 0; i < CRAFT_OBS_SIZE; i++) {
        if (obs[i] != 0.0f) {
            idx[n] = i;
            val[n] = obs[i];
            n++;
        }
    }
    return n;
}

/* Grows *p (elements of `size` bytes) to hold at least `need`; *cap is the
 * current capacity in elements. */
static int grow(void **p, int64_t *cap, int64_t need, size_t size)
{
    if (need <= *cap) {
        return 0;
    }
    int64_t c = *cap > 0 ? *cap : 1024;
    while (c < need) {
        c *= 2;
    }
    void *q = realloc(*p, (size_t)c * size);
    if (q == NULL) {
        return gr_error(GR_ENOMEM, "demonstrations: out of memory for %lld "
                                   "elements",
                        (long long)c);
    }
    *p = q;
    *cap = c;
    return 0;
}

static void set_init(struct demo_set *ds, const struct craft_config *config,
                     const struct craft_task *tasks, int n_tasks)
{
    memset(ds, 0, sizeof *ds);
    ds->config = *config;
    ds->n_tasks = n_tasks;
    for (int i = 0; i < n_tasks; i++) {
        ds->tasks[i] = tasks[i];
    }
}

/* Capacity for one more demonstration of up to `steps` steps (each of at
 * most CRAFT_OBS_SIZE non-zeros). */
static int reserve(struct demo_set *ds, int steps)
{
    int64_t c;
    int rc = 0;
    if (ds->n + 1 > ds->cap_demos_) {
        c = ds->cap_demos_;
        rc |= grow((void **)&ds->task, &c, ds->n + 1, sizeof *ds->task);
        c = ds->cap_demos_;
        rc |= grow((void **)&ds->len, &c, ds->n + 1, sizeof *ds->len);
        c = ds->cap_demos_;
        rc |= grow((void **)&ds->first, &c, ds->n + 1, sizeof *ds->first);
        c = ds->cap_demos_;
        rc |= grow((void **)&ds->seed, &c, ds->n + 1, sizeof *ds->seed);
        if (rc < 0) {
            return GR_ENOMEM;
        }
        ds->cap_demos_ = c;
    }
    int64_t need = ds->n_steps + steps;
    if (need + 1 > ds->cap_steps_) {
        c = ds->cap_steps_;
        rc |= grow((void **)&ds->action, &c, need + 1, 1);
        c = ds->cap_steps_;
        rc |= grow((void **)&ds->subtask, &c, need + 1, 1);
        c = ds->cap_steps_;
        rc |= grow((void **)&ds->boundary, &c, need + 1, 1);
        c = ds->cap_steps_;
        rc |= grow((void **)&ds->nz_first, &c, need + 1,
                   sizeof *ds->nz_first);
        if (rc < 0) {
            return GR_ENOMEM;
        }
        ds->cap_steps_ = c;
    }
    int64_t nz_need =
        ds->nz_first[ds->n_steps] + (int64_t)steps * CRAFT_OBS_SIZE;
    if (nz_need > ds->cap_nz_) {
        c = ds->cap_nz_;
        rc |= grow((void **)&ds->nz_idx, &c, nz_need, sizeof *ds->nz_idx);
        c = ds->cap_nz_;
        rc |= grow((void **)&ds->nz_val, &c, nz_need, sizeof *ds->nz_val);
        if (rc < 0) {
            return GR_ENOMEM;
        }
        ds->cap_nz_ = c;
    }
    return 0;
}

/* Appends step data to the demonstration being built (its steps start at
 * ds->n_steps + t). */
static void put_step(struct demo_set *ds, int64_t s, const float *obs,
                     int action, int subtask, int boundary)
{
    int32_t idx[CRAFT_OBS_SIZE];
    float val[CRAFT_OBS_SIZE];
    int nz = demo_obs_sparse(obs, idx, val);
    int64_t o = ds->nz_first[s];
    for (int j = 0; j < nz; j++) {
        ds->nz_idx[o + j] = (uint16_t)idx[j];
        ds->nz_val[o + j] = val[j];
    }
    ds->nz_first[s + 1] = o + nz;
    ds->action[s] = (uint8_t)action;
    ds->subtask[s] = (uint8_t)subtask;
    ds->boundary[s] = (uint8_t)boundary;
    if (nz > ds->max_nz) {
        ds->max_nz = nz;
    }
}

/* Commits the demonstration whose T steps were put after ds->n_steps. */
static void commit_demo(struct demo_set *ds, int task, int T, uint64_t seed)
{
    ds->task[ds->n] = task;
    ds->len[ds->n] = T;
    ds->first[ds->n] = ds->n_steps;
    ds->seed[ds->n] = seed;
    ds->n++;
    ds->n_steps += T;
    if (T > ds->max_len) {
        ds->max_len = T;
    }
}

static int first_alloc(struct demo_set *ds)
{
    int64_t c = 0;
    if (grow((void **)&ds->nz_first, &c, 1024, sizeof *ds->nz_first) < 0) {
        return GR_ENOMEM;
    }
    /* the other step arrays share cap_steps_: give them the same size */
    int64_t c2 = 0, c3 = 0, c4 = 0;
    if (grow((void **)&ds->action, &c2, c, 1) < 0 ||
        grow((void **)&ds->subtask, &c3, c, 1) < 0 ||
        grow((void **)&ds->boundary, &c4, c, 1) < 0) {
        return GR_ENOMEM;
    }
    ds->cap_steps_ = c;
    ds->nz_first[0] = 0;
    return 0;
}

int demo_set_generate(struct demo_set *ds, const struct craft_config *config,
                      const struct craft_task *tasks, int n_tasks,
                      int64_t per_task, uint64_t base_seed,
                      void (*progress)(void *arg, int64_t done, int64_t total),
                      void *progress_arg)
{
    if (n_tasks < 1 || n_tasks > DEMO_MAX_TASKS) {
        return gr_error(GR_EINVAL, "demonstrations: %d tasks, expected 1..%d",
                        n_tasks, DEMO_MAX_TASKS);
    }
    if (per_task < 1) {
        return gr_error(GR_EINVAL,
                        "demonstrations: %lld per task, expected >= 1",
                        (long long)per_task);
    }
    int rc = craft_config_validate(config);
    if (rc < 0) {
        return rc;
    }
    set_init(ds, config, tasks, n_tasks);
    if (first_alloc(ds) < 0) {
        demo_set_free(ds);
        return GR_ENOMEM;
    }
    int64_t total = per_task * n_tasks, done = 0;
    float obs[CRAFT_OBS_SIZE];
    for (int ti = 0; ti < n_tasks; ti++) {
        struct craft_config cfg;
        craft_config_for_task(config, &tasks[ti], &cfg);
        int64_t kept = 0;
        for (uint64_t n = 0; kept < per_task; n++) {
            uint64_t seed = craft_demo_seed(base_seed, tasks[ti].name, n);
            struct craft_world w;
            rc = craft_world_reset(&w, &cfg, seed, &tasks[ti]);
            if (rc < 0) {
                demo_set_free(ds);
                return rc;
            }
            if (reserve(ds, cfg.max_steps) < 0) {
                demo_set_free(ds);
                return GR_ENOMEM;
            }
            int ok = 1, T = 0;
            while (!craft_world_done(&w)) {
                int a, k;
                if (craft_expert_act(&w, &a, &k) != CRAFT_EXPERT_OK) {
                    ok = 0;
                    break;
                }
                craft_world_observe(&w, obs);
                struct craft_step st;
                craft_world_step(&w, a, &st);
                put_step(ds, ds->n_steps + T, obs, a, k, st.completed);
                T++;
            }
            if (!ok || w.k < w.task.n) {
                ds->skipped++;
                continue;
            }
            commit_demo(ds, ti, T, seed);
            kept++;
            done++;
            if (progress != NULL && (done % 256 == 0 || done == total)) {
                progress(progress_arg, done, total);
            }
        }
    }
    return 0;
}

/* Index of the task in ds whose subtasks equal t's, or -1. */
static int find_task(const struct demo_set *ds, const struct craft_task *t)
{
    for (int i = 0; i < ds->n_tasks; i++) {
        const struct craft_task *u = &ds->tasks[i];
        if (u->n != t->n) {
            continue;
        }
        int same = 1;
        for (int j = 0; j < t->n; j++) {
            if (u->sub[j].op != t->sub[j].op ||
                u->sub[j].kind != t->sub[j].kind) {
                same = 0;
            }
        }
        if (same) {
            return i;
        }
    }
    return -1;
}

int demo_set_load_replay(struct demo_set *ds, const char *path,
                         const struct craft_task *tasks, int n_tasks)
{
    if (n_tasks < 1 || n_tasks > DEMO_MAX_TASKS) {
        return gr_error(GR_EINVAL, "demonstrations: %d tasks, expected 1..%d",
                        n_tasks, DEMO_MAX_TASKS);
    }
    struct replay_reader *r = NULL;
    int rc = replay_reader_open(&r, path, REPLAY_READ_VERIFY);
    if (rc < 0) {
        return rc;
    }
    const struct replay_header *h = replay_reader_header(r);
    set_init(ds, &h->env_config, tasks, n_tasks);
    if (first_alloc(ds) < 0) {
        replay_reader_close(r);
        demo_set_free(ds);
        return GR_ENOMEM;
    }
    struct replay_record rec;
    int cur_task = -1, T = 0, in_episode = 0;
    uint64_t cur_seed = 0, episode_offset = 0;
    float obs[CRAFT_OBS_SIZE];
    while ((rc = replay_reader_next(r, &rec)) > 0) {
        switch (rec.type) {
        case REPLAY_RECORD_EPISODE_START:
            cur_task = find_task(ds, &rec.start.task);
            cur_seed = rec.start.seed;
            episode_offset = rec.offset;
            T = 0;
            in_episode = 1;
            if (cur_task >= 0 &&
                reserve(ds, h->env_config.max_steps) < 0) {
                rc = GR_ENOMEM;
                goto done;
            }
            break;
        case REPLAY_RECORD_STEP: {
            if (cur_task < 0) {
                break;
            }
            const struct craft_world *before = replay_reader_world_before(r);
            const struct craft_world *after = replay_reader_world(r);
            if (before == NULL || after == NULL) {
                rc = gr_error(GR_EFORMAT,
                              "%s: step at byte %llu: no re-simulated world",
                              path, (unsigned long long)rec.offset);
                goto done;
            }
            if (T >= h->env_config.max_steps) {
                rc = gr_error(GR_EFORMAT,
                              "%s: episode at byte %llu has more than "
                              "max_steps = %d steps",
                              path, (unsigned long long)episode_offset,
                              h->env_config.max_steps);
                goto done;
            }
            craft_world_observe(before, obs);
            put_step(ds, ds->n_steps + T, obs, rec.step.a, (int)rec.step.s,
                     after->k > before->k);
            T++;
            break;
        }
        case REPLAY_RECORD_EPISODE_END:
            if (!in_episode) {
                break;
            }
            in_episode = 0;
            if (cur_task < 0) {
                ds->other_tasks++;
            } else if (!rec.end.success || T == 0) {
                ds->skipped++;
            } else {
                commit_demo(ds, cur_task, T, cur_seed);
            }
            break;
        default:
            break;
        }
    }
done:
    replay_reader_close(r);
    if (rc < 0) {
        demo_set_free(ds);
        return rc;
    }
    for (int ti = 0; ti < n_tasks; ti++) {
        int64_t c = 0;
        for (int64_t i = 0; i < ds->n; i++) {
            c += ds->task[i] == ti;
        }
        if (c == 0) {
            rc = gr_error(GR_EINVAL,
                          "%s: no finished episode of task %s (the file has "
                          "%lld kept episodes of the other tasks asked for, "
                          "%lld of tasks not asked for, %lld unfinished)",
                          path, tasks[ti].name, (long long)ds->n,
                          (long long)ds->other_tasks,
                          (long long)ds->skipped);
            demo_set_free(ds);
            return rc;
        }
    }
    return 0;
}

int demo_set_split(struct demo_set *ds, double train_frac)
{
    free(ds->train);
    free(ds->val);
    ds->train = malloc((size_t)(ds->n > 0 ? ds->n : 1) * sizeof *ds->train);
    ds->val = malloc((size_t)(ds->n > 0 ? ds->n : 1) * sizeof *ds->val);
    if (ds->train == NULL || ds->val == NULL) {
        return gr_error(GR_ENOMEM, "demonstrations: out of memory for the "
                                   "split");
    }
    ds->n_train = 0;
    ds->n_val = 0;
    /* Per task in order; the train and validation lists keep task order
     * (all of task 0's, then task 1's, ...). */
    for (int ti = 0; ti < ds->n_tasks; ti++) {
        int64_t c = 0;
        for (int64_t i = 0; i < ds->n; i++) {
            c += ds->task[i] == ti;
        }
        int64_t n_tr = (int64_t)(train_frac * (double)c + 1e-9);
        if (n_tr < 1 || n_tr >= c) {
            return gr_error(GR_EINVAL,
                            "task %s has %lld demonstrations: too few to "
                            "split %.0f%% / %.0f%% with both parts non-empty",
                            ds->tasks[ti].name, (long long)c,
                            100.0 * train_frac, 100.0 * (1.0 - train_frac));
        }
        int64_t seen = 0;
        for (int64_t i = 0; i < ds->n; i++) {
            if (ds->task[i] != ti) {
                continue;
            }
            if (seen < n_tr) {
                ds->train[ds->n_train++] = i;
            } else {
                ds->val[ds->n_val++] = i;
            }
            seen++;
        }
    }
    return 0;
}

void demo_set_free(struct demo_set *ds)
{
    free(ds->task);
    free(ds->len);
    free(ds->first);
    free(ds->seed);
    free(ds->action);
    free(ds->subtask);
    free(ds->boundary);
    free(ds->nz_first);
    free(ds->nz_idx);
    free(ds->nz_val);
    free(ds->train);
    free(ds->val);
    memset(ds, 0, sizeof *ds);
}

int demo_n_boundaries(const struct demo_set *ds, int64_t i)
{
    int m = 0;
    for (int t = 0; t < ds->len[i]; t++) {
        m += ds->boundary[ds->first[i] + t];
    }
    return m;
}

int demo_batch_build(struct demo_batch *b, const struct demo_set *ds,
                     const int64_t *ids, int n)
{
    if (n < 1) {
        return gr_error(GR_EINVAL, "batch: %d demonstrations, expected >= 1",
                        n);
    }
    int T = 0, nz = 1;
    int64_t rows = 0;
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= ds->n) {
            return gr_error(GR_EINVAL,
                            "batch: demonstration %lld outside 0..%lld",
                            (long long)ids[i], (long long)ds->n - 1);
        }
        int L = ds->len[ids[i]];
        rows += L;
        if (L > T) {
            T = L;
        }
        for (int t = 0; t < L; t++) {
            int64_t s = ds->first[ids[i]] + t;
            int c = (int)(ds->nz_first[s + 1] - ds->nz_first[s]);
            if (c > nz) {
                nz = c;
            }
        }
    }
    if (n > b->cap_B_) {
        int64_t *d = realloc(b->demo, (size_t)n * sizeof *d);
        if (d != NULL) {
            b->demo = d;
        }
        int32_t *tk = realloc(b->task, (size_t)n * sizeof *tk);
        if (tk != NULL) {
            b->task = tk;
        }
        int32_t *ln = realloc(b->len, (size_t)n * sizeof *ln);
        if (ln != NULL) {
            b->len = ln;
        }
        if (d == NULL || tk == NULL || ln == NULL) {
            return gr_error(GR_ENOMEM, "batch: out of memory");
        }
        b->cap_B_ = n;
    }
    if (T > b->cap_T_) {
        int32_t *ac = realloc(b->active, (size_t)T * sizeof *ac);
        if (ac != NULL) {
            b->active = ac;
        }
        int64_t *ro = realloc(b->row_off, (size_t)(T + 1) * sizeof *ro);
        if (ro != NULL) {
            b->row_off = ro;
        }
        if (ac == NULL || ro == NULL) {
            return gr_error(GR_ENOMEM, "batch: out of memory");
        }
        b->cap_T_ = T;
    }
    if (rows > b->cap_rows_) {
        int32_t *a = realloc(b->action, (size_t)rows * sizeof *a);
        if (a == NULL) {
            return gr_error(GR_ENOMEM, "batch: out of memory");
        }
        b->action = a;
        b->cap_rows_ = rows;
    }
    if (rows * nz > b->cap_cells_) {
        int32_t *ix = realloc(b->idx, (size_t)(rows * nz) * sizeof *ix);
        if (ix != NULL) {
            b->idx = ix;
        }
        float *v = realloc(b->val, (size_t)(rows * nz) * sizeof *v);
        if (v != NULL) {
            b->val = v;
        }
        if (ix == NULL || v == NULL) {
            return gr_error(GR_ENOMEM, "batch: out of memory");
        }
        b->cap_cells_ = rows * nz;
    }
    b->B = n;
    b->T = T;
    b->nz = nz;
    b->rows = rows;
    /* stable sort by decreasing length (insertion: keeps equal lengths in
     * the given order; a counting sort would do too, n is small) */
    for (int i = 0; i < n; i++) {
        int64_t id = ids[i];
        int L = ds->len[id];
        int j = i - 1;
        while (j >= 0 && b->len[j] < L) {
            b->demo[j + 1] = b->demo[j];
            b->len[j + 1] = b->len[j];
            j--;
        }
        b->demo[j + 1] = id;
        b->len[j + 1] = L;
    }
    for (int i = 0; i < n; i++) {
        b->task[i] = ds->task[b->demo[i]];
    }
    int64_t r = 0;
    int active = n;
    for (int t = 0; t < T; t++) {
        while (active > 0 && b->len[active - 1] <= t) {
            active--;
        }
        b->active[t] = active;
        b->row_off[t] = r;
        for (int i = 0; i < active; i++, r++) {
            int64_t s = ds->first[b->demo[i]] + t;
            int64_t o = ds->nz_first[s];
            int c = (int)(ds->nz_first[s + 1] - o);
            int32_t *ix = b->idx + r * nz;
            float *v = b->val + r * nz;
            for (int j = 0; j < c; j++) {
                ix[j] = ds->nz_idx[o + j];
                v[j] = ds->nz_val[o + j];
            }
            for (int j = c; j < nz; j++) {
                ix[j] = -1;
                v[j] = 0.0f;
            }
            b->action[r] = ds->action[s];
        }
    }
    b->row_off[T] = r;
    return 0;
}

void demo_batch_free(struct demo_batch *b)
{
    free(b->demo);
    free(b->task);
    free(b->len);
    free(b->active);
    free(b->row_off);
    free(b->idx);
    free(b->val);
    free(b->action);
    memset(b, 0, sizeof *b);
}
