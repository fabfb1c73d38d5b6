/* replays/replay_internal.h — pieces of the replay reader shared by its
 * source files and its tests; not part of the public API.
 *
 * The structural scanner walks raw MessagePack bytes as they stream in,
 * without allocating, and checks every declared length (string, binary,
 * extension, array and map counts) against the bytes that remain before the
 * end of the data, and the nesting depth against a small limit. The reader
 * runs it over every chunk *before* handing the chunk to msgpack-c's
 * unpacker, because the unpacker allocates `count * sizeof(msgpack_object)`
 * for a container as soon as it sees its header: a forged 4-byte count would
 * otherwise make it ask for tens of gigabytes.
 */
#ifndef GROVE_REPLAYS_REPLAY_INTERNAL_H
#define GROVE_REPLAYS_REPLAY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* Deepest nesting of containers the reader accepts (a valid replay nests
 * at most 3 deep: footer map -> index array -> entry array). */
#define REPLAY_SCAN_MAX_DEPTH 16

enum replay_scan_status {
    REPLAY_SCAN_OK = 0,     /* every byte given was consumed, no problem */
    REPLAY_SCAN_OBJECT,     /* a top-level object ended (see *used) */
    REPLAY_SCAN_OVERRUN,    /* a length needs more bytes than remain */
    REPLAY_SCAN_BAD_TYPE,   /* 0xc1, the one byte MessagePack never uses */
    REPLAY_SCAN_TOO_DEEP,   /* containers nested deeper than the limit */
    REPLAY_SCAN_TOO_BIG,    /* one object longer than max_object bytes */
};

struct replay_scanner {
    uint64_t pos;       /* absolute offset of the next byte to scan */
    uint64_t limit;     /* absolute offset where the data ends */
    uint64_t obj_start; /* offset where the current top-level object began */
    uint64_t max_object;/* longest top-level object accepted, in bytes */
    int ended;          /* internal: an object just ended */
    uint64_t skip;      /* payload bytes still to skip */
    int depth;
    uint64_t left[REPLAY_SCAN_MAX_DEPTH]; /* items left in each container */
    uint8_t type;       /* type byte whose header is being collected */
    uint8_t hdr[8];     /* header bytes collected so far */
    int hdr_have, hdr_need;
    uint64_t objects;   /* top-level objects completed */
    /* Set when a scan stops on a problem: */
    enum replay_scan_status status;
    uint64_t err_pos;   /* offset of the byte that starts the bad item */
    char err[160];      /* what is wrong, without the offset */
};

/* Starts a scan at absolute offset `start` of data ending at `limit`;
 * objects longer than `max_object` bytes are refused. */
void replay_scan_init(struct replay_scanner *s, uint64_t start,
                      uint64_t limit, uint64_t max_object);

/* Scans the `n` bytes that follow s->pos, stopping right after the end of
 * a top-level object. *used gets the bytes consumed. Returns
 * REPLAY_SCAN_OBJECT when an object ended at p + *used (it began at the
 * s->obj_start the caller saw before the call, or before the earlier calls
 * that scanned its first bytes), REPLAY_SCAN_OK when all n bytes were
 * consumed inside an object or at a boundary, else the problem (s->err_pos,
 * s->err say where and what). A scanner that stopped on a problem stays
 * stopped. */
enum replay_scan_status replay_scan(struct replay_scanner *s,
                                    const uint8_t *p, size_t n,
                                    size_t *used);

/* 1 when the scanner stands between two top-level objects. */
int replay_scan_at_boundary(const struct replay_scanner *s);

#endif
