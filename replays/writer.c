/* The replay writer: msgpack-c's packer over a write callback that appends
 * to an atomic file (core/files.h), counting bytes and folding each one into
 * the CRC-32 the footer carries. Records are checked for order before a byte
 * of them is written, so a file the writer accepts is one the reader
 * accepts. */
#define _POSIX_C_SOURCE 200809L
#include "replays/replay.h"

#include <errno.h>
#include <inttypes.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "core/files.h"
#include "core/hash.h"

struct replay_writer {
    struct gr_atomic_file af;
    msgpack_packer pk;
    uint64_t offset;       /* bytes written so far */
    uint32_t crc;          /* CRC-32 of those bytes */
    int io_errno;          /* first write error, 0 if none */
    struct replay_header header;
    uint32_t episodes;     /* episodes started */
    uint64_t steps;        /* steps written (all episodes) */
    int in_episode;
    uint32_t next_t;       /* t of the next step of the open episode */
    int64_t keyframe_t;    /* t of the open episode's last keyframe, or -1 */
    int last_d;            /* the last step had d set */
    struct replay_index_entry *index;
    size_t n_index, cap_index;
    uint8_t state[CRAFT_STATE_MAX_BYTES];
};

const char *replay_record_type_name(enum replay_record_type type)
{
    switch (type) {
    case REPLAY_RECORD_HEADER: return "header";
    case REPLAY_RECORD_EPISODE_START: return "episode start";
    case REPLAY_RECORD_KEYFRAME: return "keyframe";
    case REPLAY_RECORD_STEP: return "step";
    case REPLAY_RECORD_EPISODE_END: return "episode end";
    case REPLAY_RECORD_FOOTER: return "footer";
    }
    return "record";
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

/* SOURCE_DATE_EPOCH (reproducible-builds.org) when it holds a plain
 * decimal count of seconds, so that identical runs write identical files;
 * the clock otherwise. */
static time_t replay_created_time(void)
{
    const char *v = getenv("SOURCE_DATE_EPOCH");
    if (v != NULL && *v != '\0' && strlen(v) <= 12 &&
        strspn(v, "0123456789") == strlen(v)) {
        return (time_t)strtoll(v, NULL, 10);
    }
    return time(NULL);
}

void replay_header_init(struct replay_header *h,
                        const struct craft_config *config,
                        const char *agent_kind)
{
    memset(h, 0, sizeof *h);
    h->version = REPLAY_VERSION;
    copy_str(h->env, sizeof h->env, "craft");
    h->env_config = *config;
    copy_str(h->recipes, sizeof h->recipes, CRAFT_RECIPES_NAME);
    copy_str(h->agent_kind, sizeof h->agent_kind, agent_kind);
    h->agent_n_options = 0;
    time_t now = replay_created_time();
    struct tm tm;
    if (gmtime_r(&now, &tm) != NULL) {
        strftime(h->created, sizeof h->created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
    copy_str(h->grove, sizeof h->grove, "unknown");
    h->keyframe_every = REPLAY_KEYFRAME_EVERY_DEFAULT;
}

/* msgpack-c write callback: append, count, checksum. */
static int write_cb(void *data, const char *buf, size_t len)
{
    struct replay_writer *w = data;
    if (w->io_errno != 0) {
        return -1;
    }
    if (len > 0 && fwrite(buf, 1, len, w->af.fp) != len) {
        w->io_errno = errno != 0 ? errno : EIO;
        return -1;
    }
    w->crc = gr_crc32(w->crc, buf, len);
    w->offset += len;
    return 0;
}

static int io_status(struct replay_writer *w, const char *what)
{
    if (w->io_errno != 0) {
        return gr_error(GR_EIO, "writing %s (%s) of %s: %s", what,
                        w->af.tmp_path, w->af.path, strerror(w->io_errno));
    }
    return 0;
}

/* A string that is not UTF-8 (a path with other bytes) goes as bin, so
 * that msgpack readers return it as bytes instead of failing to decode
 * it (core/files.h). */
static void pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    if (!gr_utf8_valid(s, n)) {
        msgpack_pack_bin(pk, n);
        msgpack_pack_bin_body(pk, s, n);
        return;
    }
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

static void pack_bool(msgpack_packer *pk, int v)
{
    if (v) {
        msgpack_pack_true(pk);
    } else {
        msgpack_pack_false(pk);
    }
}

static int check_header(const struct replay_header *h)
{
    if (strcmp(h->env, "craft") != 0) {
        return gr_error(GR_EINVAL, "replay header: env '%s' is not supported "
                        "(this grove records 'craft')", h->env);
    }
    if (craft_config_validate(&h->env_config) < 0) {
        return gr_error_wrap(GR_EINVAL, "replay header: env_config");
    }
    if (h->agent_kind[0] == '\0') {
        return gr_error(GR_EINVAL, "replay header: the agent kind is empty");
    }
    if (h->keyframe_every == 0) {
        return gr_error(GR_EINVAL, "replay header: keyframe_every must be "
                        "at least 1");
    }
    if (h->agent_n_options > REPLAY_MAX_OPTIONS) {
        return gr_error(GR_EINVAL, "replay header: n_options %" PRIu32
                        " exceeds %d", h->agent_n_options, REPLAY_MAX_OPTIONS);
    }
    return 0;
}

static void pack_header(struct replay_writer *w)
{
    msgpack_packer *pk = &w->pk;
    const struct replay_header *h = &w->header;
    const struct craft_config *c = &h->env_config;
    msgpack_pack_map(pk, 8);
    pack_str(pk, "magic");
    pack_str(pk, REPLAY_MAGIC);
    pack_str(pk, "version");
    msgpack_pack_uint32(pk, REPLAY_VERSION);
    pack_str(pk, "env");
    pack_str(pk, h->env);
    pack_str(pk, "env_config");
    msgpack_pack_map(pk, 10);
    pack_str(pk, "width");
    msgpack_pack_uint32(pk, (uint32_t)c->width);
    pack_str(pk, "height");
    msgpack_pack_uint32(pk, (uint32_t)c->height);
    pack_str(pk, "primitives");
    int n_prim = 0;
    for (int k = 0; k < CRAFT_N_KINDS; k++) {
        n_prim += (c->primitives >> k) & 1u;
    }
    msgpack_pack_array(pk, (size_t)n_prim);
    for (int k = 0; k < CRAFT_N_KINDS; k++) {
        if ((c->primitives >> k) & 1u) {
            pack_str(pk, craft_kind_name(k));
        }
    }
    pack_str(pk, "n_each");
    msgpack_pack_uint32(pk, (uint32_t)c->n_each);
    pack_str(pk, "workshops");
    pack_bool(pk, c->workshops);
    pack_str(pk, "treasure");
    pack_str(pk, craft_treasure_name(c->treasure));
    pack_str(pk, "coarse_view");
    pack_bool(pk, c->coarse_view);
    pack_str(pk, "max_steps");
    msgpack_pack_uint32(pk, (uint32_t)c->max_steps);
    pack_str(pk, "reward");
    pack_str(pk, craft_reward_name(c->reward));
    pack_str(pk, "recipes");
    pack_str(pk, h->recipes);
    pack_str(pk, "agent");
    msgpack_pack_map(pk, 3);
    pack_str(pk, "kind");
    pack_str(pk, h->agent_kind);
    pack_str(pk, "checkpoint");
    pack_str(pk, h->agent_checkpoint);
    pack_str(pk, "n_options");
    msgpack_pack_uint32(pk, h->agent_n_options);
    pack_str(pk, "created");
    pack_str(pk, h->created);
    pack_str(pk, "grove");
    pack_str(pk, h->grove);
    pack_str(pk, "keyframe_every");
    msgpack_pack_uint32(pk, h->keyframe_every);
}

int replay_writer_open(struct replay_writer **out, const char *path,
                       int force, const struct replay_header *header)
{
    *out = NULL;
    int rc = check_header(header);
    if (rc < 0) {
        return rc;
    }
    struct replay_writer *w = calloc(1, sizeof *w);
    if (w == NULL) {
        return gr_error(GR_ENOMEM, "replay writer: out of memory");
    }
    w->header = *header;
    w->header.version = REPLAY_VERSION;
    w->keyframe_t = -1;
    rc = gr_atomic_open(&w->af, path, force);
    if (rc < 0) {
        free(w);
        return rc;
    }
    msgpack_packer_init(&w->pk, w, write_cb);
    pack_header(w);
    rc = io_status(w, "the header");
    if (rc < 0) {
        replay_writer_abort(w);
        return rc;
    }
    *out = w;
    return 0;
}

uint64_t replay_writer_offset(const struct replay_writer *w)
{
    return w->offset;
}

int replay_writer_episode_start_raw(struct replay_writer *w, uint64_t seed,
                                    const struct craft_task *task)
{
    if (w->in_episode) {
        return gr_error(GR_EINVAL, "replay writer: episode %" PRIu32
                        " is still open (write its end first)",
                        w->episodes - 1);
    }
    if (task->n < 1 || task->n > CRAFT_MAX_SUBTASKS) {
        return gr_error(GR_EINVAL, "replay writer: a task of %d subtasks",
                        task->n);
    }
    char names[CRAFT_MAX_SUBTASKS][48];
    for (int i = 0; i < task->n; i++) {
        if (craft_subtask_name(&task->sub[i], names[i], sizeof names[i]) < 0) {
            return gr_error_wrap(GR_EINVAL, "replay writer: subtask %d", i);
        }
    }
    msgpack_packer *pk = &w->pk;
    msgpack_pack_map(pk, 3);
    pack_str(pk, "episode");
    msgpack_pack_uint32(pk, w->episodes);
    pack_str(pk, "seed");
    msgpack_pack_uint64(pk, seed);
    pack_str(pk, "task");
    msgpack_pack_array(pk, (size_t)task->n);
    for (int i = 0; i < task->n; i++) {
        pack_str(pk, names[i]);
    }
    int rc = io_status(w, "an episode start");
    if (rc < 0) {
        return rc;
    }
    w->in_episode = 1;
    w->next_t = 0;
    w->keyframe_t = -1;
    w->last_d = 0;
    return (int)(w->episodes++);
}

static int same_config(const struct craft_config *a,
                       const struct craft_config *b)
{
    return a->width == b->width && a->height == b->height &&
           a->primitives == b->primitives && a->n_each == b->n_each &&
           (a->workshops != 0) == (b->workshops != 0) &&
           a->treasure == b->treasure &&
           (a->coarse_view != 0) == (b->coarse_view != 0) &&
           a->max_steps == b->max_steps && a->reward == b->reward;
}

int replay_writer_episode_start(struct replay_writer *w,
                                const struct craft_world *world)
{
    if (!same_config(&world->config, &w->header.env_config)) {
        return gr_error(GR_EINVAL,
                        "replay writer: the world's config differs from the "
                        "header's env_config (task '%s' needs another config; "
                        "record it in a replay of its own)",
                        world->task.name);
    }
    if (world->t != 0) {
        return gr_error(GR_EINVAL, "replay writer: an episode must start at "
                        "t = 0 (the world is at t = %d)", world->t);
    }
    int e = replay_writer_episode_start_raw(w, world->seed, &world->task);
    if (e < 0) {
        return e;
    }
    int rc = replay_writer_keyframe(w, world);
    return rc < 0 ? rc : e;
}

int replay_writer_keyframe_due(const struct replay_writer *w, uint32_t t)
{
    if (t % w->header.keyframe_every != 0) {
        return 0;
    }
    return w->keyframe_t != (int64_t)t;
}

int replay_writer_keyframe_bytes(struct replay_writer *w, uint32_t t,
                                 const uint8_t *state, size_t n)
{
    if (!w->in_episode || w->last_d) {
        return gr_error(GR_EINVAL, "replay writer: a keyframe outside an "
                        "open episode's steps");
    }
    if (t != w->next_t) {
        return gr_error(GR_EINVAL, "replay writer: keyframe t = %" PRIu32
                        " but the next step is t = %" PRIu32, t, w->next_t);
    }
    if (w->keyframe_t == (int64_t)t) {
        return gr_error(GR_EINVAL, "replay writer: a second keyframe at t = "
                        "%" PRIu32, t);
    }
    if (n == 0 || n > UINT32_MAX) {
        return gr_error(GR_EINVAL, "replay writer: state of %zu bytes", n);
    }
    /* each index entry takes at most 16 bytes of the footer, which a
     * reader accepts up to REPLAY_MAX_OBJECT_BYTES */
    if ((w->n_index + 1) * 16 + 256 > REPLAY_MAX_OBJECT_BYTES) {
        return gr_error(GR_EINVAL, "replay writer: the keyframe index is "
                        "full (%zu keyframes); record the rest into another "
                        "file or with a larger keyframe_every", w->n_index);
    }
    if (w->n_index == w->cap_index) {
        size_t cap = w->cap_index ? 2 * w->cap_index : 256;
        void *p = realloc(w->index, cap * sizeof *w->index);
        if (p == NULL) {
            return gr_error(GR_ENOMEM, "replay writer: out of memory for the "
                            "keyframe index");
        }
        w->index = p;
        w->cap_index = cap;
    }
    uint64_t at = w->offset;
    msgpack_packer *pk = &w->pk;
    msgpack_pack_map(pk, 3);
    pack_str(pk, "t");
    msgpack_pack_uint32(pk, t);
    pack_str(pk, "state");
    msgpack_pack_bin(pk, n);
    msgpack_pack_bin_body(pk, state, n);
    pack_str(pk, "hash");
    msgpack_pack_uint64(pk, gr_fnv1a64(state, n));
    int rc = io_status(w, "a keyframe");
    if (rc < 0) {
        return rc;
    }
    w->index[w->n_index].episode = w->episodes - 1;
    w->index[w->n_index].t = t;
    w->index[w->n_index].offset = at;
    w->n_index++;
    w->keyframe_t = t;
    return 0;
}

int replay_writer_keyframe(struct replay_writer *w,
                           const struct craft_world *world)
{
    int n = craft_state_bytes(world, w->state, sizeof w->state);
    if (n < 0) {
        return gr_error_wrap(n, "replay writer: state bytes");
    }
    return replay_writer_keyframe_bytes(w, (uint32_t)world->t, w->state,
                                        (size_t)n);
}

int replay_writer_step(struct replay_writer *w, const struct replay_step *s)
{
    if (!w->in_episode) {
        return gr_error(GR_EINVAL, "replay writer: a step outside an episode");
    }
    if (w->last_d) {
        return gr_error(GR_EINVAL, "replay writer: a step after the "
                        "episode's last step (d was set at t = %" PRIu32 ")",
                        w->next_t - 1);
    }
    if (s->t != w->next_t) {
        return gr_error(GR_EINVAL, "replay writer: step t = %" PRIu32
                        ", expected t = %" PRIu32, s->t, w->next_t);
    }
    if (replay_writer_keyframe_due(w, s->t)) {
        return gr_error(GR_EINVAL, "replay writer: step t = %" PRIu32
                        " needs a keyframe first (every %" PRIu32 " steps)",
                        s->t, w->header.keyframe_every);
    }
    if (s->a >= CRAFT_N_ACTIONS) {
        return gr_error(GR_EINVAL, "replay writer: action %u is not 0..4",
                        (unsigned)s->a);
    }
    if (s->tr && !s->d) {
        return gr_error(GR_EINVAL, "replay writer: step t = %" PRIu32
                        " has tr set without d", s->t);
    }
    if (s->n_po > REPLAY_MAX_OPTIONS ||
        (s->n_po > 0 && w->header.agent_n_options > 0 &&
         s->n_po != w->header.agent_n_options)) {
        return gr_error(GR_EINVAL, "replay writer: po has %" PRIu32
                        " entries, the header says n_options %" PRIu32,
                        s->n_po, w->header.agent_n_options);
    }
    msgpack_packer *pk = &w->pk;
    size_t n = 6 + (s->has_o ? 1 : 0) + (s->n_po > 0 ? 1 : 0) +
               (s->has_pe ? 1 : 0);
    msgpack_pack_map(pk, n);
    pack_str(pk, "t");
    msgpack_pack_uint32(pk, s->t);
    pack_str(pk, "a");
    msgpack_pack_uint8(pk, s->a);
    pack_str(pk, "r");
    msgpack_pack_float(pk, s->r);
    pack_str(pk, "d");
    pack_bool(pk, s->d);
    pack_str(pk, "tr");
    pack_bool(pk, s->tr);
    pack_str(pk, "s");
    msgpack_pack_uint32(pk, s->s);
    if (s->has_o) {
        pack_str(pk, "o");
        msgpack_pack_uint32(pk, s->o);
    }
    if (s->n_po > 0) {
        pack_str(pk, "po");
        msgpack_pack_array(pk, s->n_po);
        for (uint32_t i = 0; i < s->n_po; i++) {
            msgpack_pack_float(pk, s->po[i]);
        }
    }
    if (s->has_pe) {
        pack_str(pk, "pe");
        msgpack_pack_float(pk, s->pe);
    }
    int rc = io_status(w, "a step");
    if (rc < 0) {
        return rc;
    }
    w->next_t++;
    w->steps++;
    w->last_d = s->d != 0;
    return 0;
}

int replay_writer_episode_end(struct replay_writer *w, double episode_return,
                              uint32_t length, int success)
{
    if (!w->in_episode) {
        return gr_error(GR_EINVAL, "replay writer: an episode end outside an "
                        "episode");
    }
    if (!w->last_d) {
        return gr_error(GR_EINVAL, "replay writer: episode %" PRIu32
                        " ends before a step with d set", w->episodes - 1);
    }
    if (length != w->next_t) {
        return gr_error(GR_EINVAL, "replay writer: episode %" PRIu32
                        " length %" PRIu32 " but %" PRIu32
                        " steps were written", w->episodes - 1, length,
                        w->next_t);
    }
    msgpack_packer *pk = &w->pk;
    msgpack_pack_map(pk, 4);
    pack_str(pk, "end");
    msgpack_pack_uint32(pk, w->episodes - 1);
    pack_str(pk, "return");
    msgpack_pack_float(pk, (float)episode_return);
    pack_str(pk, "length");
    msgpack_pack_uint32(pk, length);
    pack_str(pk, "success");
    pack_bool(pk, success);
    int rc = io_status(w, "an episode end");
    if (rc < 0) {
        return rc;
    }
    if (fflush(w->af.fp) != 0) {
        w->io_errno = errno != 0 ? errno : EIO;
        return io_status(w, "an episode end");
    }
    w->in_episode = 0;
    return 0;
}

int replay_record_step(struct replay_writer *w, struct craft_world *world,
                       int action, const struct replay_option_info *opt,
                       struct craft_step *out)
{
    if (!w->in_episode) {
        return gr_error(GR_EINVAL, "replay writer: record a step after "
                        "replay_writer_episode_start");
    }
    if (replay_writer_keyframe_due(w, (uint32_t)world->t)) {
        int rc = replay_writer_keyframe(w, world);
        if (rc < 0) {
            return rc;
        }
    }
    struct replay_step s;
    memset(&s, 0, sizeof s);
    s.t = (uint32_t)world->t;
    struct craft_step st;
    int rc = craft_world_step(world, action, &st);
    if (rc < 0) {
        return rc;
    }
    s.a = (uint8_t)action;
    s.r = st.reward;
    s.d = (uint8_t)(st.terminated || st.truncated);
    s.tr = (uint8_t)(st.truncated != 0);
    s.s = (uint32_t)st.subtask;
    if (opt != NULL) {
        s.has_o = (uint8_t)(opt->has_o != 0);
        s.o = opt->o;
        s.n_po = opt->n_po;
        s.po = opt->po;
        s.has_pe = (uint8_t)(opt->has_pe != 0);
        s.pe = opt->pe;
    }
    rc = replay_writer_step(w, &s);
    if (rc < 0) {
        return rc;
    }
    if (s.d) {
        rc = replay_writer_episode_end(w, world->episode_return,
                                       (uint32_t)world->t,
                                       st.terminated != 0);
        if (rc < 0) {
            return rc;
        }
    }
    if (out != NULL) {
        *out = st;
    }
    return 0;
}

void replay_writer_abort(struct replay_writer *w)
{
    if (w == NULL) {
        return;
    }
    gr_atomic_abort(&w->af);
    free(w->index);
    free(w);
}

int replay_writer_close(struct replay_writer *w)
{
    if (w->in_episode) {
        int e = (int)w->episodes - 1;
        replay_writer_abort(w);
        return gr_error(GR_EINVAL, "replay writer: closed with episode %d "
                        "open; the file was discarded", e);
    }
    uint64_t footer_at = w->offset;
    if (footer_at > UINT32_MAX) {
        replay_writer_abort(w);
        return gr_error(GR_EINVAL, "replay writer: the footer would start at "
                        "byte %" PRIu64 ", beyond the 4 GiB the trailer's "
                        "uint32 offset can name; record fewer episodes per "
                        "file", footer_at);
    }
    uint32_t crc = w->crc;
    msgpack_packer *pk = &w->pk;
    msgpack_pack_map(pk, 5);
    pack_str(pk, "footer");
    msgpack_pack_true(pk);
    pack_str(pk, "episodes");
    msgpack_pack_uint32(pk, w->episodes);
    pack_str(pk, "steps");
    msgpack_pack_uint64(pk, w->steps);
    pack_str(pk, "index");
    msgpack_pack_array(pk, w->n_index);
    for (size_t i = 0; i < w->n_index; i++) {
        msgpack_pack_array(pk, 3);
        msgpack_pack_uint32(pk, w->index[i].episode);
        msgpack_pack_uint32(pk, w->index[i].t);
        msgpack_pack_uint64(pk, w->index[i].offset);
    }
    pack_str(pk, "crc32");
    msgpack_pack_uint32(pk, crc);
    uint8_t trailer[REPLAY_TRAILER_SIZE];
    memcpy(trailer, REPLAY_TRAILER, 8);
    for (int i = 0; i < 4; i++) {
        trailer[8 + i] = (uint8_t)(footer_at >> (8 * i));
    }
    int rc = io_status(w, "the footer");
    if (rc == 0 && fwrite(trailer, 1, sizeof trailer, w->af.fp) !=
                       sizeof trailer) {
        w->io_errno = errno != 0 ? errno : EIO;
        rc = io_status(w, "the trailer");
    }
    if (rc < 0) {
        replay_writer_abort(w);
        return rc;
    }
    rc = gr_atomic_commit(&w->af);
    free(w->index);
    free(w);
    return rc;
}
