/* Demonstrations (craft.md §10): generated with the expert, checked
 * against an independent re-run of the world; written as a replay and read
 * back (other tasks and unfinished episodes left out); the 80/20 split per
 * task in order; packed batches against the dense observations. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents/demos.h"
#include "core/error.h"
#include "envs/expert.h"
#include "replays/replay.h"
#include "tests/test.h"

/* Re-runs demonstration i from its seed with the expert and compares
 * every step's observation, action, subtask and boundary flag. */
static int demo_matches_world(const struct demo_set *ds, int64_t i)
{
    struct craft_world w;
    const struct craft_task *task = &ds->tasks[ds->task[i]];
    if (craft_world_reset(&w, &ds->config, ds->seed[i], task) < 0) {
        return 0;
    }
    float obs[CRAFT_OBS_SIZE];
    int boundaries = 0;
    for (int t = 0; t < ds->len[i]; t++) {
        int64_t s = ds->first[i] + t;
        craft_world_observe(&w, obs);
        /* dense observation rebuilt from the sparse one */
        float dense[CRAFT_OBS_SIZE];
        memset(dense, 0, sizeof dense);
        for (int64_t j = ds->nz_first[s]; j < ds->nz_first[s + 1]; j++) {
            if (j > ds->nz_first[s] && ds->nz_idx[j] <= ds->nz_idx[j - 1]) {
                return 0; /* columns must increase */
            }
            dense[ds->nz_idx[j]] = ds->nz_val[j];
        }
        if (memcmp(dense, obs, sizeof obs) != 0) {
            return 0;
        }
        int a, k;
        if (craft_expert_act(&w, &a, &k) != CRAFT_EXPERT_OK) {
            return 0;
        }
        if (a != ds->action[s] || k != ds->subtask[s]) {
            return 0;
        }
        struct craft_step st;
        craft_world_step(&w, a, &st);
        if (st.completed != ds->boundary[s]) {
            return 0;
        }
        boundaries += st.completed;
    }
    /* the episode ended with the task done, the last step a boundary */
    return w.k == task->n && boundaries == task->n &&
           ds->boundary[ds->first[i] + ds->len[i] - 1] == 1;
}

static void test_generate(struct demo_set *ds, struct craft_task *tasks)
{
    struct craft_config cfg;
    craft_config_default(&cfg);
    CHECK(craft_task_parse("AC", &tasks[0]) == 0);
    CHECK(craft_task_parse("CD", &tasks[1]) == 0);
    CHECK(demo_set_generate(ds, &cfg, tasks, 2, 25, 7, NULL, NULL) == 0);
    CHECK(ds->n == 50);
    int64_t steps = 0, nnz = 0;
    int ok = 1;
    for (int64_t i = 0; i < ds->n; i++) {
        CHECK(ds->task[i] == (i < 25 ? 0 : 1));
        CHECK(ds->first[i] == steps);
        steps += ds->len[i];
        ok &= demo_matches_world(ds, i);
        CHECK(demo_n_boundaries(ds, i) == 2);
    }
    /* seeds follow craft.md §9: demonstration n of a task uses
     * craft_demo_seed(S, name, n); maps the expert fails are skipped */
    int64_t gaps = 0;
    for (int ti = 0; ti < 2; ti++) {
        uint64_t n = 0;
        for (int64_t i = 0; i < ds->n; i++) {
            if (ds->task[i] != ti) {
                continue;
            }
            while (n < 1000 &&
                   craft_demo_seed(7, tasks[ti].name, n) != ds->seed[i]) {
                n++;
                gaps++;
            }
            CHECK(n < 1000);
            n++;
        }
    }
    CHECK(gaps == ds->skipped);
    CHECK_MSG(ok, "a demonstration differs from the re-run world");
    CHECK(ds->n_steps == steps);
    nnz = ds->nz_first[ds->n_steps];
    double mean_nz = (double)nnz / (double)steps;
    /* ~50 of 1075 non-zero (craft.md §11's example has 45) */
    CHECK_MSG(mean_nz > 30.0 && mean_nz < 80.0, "mean non-zeros %.1f",
              mean_nz);
    CHECK(ds->max_nz < 120);
    CHECK(ds->max_len >= 2 && ds->max_len <= 64);

    /* the split: 20 / 5 per task, in order */
    CHECK(demo_set_split(ds, 0.8) == 0);
    CHECK(ds->n_train == 40 && ds->n_val == 10);
    for (int i = 0; i < 20; i++) {
        CHECK(ds->train[i] == i && ds->train[20 + i] == 25 + i);
    }
    for (int i = 0; i < 5; i++) {
        CHECK(ds->val[i] == 20 + i && ds->val[5 + i] == 45 + i);
    }
}

static void test_batch(const struct demo_set *ds)
{
    struct demo_batch b;
    memset(&b, 0, sizeof b);
    const int64_t ids[6] = {3, 30, 0, 41, 12, 3};
    CHECK(demo_batch_build(&b, ds, ids, 6) == 0);
    CHECK(b.B == 6);
    int64_t rows = 0;
    int T = 0;
    for (int i = 0; i < 6; i++) {
        rows += ds->len[ids[i]];
        T = ds->len[ids[i]] > T ? ds->len[ids[i]] : T;
    }
    CHECK(b.rows == rows && b.T == T);
    /* sorted by decreasing length, ties in the given order: compare with
     * a selection sort on (-length, position) */
    int used[6] = {0};
    for (int i = 0; i < 6; i++) {
        int best = -1;
        for (int k = 0; k < 6; k++) {
            if (!used[k] && (best < 0 || ds->len[ids[k]] > ds->len[ids[best]])) {
                best = k;
            }
        }
        used[best] = 1;
        CHECK(b.demo[i] == ids[best]);
        CHECK(b.len[i] == ds->len[ids[best]]);
    }
    /* rows of step t: the first B_t elements, dense obs equal */
    for (int t = 0; t < b.T; t++) {
        int act = 0;
        for (int i = 0; i < 6; i++) {
            act += b.len[i] > t;
        }
        CHECK(b.active[t] == act);
        CHECK(b.row_off[t + 1] - b.row_off[t] == act);
        for (int i = 0; i < act; i++) {
            int64_t r = b.row_off[t] + i;
            int64_t s = ds->first[b.demo[i]] + t;
            CHECK(b.action[r] == ds->action[s]);
            CHECK(b.task[i] == ds->task[b.demo[i]]);
            float dense[CRAFT_OBS_SIZE], want[CRAFT_OBS_SIZE];
            memset(dense, 0, sizeof dense);
            memset(want, 0, sizeof want);
            for (int j = 0; j < b.nz; j++) {
                int32_t c = b.idx[r * b.nz + j];
                if (c >= 0) {
                    dense[c] += b.val[r * b.nz + j];
                } else {
                    CHECK(b.val[r * b.nz + j] == 0.0f);
                }
            }
            for (int64_t j = ds->nz_first[s]; j < ds->nz_first[s + 1]; j++) {
                want[ds->nz_idx[j]] = ds->nz_val[j];
            }
            CHECK(memcmp(dense, want, sizeof dense) == 0);
        }
    }
    CHECK(b.row_off[b.T] == b.rows);
    /* rebuilding smaller reuses the arrays */
    const int64_t one[1] = {5};
    CHECK(demo_batch_build(&b, ds, one, 1) == 0);
    CHECK(b.B == 1 && b.rows == ds->len[5] && b.active[0] == 1);
    /* bad input */
    const int64_t bad[1] = {ds->n};
    CHECK(demo_batch_build(&b, ds, bad, 1) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "outside");
    CHECK(demo_batch_build(&b, ds, one, 0) == GR_EINVAL);
    demo_batch_free(&b);
}

/* Writes ds's demonstrations as a replay, plus a DC episode (not asked
 * for) and an unfinished AC episode, and reads it back. */
static void test_replay(const struct demo_set *ds)
{
    char path[256];
    snprintf(path, sizeof path, "/tmp/grove_test_demos_%ld.replay",
             (long)getpid());
    struct replay_header h;
    replay_header_init(&h, &ds->config, "expert");
    struct replay_writer *w = NULL;
    CHECK(replay_writer_open(&w, path, 1, &h) == 0);
    if (w == NULL) {
        return;
    }
    struct craft_task dc;
    craft_task_parse("DC", &dc);
    for (int64_t i = 0; i < ds->n; i++) {
        if (i == 10) {
            /* an episode of another task */
            struct craft_world x;
            craft_world_reset(&x, &ds->config, 99, &dc);
            replay_writer_episode_start(w, &x);
            while (!craft_world_done(&x)) {
                int a;
                if (craft_expert_act(&x, &a, NULL) != CRAFT_EXPERT_OK) {
                    a = 0;
                }
                replay_record_step(w, &x, a, NULL, NULL);
            }
        }
        if (i == 20) {
            /* an AC episode that never finishes (turns to the time limit) */
            struct craft_world x;
            craft_world_reset(&x, &ds->config, 5, &ds->tasks[0]);
            replay_writer_episode_start(w, &x);
            while (!craft_world_done(&x)) {
                replay_record_step(w, &x, CRAFT_ACTION_DOWN + (x.t & 1), NULL,
                                   NULL);
            }
        }
        struct craft_world x;
        craft_world_reset(&x, &ds->config, ds->seed[i],
                          &ds->tasks[ds->task[i]]);
        replay_writer_episode_start(w, &x);
        for (int t = 0; t < ds->len[i]; t++) {
            replay_record_step(w, &x, ds->action[ds->first[i] + t], NULL,
                               NULL);
        }
    }
    CHECK(replay_writer_close(w) == 0);

    struct demo_set rd;
    CHECK(demo_set_load_replay(&rd, path, ds->tasks, 2) == 0);
    CHECK(rd.n == ds->n);
    CHECK(rd.other_tasks == 1);
    CHECK(rd.skipped == 1);
    CHECK(rd.n_steps == ds->n_steps);
    CHECK(rd.max_nz == ds->max_nz && rd.max_len == ds->max_len);
    int same = rd.n == ds->n && rd.n_steps == ds->n_steps;
    for (int64_t i = 0; same && i < ds->n; i++) {
        same &= rd.task[i] == ds->task[i] && rd.len[i] == ds->len[i] &&
                rd.seed[i] == ds->seed[i] && rd.first[i] == ds->first[i];
    }
    if (same) {
        same &= memcmp(rd.action, ds->action, (size_t)ds->n_steps) == 0;
        same &= memcmp(rd.subtask, ds->subtask, (size_t)ds->n_steps) == 0;
        same &= memcmp(rd.boundary, ds->boundary, (size_t)ds->n_steps) == 0;
        int64_t nnz = ds->nz_first[ds->n_steps];
        same &= memcmp(rd.nz_first, ds->nz_first,
                       (size_t)(ds->n_steps + 1) * sizeof *ds->nz_first) == 0;
        same &= memcmp(rd.nz_idx, ds->nz_idx,
                       (size_t)nnz * sizeof *ds->nz_idx) == 0;
        same &= memcmp(rd.nz_val, ds->nz_val,
                       (size_t)nnz * sizeof *ds->nz_val) == 0;
    }
    CHECK_MSG(same, "the replay's demonstrations differ from the generated");
    demo_set_free(&rd);

    /* a task the file lacks */
    struct craft_task only[1];
    craft_task_parse("DA", &only[0]);
    CHECK(demo_set_load_replay(&rd, path, only, 1) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "no finished episode of task DA");

    /* a truncated file is refused naming the byte offset */
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    CHECK(truncate(path, size / 2) == 0);
    CHECK(demo_set_load_replay(&rd, path, ds->tasks, 2) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "byte");
    unlink(path);
    CHECK(demo_set_load_replay(&rd, path, ds->tasks, 2) < 0);
}

static void test_split_errors(void)
{
    struct demo_set ds;
    struct craft_config cfg;
    craft_config_default(&cfg);
    struct craft_task t;
    craft_task_parse("A", &t);
    CHECK(demo_set_generate(&ds, &cfg, &t, 1, 1, 3, NULL, NULL) == 0);
    CHECK(demo_set_split(&ds, 0.8) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "task A has 1 demonstrations");
    demo_set_free(&ds);
    CHECK(demo_set_generate(&ds, &cfg, &t, 1, 0, 3, NULL, NULL) ==
          GR_EINVAL);
}

int main(void)
{
    struct demo_set ds;
    struct craft_task tasks[2];
    test_generate(&ds, tasks);
    test_batch(&ds);
    test_replay(&ds);
    demo_set_free(&ds);
    test_split_errors();
    return test_report("agents_demos");
}
