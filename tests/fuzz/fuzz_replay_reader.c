/* libFuzzer target for the replay reader: any bytes, read as a replay in
 * every mode (plain; recover + re-simulation), then through the trailer's
 * footer and its index (seek). The reader must never crash, leak, read out
 * of bounds or allocate without bound; its verdicts are not checked here
 * (tests/replays/ does that).
 *
 * Built with -DGROVE_FUZZ=ON under clang (tests/fuzz/CMakeLists.txt); the
 * same function runs without libFuzzer in the ctest replays_fuzz_regressions
 * (fuzz_main.c) over the inputs kept in tests/fuzz/regressions/
 * replay_reader/ and, as seeds that must read cleanly, the golden replay. */
#include "tests/fuzz/fuzz_util.h"

#include "replays/replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_all(const uint8_t *data, size_t size, unsigned flags)
{
    struct replay_reader *r;
    if (replay_reader_open_memory(&r, data, size, "fuzz", flags) < 0) {
        return;
    }
    struct replay_record rec;
    int rc;
    while ((rc = replay_reader_next(r, &rec)) > 0) {
    }
    if (rc == 0 && flags == 0) {
        fuzz_input_accepted = 1;
    }
    struct replay_reader_status st;
    replay_reader_status(r, &st);
    struct replay_footer f;
    if (replay_reader_footer(r, &f) == 0 && f.n_index > 0) {
        /* the first and the last keyframe the index names */
        struct replay_index_entry pick[2] = {f.index[0],
                                             f.index[f.n_index - 1]};
        for (int i = 0; i < 2; i++) {
            if (replay_reader_seek(r, &pick[i]) == 0) {
                int n = 0;
                while (n++ < 1000 && replay_reader_next(r, &rec) > 0) {
                }
            }
        }
    }
    replay_reader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input_accepted = 0;
    read_all(data, size, 0);
    read_all(data, size, REPLAY_READ_RECOVER | REPLAY_READ_VERIFY);
    return 0;
}
