/* Damaged files: a small replay cut at every byte offset gives either the
 * recovered prefix (with REPLAY_READ_RECOVER) or a clear "truncated at
 * byte N" error naming the first incomplete object, never a crash; a byte
 * flipped anywhere (three ways) is caught by the CRC, the hashes, or the
 * structure checks, with an error that names a byte offset. Runs under ASan
 * in the sanitizer build. */
#include "tests/replays/replay_util.h"

#include <inttypes.h>

#include "tests/test.h"

#define MAX_OBJ 4096

/* The original file's objects, from a full read. */
static uint64_t obj_off[MAX_OBJ], obj_end[MAX_OBJ];
static enum replay_record_type obj_type[MAX_OBJ];
static int n_obj;
static uint64_t footer_end;

static void index_objects(const uint8_t *data, size_t n)
{
    struct replay_reader *r;
    CHECK(replay_reader_open_memory(&r, data, n, "orig", 0) == 0);
    struct replay_record rec;
    int rc;
    n_obj = 0;
    while ((rc = replay_reader_next(r, &rec)) > 0 && n_obj < MAX_OBJ) {
        obj_off[n_obj] = rec.offset;
        obj_end[n_obj] = rec.offset + rec.size;
        obj_type[n_obj] = rec.type;
        n_obj++;
    }
    CHECK(rc == 0);
    footer_end = obj_end[n_obj - 1];
    CHECK(obj_type[n_obj - 1] == REPLAY_RECORD_FOOTER);
    CHECK(footer_end + REPLAY_TRAILER_SIZE == n);
    replay_reader_close(r);
}

/* Offset the reader must name for a file cut to `len` bytes: the start of
 * the first object not wholly inside, or the footer's end when only the
 * trailer is cut. */
static uint64_t first_incomplete(uint64_t len)
{
    for (int i = 0; i < n_obj; i++) {
        if (obj_end[i] > len) {
            return obj_off[i];
        }
    }
    return footer_end;
}

static int episodes_complete_within(uint64_t len)
{
    int n = 0;
    for (int i = 0; i < n_obj; i++) {
        if (obj_type[i] == REPLAY_RECORD_EPISODE_END && obj_end[i] <= len) {
            n++;
        }
    }
    return n;
}

static void test_truncation(const uint8_t *data, size_t size)
{
    int recovered_files = 0, header_cut = 0;
    for (size_t len = 0; len <= size; len++) {
        /* without recover: the whole file reads, any prefix fails clearly */
        struct replay_reader *r = NULL;
        int rc = replay_reader_open_memory(&r, data, len, "cut", 0);
        struct replay_record rec;
        if (rc == 0) {
            while ((rc = replay_reader_next(r, &rec)) > 0) {
            }
            replay_reader_close(r);
        }
        if (len == size) {
            CHECK_MSG(rc == 0, "full file: %s", gr_last_error());
            continue;
        }
        CHECK_MSG(rc == GR_EFORMAT, "len %zu: rc %d", len, rc);
        char want[64];
        snprintf(want, sizeof want, "truncated at byte %" PRIu64,
                 first_incomplete(len));
        if (len == 0) {
            CHECK_STR_CONTAINS(gr_last_error(), "empty");
        } else {
            CHECK_STR_CONTAINS(gr_last_error(), want);
        }

        /* with recover: the complete episodes, exactly */
        rc = replay_reader_open_memory(&r, data, len, "cut",
                                       REPLAY_READ_RECOVER |
                                           REPLAY_READ_VERIFY);
        if (len < obj_end[0]) {
            CHECK_MSG(rc == GR_EFORMAT, "len %zu: header cut but rc %d", len,
                      rc);
            header_cut++;
            continue;
        }
        CHECK_MSG(rc == 0, "len %zu: %s", len, gr_last_error());
        if (rc != 0) {
            continue;
        }
        int i = 0, ends = 0, ok = 1;
        while ((rc = replay_reader_next(r, &rec)) > 0) {
            if (i >= n_obj || rec.offset != obj_off[i] ||
                rec.offset + rec.size != obj_end[i] ||
                rec.type != obj_type[i]) {
                ok = 0;
            }
            ends += rec.type == REPLAY_RECORD_EPISODE_END;
            i++;
        }
        CHECK_MSG(rc == 0, "len %zu: recover failed: %s", len,
                  gr_last_error());
        CHECK_MSG(ok, "len %zu: recovered records differ", len);
        CHECK_MSG(ends == episodes_complete_within(len),
                  "len %zu: %d episodes recovered, %d complete", len, ends,
                  episodes_complete_within(len));
        /* nothing of an incomplete episode is handed out */
        CHECK(i == 0 || obj_type[i - 1] == REPLAY_RECORD_EPISODE_END ||
              obj_type[i - 1] == REPLAY_RECORD_HEADER);
        struct replay_reader_status st;
        replay_reader_status(r, &st);
        CHECK(st.truncated && !st.complete);
        CHECK_EQ_U64(st.truncated_at, first_incomplete(len));
        replay_reader_close(r);
        recovered_files++;
    }
    CHECK(recovered_files > 0 && header_cut > 0);
    printf("truncation: %zu prefixes, %d recovered, %d cut in the header\n",
           size, recovered_files, header_cut);
}

static void test_flips(const uint8_t *data, size_t size)
{
    static const uint8_t masks[] = {0x01, 0x80, 0xff};
    uint8_t *copy = malloc(size);
    int missed = 0, tried = 0;
    for (size_t i = 0; i < size; i++) {
        for (size_t m = 0; m < sizeof masks; m++) {
            memcpy(copy, data, size);
            copy[i] ^= masks[m];
            struct replay_reader *r = NULL;
            int rc = replay_reader_open_memory(&r, copy, size, "flip", 0);
            struct replay_record rec;
            if (rc == 0) {
                while ((rc = replay_reader_next(r, &rec)) > 0) {
                }
                replay_reader_close(r);
            }
            tried++;
            if (rc >= 0) {
                missed++;
                CHECK_MSG(rc < 0, "byte %zu ^ 0x%02x not caught", i,
                          masks[m]);
            } else {
                CHECK_MSG(strstr(gr_last_error(), "byte") != NULL,
                          "byte %zu ^ 0x%02x: '%s' names no offset", i,
                          masks[m], gr_last_error());
            }
        }
    }
    free(copy);
    printf("flips: %d tried, %d missed\n", tried, missed);
}

int main(void)
{
    tmp_init();
    char path[512];
    tmp_path(path, sizeof path, "small.replay");
    CHECK_MSG(record_expert(path, "AC", 2, 4) == 0, "%s", gr_last_error());
    size_t size = 0;
    uint8_t *data = slurp(path, &size);
    printf("small replay: %zu bytes\n", size);
    index_objects(data, size);
    test_truncation(data, size);
    test_flips(data, size);
    free(data);
    tmp_cleanup();
    return test_report("replays_damage");
}
