/* replays/replay.h — the grove replay format (spec/replay.md, version 1):
 * a writer, a streaming reader that validates as it goes, and a validator
 * that re-simulates Craft against every keyframe hash.
 *
 * A replay is a stream of MessagePack objects: one header, then per episode
 * an episode start, keyframes (full Craft state bytes of craft.md §9.1 at
 * t = 0 and every `keyframe_every` steps, each before the step of the same
 * t), one step record per step and an episode end; then one footer (counts,
 * an index of every keyframe's byte offset, the CRC-32 of every byte before
 * it) and a 12-byte trailer: "GRRFOOT1" + the footer's offset (uint32 LE).
 *
 * Writer: replay_writer_open writes the header into "PATH.tmp.PID" (an
 * atomic file of core/files.h; PATH is refused when it exists unless
 * force); records follow in the order above (the writer refuses any other
 * order); the file is flushed after every episode end, so a program killed
 * while recording leaves PATH.tmp.PID valid up to its last complete episode
 * (open it with REPLAY_READ_RECOVER); replay_writer_close writes the footer
 * and the trailer and renames the file to PATH. replay_record_step drives a
 * Craft world and writes keyframes, steps and the episode end for you.
 *
 * Reader: streams the file in fixed-size chunks; before msgpack-c sees a
 * byte, a scanner checks every declared length and count against the bytes
 * that remain (no input makes it allocate without bound) and cuts the
 * stream into top-level objects, so each record comes with its byte offset
 * and size. It checks as it streams: magic, the major version (another one
 * is refused by number), required keys and their types (unknown keys are
 * ignored), the order of records, episode and step numbering, every
 * keyframe hash against the FNV-1a 64 of its state bytes, the episode end
 * against its steps, the footer's counts and index against what was read,
 * the CRC-32 and the trailer. With REPLAY_READ_VERIFY it also re-simulates
 * every episode from (env_config, seed, task) and the recorded actions and
 * compares every keyframe hash, reward, flag and subtask index.
 * Errors name the file, the object, its byte offset and what was expected:
 *   "x.replay: truncated at byte 5120 (the first incomplete object): ..."
 *   "x.replay: corrupt at byte 833: step: key \"a\" is a string, expected ..."
 *   "x.replay: episode 3, step 17 (keyframe at byte 9001): hash ... but
 *    re-simulation gives ..."
 *
 * Memory: writer and reader are opaque heap objects owned by the caller
 * (open ... close). Pointers inside a record (header, state bytes, po,
 * footer index) belong to the reader and stay valid until the next call of
 * replay_reader_next, replay_reader_seek or replay_reader_close; copy what
 * you keep. Threads: one writer or reader per thread; distinct objects are
 * independent. Errors: negative GR_E* codes of core/error.h with the
 * message in gr_last_error(); nothing here prints or exits.
 *
 * Usage (write):
 *   struct replay_header h;  replay_header_init(&h, &cfg, "expert");
 *   struct replay_writer *w;
 *   if (replay_writer_open(&w, "demo.replay", force, &h) < 0) fail();
 *   craft_world_reset(&world, &cfg, seed, &task);
 *   replay_writer_episode_start(w, &world);
 *   while (!craft_world_done(&world))
 *       replay_record_step(w, &world, policy(&world), NULL, &st);
 *   if (replay_writer_close(w) < 0) fail();      // footer, trailer, rename
 * Usage (read):
 *   struct replay_reader *r;  struct replay_record rec;  int rc;
 *   if (replay_reader_open(&r, path, REPLAY_READ_VERIFY) < 0) fail();
 *   while ((rc = replay_reader_next(r, &rec)) > 0)
 *       if (rec.type == REPLAY_RECORD_STEP) use(rec.step.a, rec.offset);
 *   if (rc < 0) fail();                          // gr_last_error() says why
 *   replay_reader_close(r);
 */
#ifndef GROVE_REPLAYS_REPLAY_H
#define GROVE_REPLAYS_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "envs/craft.h"

#define REPLAY_MAGIC "grove-replay"
/* Format versions, one line each (taisei-style): */
#define REPLAY_VERSION_1 1 /* spec/replay.md: the first version */
#define REPLAY_VERSION REPLAY_VERSION_1 /* the version this grove writes */
#define REPLAY_TRAILER "GRRFOOT1"
#define REPLAY_TRAILER_SIZE 12
#define REPLAY_KEYFRAME_EVERY_DEFAULT 64
/* Most options an agent may report per step ("po" length). */
#define REPLAY_MAX_OPTIONS 256
/* Largest single object the reader accepts. The footer index is the
 * biggest one a valid file has (at most 16 bytes per keyframe, so about a
 * million keyframes; the writer stops before that). msgpack-c needs up to
 * ~24 bytes of memory per byte of an object, so this also bounds what a
 * hostile file can make the reader allocate (~400 MB). */
#define REPLAY_MAX_OBJECT_BYTES (16u << 20)

/* ---- records ------------------------------------------------------------- */

/* The header (spec "Header"). Strings are NUL-terminated; the reader
 * truncates nothing: a longer string in a file is an error naming the key. */
struct replay_header {
    uint32_t version;              /* format version: REPLAY_VERSION */
    char env[16];                  /* "craft" (the only env this grove has) */
    struct craft_config env_config;/* rebuilds every world of the file */
    char recipes[16];              /* recipe table name: "ompn" */
    char agent_kind[32];           /* "ocn", "expert", "random", "human" */
    char agent_checkpoint[512];    /* checkpoint path, or "" */
    uint32_t agent_n_options;      /* K, or 0 when the agent has no options */
    char created[32];              /* ISO-8601 UTC: "2026-11-23T03:48:28Z" */
    char grove[64];                /* version string of the writing program */
    uint32_t keyframe_every;       /* extra key "keyframe_every" (grove
                                      writes it; 0 when a file lacks it) */
};

/* Episode start: "episode", "seed", "task" (subtask names in order). The
 * reader rebuilds the task with craft_task_from_subtasks (name "AC", "make
 * bed" or "custom"). */
struct replay_episode_start {
    uint32_t episode;        /* index from 0 */
    uint64_t seed;           /* the reset seed */
    struct craft_task task;
};

/* Keyframe: the state before the step of the same t. */
struct replay_keyframe {
    uint32_t episode;        /* filled by the reader (not in the object) */
    uint32_t t;
    const uint8_t *state;    /* craft.md §9.1 bytes; reader-owned */
    size_t state_len;
    uint64_t hash;           /* FNV-1a 64 of the state bytes */
};

/* Step: the short keys of the spec. The optional option fields are
 * present when has_o / n_po > 0 / has_pe say so. */
struct replay_step {
    uint32_t episode;        /* filled by the reader (not in the object) */
    uint32_t t;              /* "t": step index within the episode, from 0 */
    uint8_t a;               /* "a": action index 0..4 */
    float r;                 /* "r": reward (float32) */
    uint8_t d;               /* "d": 1 on the episode's last step */
    uint8_t tr;              /* "tr": 1 when that last step hit the time
                                limit without the task done */
    uint32_t s;              /* "s": subtask index k before the action */
    uint8_t has_o;
    uint32_t o;              /* "o": option in control */
    uint32_t n_po;           /* length of "po", 0 when absent; equals the
                                header's agent_n_options when that is > 0 */
    const float *po;         /* "po": controller's option distribution
                                after the step [n_po]; caller's (writer) or
                                reader-owned (reader) */
    uint8_t has_pe;
    float pe;                /* "pe": end probability e_t */
};

struct replay_episode_end {
    uint32_t episode;        /* "end" */
    double episode_return;   /* "return" (written as float32) */
    uint32_t length;         /* "length": steps in the episode */
    uint8_t success;         /* "success": the task was done (terminated) */
};

struct replay_index_entry {
    uint32_t episode;
    uint32_t t;
    uint64_t offset;         /* byte offset of the keyframe object */
};

struct replay_footer {
    uint64_t episodes;
    uint64_t steps;
    uint32_t crc32;          /* CRC-32 of every byte before the footer */
    size_t n_index;
    const struct replay_index_entry *index; /* reader-owned [n_index] */
};

enum replay_record_type {
    REPLAY_RECORD_HEADER = 1,
    REPLAY_RECORD_EPISODE_START,
    REPLAY_RECORD_KEYFRAME,
    REPLAY_RECORD_STEP,
    REPLAY_RECORD_EPISODE_END,
    REPLAY_RECORD_FOOTER,
};

/* "header", "episode start", ... */
const char *replay_record_type_name(enum replay_record_type type);

/* One object of the file. Only the member named by `type` is filled. */
struct replay_record {
    enum replay_record_type type;
    uint64_t offset;         /* byte offset of the object in the file */
    uint64_t size;           /* its length in bytes */
    const struct replay_header *header; /* HEADER: reader-owned */
    struct replay_episode_start start;  /* EPISODE_START */
    struct replay_keyframe keyframe;    /* KEYFRAME */
    struct replay_step step;            /* STEP */
    struct replay_episode_end end;      /* EPISODE_END */
    struct replay_footer footer;        /* FOOTER */
};

/* ---- writer ---------------------------------------------------------------- */

struct replay_writer;

/* A header for `config` (copied) and an agent kind ("expert", ...):
 * version REPLAY_VERSION, env "craft", recipes "ompn", checkpoint "",
 * n_options 0, keyframe_every 64, created now (UTC; SOURCE_DATE_EPOCH's
 * time instead when it is a decimal count of seconds, so that identical
 * runs write identical files), grove "unknown" (set it to the program's
 * version). */
void replay_header_init(struct replay_header *h,
                        const struct craft_config *config,
                        const char *agent_kind);

/* Opens PATH for writing (through PATH.tmp.PID) and writes the header.
 * GR_EEXIST when PATH exists and !force; GR_EINVAL for a bad header (a
 * config craft_config_validate refuses, keyframe_every 0, empty agent kind);
 * GR_EIO when the folder cannot be written. */
int replay_writer_open(struct replay_writer **out, const char *path,
                       int force, const struct replay_header *header);

/* Starts the next episode (index = episodes started before) for a world
 * just reset: writes the episode start (world->seed, world->task) and the
 * keyframe at t = 0. GR_EINVAL when an episode is open, when world->t != 0,
 * or when world->config differs from the header's env_config (record tasks
 * that need another config, such as OMPN "get gold", in another file).
 * Returns the episode index (>= 0). */
int replay_writer_episode_start(struct replay_writer *w,
                                const struct craft_world *world);

/* The same from parts, without the keyframe (write it yourself with
 * replay_writer_keyframe_bytes). */
int replay_writer_episode_start_raw(struct replay_writer *w, uint64_t seed,
                                    const struct craft_task *task);

/* 1 when step t must be preceded by a keyframe (t = 0 or a multiple of
 * keyframe_every) that was not written yet, else 0. */
int replay_writer_keyframe_due(const struct replay_writer *w, uint32_t t);

/* Writes a keyframe of `world` (its state before step world->t). */
int replay_writer_keyframe(struct replay_writer *w,
                           const struct craft_world *world);

/* Writes a keyframe from state bytes; the hash is computed here. */
int replay_writer_keyframe_bytes(struct replay_writer *w, uint32_t t,
                                 const uint8_t *state, size_t n);

/* Writes step record *s (s->episode is ignored). Refused (GR_EINVAL) when
 * out of order: t must follow the previous step, a due keyframe must have
 * been written, nothing may follow a step with d set but the episode end;
 * also a >= 5, tr without d, n_po > REPLAY_MAX_OPTIONS or n_po different
 * from the header's agent_n_options when that is > 0. */
int replay_writer_step(struct replay_writer *w, const struct replay_step *s);

/* Ends the open episode and flushes the file. Refused unless the last step
 * had d set and length equals the steps written. */
int replay_writer_episode_end(struct replay_writer *w, double episode_return,
                              uint32_t length, int success);

/* Option data of a step, for agents that have them (any may be absent). */
struct replay_option_info {
    int has_o;
    uint32_t o;
    uint32_t n_po;        /* 0: no "po" */
    const float *po;      /* [n_po] */
    int has_pe;
    float pe;
};

/* Records one step of `world`: writes the keyframe when due, steps the
 * world with `action` (craft_world_step), writes the step record (with
 * `opt` unless NULL) and, when the episode ends, the episode end.
 * *out (may be NULL) gets the step's result. */
int replay_record_step(struct replay_writer *w, struct craft_world *world,
                       int action, const struct replay_option_info *opt,
                       struct craft_step *out);

/* Bytes written so far (the offset the next object will have). */
uint64_t replay_writer_offset(const struct replay_writer *w);

/* Writes the footer and trailer, closes and renames the file to PATH, and
 * frees the writer (also on error). GR_EINVAL when an episode is open (its
 * records are lost with the file), GR_EIO on a write error. */
int replay_writer_close(struct replay_writer *w);

/* Discards the file (PATH untouched) and frees the writer. NULL is fine. */
void replay_writer_abort(struct replay_writer *w);

/* ---- reader ---------------------------------------------------------------- */

struct replay_reader;

enum replay_read_flags {
    /* A truncated file (a killed recording) ends cleanly after its last
     * complete episode instead of failing: records are returned only up to
     * that episode's end; replay_reader_status says where the file was cut.
     * Corruption (as opposed to truncation) is still an error. */
    REPLAY_READ_RECOVER = 1u << 0,
    /* Re-simulate every episode and compare keyframe hashes, rewards,
     * flags, subtask indices and episode ends (what `replay verify` does);
     * replay_reader_world gives the simulated world. */
    REPLAY_READ_VERIFY = 1u << 1,
};

/* Opens a replay file and reads its header (the first record
 * replay_reader_next returns). GR_EIO (cannot open), GR_EFORMAT (not a
 * replay, unknown version, bad header, or truncated before the header
 * ends). `flags`: enum replay_read_flags. */
int replay_reader_open(struct replay_reader **out, const char *path,
                       unsigned flags);

/* The same over bytes in memory (copied); `name` names it in messages. */
int replay_reader_open_memory(struct replay_reader **out, const void *data,
                              size_t size, const char *name, unsigned flags);

/* Next record into *rec: 1 when one was read, 0 at the end (after the
 * footer and trailer checked out, or, with REPLAY_READ_RECOVER, after the
 * last complete episode of a truncated file), or a negative GR_E* code
 * (GR_EFORMAT for truncation, corruption, a failed check). After an error
 * or the end, it keeps returning the same. */
int replay_reader_next(struct replay_reader *r, struct replay_record *rec);

/* The header (valid from open to close). */
const struct replay_header *replay_reader_header(const struct replay_reader *r);

struct replay_reader_status {
    uint64_t file_size;
    uint64_t offset;          /* bytes read so far (end of the last record) */
    uint64_t episodes;        /* complete episodes read so far */
    uint64_t steps;           /* steps in those episodes */
    uint64_t keyframes;       /* keyframes read (all episodes) */
    int complete;             /* footer and trailer read and checked */
    int crc_ok;               /* the footer's CRC-32 matched */
    int truncated;            /* the file was cut short (see RECOVER) */
    uint64_t truncated_at;    /* offset of its first incomplete object */
    int seeked;               /* a seek happened: CRC and counts unchecked */
};
void replay_reader_status(const struct replay_reader *r,
                          struct replay_reader_status *st);

/* With REPLAY_READ_VERIFY: the re-simulated world after the last record
 * (after an episode start: the reset state; after a step: the state after
 * it); NULL without the flag or before the first episode. */
const struct craft_world *replay_reader_world(const struct replay_reader *r);

/* With REPLAY_READ_VERIFY, after a step record: the world before that step
 * (the state its action was chosen in; craft_world_observe it for the
 * agent's observation). NULL otherwise. */
const struct craft_world *replay_reader_world_before(
    const struct replay_reader *r);

/* Reads the footer through the trailer without streaming the file (a
 * cheap look at the index). GR_EFORMAT when the trailer or footer is
 * missing or bad (a truncated file has none). *footer's index is
 * reader-owned until close or the next call of this function. */
int replay_reader_footer(struct replay_reader *r,
                         struct replay_footer *footer);

/* Moves the stream to the keyframe of index entry *e (from
 * replay_reader_footer); the next record is that keyframe. With
 * REPLAY_READ_VERIFY the world is rebuilt from its state bytes and
 * re-simulation goes on from there. After a seek the CRC, the footer's
 * counts and its index are no longer checked (status.seeked). */
int replay_reader_seek(struct replay_reader *r,
                       const struct replay_index_entry *e);

/* Frees the reader. NULL is fine. */
void replay_reader_close(struct replay_reader *r);

/* ---- validator ------------------------------------------------------------- */

struct replay_verify_result {
    uint64_t episodes;
    uint64_t steps;
    uint64_t keyframes;       /* keyframe hashes re-simulated and matched */
    uint64_t successes;
    uint32_t crc32;
};

/* Reads the whole file with REPLAY_READ_VERIFY: 0 when every check holds
 * (every keyframe hash re-simulates, CRC, footer, trailer), else the error
 * (message names episode, step and byte offset). *res may be NULL. */
int replay_verify_file(const char *path, struct replay_verify_result *res);

#endif
