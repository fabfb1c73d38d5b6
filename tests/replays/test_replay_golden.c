/* The golden replay (tests/fixtures/replays/golden.replay, made by
 * `grove craft demos --tasks AC,CD --episodes 2 --seed 3 --keyframe-every 4`)
 * re-simulated from its header: every keyframe hash reproduces; the CRC-32
 * of the bytes before the footer, computed here from the trailer's offset,
 * equals the footer's; each episode's seed is the demo seed of craft.md §9
 * (skips allowed) and its actions are what the expert plays today; and
 * writing the same episodes again with the same header gives the very same
 * bytes (the format, the state bytes and the expert have not drifted). */
#include "tests/replays/replay_util.h"

#include <inttypes.h>

#include "tests/test.h"

#ifndef GOLDEN_PATH
#error "GOLDEN_PATH must name tests/fixtures/replays/golden.replay"
#endif

#define MAX_EP 16

int main(void)
{
    tmp_init();
    size_t size = 0;
    uint8_t *gold = slurp(GOLDEN_PATH, &size);
    CHECK(size > REPLAY_TRAILER_SIZE);

    struct replay_verify_result res;
    CHECK_MSG(replay_verify_file(GOLDEN_PATH, &res) == 0, "%s",
              gr_last_error());
    CHECK(res.episodes == 4 && res.successes == 4);

    /* the checksum, recomputed from the raw bytes */
    const uint8_t *tr = gold + size - REPLAY_TRAILER_SIZE;
    CHECK(memcmp(tr, "GRRFOOT1", 8) == 0);
    uint32_t footer_at = (uint32_t)tr[8] | (uint32_t)tr[9] << 8 |
                         (uint32_t)tr[10] << 16 | (uint32_t)tr[11] << 24;
    CHECK(footer_at < size);
    CHECK(res.crc32 == gr_crc32(0, gold, footer_at));

    /* what the file holds */
    struct replay_reader *r;
    CHECK(replay_reader_open(&r, GOLDEN_PATH, 0) == 0);
    struct replay_header h = *replay_reader_header(r);
    struct replay_record rec;
    uint64_t seeds[MAX_EP];
    struct craft_task tasks[MAX_EP];
    uint8_t acts[MAX_EP][64];
    int lens[MAX_EP];
    int n_ep = 0;
    int rc;
    while ((rc = replay_reader_next(r, &rec)) > 0) {
        if (rec.type == REPLAY_RECORD_EPISODE_START && n_ep < MAX_EP) {
            seeds[n_ep] = rec.start.seed;
            tasks[n_ep] = rec.start.task;
            lens[n_ep] = 0;
            n_ep++;
        } else if (rec.type == REPLAY_RECORD_STEP && rec.step.t < 64) {
            acts[n_ep - 1][rec.step.t] = rec.step.a;
            lens[n_ep - 1]++;
        }
    }
    CHECK(rc == 0);
    replay_reader_close(r);
    CHECK(n_ep == 4);
    CHECK(strcmp(h.agent_kind, "expert") == 0 && h.keyframe_every == 4);

    /* seeds are demo seeds n = 0, 1, ... of base seed 3 per task */
    for (int e = 0; e < n_ep; e++) {
        int found = 0;
        for (uint64_t n = 0; n < 50 && !found; n++) {
            found = craft_demo_seed(3, tasks[e].name, n) == seeds[e];
        }
        CHECK_MSG(found, "episode %d: seed %" PRIx64 " is no demo seed of %s",
                  e, seeds[e], tasks[e].name);
    }

    /* the expert today plays the recorded actions; rewrite the file */
    char path[512];
    tmp_path(path, sizeof path, "again.replay");
    struct replay_writer *w;
    CHECK(replay_writer_open(&w, path, 0, &h) == 0);
    for (int e = 0; e < n_ep; e++) {
        struct craft_world world;
        CHECK(craft_world_reset(&world, &h.env_config, seeds[e], &tasks[e]) ==
              0);
        uint8_t now[64];
        int len = 0;
        CHECK(craft_expert_rollout(&world, now, 64, &len) == CRAFT_EXPERT_OK);
        CHECK(len == lens[e] && memcmp(now, acts[e], (size_t)len) == 0);
        CHECK(replay_writer_episode_start(w, &world) == e);
        for (int t = 0; t < len; t++) {
            CHECK(replay_record_step(w, &world, now[t], NULL, NULL) == 0);
        }
    }
    CHECK(replay_writer_close(w) == 0);
    size_t n2 = 0;
    uint8_t *again = slurp(path, &n2);
    CHECK_MSG(n2 == size && memcmp(again, gold, size) == 0,
              "rewritten file differs (%zu vs %zu bytes)", n2, size);
    free(again);
    free(gold);
    tmp_cleanup();
    return test_report("replays_golden");
}
