/* The structural MessagePack scanner of replay_internal.h: a byte-at-a-time
 * state machine (type byte, then header bytes, then payload to skip) with a
 * stack of item counts. It never allocates and never looks back, so chunks
 * can end anywhere, even inside a header. */
#include "replays/replay_internal.h"

#include <stdio.h>
#include <string.h>

void replay_scan_init(struct replay_scanner *s, uint64_t start, uint64_t limit,
                      uint64_t max_object)
{
    memset(s, 0, sizeof *s);
    s->pos = start;
    s->limit = limit;
    s->obj_start = start;
    s->max_object = max_object;
}

int replay_scan_at_boundary(const struct replay_scanner *s)
{
    return s->depth == 0 && s->hdr_need == 0 && s->skip == 0 &&
           s->status == REPLAY_SCAN_OK;
}

static enum replay_scan_status fail(struct replay_scanner *s,
                                    enum replay_scan_status st,
                                    uint64_t at, const char *fmt,
                                    unsigned long long a,
                                    unsigned long long b)
{
    s->status = st;
    s->err_pos = at;
    snprintf(s->err, sizeof s->err, fmt, a, b);
    return st;
}

/* One item (scalar, string, or a container's last element) is finished:
 * count it against the open containers, closing the ones it fills. */
static void item_done(struct replay_scanner *s)
{
    while (s->depth > 0) {
        if (--s->left[s->depth - 1] > 0) {
            return;
        }
        s->depth--;
    }
    s->objects++;
    s->obj_start = s->pos;
    s->ended = 1;
}

/* Bytes of header that follow a type byte (lengths, counts, fixed-size
 * values); the payload, if any, is decided once they are in. */
static int header_bytes(uint8_t t)
{
    switch (t) {
    case 0xc4: case 0xc7: case 0xcc: case 0xd0: case 0xd9:
        return 1;
    case 0xc5: case 0xc8: case 0xcd: case 0xd1: case 0xda: case 0xdc:
    case 0xde:
        return 2;
    case 0xc6: case 0xc9: case 0xca: case 0xce: case 0xd2: case 0xdb:
    case 0xdd: case 0xdf:
        return 4;
    case 0xcb: case 0xcf: case 0xd3:
        return 8;
    case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
        return 1; /* fixext: the extension type byte */
    default:
        return 0;
    }
}

static uint64_t be(const uint8_t *h, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) {
        v = (v << 8) | h[i];
    }
    return v;
}

/* A container of `items` items (maps count keys and values) starts; its
 * header ended at s->pos. */
static enum replay_scan_status open_container(struct replay_scanner *s,
                                              uint64_t head, uint64_t items,
                                              int is_map)
{
    uint64_t remain = s->limit - s->pos;
    uint64_t budget = s->obj_start + s->max_object - s->pos;
    if (items > budget && items <= remain) {
        return fail(s, REPLAY_SCAN_TOO_BIG, head,
                    "a container of %llu items makes the object longer than "
                    "the %llu bytes a replay object may have",
                    (unsigned long long)items,
                    (unsigned long long)s->max_object);
    }
    if (items > remain) {
        return fail(s, REPLAY_SCAN_OVERRUN, head,
                    is_map ? "a map of %llu entries needs at least twice as "
                             "many bytes, but only %llu remain"
                           : "an array of %llu elements needs at least as "
                             "many bytes, but only %llu remain",
                    (unsigned long long)(is_map ? items / 2 : items),
                    (unsigned long long)remain);
    }
    if (items == 0) {
        item_done(s);
        return REPLAY_SCAN_OK;
    }
    if (s->depth >= REPLAY_SCAN_MAX_DEPTH) {
        return fail(s, REPLAY_SCAN_TOO_DEEP, head,
                    "containers nested deeper than %llu%.0llu",
                    (unsigned long long)REPLAY_SCAN_MAX_DEPTH, 0ull);
    }
    s->left[s->depth++] = items;
    return REPLAY_SCAN_OK;
}

/* A payload of `len` bytes follows the header that ended at s->pos. */
static enum replay_scan_status payload(struct replay_scanner *s, uint64_t head,
                                       uint64_t len, const char *what)
{
    uint64_t remain = s->limit - s->pos;
    uint64_t budget = s->obj_start + s->max_object - s->pos;
    if (len > budget && len <= remain) {
        s->status = REPLAY_SCAN_TOO_BIG;
        s->err_pos = head;
        snprintf(s->err, sizeof s->err,
                 "a %s of %llu bytes makes the object longer than the %llu "
                 "bytes a replay object may have",
                 what, (unsigned long long)len,
                 (unsigned long long)s->max_object);
        return s->status;
    }
    if (len > remain) {
        s->status = REPLAY_SCAN_OVERRUN;
        s->err_pos = head;
        snprintf(s->err, sizeof s->err,
                 "a %s of %llu bytes, but only %llu remain", what,
                 (unsigned long long)len, (unsigned long long)remain);
        return s->status;
    }
    if (len == 0) {
        item_done(s);
    } else {
        s->skip = len;
    }
    return REPLAY_SCAN_OK;
}

/* The header of s->type is complete (it ended at s->pos). */
static enum replay_scan_status header_done(struct replay_scanner *s)
{
    int n = s->hdr_need;
    uint64_t head = s->pos - (uint64_t)n - 1;
    uint64_t v = be(s->hdr, n);
    uint8_t t = s->type;
    s->hdr_need = 0;
    s->hdr_have = 0;
    switch (t) {
    case 0xc4: case 0xc5: case 0xc6:
        return payload(s, head, v, "binary");
    case 0xd9: case 0xda: case 0xdb:
        return payload(s, head, v, "string");
    case 0xc7: case 0xc8: case 0xc9:
        /* length, then a type byte that is part of the payload here */
        return payload(s, head, v + 1, "extension");
    case 0xd4: return payload(s, head, 1, "extension");
    case 0xd5: return payload(s, head, 2, "extension");
    case 0xd6: return payload(s, head, 4, "extension");
    case 0xd7: return payload(s, head, 8, "extension");
    case 0xd8: return payload(s, head, 16, "extension");
    case 0xdc: case 0xdd:
        return open_container(s, head, v, 0);
    case 0xde: case 0xdf:
        return open_container(s, head, 2 * v, 1);
    default: /* fixed-size numbers: the header was the value */
        item_done(s);
        return REPLAY_SCAN_OK;
    }
}

enum replay_scan_status replay_scan(struct replay_scanner *s, const uint8_t *p,
                                    size_t n, size_t *used)
{
    size_t i = 0;
    *used = 0;
    if (s->status != REPLAY_SCAN_OK) {
        return s->status;
    }
    s->ended = 0;
    while (i < n && !s->ended) {
        if (s->pos - s->obj_start >= s->max_object) {
            *used = i;
            return fail(s, REPLAY_SCAN_TOO_BIG, s->obj_start,
                        "the object is longer than the %llu bytes a replay "
                        "object may have%.0llu",
                        (unsigned long long)s->max_object, 0ull);
        }
        if (s->skip > 0) {
            uint64_t take = s->skip < (uint64_t)(n - i) ? s->skip
                                                         : (uint64_t)(n - i);
            s->skip -= take;
            s->pos += take;
            i += (size_t)take;
            if (s->skip == 0) {
                item_done(s);
            }
            continue;
        }
        uint8_t b = p[i++];
        s->pos++;
        if (s->hdr_need > 0) {
            s->hdr[s->hdr_have++] = b;
            if (s->hdr_have == s->hdr_need &&
                header_done(s) != REPLAY_SCAN_OK) {
                *used = i;
                return s->status;
            }
            continue;
        }
        uint64_t head = s->pos - 1;
        enum replay_scan_status st = REPLAY_SCAN_OK;
        if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
            item_done(s);
        } else if (b <= 0x8f) {
            st = open_container(s, head, 2u * (b & 0x0f), 1);
        } else if (b <= 0x9f) {
            st = open_container(s, head, b & 0x0f, 0);
        } else if (b <= 0xbf) {
            st = payload(s, head, b & 0x1f, "string");
        } else if (b == 0xc1) {
            st = fail(s, REPLAY_SCAN_BAD_TYPE, head,
                      "byte 0x%02llx is not a MessagePack type%.0llu",
                      (unsigned long long)b, 0ull);
        } else {
            s->type = b;
            s->hdr_need = header_bytes(b);
            s->hdr_have = 0;
        }
        if (st != REPLAY_SCAN_OK) {
            *used = i;
            return st;
        }
    }
    *used = i;
    if (s->ended) {
        s->ended = 0;
        return REPLAY_SCAN_OBJECT;
    }
    return REPLAY_SCAN_OK;
}
