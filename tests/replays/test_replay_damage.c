/* Damaged files: a small replay cut at every byte offset gives either the
 * recovered prefix (with REPLAY_READ_RECOVER) or a clear "truncated at
 * byte N" error naming the first incomplete object, never a crash; a byte
 * flipped anywhere (three ways) is caught by the CRC, the hashes, or the
 * structure checks, with an error that names a byte offset. The offsets
 * and kinds of the file's objects the reader must name come from decoding
 * the file with msgpack-c here, not from the reader. Runs under ASan in
 * the sanitizer build. */
#include "tests/replays/replay_util.h"

#include <inttypes.h>
#include <msgpack.h>

#include "tests/test.h"

#define MAX_OBJ 4096

/* The original file's objects, decoded here with msgpack-c alone (not
 * the reader under test): each top-level object's offset, end and kind
 * (by its keys, spec/replay.md), then the 12-byte trailer naming the
 * footer's offset. */
static uint64_t obj_off[MAX_OBJ], obj_end[MAX_OBJ];
static enum replay_record_type obj_type[MAX_OBJ];
static int n_obj;
static uint64_t footer_end;

static int has_key(const msgpack_object *o, const char *key)
{
    if (o->type != MSGPACK_OBJECT_MAP) {
        return 0;
    }
    for (uint32_t i = 0; i < o->via.map.size; i++) {
        const msgpack_object *k = &o->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(key) &&
            memcmp(k->via.str.ptr, key, k->via.str.size) == 0) {
            return 1;
        }
    }
    return 0;
}

static enum replay_record_type kind_of(const msgpack_object *o)
{
    return has_key(o, "magic")    ? REPLAY_RECORD_HEADER
           : has_key(o, "footer") ? REPLAY_RECORD_FOOTER
           : has_key(o, "end")    ? REPLAY_RECORD_EPISODE_END
           : has_key(o, "hash")   ? REPLAY_RECORD_KEYFRAME
           : has_key(o, "seed")   ? REPLAY_RECORD_EPISODE_START
           : has_key(o, "a")      ? REPLAY_RECORD_STEP
                                  : (enum replay_record_type)0;
}

static void index_objects(const uint8_t *data, size_t n)
{
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    n_obj = 0;
    CHECK(n > REPLAY_TRAILER_SIZE);
    while (n_obj < MAX_OBJ && off < n - REPLAY_TRAILER_SIZE) {
        size_t at = off;
        if (msgpack_unpack_next(&u, (const char *)data,
                                n - REPLAY_TRAILER_SIZE, &off) !=
            MSGPACK_UNPACK_SUCCESS) {
            CHECK_MSG(0, "msgpack-c cannot decode the object at byte %zu",
                      at);
            break;
        }
        obj_off[n_obj] = at;
        obj_end[n_obj] = off;
        obj_type[n_obj] = kind_of(&u.data);
        CHECK_MSG(obj_type[n_obj] != 0, "object at byte %zu: no known key",
                  at);
        n_obj++;
    }
    msgpack_unpacked_destroy(&u);
    CHECK(n_obj >= 3 && obj_type[0] == REPLAY_RECORD_HEADER);
    CHECK(obj_type[n_obj - 1] == REPLAY_RECORD_FOOTER);
    footer_end = obj_end[n_obj - 1];
    CHECK(footer_end + REPLAY_TRAILER_SIZE == n);
    /* the trailer: "GRRFOOT1", the footer's offset (uint32, little-endian) */
    const uint8_t *t = data + n - REPLAY_TRAILER_SIZE;
    CHECK(memcmp(t, REPLAY_TRAILER, 8) == 0);
    CHECK(((uint64_t)t[8] | (uint64_t)t[9] << 8 | (uint64_t)t[10] << 16 |
           (uint64_t)t[11] << 24) == obj_off[n_obj - 1]);
    int ends = 0;
    for (int i = 0; i < n_obj; i++) {
        ends += obj_type[i] == REPLAY_RECORD_EPISODE_END;
    }
    CHECK(ends == 2);
}

/* The reader on the whole file hands out exactly those objects. */
static void check_full_read(const uint8_t *data, size_t n)
{
    struct replay_reader *r;
    CHECK(replay_reader_open_memory(&r, data, n, "orig", 0) == 0);
    struct replay_record rec;
    int rc, i = 0;
    while ((rc = replay_reader_next(r, &rec)) > 0) {
        CHECK_MSG(i < n_obj && rec.offset == obj_off[i] &&
                      rec.offset + rec.size == obj_end[i] &&
                      rec.type == obj_type[i],
                  "record %d: type %d at byte %llu, %llu bytes", i,
                  (int)rec.type, (unsigned long long)rec.offset,
                  (unsigned long long)rec.size);
        i++;
    }
    CHECK(rc == 0 && i == n_obj);
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
    check_full_read(data, size);
    test_truncation(data, size);
    test_flips(data, size);
    free(data);
    tmp_cleanup();
    return test_report("replays_damage");
}
