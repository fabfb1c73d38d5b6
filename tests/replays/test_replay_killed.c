/* A recording killed mid-episode (SIGKILL: no atexit, no stdio flush)
 * leaves PATH.tmp.PID valid up to its last flushed object: a plain read
 * reports it truncated at the first incomplete object, a recovering read
 * returns exactly the episodes completed before the kill, and PATH itself
 * was never created. */
#include "tests/replays/replay_util.h"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "tests/test.h"

#define DONE_BEFORE_KILL 3

static void child(const char *path)
{
    struct craft_config cfg;
    craft_config_default(&cfg);
    struct craft_task task;
    craft_task_parse("CD", &task);
    struct replay_header h;
    replay_header_init(&h, &cfg, "expert");
    struct replay_writer *w;
    if (replay_writer_open(&w, path, 0, &h) < 0) {
        _exit(3);
    }
    int done = 0;
    for (uint64_t n = 0; done <= DONE_BEFORE_KILL; n++) {
        struct craft_world world;
        craft_world_reset(&world, &cfg, craft_demo_seed(1, "CD", n), &task);
        uint8_t acts[64];
        int len = 0;
        if (craft_expert_rollout(&world, acts, 64, &len) != CRAFT_EXPERT_OK) {
            continue;
        }
        replay_writer_episode_start(w, &world);
        /* the last episode is cut after 3 of its steps */
        int steps = done == DONE_BEFORE_KILL ? 3 : len;
        for (int i = 0; i < steps; i++) {
            replay_record_step(w, &world, acts[i], NULL, NULL);
        }
        done++;
    }
    raise(SIGKILL);
    _exit(4);
}

int main(void)
{
    tmp_init();
    char path[512];
    tmp_path(path, sizeof path, "killed.replay");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        child(path);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    CHECK(!gr_path_exists(path));
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)pid);
    CHECK(gr_path_exists(tmp));

    struct replay_reader *r;
    struct replay_record rec;
    int rc = replay_reader_open(&r, tmp, 0);
    if (rc == 0) {
        while ((rc = replay_reader_next(r, &rec)) > 0) {
        }
        replay_reader_close(r);
    }
    CHECK(rc == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "truncated at byte");
    CHECK_STR_CONTAINS(gr_last_error(), "--recover");

    CHECK(replay_reader_open(&r, tmp, REPLAY_READ_RECOVER |
                                          REPLAY_READ_VERIFY) == 0);
    int ends = 0, starts = 0;
    while ((rc = replay_reader_next(r, &rec)) > 0) {
        ends += rec.type == REPLAY_RECORD_EPISODE_END;
        starts += rec.type == REPLAY_RECORD_EPISODE_START;
    }
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    CHECK(ends == DONE_BEFORE_KILL && starts == DONE_BEFORE_KILL);
    struct replay_reader_status st;
    replay_reader_status(r, &st);
    CHECK(st.truncated && !st.complete && st.episodes == DONE_BEFORE_KILL);
    replay_reader_close(r);
    tmp_cleanup();
    return test_report("replays_killed");
}
