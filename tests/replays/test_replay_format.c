/* The format as another program would write it: files built by hand with
 * msgpack-c (not with grove's writer) check that unknown keys are ignored,
 * that both readings of the footer are accepted, that the reader refuses an
 * unknown major version by number, wrong magic, missing keys and wrong
 * types with messages naming the object, its byte offset and what was
 * expected, and that forged lengths and nesting never make it allocate. */
#include "tests/replays/replay_util.h"

#include <inttypes.h>
#include <msgpack.h>

#include "tests/test.h"

struct variant {
    uint64_t version;
    const char *magic;
    int extra_keys;      /* unknown keys in every record */
    int nested_footer;   /* "footer": {fields} instead of "footer": true */
    const char *drop;    /* a step key to leave out of step 1 */
    int a_as_string;     /* step 1's "a" is "up" */
    int wrong_hash;      /* keyframe hash off by one */
    int bad_crc;         /* footer crc32 off by one */
};

static void str(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

static void extra(msgpack_packer *pk)
{
    str(pk, "zz_future");
    msgpack_pack_array(pk, 2);
    msgpack_pack_nil(pk);
    msgpack_pack_map(pk, 1);
    str(pk, "x");
    msgpack_pack_double(pk, 2.5);
}

/* Builds a complete file of one expert episode of task AC. Offsets of the
 * step records go to step_off[] (up to 64). */
static msgpack_sbuffer build(const struct variant *v, uint64_t *step_off,
                             int *n_steps)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    int ex = v->extra_keys ? 1 : 0;

    msgpack_pack_map(&pk, 7 + ex);
    if (ex) {
        extra(&pk);
    }
    str(&pk, "magic");
    str(&pk, v->magic);
    str(&pk, "version");
    msgpack_pack_uint64(&pk, v->version);
    str(&pk, "env");
    str(&pk, "craft");
    str(&pk, "env_config");
    msgpack_pack_map(&pk, 10 + ex);
    str(&pk, "width");
    msgpack_pack_int(&pk, 10);
    str(&pk, "height");
    msgpack_pack_int(&pk, 10);
    str(&pk, "primitives");
    msgpack_pack_array(&pk, 4);
    str(&pk, "iron");
    str(&pk, "grass");
    str(&pk, "wood");
    str(&pk, "gold");
    str(&pk, "n_each");
    msgpack_pack_int(&pk, 1);
    str(&pk, "workshops");
    msgpack_pack_true(&pk);
    str(&pk, "treasure");
    str(&pk, "none");
    str(&pk, "coarse_view");
    msgpack_pack_true(&pk);
    str(&pk, "max_steps");
    msgpack_pack_int(&pk, 64);
    str(&pk, "reward");
    str(&pk, "dense");
    if (ex) {
        extra(&pk);
    }
    str(&pk, "recipes");
    str(&pk, "ompn");
    str(&pk, "agent");
    msgpack_pack_map(&pk, 3);
    str(&pk, "kind");
    str(&pk, "human");
    str(&pk, "checkpoint");
    str(&pk, "");
    str(&pk, "n_options");
    msgpack_pack_int(&pk, 0);
    str(&pk, "created");
    str(&pk, "2026-01-01T00:00:00Z");
    str(&pk, "grove");
    str(&pk, "hand-built");

    struct craft_config cfg;
    craft_config_default(&cfg);
    struct craft_task task;
    craft_task_parse("AC", &task);
    struct craft_world w;
    uint64_t seed = 1234;
    craft_world_reset(&w, &cfg, seed, &task);

    msgpack_pack_map(&pk, 3 + ex);
    str(&pk, "episode");
    msgpack_pack_int(&pk, 0);
    if (ex) {
        extra(&pk);
    }
    str(&pk, "seed");
    msgpack_pack_uint64(&pk, seed);
    str(&pk, "task");
    msgpack_pack_array(&pk, 2);
    str(&pk, "get wood");
    str(&pk, "get iron");

    uint64_t key_off = sb.size;
    uint8_t state[CRAFT_STATE_MAX_BYTES];
    int n = craft_state_bytes(&w, state, sizeof state);
    msgpack_pack_map(&pk, 3 + ex);
    str(&pk, "hash");
    msgpack_pack_uint64(&pk, gr_fnv1a64(state, (size_t)n) +
                                 (v->wrong_hash ? 1 : 0));
    str(&pk, "state");
    msgpack_pack_bin(&pk, (size_t)n);
    msgpack_pack_bin_body(&pk, state, (size_t)n);
    if (ex) {
        extra(&pk);
    }
    str(&pk, "t");
    msgpack_pack_int(&pk, 0);

    int t = 0;
    struct craft_step st;
    do {
        int a, sub;
        craft_expert_act(&w, &a, &sub);
        craft_world_step(&w, a, &st);
        if (t < 64) {
            step_off[t] = sb.size;
        }
        int drop = (t == 1 && v->drop != NULL);
        msgpack_pack_map(&pk, 6 + ex - drop);
        if (!(drop && strcmp(v->drop, "tr") == 0)) {
            str(&pk, "tr");
            msgpack_pack_false(&pk);
        }
        if (!(drop && strcmp(v->drop, "a") == 0)) {
            str(&pk, "a");
            if (t == 1 && v->a_as_string) {
                str(&pk, "up");
            } else {
                msgpack_pack_int(&pk, a);
            }
        }
        if (!(drop && strcmp(v->drop, "t") == 0)) {
            str(&pk, "t");
            msgpack_pack_int(&pk, t);
        }
        if (!(drop && strcmp(v->drop, "r") == 0)) {
            str(&pk, "r");
            msgpack_pack_double(&pk, st.reward); /* float64 is fine */
        }
        if (ex) {
            extra(&pk);
        }
        if (!(drop && strcmp(v->drop, "d") == 0)) {
            str(&pk, "d");
            if (st.terminated) {
                msgpack_pack_true(&pk);
            } else {
                msgpack_pack_false(&pk);
            }
        }
        if (!(drop && strcmp(v->drop, "s") == 0)) {
            str(&pk, "s");
            msgpack_pack_int(&pk, st.subtask);
        }
        t++;
    } while (!st.terminated);
    *n_steps = t;

    msgpack_pack_map(&pk, 4 + ex);
    str(&pk, "end");
    msgpack_pack_int(&pk, 0);
    str(&pk, "return");
    msgpack_pack_double(&pk, 2.0);
    str(&pk, "length");
    msgpack_pack_int(&pk, t);
    if (ex) {
        extra(&pk);
    }
    str(&pk, "success");
    msgpack_pack_true(&pk);

    uint64_t footer_at = sb.size;
    uint32_t crc = gr_crc32(0, sb.data, sb.size) + (v->bad_crc ? 1 : 0);
    msgpack_pack_map(&pk, (v->nested_footer ? 1 : 5) + ex);
    if (ex) {
        extra(&pk);
    }
    str(&pk, "footer");
    if (v->nested_footer) {
        msgpack_pack_map(&pk, 4);
    } else {
        msgpack_pack_true(&pk);
    }
    str(&pk, "crc32");
    msgpack_pack_uint32(&pk, crc);
    str(&pk, "index");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_array(&pk, 3);
    msgpack_pack_int(&pk, 0);
    msgpack_pack_int(&pk, 0);
    msgpack_pack_uint64(&pk, key_off);
    str(&pk, "episodes");
    msgpack_pack_int(&pk, 1);
    str(&pk, "steps");
    msgpack_pack_int(&pk, t);
    char trailer[12];
    memcpy(trailer, "GRRFOOT1", 8);
    for (int i = 0; i < 4; i++) {
        trailer[8 + i] = (char)(footer_at >> (8 * i));
    }
    msgpack_sbuffer_write(&sb, trailer, 12);
    return sb;
}

/* Reads a whole buffer with re-simulation; returns 0 or the error. */
static int read_all(const void *data, size_t n, int *steps)
{
    struct replay_reader *r;
    int rc = replay_reader_open_memory(&r, data, n, "hand.replay",
                                       REPLAY_READ_VERIFY);
    if (rc < 0) {
        return rc;
    }
    struct replay_record rec;
    int s = 0;
    while ((rc = replay_reader_next(r, &rec)) > 0) {
        s += rec.type == REPLAY_RECORD_STEP;
    }
    replay_reader_close(r);
    if (steps != NULL) {
        *steps = s;
    }
    return rc;
}

static const struct variant base = {1, "grove-replay", 0, 0, NULL, 0, 0, 0};

static void expect_error(struct variant v, const char *const *parts)
{
    uint64_t off[64];
    int n = 0;
    msgpack_sbuffer sb = build(&v, off, &n);
    int rc = read_all(sb.data, sb.size, NULL);
    CHECK(rc == GR_EFORMAT);
    for (int i = 0; parts[i] != NULL; i++) {
        CHECK_STR_CONTAINS(gr_last_error(), parts[i]);
    }
    msgpack_sbuffer_destroy(&sb);
}

static void test_hand_built(void)
{
    uint64_t off[64];
    int n = 0, steps = 0;
    struct variant v = base;
    msgpack_sbuffer sb = build(&v, off, &n);
    CHECK_MSG(read_all(sb.data, sb.size, &steps) == 0, "%s", gr_last_error());
    CHECK(steps == n && n > 1);
    msgpack_sbuffer_destroy(&sb);

    v.extra_keys = 1;
    v.nested_footer = 1;
    sb = build(&v, off, &n);
    CHECK_MSG(read_all(sb.data, sb.size, &steps) == 0,
              "unknown keys / nested footer: %s", gr_last_error());
    msgpack_sbuffer_destroy(&sb);

    v = base;
    v.version = 2;
    expect_error(v, (const char *const[]){"version 2 is not supported",
                                          "reads version 1", "byte 0", NULL});
    v = base;
    v.magic = "grove-replaz";
    expect_error(v, (const char *const[]){"not a grove replay",
                                          "grove-replaz", NULL});

    /* a missing key and a wrong type name the step's byte offset */
    v = base;
    v.drop = "a";
    sb = build(&v, off, &n);
    msgpack_sbuffer_destroy(&sb);
    char at[64];
    snprintf(at, sizeof at, "corrupt at byte %" PRIu64 ": step", off[1]);
    expect_error(v, (const char *const[]){at, "\"a\" is missing", NULL});
    v.drop = "tr";
    expect_error(v, (const char *const[]){at, "\"tr\" is missing", NULL});
    v = base;
    v.a_as_string = 1;
    expect_error(v, (const char *const[]){at, "\"a\" is a string",
                                          "expected an unsigned integer",
                                          NULL});
    v = base;
    v.wrong_hash = 1;
    expect_error(v, (const char *const[]){"keyframe", "FNV-1a", NULL});
    v = base;
    v.bad_crc = 1;
    expect_error(v, (const char *const[]){"footer", "crc32", NULL});
}

/* A valid header followed by raw bytes. */
static int read_after_header(const uint8_t *tail, size_t n)
{
    uint64_t off[64];
    int steps = 0;
    struct variant v = base;
    msgpack_sbuffer sb = build(&v, off, &steps);
    /* the header is the first object: find its end with a reader */
    struct replay_reader *r;
    CHECK(replay_reader_open_memory(&r, sb.data, sb.size, "x", 0) == 0);
    struct replay_record rec;
    replay_reader_next(r, &rec);
    size_t head = (size_t)rec.size;
    replay_reader_close(r);
    uint8_t *buf = malloc(head + n);
    memcpy(buf, sb.data, head);
    memcpy(buf + head, tail, n);
    msgpack_sbuffer_destroy(&sb);
    int rc = read_all(buf, head + n, NULL);
    free(buf);
    return rc;
}

static void test_forged_lengths(void)
{
    /* counts and lengths of 4 billion: refused before any allocation */
    static const uint8_t array32[] = {0xdd, 0xff, 0xff, 0xff, 0xff, 0x01};
    static const uint8_t map32[] = {0xdf, 0xff, 0xff, 0xff, 0xf0, 0xa1, 'a'};
    static const uint8_t str32[] = {0x81, 0xdb, 0xff, 0xff, 0xff, 0xff, 'x'};
    static const uint8_t bin32[] = {0x81, 0xa1, 't', 0xc6, 0x7f, 0xff, 0xff,
                                    0xff, 0x00};
    static const uint8_t ext32[] = {0xc9, 0x7f, 0xff, 0xff, 0xff, 0x01};
    CHECK(read_after_header(array32, sizeof array32) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "array of 4294967295 elements");
    CHECK(read_after_header(map32, sizeof map32) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "map of 4294967280 entries");
    CHECK(read_after_header(str32, sizeof str32) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "string of 4294967295 bytes");
    CHECK(read_after_header(bin32, sizeof bin32) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "binary of 2147483647 bytes");
    CHECK(read_after_header(ext32, sizeof ext32) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "extension");

    /* an object longer than REPLAY_MAX_OBJECT_BYTES, its bytes present */
    size_t big = REPLAY_MAX_OBJECT_BYTES + 100;
    uint8_t *huge = calloc(1, big + 16);
    CHECK(huge != NULL);
    if (huge != NULL) {
        uint8_t head[] = {0x81, 0xa1, 'a', 0xc6, (uint8_t)(big >> 24),
                          (uint8_t)(big >> 16), (uint8_t)(big >> 8),
                          (uint8_t)big};
        memcpy(huge, head, sizeof head);
        CHECK(read_after_header(huge, big + 16) == GR_EFORMAT);
        CHECK_STR_CONTAINS(gr_last_error(), "bytes a replay object may have");
        free(huge);
    }

    /* nesting: 200 one-element arrays */
    uint8_t deep[201];
    memset(deep, 0x91, 200);
    deep[200] = 0x00;
    CHECK(read_after_header(deep, sizeof deep) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "nested deeper");

    /* 0xc1 is no MessagePack type */
    static const uint8_t c1[] = {0x81, 0xa1, 'a', 0xc1};
    CHECK(read_after_header(c1, sizeof c1) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "0xc1");

    /* a record that is not a map, and a map that names no record */
    static const uint8_t num[] = {0x05};
    CHECK(read_after_header(num, sizeof num) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "record map was expected");
    static const uint8_t nokey[] = {0x81, 0xa1, 'q', 0x01};
    CHECK(read_after_header(nokey, sizeof nokey) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "none of the keys");

    /* not a replay at all */
    static const char text[] = "hello, world\n";
    CHECK(read_all(text, sizeof text - 1, NULL) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "byte 0");
}

int main(void)
{
    test_hand_built();
    test_forged_lengths();
    return test_report("replays_format");
}
