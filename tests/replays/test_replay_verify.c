/* Verification by re-simulation: a faithful recording verifies; a file with
 * one action changed (written by the writer, so its CRC and structure are
 * fine and a plain read accepts it) fails verification with a message
 * naming the episode, the step and the byte offset; so do a changed seed
 * and a changed reward. */
#include "tests/replays/replay_util.h"

#include <inttypes.h>

#include "tests/test.h"

enum tamper { NONE, ACTION, SEED, REWARD };

/* Records one expert episode of AC (seed found by trying demo seeds) with
 * keyframes every 4 steps, changing one thing. Returns the step whose
 * action was changed (ACTION), else -1. */
static int record(const char *path, enum tamper how, uint64_t *seed_out)
{
    struct craft_config cfg;
    craft_config_default(&cfg);
    struct craft_task task;
    craft_task_parse("AC", &task);
    uint8_t acts[256];
    int len = 0;
    uint64_t seed = 0;
    struct craft_world world;
    for (uint64_t n = 0;; n++) {
        seed = craft_demo_seed(11, "AC", n);
        craft_world_reset(&world, &cfg, seed, &task);
        /* a long enough episode with a move at step 2 */
        if (craft_expert_rollout(&world, acts, (int)sizeof acts, &len) ==
                CRAFT_EXPERT_OK &&
            len >= 10 && acts[2] < CRAFT_ACTION_USE) {
            break;
        }
    }
    *seed_out = seed;
    struct replay_header h;
    replay_header_init(&h, &cfg, "expert");
    h.keyframe_every = 4;
    struct replay_writer *w;
    CHECK(replay_writer_open(&w, path, 1, &h) == 0);
    craft_world_reset(&world, &cfg, seed, &task);
    CHECK(replay_writer_episode_start_raw(w, how == SEED ? seed + 1 : seed,
                                          &task) == 0);
    int changed = -1;
    for (int t = 0; t < len; t++) {
        if (replay_writer_keyframe_due(w, (uint32_t)t)) {
            CHECK(replay_writer_keyframe(w, &world) == 0);
        }
        struct craft_step st;
        craft_world_step(&world, acts[t], &st);
        struct replay_step s;
        memset(&s, 0, sizeof s);
        s.t = (uint32_t)t;
        s.a = acts[t];
        s.r = st.reward;
        s.d = (uint8_t)(st.terminated || st.truncated);
        s.tr = (uint8_t)(st.truncated != 0);
        s.s = (uint32_t)st.subtask;
        if (how == ACTION && t == 2) {
            s.a = (uint8_t)(acts[t] ^ 1); /* DOWN<->UP, LEFT<->RIGHT */
            changed = t;
        }
        if (how == REWARD && st.reward > 0) {
            s.r = 0.5f; /* the return below is patched to match */
        }
        CHECK(replay_writer_step(w, &s) == 0);
    }
    double ret = world.episode_return;
    if (how == REWARD) {
        ret = 0.5 * world.task.n;
    }
    CHECK(replay_writer_episode_end(w, ret, (uint32_t)len, 1) == 0);
    CHECK(replay_writer_close(w) == 0);
    return changed;
}

static int read_plain(const char *path)
{
    struct replay_reader *r;
    int rc = replay_reader_open(&r, path, 0);
    if (rc < 0) {
        return rc;
    }
    struct replay_record rec;
    while ((rc = replay_reader_next(r, &rec)) > 0) {
    }
    replay_reader_close(r);
    return rc;
}

int main(void)
{
    tmp_init();
    char path[512];
    uint64_t seed;
    tmp_path(path, sizeof path, "v.replay");

    record(path, NONE, &seed);
    struct replay_verify_result res;
    CHECK_MSG(replay_verify_file(path, &res) == 0, "%s", gr_last_error());
    CHECK(res.episodes == 1 && res.keyframes >= 3);

    /* a changed action: readable, but verify names episode, step, byte */
    int t = record(path, ACTION, &seed);
    CHECK(t == 2);
    CHECK_MSG(read_plain(path) == 0, "%s", gr_last_error());
    CHECK(replay_verify_file(path, &res) == GR_EFORMAT);
    const char *msg = gr_last_error();
    printf("tampered action: %s\n", msg);
    CHECK_STR_CONTAINS(msg, "episode 0, step ");
    CHECK_STR_CONTAINS(msg, " at byte ");
    CHECK_STR_CONTAINS(msg, "re-simulation gives");
    /* the first keyframe after the change (t = 4) or the change itself */
    CHECK(strstr(msg, "step 4 (keyframe") != NULL ||
          strstr(msg, "step 2 (step") != NULL ||
          strstr(msg, "step 3 (step") != NULL);

    record(path, SEED, &seed);
    CHECK_MSG(read_plain(path) == 0, "%s", gr_last_error());
    CHECK(replay_verify_file(path, &res) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "episode 0, step 0 (keyframe at byte");

    record(path, REWARD, &seed);
    CHECK_MSG(read_plain(path) == 0, "%s", gr_last_error());
    CHECK(replay_verify_file(path, &res) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "recorded reward 0.5 but "
                                        "re-simulation gives 1");

    tmp_cleanup();
    return test_report("replays_verify");
}
