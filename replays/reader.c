/* The streaming replay reader and validator.
 *
 * Bytes come in fixed-size chunks. The structural scanner (scan.c) walks
 * each chunk first: it bounds every declared length by the bytes left and
 * stops at the end of each top-level object; only the scanned bytes of one
 * object are copied into msgpack-c's unpacker, which then decodes exactly
 * that object. So each record has a known offset and size, the CRC-32 is
 * taken over whole objects (the footer's covers every byte before it), and
 * the unpacker never sees a count it would allocate for without bound.
 *
 * Interpretation is strict about what the spec requires (keys, types,
 * order, numbering, hashes, footer, trailer) and ignores keys it does not
 * know. With REPLAY_READ_VERIFY a Craft world is re-simulated alongside. */
#define _POSIX_C_SOURCE 200809L
#include "replays/replay.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <msgpack.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/files.h"
#include "core/hash.h"
#include "replays/replay_internal.h"

#define CHUNK (64 * 1024)

enum phase {
    PHASE_HEADER,     /* the header comes next */
    PHASE_BETWEEN,    /* an episode start or the footer comes next */
    PHASE_EPISODE,    /* keyframes, steps of the open episode */
    PHASE_ENDING,     /* the last step was read: the episode end comes */
    PHASE_DONE,       /* footer and trailer checked */
};

struct replay_reader {
    char name[GR_PATH_MAX];
    unsigned flags;
    /* source: a file or bytes in memory */
    FILE *fp;
    uint8_t *mem;
    uint64_t size;        /* bytes in the source */
    uint64_t read_pos;    /* offset of the next byte to read from it */
    /* trailer, looked at on open */
    int trailer_ok;
    uint64_t trailer_footer; /* footer offset the trailer names */
    uint64_t data_end;    /* where the MessagePack objects end */
    /* chunking and decoding */
    uint8_t *chunk;
    size_t chunk_len, chunk_pos;
    struct replay_scanner scan;
    msgpack_unpacker up;
    int up_ready;
    msgpack_unpacked res;
    uint32_t crc;         /* CRC-32 of every byte of the objects decoded */
    uint32_t crc_before;  /* ... of the bytes before the current object */
    uint64_t obj_start, obj_size;
    /* a seek reads the keyframe it lands on; next() hands it out */
    int pending_seek;
    struct replay_record pending;
    /* outcome */
    int finished;         /* 1: next() returns `final_rc` from now on */
    int final_rc;
    int truncated;
    uint64_t truncated_at;
    uint64_t stop_at;     /* RECOVER: stop after the object ending here */
    int has_stop;
    int complete, crc_ok, seeked;
    /* the header record, returned first */
    struct replay_header header;
    int header_returned;
    /* order and numbering */
    enum phase phase;
    uint32_t episodes_started;
    uint64_t episodes_done;
    uint64_t steps_done;  /* steps of completed episodes */
    uint32_t cur_episode;
    uint32_t next_t;
    int64_t keyframe_t;   /* t of the open episode's last keyframe, -1 */
    int last_tr;
    double ret_sum;
    int ret_unknown;      /* after a seek into the episode */
    struct craft_task task;
    /* keyframes seen, to check the footer index */
    struct replay_index_entry *seen;
    size_t n_seen, cap_seen;
    /* reader-owned record storage */
    uint8_t *state;
    size_t state_cap;
    float po[REPLAY_MAX_OPTIONS];
    struct replay_index_entry *index;
    size_t cap_index;
    /* re-simulation */
    struct craft_world world, before;
    int have_world, have_before;
    uint8_t sim[CRAFT_STATE_MAX_BYTES];
};

/* ---- errors ---------------------------------------------------------------- */

static int finish(struct replay_reader *r, int rc)
{
    r->finished = 1;
    r->final_rc = rc;
    return rc;
}

/* "NAME: corrupt at byte N: WHAT: ..." and the reader stops. */
static int corrupt(struct replay_reader *r, uint64_t at, const char *what,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int corrupt(struct replay_reader *r, uint64_t at, const char *what,
                   const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gr_error(GR_EFORMAT, "%s: corrupt at byte %" PRIu64 ": %s: %s", r->name,
             at, what, msg);
    return finish(r, GR_EFORMAT);
}

static int truncated(struct replay_reader *r, uint64_t at, const char *fmt,
                     ...) __attribute__((format(printf, 3, 4)));
static int truncated(struct replay_reader *r, uint64_t at, const char *fmt,
                     ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    r->truncated = 1;
    r->truncated_at = at;
    gr_error(GR_EFORMAT, "%s: truncated at byte %" PRIu64 " (the first "
             "incomplete object): %s; %" PRIu64 " complete episodes before "
             "it (read them with --recover: grove replay info, dump, "
             "export or play --recover FILE)", r->name, at, msg,
             r->episodes_done);
    return finish(r, GR_EFORMAT);
}

/* A re-simulation mismatch: names episode, step and byte offset. */
static int mismatch(struct replay_reader *r, uint32_t t, const char *what,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int mismatch(struct replay_reader *r, uint32_t t, const char *what,
                    const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gr_error(GR_EFORMAT, "%s: episode %" PRIu32 ", step %" PRIu32 " (%s at "
             "byte %" PRIu64 "): %s", r->name, r->cur_episode, t, what,
             r->obj_start, msg);
    return finish(r, GR_EFORMAT);
}

/* ---- source ---------------------------------------------------------------- */

static int source_read_at(struct replay_reader *r, uint64_t at, void *buf,
                          size_t n, size_t *got)
{
    *got = 0;
    if (at >= r->size) {
        return 0;
    }
    if (n > r->size - at) {
        n = (size_t)(r->size - at);
    }
    if (r->mem != NULL) {
        memcpy(buf, r->mem + at, n);
        *got = n;
        return 0;
    }
    if (fseeko(r->fp, (off_t)at, SEEK_SET) != 0) {
        return gr_error(GR_EIO, "%s: cannot seek to byte %" PRIu64 ": %s",
                        r->name, at, strerror(errno));
    }
    *got = fread(buf, 1, n, r->fp);
    if (*got < n && ferror(r->fp)) {
        return gr_error(GR_EIO, "%s: read error at byte %" PRIu64 ": %s",
                        r->name, at + *got, strerror(errno));
    }
    return 0;
}

/* Looks at the last 12 bytes: "GRRFOOT1" and a footer offset that lies
 * before them. With a valid trailer the objects end where it begins. */
static int look_at_trailer(struct replay_reader *r)
{
    r->trailer_ok = 0;
    r->data_end = r->size;
    if (r->size < REPLAY_TRAILER_SIZE) {
        return 0;
    }
    uint8_t t[REPLAY_TRAILER_SIZE];
    size_t got = 0;
    int rc = source_read_at(r, r->size - REPLAY_TRAILER_SIZE, t, sizeof t,
                            &got);
    if (rc < 0) {
        return rc;
    }
    if (got != sizeof t || memcmp(t, REPLAY_TRAILER, 8) != 0) {
        return 0;
    }
    uint64_t off = (uint64_t)t[8] | (uint64_t)t[9] << 8 |
                   (uint64_t)t[10] << 16 | (uint64_t)t[11] << 24;
    if (off >= r->size - REPLAY_TRAILER_SIZE) {
        return 0;
    }
    r->trailer_ok = 1;
    r->trailer_footer = off;
    r->data_end = r->size - REPLAY_TRAILER_SIZE;
    return 0;
}

/* Positions the stream at object boundary `at` (the scanner, chunking and
 * unpacker start afresh). */
static int stream_reset(struct replay_reader *r, uint64_t at)
{
    if (r->up_ready) {
        msgpack_unpacked_destroy(&r->res);
        msgpack_unpacker_destroy(&r->up);
        r->up_ready = 0;
    }
    if (!msgpack_unpacker_init(&r->up, CHUNK)) {
        return gr_error(GR_ENOMEM, "%s: out of memory for the unpacker",
                        r->name);
    }
    msgpack_unpacked_init(&r->res);
    r->up_ready = 1;
    replay_scan_init(&r->scan, at, r->data_end, REPLAY_MAX_OBJECT_BYTES);
    r->read_pos = at;
    r->chunk_len = 0;
    r->chunk_pos = 0;
    return 0;
}

/* ---- one object -------------------------------------------------------------- */

/* Reads the next top-level object into r->res.data. Returns 1 with an
 * object, 0 when the stream is exactly at its end, or an error (finished). */
static int next_object(struct replay_reader *r)
{
    uint64_t start = r->scan.pos;
    if (start >= r->data_end) {
        return 0;
    }
    r->crc_before = r->crc;
    for (;;) {
        if (r->chunk_pos == r->chunk_len) {
            size_t want = CHUNK;
            if (r->data_end - r->read_pos < want) {
                want = (size_t)(r->data_end - r->read_pos);
            }
            size_t got = 0;
            int rc = source_read_at(r, r->read_pos, r->chunk, want, &got);
            if (rc < 0) {
                return finish(r, rc);
            }
            if (got == 0) {
                if (r->trailer_ok) {
                    return corrupt(r, start, "object",
                                   "it runs into the trailer at byte %" PRIu64,
                                   r->data_end);
                }
                return truncated(r, start, "the file ends inside an object "
                                 "(%" PRIu64 " bytes of it present)",
                                 r->data_end - start);
            }
            r->read_pos += got;
            r->chunk_len = got;
            r->chunk_pos = 0;
        }
        size_t used = 0;
        enum replay_scan_status st =
            replay_scan(&r->scan, r->chunk + r->chunk_pos,
                        r->chunk_len - r->chunk_pos, &used);
        if (st == REPLAY_SCAN_OK || st == REPLAY_SCAN_OBJECT) {
            if (used > 0) {
                if (!msgpack_unpacker_reserve_buffer(&r->up, used)) {
                    return finish(r, gr_error(GR_ENOMEM, "%s: out of memory "
                                              "at byte %" PRIu64, r->name,
                                              start));
                }
                memcpy(msgpack_unpacker_buffer(&r->up),
                       r->chunk + r->chunk_pos, used);
                msgpack_unpacker_buffer_consumed(&r->up, used);
                r->crc = gr_crc32(r->crc, r->chunk + r->chunk_pos, used);
                r->chunk_pos += used;
            }
            if (st == REPLAY_SCAN_OK) {
                continue;
            }
            break;
        }
        if (st == REPLAY_SCAN_OVERRUN && !r->trailer_ok) {
            return truncated(r, start, "at byte %" PRIu64 ", %s",
                             r->scan.err_pos, r->scan.err);
        }
        return corrupt(r, r->scan.err_pos, "object",
                       "%s (object starting at byte %" PRIu64 ")",
                       r->scan.err, start);
    }
    int rc = msgpack_unpacker_next(&r->up, &r->res);
    if (rc != MSGPACK_UNPACK_SUCCESS) {
        return corrupt(r, start, "object", "MessagePack decoding failed "
                       "(msgpack-c status %d)", rc);
    }
    /* every byte of the object was given to the unpacker and nothing more */
    r->obj_start = start;
    r->obj_size = r->scan.pos - start;
    return 1;
}

/* ---- typed access to map entries ------------------------------------------ */

static const char *type_name(const msgpack_object *o)
{
    switch (o->type) {
    case MSGPACK_OBJECT_NIL: return "nil";
    case MSGPACK_OBJECT_BOOLEAN: return "a boolean";
    case MSGPACK_OBJECT_POSITIVE_INTEGER: return "an unsigned integer";
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: return "a negative integer";
    case MSGPACK_OBJECT_FLOAT32: return "a float32";
    case MSGPACK_OBJECT_FLOAT64: return "a float64";
    case MSGPACK_OBJECT_STR: return "a string";
    case MSGPACK_OBJECT_ARRAY: return "an array";
    case MSGPACK_OBJECT_MAP: return "a map";
    case MSGPACK_OBJECT_BIN: return "a binary";
    case MSGPACK_OBJECT_EXT: return "an extension";
    }
    return "an unknown type";
}

static int key_is(const msgpack_object *k, const char *key)
{
    size_t n = strlen(key);
    return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
           memcmp(k->via.str.ptr, key, n) == 0;
}

/* The value of `key` in map m, or NULL (the first one if repeated). */
static const msgpack_object *map_get(const msgpack_object *m, const char *key)
{
    for (uint32_t i = 0; i < m->via.map.size; i++) {
        if (key_is(&m->via.map.ptr[i].key, key)) {
            return &m->via.map.ptr[i].val;
        }
    }
    return NULL;
}

/* Context for field errors: which record, where. */
struct ctx {
    struct replay_reader *r;
    const char *what; /* "step", "header env_config", ... */
};

static int need(struct ctx *c, const msgpack_object *m, const char *key,
                const msgpack_object **v)
{
    *v = map_get(m, key);
    if (*v == NULL) {
        return corrupt(c->r, c->r->obj_start, c->what,
                       "the required key \"%s\" is missing", key);
    }
    return 0;
}

static int wrong_type(struct ctx *c, const char *key,
                      const msgpack_object *v, const char *expected)
{
    return corrupt(c->r, c->r->obj_start, c->what,
                   "\"%s\" is %s, expected %s", key, type_name(v), expected);
}

static int as_u64(struct ctx *c, const char *key, const msgpack_object *v,
                  uint64_t max, uint64_t *out)
{
    if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
        return wrong_type(c, key, v, "an unsigned integer");
    }
    if (v->via.u64 > max) {
        return corrupt(c->r, c->r->obj_start, c->what,
                       "\"%s\" is %" PRIu64 ", more than %" PRIu64, key,
                       v->via.u64, max);
    }
    *out = v->via.u64;
    return 0;
}

static int get_u64(struct ctx *c, const msgpack_object *m, const char *key,
                   uint64_t max, uint64_t *out)
{
    const msgpack_object *v;
    int rc = need(c, m, key, &v);
    return rc < 0 ? rc : as_u64(c, key, v, max, out);
}

static int get_u32(struct ctx *c, const msgpack_object *m, const char *key,
                   uint32_t max, uint32_t *out)
{
    uint64_t v = 0;
    int rc = get_u64(c, m, key, max, &v);
    *out = (uint32_t)v;
    return rc;
}

static int as_number(struct ctx *c, const char *key, const msgpack_object *v,
                     double *out)
{
    switch (v->type) {
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        *out = v->via.f64;
        break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        *out = (double)v->via.u64;
        break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        *out = (double)v->via.i64;
        break;
    default:
        return wrong_type(c, key, v, "a number");
    }
    if (!isfinite(*out)) {
        return corrupt(c->r, c->r->obj_start, c->what,
                       "\"%s\" is not a finite number", key);
    }
    return 0;
}

static int get_number(struct ctx *c, const msgpack_object *m, const char *key,
                      double *out)
{
    const msgpack_object *v;
    int rc = need(c, m, key, &v);
    return rc < 0 ? rc : as_number(c, key, v, out);
}

static int get_bool(struct ctx *c, const msgpack_object *m, const char *key,
                    uint8_t *out)
{
    const msgpack_object *v;
    int rc = need(c, m, key, &v);
    if (rc < 0) {
        return rc;
    }
    if (v->type != MSGPACK_OBJECT_BOOLEAN) {
        return wrong_type(c, key, v, "a boolean");
    }
    *out = v->via.boolean ? 1 : 0;
    return 0;
}

/* A string into buf[cap] (NUL-terminated); too long or with a NUL inside
 * is an error. */
static int as_str(struct ctx *c, const char *key, const msgpack_object *v,
                  char *buf, size_t cap)
{
    if (v->type != MSGPACK_OBJECT_STR) {
        return wrong_type(c, key, v, "a string");
    }
    uint32_t n = v->via.str.size;
    if (n >= cap) {
        return corrupt(c->r, c->r->obj_start, c->what,
                       "\"%s\" is a string of %" PRIu32 " bytes, longer "
                       "than the %zu this reader takes", key, n, cap - 1);
    }
    if (n > 0 && memchr(v->via.str.ptr, '\0', n) != NULL) {
        return corrupt(c->r, c->r->obj_start, c->what,
                       "\"%s\" holds a NUL byte", key);
    }
    memcpy(buf, v->via.str.ptr, n);
    buf[n] = '\0';
    return 0;
}

/* A path: a string, or bin when its bytes are not UTF-8 (the writer's
 * pack_str). */
static int get_path(struct ctx *c, const msgpack_object *m, const char *key,
                    char *buf, size_t cap)
{
    const msgpack_object *v;
    int rc = need(c, m, key, &v);
    if (rc < 0 || v->type != MSGPACK_OBJECT_BIN) {
        return rc < 0 ? rc : as_str(c, key, v, buf, cap);
    }
    msgpack_object s = *v;
    s.type = MSGPACK_OBJECT_STR;
    s.via.str.size = v->via.bin.size;
    s.via.str.ptr = v->via.bin.ptr;
    return as_str(c, key, &s, buf, cap);
}

static int get_str(struct ctx *c, const msgpack_object *m, const char *key,
                   char *buf, size_t cap)
{
    const msgpack_object *v;
    int rc = need(c, m, key, &v);
    return rc < 0 ? rc : as_str(c, key, v, buf, cap);
}

static int get_map(struct ctx *c, const msgpack_object *m, const char *key,
                   const msgpack_object **out)
{
    int rc = need(c, m, key, out);
    if (rc < 0) {
        return rc;
    }
    if ((*out)->type != MSGPACK_OBJECT_MAP) {
        return wrong_type(c, key, *out, "a map");
    }
    return 0;
}

/* ---- records ----------------------------------------------------------------- */

static int parse_env_config(struct ctx *c, const msgpack_object *m,
                            struct replay_header *h)
{
    struct craft_config *cfg = &h->env_config;
    craft_config_default(cfg);
    uint64_t v;
    int rc;
    if ((rc = get_u64(c, m, "width", CRAFT_MAX_SIDE, &v)) < 0) {
        return rc;
    }
    cfg->width = (int)v;
    if ((rc = get_u64(c, m, "height", CRAFT_MAX_SIDE, &v)) < 0) {
        return rc;
    }
    cfg->height = (int)v;
    const msgpack_object *p;
    if ((rc = need(c, m, "primitives", &p)) < 0) {
        return rc;
    }
    if (p->type != MSGPACK_OBJECT_ARRAY) {
        return wrong_type(c, "primitives", p, "an array of kind names");
    }
    cfg->primitives = 0;
    for (uint32_t i = 0; i < p->via.array.size; i++) {
        char name[32];
        if ((rc = as_str(c, "primitives", &p->via.array.ptr[i], name,
                         sizeof name)) < 0) {
            return rc;
        }
        int k = craft_kind_from_name(name);
        if (k < 0 || !craft_kind_is_primitive(k)) {
            return corrupt(c->r, c->r->obj_start, c->what,
                           "\"primitives\" names '%s', which is not a "
                           "primitive kind", name);
        }
        if (cfg->primitives & (1u << k)) {
            return corrupt(c->r, c->r->obj_start, c->what,
                           "\"primitives\" names '%s' twice", name);
        }
        cfg->primitives |= 1u << k;
    }
    if ((rc = get_u64(c, m, "n_each", CRAFT_MAX_N_EACH, &v)) < 0) {
        return rc;
    }
    cfg->n_each = (int)v;
    uint8_t b;
    if ((rc = get_bool(c, m, "workshops", &b)) < 0) {
        return rc;
    }
    cfg->workshops = b;
    char text[32];
    if ((rc = get_str(c, m, "treasure", text, sizeof text)) < 0) {
        return rc;
    }
    int e = craft_treasure_from_name(text);
    if (e < 0) {
        return corrupt(c->r, c->r->obj_start, c->what,
                       "\"treasure\" is '%s', expected none, island or cave",
                       text);
    }
    cfg->treasure = (enum craft_treasure)e;
    if ((rc = get_bool(c, m, "coarse_view", &b)) < 0) {
        return rc;
    }
    cfg->coarse_view = b;
    if ((rc = get_u64(c, m, "max_steps", CRAFT_MAX_STEPS_LIMIT, &v)) < 0) {
        return rc;
    }
    cfg->max_steps = (int)v;
    if ((rc = get_str(c, m, "reward", text, sizeof text)) < 0) {
        return rc;
    }
    e = craft_reward_from_name(text);
    if (e < 0) {
        return corrupt(c->r, c->r->obj_start, c->what,
                       "\"reward\" is '%s', expected dense or sparse", text);
    }
    cfg->reward = (enum craft_reward)e;
    if ((rc = get_str(c, m, "recipes", h->recipes, sizeof h->recipes)) < 0) {
        return rc;
    }
    if (strcmp(h->recipes, CRAFT_RECIPES_NAME) != 0) {
        return corrupt(c->r, c->r->obj_start, c->what,
                       "recipe table '%s' is unknown (this grove has '%s')",
                       h->recipes, CRAFT_RECIPES_NAME);
    }
    if (craft_config_validate(cfg) < 0) {
        char why[256];
        snprintf(why, sizeof why, "%s", gr_last_error());
        return corrupt(c->r, c->r->obj_start, c->what, "%s", why);
    }
    return 0;
}

static int parse_header(struct replay_reader *r, const msgpack_object *o)
{
    struct ctx c = {r, "header"};
    struct replay_header *h = &r->header;
    memset(h, 0, sizeof *h);
    if (o->type != MSGPACK_OBJECT_MAP) {
        return corrupt(r, r->obj_start, "header",
                       "not a grove replay: the first object is %s, "
                       "expected the header map", type_name(o));
    }
    const msgpack_object *v = map_get(o, "magic");
    char magic[32];
    if (v == NULL || v->type != MSGPACK_OBJECT_STR ||
        v->via.str.size != strlen(REPLAY_MAGIC) ||
        memcmp(v->via.str.ptr, REPLAY_MAGIC, strlen(REPLAY_MAGIC)) != 0) {
        if (v != NULL && v->type == MSGPACK_OBJECT_STR) {
            size_t n = v->via.str.size < 24 ? v->via.str.size : 24;
            memcpy(magic, v->via.str.ptr, n);
            magic[n] = '\0';
            return corrupt(r, r->obj_start, "header",
                           "not a grove replay: magic is \"%s\", expected "
                           "\"%s\"", magic, REPLAY_MAGIC);
        }
        return corrupt(r, r->obj_start, "header",
                       "not a grove replay: no \"magic\": \"%s\"",
                       REPLAY_MAGIC);
    }
    uint64_t version;
    const msgpack_object *vv;
    int rc = need(&c, o, "version", &vv);
    if (rc < 0) {
        return rc;
    }
    if (vv->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
        return wrong_type(&c, "version", vv, "an unsigned integer");
    }
    version = vv->via.u64;
    if (version != REPLAY_VERSION) {
        return corrupt(r, r->obj_start, "header",
                       "replay format version %" PRIu64 " is not supported "
                       "(this grove reads version %d)", version,
                       REPLAY_VERSION);
    }
    h->version = (uint32_t)version;
    if ((rc = get_str(&c, o, "env", h->env, sizeof h->env)) < 0) {
        return rc;
    }
    if (strcmp(h->env, "craft") != 0) {
        return corrupt(r, r->obj_start, "header",
                       "env '%s' is not supported (this grove knows craft)",
                       h->env);
    }
    const msgpack_object *m;
    if ((rc = get_map(&c, o, "env_config", &m)) < 0) {
        return rc;
    }
    struct ctx ce = {r, "header env_config"};
    if ((rc = parse_env_config(&ce, m, h)) < 0) {
        return rc;
    }
    if ((rc = get_map(&c, o, "agent", &m)) < 0) {
        return rc;
    }
    struct ctx ca = {r, "header agent"};
    if ((rc = get_str(&ca, m, "kind", h->agent_kind, sizeof h->agent_kind)) <
            0 ||
        (rc = get_path(&ca, m, "checkpoint", h->agent_checkpoint,
                       sizeof h->agent_checkpoint)) < 0 ||
        (rc = get_u32(&ca, m, "n_options", REPLAY_MAX_OPTIONS,
                      &h->agent_n_options)) < 0) {
        return rc;
    }
    if ((rc = get_str(&c, o, "created", h->created, sizeof h->created)) < 0 ||
        (rc = get_str(&c, o, "grove", h->grove, sizeof h->grove)) < 0) {
        return rc;
    }
    h->keyframe_every = 0;
    v = map_get(o, "keyframe_every");
    if (v != NULL) {
        uint64_t k;
        if ((rc = as_u64(&c, "keyframe_every", v, UINT32_MAX, &k)) < 0) {
            return rc;
        }
        if (k == 0) {
            return corrupt(r, r->obj_start, "header",
                           "\"keyframe_every\" is 0");
        }
        h->keyframe_every = (uint32_t)k;
    }
    return 0;
}

static int parse_episode_start(struct replay_reader *r, const msgpack_object *o,
                               struct replay_episode_start *es)
{
    struct ctx c = {r, "episode start"};
    int rc;
    if ((rc = get_u32(&c, o, "episode", UINT32_MAX, &es->episode)) < 0 ||
        (rc = get_u64(&c, o, "seed", UINT64_MAX, &es->seed)) < 0) {
        return rc;
    }
    const msgpack_object *t;
    if ((rc = need(&c, o, "task", &t)) < 0) {
        return rc;
    }
    if (t->type != MSGPACK_OBJECT_ARRAY) {
        return wrong_type(&c, "task", t, "an array of subtask names");
    }
    uint32_t n = t->via.array.size;
    if (n < 1 || n > CRAFT_MAX_SUBTASKS) {
        return corrupt(r, r->obj_start, "episode start",
                       "\"task\" has %" PRIu32 " subtasks, expected 1..%d", n,
                       CRAFT_MAX_SUBTASKS);
    }
    struct craft_subtask sub[CRAFT_MAX_SUBTASKS];
    for (uint32_t i = 0; i < n; i++) {
        char name[64];
        if ((rc = as_str(&c, "task", &t->via.array.ptr[i], name,
                         sizeof name)) < 0) {
            return rc;
        }
        if (craft_subtask_parse(name, &sub[i]) < 0) {
            return corrupt(r, r->obj_start, "episode start",
                           "\"task\" element %" PRIu32 " '%s' is not a "
                           "subtask (\"get X\" or \"make at W\")", i, name);
        }
    }
    if (craft_task_from_subtasks(sub, (int)n, NULL, &es->task) < 0) {
        char why[256];
        snprintf(why, sizeof why, "%s", gr_last_error());
        return corrupt(r, r->obj_start, "episode start", "\"task\": %s", why);
    }
    return 0;
}

static int parse_keyframe(struct replay_reader *r, const msgpack_object *o,
                          struct replay_keyframe *k)
{
    struct ctx c = {r, "keyframe"};
    int rc;
    if ((rc = get_u32(&c, o, "t", UINT32_MAX, &k->t)) < 0 ||
        (rc = get_u64(&c, o, "hash", UINT64_MAX, &k->hash)) < 0) {
        return rc;
    }
    const msgpack_object *s;
    if ((rc = need(&c, o, "state", &s)) < 0) {
        return rc;
    }
    if (s->type != MSGPACK_OBJECT_BIN) {
        return wrong_type(&c, "state", s, "a binary");
    }
    size_t n = s->via.bin.size;
    if (n == 0 || n > CRAFT_STATE_MAX_BYTES) {
        return corrupt(r, r->obj_start, "keyframe",
                       "\"state\" has %zu bytes, expected 1..%d", n,
                       CRAFT_STATE_MAX_BYTES);
    }
    if (n > r->state_cap) {
        void *p = realloc(r->state, n);
        if (p == NULL) {
            return finish(r, gr_error(GR_ENOMEM, "%s: out of memory",
                                      r->name));
        }
        r->state = p;
        r->state_cap = n;
    }
    memcpy(r->state, s->via.bin.ptr, n);
    k->state = r->state;
    k->state_len = n;
    uint64_t h = gr_fnv1a64(r->state, n);
    if (h != k->hash) {
        return corrupt(r, r->obj_start, "keyframe",
                       "\"hash\" is 0x%016" PRIx64 " but the FNV-1a 64 of its "
                       "%zu state bytes is 0x%016" PRIx64, k->hash, n, h);
    }
    return 0;
}

static int parse_step(struct replay_reader *r, const msgpack_object *o,
                      struct replay_step *s)
{
    struct ctx c = {r, "step"};
    int rc;
    uint32_t a;
    double rew;
    if ((rc = get_u32(&c, o, "t", UINT32_MAX, &s->t)) < 0 ||
        (rc = get_u32(&c, o, "a", CRAFT_N_ACTIONS - 1, &a)) < 0 ||
        (rc = get_number(&c, o, "r", &rew)) < 0 ||
        (rc = get_bool(&c, o, "d", &s->d)) < 0 ||
        (rc = get_bool(&c, o, "tr", &s->tr)) < 0 ||
        (rc = get_u32(&c, o, "s", UINT32_MAX, &s->s)) < 0) {
        return rc;
    }
    s->a = (uint8_t)a;
    s->r = (float)rew;
    const msgpack_object *v = map_get(o, "o");
    uint32_t k_opt = r->header.agent_n_options;
    if (v != NULL) {
        uint64_t x;
        if ((rc = as_u64(&c, "o", v, k_opt > 0 ? k_opt - 1 : UINT32_MAX,
                         &x)) < 0) {
            return rc;
        }
        s->has_o = 1;
        s->o = (uint32_t)x;
    }
    v = map_get(o, "po");
    if (v != NULL) {
        if (v->type != MSGPACK_OBJECT_ARRAY) {
            return wrong_type(&c, "po", v, "an array of float32");
        }
        uint32_t n = v->via.array.size;
        if (n == 0 || n > REPLAY_MAX_OPTIONS ||
            (k_opt > 0 && n != k_opt)) {
            return corrupt(r, r->obj_start, "step",
                           "\"po\" has %" PRIu32 " entries, expected %" PRIu32
                           " (the header's n_options)", n,
                           k_opt > 0 ? k_opt : (uint32_t)REPLAY_MAX_OPTIONS);
        }
        for (uint32_t i = 0; i < n; i++) {
            double x;
            if ((rc = as_number(&c, "po", &v->via.array.ptr[i], &x)) < 0) {
                return rc;
            }
            r->po[i] = (float)x;
        }
        s->n_po = n;
        s->po = r->po;
    }
    v = map_get(o, "pe");
    if (v != NULL) {
        double x;
        if ((rc = as_number(&c, "pe", v, &x)) < 0) {
            return rc;
        }
        s->has_pe = 1;
        s->pe = (float)x;
    }
    if (s->tr && !s->d) {
        return corrupt(r, r->obj_start, "step",
                       "\"tr\" is true but \"d\" is false (a truncated step "
                       "is the episode's last)");
    }
    return 0;
}

static int parse_episode_end(struct replay_reader *r, const msgpack_object *o,
                             struct replay_episode_end *e)
{
    struct ctx c = {r, "episode end"};
    int rc;
    if ((rc = get_u32(&c, o, "end", UINT32_MAX, &e->episode)) < 0 ||
        (rc = get_number(&c, o, "return", &e->episode_return)) < 0 ||
        (rc = get_u32(&c, o, "length", UINT32_MAX, &e->length)) < 0 ||
        (rc = get_bool(&c, o, "success", &e->success)) < 0) {
        return rc;
    }
    return 0;
}

static int parse_footer(struct replay_reader *r, const msgpack_object *o,
                        struct replay_footer *f)
{
    struct ctx c = {r, "footer"};
    const msgpack_object *m = o;
    const msgpack_object *v;
    int rc = need(&c, o, "footer", &v);
    if (rc < 0) {
        return rc;
    }
    /* "footer": true with the fields beside it (what grove writes), or
     * "footer": {fields} (the other reading of the spec's sentence). */
    if (v->type == MSGPACK_OBJECT_MAP) {
        m = v;
    } else if (v->type != MSGPACK_OBJECT_BOOLEAN || !v->via.boolean) {
        return wrong_type(&c, "footer", v, "true (or a map of the fields)");
    }
    uint64_t crc;
    if ((rc = get_u64(&c, m, "episodes", UINT64_MAX, &f->episodes)) < 0 ||
        (rc = get_u64(&c, m, "steps", UINT64_MAX, &f->steps)) < 0 ||
        (rc = get_u64(&c, m, "crc32", UINT32_MAX, &crc)) < 0) {
        return rc;
    }
    f->crc32 = (uint32_t)crc;
    const msgpack_object *idx;
    if ((rc = need(&c, m, "index", &idx)) < 0) {
        return rc;
    }
    if (idx->type != MSGPACK_OBJECT_ARRAY) {
        return wrong_type(&c, "index", idx, "an array");
    }
    size_t n = idx->via.array.size;
    if (n > r->cap_index) {
        void *p = realloc(r->index, n * sizeof *r->index);
        if (p == NULL) {
            return finish(r, gr_error(GR_ENOMEM, "%s: out of memory for an "
                                      "index of %zu keyframes", r->name, n));
        }
        r->index = p;
        r->cap_index = n;
    }
    for (size_t i = 0; i < n; i++) {
        const msgpack_object *e = &idx->via.array.ptr[i];
        if (e->type != MSGPACK_OBJECT_ARRAY || e->via.array.size != 3) {
            return corrupt(r, r->obj_start, "footer",
                           "\"index\" entry %zu is %s, expected "
                           "[episode, t, byte_offset]", i, type_name(e));
        }
        uint64_t x[3] = {0, 0, 0};
        for (int j = 0; j < 3; j++) {
            if ((rc = as_u64(&c, "index", &e->via.array.ptr[j],
                             j < 2 ? UINT32_MAX : UINT64_MAX, &x[j])) < 0) {
                return rc;
            }
        }
        r->index[i].episode = (uint32_t)x[0];
        r->index[i].t = (uint32_t)x[1];
        r->index[i].offset = x[2];
    }
    f->n_index = n;
    f->index = r->index;
    return 0;
}

/* Which record a map is, by the key that names it, else by any key only
 * that record has (so that a record missing its naming key is reported as
 * that record with a missing key). */
static int classify(const msgpack_object *o, enum replay_record_type *type)
{
    static const struct {
        const char *key;
        enum replay_record_type type;
    } keys[] = {
        {"magic", REPLAY_RECORD_HEADER},
        {"footer", REPLAY_RECORD_FOOTER},
        {"end", REPLAY_RECORD_EPISODE_END},
        {"state", REPLAY_RECORD_KEYFRAME},
        {"a", REPLAY_RECORD_STEP},
        {"episode", REPLAY_RECORD_EPISODE_START},
        /* secondary keys */
        {"crc32", REPLAY_RECORD_FOOTER},
        {"index", REPLAY_RECORD_FOOTER},
        {"return", REPLAY_RECORD_EPISODE_END},
        {"success", REPLAY_RECORD_EPISODE_END},
        {"hash", REPLAY_RECORD_KEYFRAME},
        {"seed", REPLAY_RECORD_EPISODE_START},
        {"task", REPLAY_RECORD_EPISODE_START},
        {"t", REPLAY_RECORD_STEP},
        {"tr", REPLAY_RECORD_STEP},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (map_get(o, keys[i].key) != NULL) {
            *type = keys[i].type;
            return 0;
        }
    }
    return -1;
}

/* ---- order, numbering, re-simulation ---------------------------------------- */

static int verifying(const struct replay_reader *r)
{
    return (r->flags & REPLAY_READ_VERIFY) != 0;
}

static int on_episode_start(struct replay_reader *r,
                            const struct replay_episode_start *es)
{
    if (es->episode != r->episodes_started) {
        return corrupt(r, r->obj_start, "episode start",
                       "episode %" PRIu32 " out of order (expected episode "
                       "%" PRIu32 ")", es->episode, r->episodes_started);
    }
    r->episodes_started++;
    r->cur_episode = es->episode;
    r->next_t = 0;
    r->keyframe_t = -1;
    r->last_tr = 0;
    r->ret_sum = 0;
    r->ret_unknown = 0;
    r->task = es->task;
    r->phase = PHASE_EPISODE;
    if (verifying(r)) {
        if (craft_world_reset(&r->world, &r->header.env_config, es->seed,
                              &es->task) < 0) {
            char why[256];
            snprintf(why, sizeof why, "%s", gr_last_error());
            return mismatch(r, 0, "episode start", "cannot reset: %s", why);
        }
        r->have_world = 1;
        r->have_before = 0;
    }
    return 0;
}

static int on_keyframe(struct replay_reader *r, struct replay_keyframe *k)
{
    k->episode = r->cur_episode;
    if (k->t != r->next_t) {
        return corrupt(r, r->obj_start, "keyframe",
                       "t = %" PRIu32 " but the next step of episode %" PRIu32
                       " is t = %" PRIu32, k->t, r->cur_episode, r->next_t);
    }
    if (r->keyframe_t == (int64_t)k->t) {
        return corrupt(r, r->obj_start, "keyframe",
                       "a second keyframe at t = %" PRIu32, k->t);
    }
    r->keyframe_t = k->t;
    if (r->n_seen == r->cap_seen) {
        size_t cap = r->cap_seen ? 2 * r->cap_seen : 256;
        void *p = realloc(r->seen, cap * sizeof *r->seen);
        if (p == NULL) {
            return finish(r, gr_error(GR_ENOMEM, "%s: out of memory",
                                      r->name));
        }
        r->seen = p;
        r->cap_seen = cap;
    }
    r->seen[r->n_seen].episode = r->cur_episode;
    r->seen[r->n_seen].t = k->t;
    r->seen[r->n_seen].offset = r->obj_start;
    r->n_seen++;
    if (verifying(r) && r->have_world) {
        int n = craft_state_bytes(&r->world, r->sim, sizeof r->sim);
        if (n < 0) {
            return finish(r, n);
        }
        uint64_t h = gr_fnv1a64(r->sim, (size_t)n);
        if (h != k->hash) {
            return mismatch(r, k->t, "keyframe",
                            "recorded hash 0x%016" PRIx64 " but "
                            "re-simulation gives 0x%016" PRIx64, k->hash, h);
        }
    }
    return 0;
}

static int on_step(struct replay_reader *r, struct replay_step *s)
{
    s->episode = r->cur_episode;
    const struct craft_config *cfg = &r->header.env_config;
    if (s->t != r->next_t) {
        return corrupt(r, r->obj_start, "step",
                       "t = %" PRIu32 " but episode %" PRIu32 " is at t = "
                       "%" PRIu32, s->t, r->cur_episode, r->next_t);
    }
    uint32_t every = r->header.keyframe_every;
    int due = s->t == 0 || (every > 0 && s->t % every == 0);
    if (due && r->keyframe_t != (int64_t)s->t) {
        return corrupt(r, r->obj_start, "step",
                       "no keyframe before step t = %" PRIu32 " of episode "
                       "%" PRIu32 " (keyframes come at t = 0 and every %" PRIu32
                       " steps)", s->t, r->cur_episode, every);
    }
    if (s->t >= (uint32_t)cfg->max_steps) {
        return corrupt(r, r->obj_start, "step",
                       "t = %" PRIu32 " is past the time limit max_steps = %d",
                       s->t, cfg->max_steps);
    }
    if (s->s >= (uint32_t)r->task.n) {
        return corrupt(r, r->obj_start, "step",
                       "subtask index s = %" PRIu32 " but the task has %d "
                       "subtasks", s->s, r->task.n);
    }
    if (verifying(r) && r->have_world) {
        struct craft_step st;
        r->before = r->world;
        r->have_before = 1;
        if (craft_world_step(&r->world, s->a, &st) < 0) {
            char why[256];
            snprintf(why, sizeof why, "%s", gr_last_error());
            return mismatch(r, s->t, "step", "re-simulation refused the "
                            "action: %s", why);
        }
        int d = st.terminated || st.truncated;
        if (st.subtask != (int)s->s) {
            return mismatch(r, s->t, "step", "recorded subtask s = %" PRIu32
                            " but re-simulation is at k = %d", s->s,
                            st.subtask);
        }
        if (st.reward != s->r) {
            return mismatch(r, s->t, "step", "recorded reward %g but "
                            "re-simulation gives %g (action %u)",
                            (double)s->r, (double)st.reward, (unsigned)s->a);
        }
        if (d != s->d || (st.truncated != 0) != (s->tr != 0)) {
            return mismatch(r, s->t, "step", "recorded d=%d tr=%d but "
                            "re-simulation gives d=%d tr=%d (action %u)",
                            s->d, s->tr, d, st.truncated != 0,
                            (unsigned)s->a);
        }
    }
    r->next_t++;
    r->ret_sum += s->r;
    r->last_tr = s->tr;
    if (s->d) {
        r->phase = PHASE_ENDING;
    } else if (s->t + 1 >= (uint32_t)cfg->max_steps) {
        return corrupt(r, r->obj_start, "step",
                       "step t = %" PRIu32 " reaches max_steps = %d but \"d\" "
                       "is false", s->t, cfg->max_steps);
    }
    return 0;
}

static int on_episode_end(struct replay_reader *r,
                          const struct replay_episode_end *e)
{
    if (e->episode != r->cur_episode) {
        return corrupt(r, r->obj_start, "episode end",
                       "\"end\" is %" PRIu32 " but episode %" PRIu32
                       " is open", e->episode, r->cur_episode);
    }
    if (e->length != r->next_t) {
        return corrupt(r, r->obj_start, "episode end",
                       "\"length\" is %" PRIu32 " but episode %" PRIu32
                       " has %" PRIu32 " steps", e->length, r->cur_episode,
                       r->next_t);
    }
    if (!r->ret_unknown &&
        fabs(e->episode_return - r->ret_sum) >
            1e-4 * (1.0 + fabs(r->ret_sum))) {
        return corrupt(r, r->obj_start, "episode end",
                       "\"return\" is %g but the steps' rewards sum to %g",
                       e->episode_return, r->ret_sum);
    }
    if ((e->success != 0) == (r->last_tr != 0)) {
        return corrupt(r, r->obj_start, "episode end",
                       "\"success\" is %s but the last step %s truncated",
                       e->success ? "true" : "false",
                       r->last_tr ? "was" : "was not");
    }
    if (verifying(r) && r->have_world) {
        int done = r->world.k >= r->world.task.n;
        if ((e->success != 0) != done) {
            return mismatch(r, e->length, "episode end",
                            "recorded success %d but re-simulation gives %d",
                            e->success, done);
        }
        if (!r->ret_unknown &&
            (float)e->episode_return != r->world.episode_return) {
            return mismatch(r, e->length, "episode end",
                            "recorded return %g but re-simulation gives %g",
                            e->episode_return,
                            (double)r->world.episode_return);
        }
    }
    r->episodes_done++;
    r->steps_done += e->length;
    r->phase = PHASE_BETWEEN;
    return 0;
}

static int check_trailer_after_footer(struct replay_reader *r)
{
    uint64_t end = r->obj_start + r->obj_size;
    if (r->trailer_ok) {
        if (r->trailer_footer != r->obj_start) {
            return corrupt(r, r->size - REPLAY_TRAILER_SIZE, "trailer",
                           "it names byte %" PRIu64 " as the footer's, but "
                           "the footer is at byte %" PRIu64,
                           r->trailer_footer, r->obj_start);
        }
        if (end != r->data_end) {
            return corrupt(r, end, "footer",
                           "%" PRIu64 " unexpected bytes between the footer "
                           "and the trailer", r->data_end - end);
        }
        return 0;
    }
    uint8_t want[REPLAY_TRAILER_SIZE];
    memcpy(want, REPLAY_TRAILER, 8);
    for (int i = 0; i < 4; i++) {
        want[8 + i] = (uint8_t)(r->obj_start >> (8 * i));
    }
    uint64_t left = r->size - end;
    uint8_t got[REPLAY_TRAILER_SIZE];
    size_t n = 0;
    size_t take = left < sizeof got ? (size_t)left : sizeof got;
    int rc = source_read_at(r, end, got, take, &n);
    if (rc < 0) {
        return finish(r, rc);
    }
    if (left < REPLAY_TRAILER_SIZE && memcmp(got, want, n) == 0) {
        return truncated(r, end, "the trailer after the footer has %" PRIu64
                         " of its 12 bytes", left);
    }
    if (left > REPLAY_TRAILER_SIZE) {
        return corrupt(r, end, "trailer",
                       "%" PRIu64 " bytes follow the footer, expected the "
                       "12-byte trailer", left);
    }
    return corrupt(r, end, "trailer",
                   "expected \"GRRFOOT1\" and the footer's offset %" PRIu64,
                   r->obj_start);
}

static int on_footer(struct replay_reader *r, const struct replay_footer *f,
                     uint32_t crc_before)
{
    if (!r->seeked) {
        if (f->episodes != r->episodes_done) {
            return corrupt(r, r->obj_start, "footer",
                           "\"episodes\" is %" PRIu64 " but the file has %"
                           PRIu64, f->episodes, r->episodes_done);
        }
        if (f->steps != r->steps_done) {
            return corrupt(r, r->obj_start, "footer",
                           "\"steps\" is %" PRIu64 " but the file has %" PRIu64,
                           f->steps, r->steps_done);
        }
        if (f->n_index != r->n_seen) {
            return corrupt(r, r->obj_start, "footer",
                           "\"index\" has %zu entries but the file has %zu "
                           "keyframes", f->n_index, r->n_seen);
        }
        for (size_t i = 0; i < f->n_index; i++) {
            const struct replay_index_entry *a = &f->index[i], *b = &r->seen[i];
            if (a->episode != b->episode || a->t != b->t ||
                a->offset != b->offset) {
                return corrupt(r, r->obj_start, "footer",
                               "\"index\" entry %zu is [%" PRIu32 ", %" PRIu32
                               ", %" PRIu64 "] but that keyframe is [%" PRIu32
                               ", %" PRIu32 ", %" PRIu64 "]", i, a->episode,
                               a->t, a->offset, b->episode, b->t, b->offset);
            }
        }
        if (f->crc32 != crc_before) {
            return corrupt(r, r->obj_start, "footer",
                           "\"crc32\" is 0x%08" PRIx32 " but the %" PRIu64
                           " bytes before the footer have CRC-32 0x%08" PRIx32,
                           f->crc32, r->obj_start, crc_before);
        }
        r->crc_ok = 1;
    }
    int rc = check_trailer_after_footer(r);
    if (rc < 0) {
        return rc;
    }
    r->phase = PHASE_DONE;
    r->complete = 1;
    return 0;
}

/* Reads, checks and returns the next record (1), the end (0) or an error. */
static int read_record(struct replay_reader *r, struct replay_record *rec)
{
    if (r->has_stop && r->scan.pos >= r->stop_at) {
        return finish(r, 0);
    }
    int rc = next_object(r);
    if (rc < 0) {
        return rc;
    }
    if (rc == 0) {
        if (r->phase == PHASE_DONE) {
            return finish(r, 0);
        }
        if (r->trailer_ok) {
            return corrupt(r, r->scan.pos, "footer",
                           "the trailer names byte %" PRIu64 " as the "
                           "footer's, but the objects end without one",
                           r->trailer_footer);
        }
        return truncated(r, r->scan.pos, "the file ends before the footer%s",
                         r->phase == PHASE_BETWEEN ? "" :
                         " (inside an episode)");
    }
    uint32_t crc_before = r->crc_before;
    const msgpack_object *o = &r->res.data;
    memset(rec, 0, sizeof *rec);
    rec->offset = r->obj_start;
    rec->size = r->obj_size;
    if (r->phase == PHASE_HEADER) {
        if ((rc = parse_header(r, o)) < 0) {
            return rc;
        }
        rec->type = REPLAY_RECORD_HEADER;
        rec->header = &r->header;
        r->phase = PHASE_BETWEEN;
        return 1;
    }
    if (o->type != MSGPACK_OBJECT_MAP) {
        return corrupt(r, r->obj_start, "object",
                       "%s where a record map was expected", type_name(o));
    }
    enum replay_record_type type;
    if (classify(o, &type) < 0) {
        return corrupt(r, r->obj_start, "object",
                       "a map with none of the keys that name a record "
                       "(magic, episode, state, a, end, footer)");
    }
    rec->type = type;
    static const char *const expect[] = {
        [PHASE_BETWEEN] = "an episode start or the footer",
        [PHASE_EPISODE] = "a keyframe, a step or (after the last step) the "
                          "episode end",
        [PHASE_ENDING] = "the episode end",
        [PHASE_DONE] = "the trailer",
    };
    int ok;
    switch (type) {
    case REPLAY_RECORD_EPISODE_START:
    case REPLAY_RECORD_FOOTER:
        ok = r->phase == PHASE_BETWEEN;
        break;
    case REPLAY_RECORD_KEYFRAME:
    case REPLAY_RECORD_STEP:
        ok = r->phase == PHASE_EPISODE;
        break;
    case REPLAY_RECORD_EPISODE_END:
        ok = r->phase == PHASE_ENDING;
        break;
    default:
        ok = 0;
        break;
    }
    if (!ok) {
        return corrupt(r, r->obj_start, replay_record_type_name(type),
                       "out of order: expected %s", expect[r->phase]);
    }
    switch (type) {
    case REPLAY_RECORD_EPISODE_START:
        if ((rc = parse_episode_start(r, o, &rec->start)) < 0 ||
            (rc = on_episode_start(r, &rec->start)) < 0) {
            return rc;
        }
        break;
    case REPLAY_RECORD_KEYFRAME:
        if ((rc = parse_keyframe(r, o, &rec->keyframe)) < 0 ||
            (rc = on_keyframe(r, &rec->keyframe)) < 0) {
            return rc;
        }
        break;
    case REPLAY_RECORD_STEP:
        if ((rc = parse_step(r, o, &rec->step)) < 0 ||
            (rc = on_step(r, &rec->step)) < 0) {
            return rc;
        }
        break;
    case REPLAY_RECORD_EPISODE_END:
        if ((rc = parse_episode_end(r, o, &rec->end)) < 0 ||
            (rc = on_episode_end(r, &rec->end)) < 0) {
            return rc;
        }
        break;
    case REPLAY_RECORD_FOOTER:
        if ((rc = parse_footer(r, o, &rec->footer)) < 0 ||
            (rc = on_footer(r, &rec->footer, crc_before)) < 0) {
            return rc;
        }
        break;
    default:
        break;
    }
    return 1;
}

/* ---- public ------------------------------------------------------------------ */

static int reader_new(struct replay_reader **out, const char *name,
                      unsigned flags)
{
    struct replay_reader *r = calloc(1, sizeof *r);
    if (r == NULL) {
        return gr_error(GR_ENOMEM, "%s: out of memory", name);
    }
    r->chunk = malloc(CHUNK);
    if (r->chunk == NULL) {
        free(r);
        return gr_error(GR_ENOMEM, "%s: out of memory", name);
    }
    snprintf(r->name, sizeof r->name, "%s", name);
    r->flags = flags;
    r->keyframe_t = -1;
    *out = r;
    return 0;
}

static int recover_scan(struct replay_reader *r);

/* Common tail of the two opens: trailer, stream, header. */
static int reader_start(struct replay_reader *r)
{
    int rc = look_at_trailer(r);
    if (rc < 0) {
        return rc;
    }
    if ((rc = stream_reset(r, 0)) < 0) {
        return rc;
    }
    if (r->size == 0) {
        return gr_error(GR_EFORMAT, "%s: not a grove replay: the file is "
                        "empty", r->name);
    }
    if (r->flags & REPLAY_READ_RECOVER) {
        if ((rc = recover_scan(r)) < 0) {
            return rc;
        }
    }
    struct replay_record rec;
    rc = read_record(r, &rec);
    if (rc < 0) {
        return rc;
    }
    if (rc == 0) {
        return gr_error(GR_EFORMAT, "%s: not a grove replay: no header",
                        r->name);
    }
    return 0;
}

int replay_reader_open(struct replay_reader **out, const char *path,
                       unsigned flags)
{
    *out = NULL;
    struct replay_reader *r = NULL;
    int rc = reader_new(&r, path, flags);
    if (rc < 0) {
        return rc;
    }
    r->fp = fopen(path, "rb");
    if (r->fp == NULL) {
        rc = gr_error(GR_EIO, "cannot open %s: %s", path, strerror(errno));
        replay_reader_close(r);
        return rc;
    }
    struct stat st;
    if (fstat(fileno(r->fp), &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = gr_error(GR_EIO, "%s is not a regular file", path);
        replay_reader_close(r);
        return rc;
    }
    r->size = (uint64_t)st.st_size;
    if ((rc = reader_start(r)) < 0) {
        replay_reader_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

int replay_reader_open_memory(struct replay_reader **out, const void *data,
                              size_t size, const char *name, unsigned flags)
{
    *out = NULL;
    struct replay_reader *r = NULL;
    int rc = reader_new(&r, name, flags);
    if (rc < 0) {
        return rc;
    }
    r->mem = malloc(size > 0 ? size : 1);
    if (r->mem == NULL) {
        replay_reader_close(r);
        return gr_error(GR_ENOMEM, "%s: out of memory", name);
    }
    if (size > 0) {
        memcpy(r->mem, data, size);
    }
    r->size = size;
    if ((rc = reader_start(r)) < 0) {
        replay_reader_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

/* RECOVER: a first pass (no re-simulation) over the same bytes finds
 * whether the file is truncated and where its last complete episode ends. */
static int recover_scan(struct replay_reader *r)
{
    struct replay_reader *p = NULL;
    int rc = reader_new(&p, r->name, 0);
    if (rc < 0) {
        return rc;
    }
    p->fp = r->fp;
    p->mem = r->mem;
    p->size = r->size;
    uint64_t last_end = 0;
    int have_end = 0;
    if ((rc = look_at_trailer(p)) == 0 && (rc = stream_reset(p, 0)) == 0) {
        struct replay_record rec;
        while ((rc = read_record(p, &rec)) > 0) {
            if (rec.type == REPLAY_RECORD_HEADER ||
                rec.type == REPLAY_RECORD_EPISODE_END) {
                last_end = rec.offset + rec.size;
                have_end = 1;
            }
        }
    }
    if (rc < 0 && p->truncated && have_end) {
        r->has_stop = 1;
        r->stop_at = last_end;
        r->truncated = 1;
        r->truncated_at = p->truncated_at;
        gr_clear_error();
        rc = 0;
    } else if (rc < 0 && p->truncated) {
        rc = 0; /* truncated inside the header: the main pass says so */
    } else {
        rc = 0; /* complete, or corrupt: the main pass finds it again */
    }
    p->fp = NULL; /* borrowed */
    p->mem = NULL;
    replay_reader_close(p);
    return rc;
}

int replay_reader_next(struct replay_reader *r, struct replay_record *rec)
{
    if (!r->header_returned) {
        r->header_returned = 1;
        memset(rec, 0, sizeof *rec);
        rec->type = REPLAY_RECORD_HEADER;
        rec->offset = 0;
        rec->size = r->obj_start + r->obj_size;
        rec->header = &r->header;
        return 1;
    }
    if (r->pending_seek) {
        r->pending_seek = 0;
        *rec = r->pending;
        return 1;
    }
    if (r->finished) {
        return r->final_rc;
    }
    int rc = read_record(r, rec);
    if (rc == 0 && r->has_stop) {
        /* recovered: say in the message what was cut */
        gr_error(GR_EFORMAT, "%s: truncated at byte %" PRIu64 "; recovered "
                 "%" PRIu64 " complete episodes", r->name, r->truncated_at,
                 r->episodes_done);
    }
    return rc;
}

const struct replay_header *replay_reader_header(const struct replay_reader *r)
{
    return &r->header;
}

void replay_reader_status(const struct replay_reader *r,
                          struct replay_reader_status *st)
{
    memset(st, 0, sizeof *st);
    st->file_size = r->size;
    st->offset = r->scan.pos;
    st->episodes = r->episodes_done;
    st->steps = r->steps_done;
    st->keyframes = r->n_seen;
    st->complete = r->complete;
    st->crc_ok = r->crc_ok;
    st->truncated = r->truncated;
    st->truncated_at = r->truncated_at;
    st->seeked = r->seeked;
}

const struct craft_world *replay_reader_world(const struct replay_reader *r)
{
    return verifying(r) && r->have_world ? &r->world : NULL;
}

const struct craft_world *replay_reader_world_before(
    const struct replay_reader *r)
{
    return verifying(r) && r->have_before ? &r->before : NULL;
}

int replay_reader_footer(struct replay_reader *r, struct replay_footer *footer)
{
    if (!r->trailer_ok) {
        return gr_error(GR_EFORMAT, "%s: no valid trailer in the last 12 "
                        "bytes (a truncated file has none; read it from the "
                        "start)", r->name);
    }
    uint64_t at = r->trailer_footer;
    uint64_t n = r->data_end - at;
    if (n > REPLAY_MAX_OBJECT_BYTES) {
        return gr_error(GR_EFORMAT, "%s: corrupt at byte %" PRIu64 ": the "
                        "footer would be %" PRIu64 " bytes long", r->name, at,
                        n);
    }
    /* a private reader over the footer's bytes, so the stream is kept */
    struct replay_reader *p = NULL;
    int rc = reader_new(&p, r->name, 0);
    if (rc < 0) {
        return rc;
    }
    p->fp = r->fp;
    p->mem = r->mem;
    p->size = r->size;
    p->data_end = r->data_end;
    p->trailer_ok = 1;
    p->trailer_footer = at;
    p->phase = PHASE_BETWEEN;
    if ((rc = stream_reset(p, at)) == 0) {
        rc = next_object(p);
        if (rc == 0) {
            rc = gr_error(GR_EFORMAT, "%s: no footer at byte %" PRIu64,
                          r->name, at);
        } else if (rc > 0) {
            const msgpack_object *o = &p->res.data;
            enum replay_record_type type;
            if (o->type != MSGPACK_OBJECT_MAP || classify(o, &type) < 0 ||
                type != REPLAY_RECORD_FOOTER) {
                rc = corrupt(p, at, "footer", "the trailer names this byte "
                             "as the footer's, but the object there is "
                             "not a footer");
            } else {
                rc = parse_footer(p, o, footer);
                if (rc == 0 && p->obj_size != n) {
                    rc = corrupt(p, at + p->obj_size, "footer",
                                 "%" PRIu64 " unexpected bytes before the "
                                 "trailer", n - p->obj_size);
                }
            }
        }
    }
    if (rc >= 0) {
        /* move the parsed index into r, which owns what it returns */
        free(r->index);
        r->index = p->index;
        r->cap_index = p->cap_index;
        p->index = NULL;
        footer->index = r->index;
        rc = 0;
    }
    p->fp = NULL;
    p->mem = NULL;
    replay_reader_close(p);
    return rc;
}

int replay_reader_seek(struct replay_reader *r,
                       const struct replay_index_entry *e)
{
    if (r->finished && r->final_rc < 0) {
        return r->final_rc;
    }
    if (e->offset >= r->data_end) {
        return gr_error(GR_EINVAL, "%s: seek to byte %" PRIu64 " past the "
                        "data (%" PRIu64 " bytes)", r->name, e->offset,
                        r->data_end);
    }
    int rc = stream_reset(r, e->offset);
    if (rc < 0) {
        return rc;
    }
    r->finished = 0;
    r->final_rc = 0;
    r->seeked = 1;
    r->complete = 0;
    r->crc_ok = 0;
    r->header_returned = 1;
    r->phase = PHASE_EPISODE;
    r->cur_episode = e->episode;
    r->episodes_started = e->episode + 1;
    r->next_t = e->t;
    r->keyframe_t = -1;
    r->ret_unknown = 1;
    r->have_before = 0;
    r->have_world = 0;
    /* the next record must be that keyframe; read it now to rebuild */
    struct replay_record rec;
    rc = read_record(r, &rec);
    if (rc <= 0) {
        return rc < 0 ? rc : gr_error(GR_EFORMAT, "%s: nothing at byte %"
                                      PRIu64, r->name, e->offset);
    }
    if (rec.type != REPLAY_RECORD_KEYFRAME) {
        return corrupt(r, e->offset, replay_record_type_name(rec.type),
                       "the index names a keyframe here");
    }
    if (craft_state_from_bytes(&r->world, &r->header.env_config,
                               rec.keyframe.state, rec.keyframe.state_len) <
        0) {
        char why[256];
        snprintf(why, sizeof why, "%s", gr_last_error());
        return corrupt(r, e->offset, "keyframe", "state: %s", why);
    }
    r->task = r->world.task;
    r->have_world = verifying(r);
    /* hand the keyframe to the caller as the next record */
    r->pending_seek = 1;
    r->pending = rec;
    return 0;
}

void replay_reader_close(struct replay_reader *r)
{
    if (r == NULL) {
        return;
    }
    if (r->up_ready) {
        msgpack_unpacked_destroy(&r->res);
        msgpack_unpacker_destroy(&r->up);
    }
    if (r->fp != NULL) {
        fclose(r->fp);
    }
    free(r->mem);
    free(r->chunk);
    free(r->seen);
    free(r->state);
    free(r->index);
    free(r);
}

int replay_verify_file(const char *path, struct replay_verify_result *res)
{
    struct replay_reader *r = NULL;
    int rc = replay_reader_open(&r, path, REPLAY_READ_VERIFY);
    if (rc < 0) {
        return rc;
    }
    struct replay_verify_result out;
    memset(&out, 0, sizeof out);
    struct replay_record rec;
    while ((rc = replay_reader_next(r, &rec)) > 0) {
        if (rec.type == REPLAY_RECORD_KEYFRAME) {
            out.keyframes++;
        } else if (rec.type == REPLAY_RECORD_EPISODE_END) {
            out.episodes++;
            out.steps += rec.end.length;
            out.successes += rec.end.success;
        } else if (rec.type == REPLAY_RECORD_FOOTER) {
            out.crc32 = rec.footer.crc32;
        }
    }
    replay_reader_close(r);
    if (res != NULL) {
        *res = out;
    }
    return rc < 0 ? rc : 0;
}
