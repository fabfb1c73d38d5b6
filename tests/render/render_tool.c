/* Helpers for the render command tests (test_view_cli.sh):
 *
 *   render_tool pngcmp A.png B.png
 *       exit 0 when both decode to the same pixels, else 1 naming the first
 *       differing pixel (or the sizes)
 *   render_tool make-replay OUT.replay
 *       an expert replay (agent kind "synthetic") of tasks AC, CD, DCA (one
 *       episode each, keyframe every 4 steps) whose steps carry option
 *       data shaped like an OCN's:
 *       o = the subtask being worked on, po one-hot-ish on it, pe 0.9 on
 *       the step that completes a subtask, else 0.05·(t mod 4)
 *   render_tool expert-keys SEED TASK
 *       the expert's actions for episode 0 of `grove craft play --seed SEED
 *       --tasks TASK`, as a --keys script (up,right,space,...)
 *   render_tool summary FILE.replay
 *       "agent KIND episodes N successes S steps T" after a verifying read
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "envs/craft.h"
#include "envs/expert.h"
#include "render/image.h"
#include "render/pngfile.h"
#include "replays/replay.h"

static int pngcmp(const char *a, const char *b)
{
    struct render_image ia, ib;
    if (render_png_read(a, &ia) < 0 || render_png_read(b, &ib) < 0) {
        fprintf(stderr, "pngcmp: %s\n", gr_last_error());
        return 2;
    }
    int rc = 0;
    if (ia.width != ib.width || ia.height != ib.height) {
        fprintf(stderr, "pngcmp: %s is %dx%d, %s is %dx%d\n", a, ia.width,
                ia.height, b, ib.width, ib.height);
        rc = 1;
    } else if (!render_image_equal(&ia, &ib)) {
        for (int y = 0; y < ia.height && rc == 0; y++) {
            for (int x = 0; x < ia.width && rc == 0; x++) {
                uint32_t pa = render_get_pixel(&ia, x, y);
                uint32_t pb = render_get_pixel(&ib, x, y);
                if (pa != pb) {
                    fprintf(stderr, "pngcmp: first difference at (%d,%d): "
                            "%08x vs %08x\n", x, y, pa, pb);
                    rc = 1;
                }
            }
        }
    }
    render_image_free(&ia);
    render_image_free(&ib);
    return rc;
}

static int fail(const char *what)
{
    fprintf(stderr, "render_tool %s: %s\n", what, gr_last_error());
    return 1;
}

static int make_replay(const char *path)
{
    struct craft_config cfg;
    craft_config_default(&cfg);
    struct replay_header h;
    replay_header_init(&h, &cfg, "synthetic");
    h.agent_n_options = 3;
    h.keyframe_every = 4;
    snprintf(h.grove, sizeof h.grove, "render_tool");
    struct replay_writer *w;
    if (replay_writer_open(&w, path, 1, &h) < 0) {
        return fail("make-replay");
    }
    const char *tasks[] = {"AC", "CD", "DCA"};
    int written = 0;
    for (uint64_t n = 0; written < 3 && n < 50; n++) {
        struct craft_task task;
        craft_task_parse(tasks[written], &task);
        struct craft_world world;
        if (craft_world_reset(&world, &cfg, craft_episode_seed(7, 0, n),
                              &task) < 0) {
            return fail("make-replay");
        }
        uint8_t acts[1024];
        int len = 0;
        if (craft_expert_rollout(&world, acts, 1024, &len) != CRAFT_EXPERT_OK) {
            continue; /* a map the expert cannot finish */
        }
        if (replay_writer_episode_start(w, &world) < 0) {
            return fail("make-replay");
        }
        for (int i = 0; i < len; i++) {
            struct craft_world next = world;
            struct craft_step st;
            craft_world_step(&next, acts[i], &st);
            float po[3] = {0.05f, 0.05f, 0.05f};
            int k = world.k < 3 ? world.k : 2;
            po[k] = 0.9f;
            struct replay_option_info opt = {1, (uint32_t)k, 3, po, 1,
                                             st.completed
                                                 ? 0.9f
                                                 : 0.05f * (float)(i % 4)};
            if (replay_record_step(w, &world, acts[i], &opt, NULL) < 0) {
                return fail("make-replay");
            }
        }
        written++;
    }
    if (replay_writer_close(w) < 0) {
        return fail("make-replay");
    }
    return 0;
}

static int expert_keys(const char *seed_text, const char *task_name)
{
    struct craft_config cfg;
    craft_config_default(&cfg);
    struct craft_task task;
    if (craft_task_parse(task_name, &task) < 0) {
        return fail("expert-keys");
    }
    struct craft_world world;
    uint64_t seed = strtoull(seed_text, NULL, 0);
    if (craft_world_reset(&world, &cfg, craft_episode_seed(seed, 0, 0),
                          &task) < 0) {
        return fail("expert-keys");
    }
    uint8_t acts[1024];
    int len = 0;
    if (craft_expert_rollout(&world, acts, 1024, &len) != CRAFT_EXPERT_OK) {
        fprintf(stderr, "expert-keys: the expert cannot finish this map\n");
        return 1;
    }
    const char *names[CRAFT_N_ACTIONS] = {"down", "up", "left", "right",
                                          "space"};
    for (int i = 0; i < len; i++) {
        printf("%s%s", i ? "," : "", names[acts[i]]);
    }
    printf("\n");
    return 0;
}

static int summary(const char *path)
{
    struct replay_verify_result res;
    if (replay_verify_file(path, &res) < 0) {
        return fail("summary");
    }
    struct replay_reader *r;
    if (replay_reader_open(&r, path, 0) < 0) {
        return fail("summary");
    }
    printf("agent %s episodes %llu successes %llu steps %llu\n",
           replay_reader_header(r)->agent_kind,
           (unsigned long long)res.episodes,
           (unsigned long long)res.successes, (unsigned long long)res.steps);
    replay_reader_close(r);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "pngcmp") == 0) {
        return pngcmp(argv[2], argv[3]);
    }
    if (argc == 3 && strcmp(argv[1], "make-replay") == 0) {
        return make_replay(argv[2]);
    }
    if (argc == 4 && strcmp(argv[1], "expert-keys") == 0) {
        return expert_keys(argv[2], argv[3]);
    }
    if (argc == 3 && strcmp(argv[1], "summary") == 0) {
        return summary(argv[2]);
    }
    fprintf(stderr, "usage: render_tool pngcmp A B | make-replay OUT | "
            "expert-keys SEED TASK | summary FILE\n");
    return 2;
}
