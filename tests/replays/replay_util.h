/* Helpers shared by the replay tests: temporary paths, reading a file into
 * memory, and recording a few expert episodes. Header-only, static. */
#ifndef GROVE_TESTS_REPLAY_UTIL_H
#define GROVE_TESTS_REPLAY_UTIL_H

#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/files.h"
#include "core/hash.h"
#include "envs/craft.h"
#include "envs/expert.h"
#include "replays/replay.h"

/* A fresh temporary folder (removed by the caller with tmp_cleanup). */
static char tmp_dir[256];
static inline void tmp_init(void)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/grove_replay_test_XXXXXX");
    if (mkdtemp(tmp_dir) == NULL) {
        perror("mkdtemp");
        exit(1);
    }
}
static inline void tmp_path(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", tmp_dir, name);
}
static inline void tmp_cleanup(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", tmp_dir);
    }
}

static inline uint8_t *slurp(const char *path, size_t *n)
{
    char *data = NULL;
    if (gr_read_file(path, 1u << 26, &data, n) < 0) {
        fprintf(stderr, "%s\n", gr_last_error());
        exit(1);
    }
    return (uint8_t *)data;
}

static inline void spit(const char *path, const uint8_t *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

/* Records `episodes` expert episodes of `task_name` (demo seeds of base
 * seed 7, maps the expert cannot finish skipped) into path, keyframes every
 * `every` steps, with a fixed "created" so the bytes are reproducible.
 * Returns 0 or the error. */
static inline int record_expert(const char *path, const char *task_name,
                         int episodes, uint32_t every)
{
    struct craft_config cfg;
    craft_config_default(&cfg);
    struct craft_task task;
    if (craft_task_parse(task_name, &task) < 0) {
        return -1;
    }
    struct replay_header h;
    replay_header_init(&h, &cfg, "expert");
    h.keyframe_every = every;
    snprintf(h.created, sizeof h.created, "2026-01-02T03:04:05Z");
    snprintf(h.grove, sizeof h.grove, "test");
    struct replay_writer *w;
    int rc = replay_writer_open(&w, path, 1, &h);
    if (rc < 0) {
        return rc;
    }
    int done = 0;
    for (uint64_t n = 0; done < episodes && n < 1000; n++) {
        struct craft_world world;
        craft_world_reset(&world, &cfg, craft_demo_seed(7, task.name, n),
                          &task);
        uint8_t acts[CRAFT_MAX_STEPS_LIMIT];
        int len = 0;
        if (craft_expert_rollout(&world, acts, (int)sizeof acts, &len) !=
            CRAFT_EXPERT_OK) {
            continue;
        }
        if ((rc = replay_writer_episode_start(w, &world)) < 0) {
            replay_writer_abort(w);
            return rc;
        }
        for (int i = 0; i < len; i++) {
            if ((rc = replay_record_step(w, &world, acts[i], NULL, NULL)) < 0) {
                replay_writer_abort(w);
                return rc;
            }
        }
        done++;
    }
    return replay_writer_close(w);
}

#endif
