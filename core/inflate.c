/* DEFLATE decoder (RFC 1951). See core/inflate.h.
 *
 * Bits are read least-significant first from a 32-bit reservoir. A Huffman
 * code is canonical (RFC 1951 §3.2.2): for each code length the codes are
 * consecutive integers, in symbol order. We keep, per table, the number of
 * codes of each length and the symbols sorted by (length, value); decoding
 * bit by bit walks the lengths, keeping the first code of the current
 * length. A 512-entry table indexed by the next 9 input bits (bit-reversed
 * codes) short-cuts every code of up to 9 bits. */
#include "core/inflate.h"

#include <stdint.h>
#include <string.h>

#include "core/error.h"

#define MAX_BITS 15
#define MAX_LITLEN 288 /* 286 valid, 288 in the fixed code */
#define MAX_DIST 32    /* 30 valid, 32 in the fixed code */
#define FAST_BITS 9
#define FAST_SIZE (1u << FAST_BITS)

struct bitreader {
    const uint8_t *in;
    size_t size;
    size_t pos;    /* next byte to load into the reservoir */
    uint32_t bits; /* reservoir, next bit in bit 0 */
    int count;     /* valid bits in the reservoir */
};

struct huffman {
    uint16_t count[MAX_BITS + 1]; /* codes of each length */
    uint16_t symbol[MAX_LITLEN];  /* symbols by (length, value) */
    uint16_t fast[FAST_SIZE];     /* (length << 9) | symbol, 0 = not here */
};

/* Byte offset (in the compressed input) of the next unread bit. */
static size_t bit_offset(const struct bitreader *br)
{
    return br->pos - (size_t)(br->count / 8) - (br->count % 8 != 0);
}

static int truncated(const struct bitreader *br)
{
    return gr_error(GR_EFORMAT,
                    "deflate: stream truncated at stream byte %zu (input ends "
                    "inside a block)",
                    br->size);
}

/* Tops the reservoir up to at least `need` bits (need <= 24). */
static int need_bits(struct bitreader *br, int need)
{
    while (br->count < need) {
        if (br->pos >= br->size) {
            return truncated(br);
        }
        br->bits |= (uint32_t)br->in[br->pos++] << br->count;
        br->count += 8;
    }
    return 0;
}

/* Loads what is there, up to 24 bits, without failing at the end. */
static void fill_bits(struct bitreader *br)
{
    while (br->count <= 16 && br->pos < br->size) {
        br->bits |= (uint32_t)br->in[br->pos++] << br->count;
        br->count += 8;
    }
}

static int get_bits(struct bitreader *br, int n, unsigned *value)
{
    if (n == 0) {
        *value = 0;
        return 0;
    }
    int rc = need_bits(br, n);
    if (rc < 0) {
        return rc;
    }
    *value = br->bits & ((1u << n) - 1u);
    br->bits >>= n;
    br->count -= n;
    return 0;
}

static unsigned reverse_bits(unsigned code, int len)
{
    unsigned r = 0;
    for (int i = 0; i < len; i++) {
        r = (r << 1) | (code & 1u);
        code >>= 1;
    }
    return r;
}

enum code_kind { KIND_CODELEN, KIND_LITLEN, KIND_DIST };

/* Builds a table from n code lengths. Over-subscribed sets are refused;
 * incomplete ones only when they hold a single code of length 1 (zlib's
 * rule; not for the code-length code), or no code at all for distances. */
static int build_huffman(struct huffman *h, const uint8_t *lengths, int n,
                         enum code_kind kind, const char *what, size_t at)
{
    uint16_t offs[MAX_BITS + 2];
    memset(h->count, 0, sizeof h->count);
    memset(h->fast, 0, sizeof h->fast);
    for (int s = 0; s < n; s++) {
        h->count[lengths[s]]++;
    }
    int max_len = 0;
    for (int len = 1; len <= MAX_BITS; len++) {
        if (h->count[len] != 0) {
            max_len = len;
        }
    }
    if (max_len == 0) {
        if (kind == KIND_DIST) {
            return 0; /* a block of literals only */
        }
        return gr_error(GR_EFORMAT, "deflate: %s code has no symbols at "
                        "stream byte %zu", what, at);
    }
    int left = 1;
    for (int len = 1; len <= MAX_BITS; len++) {
        left <<= 1;
        left -= h->count[len];
        if (left < 0) {
            return gr_error(GR_EFORMAT, "deflate: %s code is over-subscribed "
                            "(more codes of length %d than fit) at stream byte %zu",
                            what, len, at);
        }
    }
    if (left > 0 && (kind == KIND_CODELEN || max_len != 1)) {
        return gr_error(GR_EFORMAT, "deflate: %s code is incomplete at "
                        "stream byte %zu", what, at);
    }
    offs[1] = 0;
    for (int len = 1; len <= MAX_BITS; len++) {
        offs[len + 1] = (uint16_t)(offs[len] + h->count[len]);
    }
    /* Canonical codes: first code of each length. */
    unsigned next_code[MAX_BITS + 1];
    unsigned code = 0;
    next_code[0] = 0;
    for (int len = 1; len <= MAX_BITS; len++) {
        next_code[len] = code;
        code = (code + h->count[len]) << 1;
    }
    for (int s = 0; s < n; s++) {
        int len = lengths[s];
        if (len == 0) {
            continue;
        }
        h->symbol[offs[len]++] = (uint16_t)s;
        unsigned c = next_code[len]++;
        if (len <= FAST_BITS) {
            unsigned r = reverse_bits(c, len);
            for (unsigned j = r; j < FAST_SIZE; j += 1u << len) {
                h->fast[j] = (uint16_t)((unsigned)len << FAST_BITS | (unsigned)s);
            }
        }
    }
    return 0;
}

/* Decodes one symbol. */
static int decode(struct bitreader *br, const struct huffman *h,
                  const char *what, int *symbol)
{
    fill_bits(br);
    if (br->count > 0) {
        uint16_t e = h->fast[br->bits & (FAST_SIZE - 1u)];
        int len = e >> FAST_BITS;
        if (e != 0 && len <= br->count) {
            br->bits >>= len;
            br->count -= len;
            *symbol = e & (FAST_SIZE - 1u);
            return 0;
        }
    }
    size_t at = bit_offset(br);
    int code = 0, first = 0, index = 0;
    for (int len = 1; len <= MAX_BITS; len++) {
        unsigned bit;
        int rc = get_bits(br, 1, &bit);
        if (rc < 0) {
            return rc;
        }
        code |= (int)bit;
        int count = h->count[len];
        if (code - first < count) {
            *symbol = h->symbol[index + code - first];
            return 0;
        }
        index += count;
        first += count;
        first <<= 1;
        code <<= 1;
    }
    return gr_error(GR_EFORMAT, "deflate: invalid %s code at stream byte %zu", what,
                    at);
}

static const uint16_t length_base[29] = {
    3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
    31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t length_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1,
                                         1, 1, 2, 2, 2, 2, 3, 3, 3, 3,
                                         4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[30] = {
    1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,   97,   129,
    193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra[30] = {0, 0, 0, 0, 1, 1, 2,  2,  3,  3,
                                       4, 4, 5, 5, 6, 6, 7,  7,  8,  8,
                                       9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

struct output {
    uint8_t *buf;
    size_t cap;
    size_t len;
};

static int output_full(const struct output *o, const struct bitreader *br)
{
    return gr_error(GR_EFORMAT, "deflate: output exceeds %zu bytes (the "
                    "declared size) at stream byte %zu", o->cap, bit_offset(br));
}

static int inflate_stored(struct bitreader *br, struct output *o)
{
    /* Discard the rest of the current byte; LEN and NLEN follow. */
    br->bits >>= br->count % 8;
    br->count -= br->count % 8;
    unsigned len, nlen;
    size_t at = bit_offset(br);
    int rc = get_bits(br, 16, &len);
    if (rc == 0) {
        rc = get_bits(br, 16, &nlen);
    }
    if (rc < 0) {
        return rc;
    }
    if (len != (~nlen & 0xFFFFu)) {
        return gr_error(GR_EFORMAT, "deflate: stored block length %u does not "
                        "match its complement %u at stream byte %zu", len, nlen, at);
    }
    /* The reservoir is byte-aligned and empty here (32 bits were read). */
    size_t avail = br->size - br->pos;
    if (len > avail) {
        return gr_error(GR_EFORMAT, "deflate: stored block of %u bytes at "
                        "stream byte %zu runs past the end of the input (%zu bytes "
                        "left)", len, at, avail);
    }
    if (len > o->cap - o->len) {
        return output_full(o, br);
    }
    if (len > 0) {
        memcpy(o->buf + o->len, br->in + br->pos, len);
    }
    o->len += len;
    br->pos += len;
    return 0;
}

static int inflate_codes(struct bitreader *br, struct output *o,
                         const struct huffman *lit, const struct huffman *dist)
{
    for (;;) {
        int sym;
        int rc = decode(br, lit, "literal/length", &sym);
        if (rc < 0) {
            return rc;
        }
        if (sym < 256) {
            if (o->len == o->cap) {
                return output_full(o, br);
            }
            o->buf[o->len++] = (uint8_t)sym;
            continue;
        }
        if (sym == 256) {
            return 0;
        }
        size_t at = bit_offset(br);
        sym -= 257;
        if (sym >= 29) {
            return gr_error(GR_EFORMAT, "deflate: invalid length symbol %d "
                            "at stream byte %zu", sym + 257, at);
        }
        unsigned extra;
        rc = get_bits(br, length_extra[sym], &extra);
        if (rc < 0) {
            return rc;
        }
        size_t len = length_base[sym] + extra;
        int dsym;
        rc = decode(br, dist, "distance", &dsym);
        if (rc < 0) {
            return rc;
        }
        if (dsym >= 30) {
            return gr_error(GR_EFORMAT, "deflate: invalid distance symbol %d "
                            "at stream byte %zu", dsym, at);
        }
        rc = get_bits(br, dist_extra[dsym], &extra);
        if (rc < 0) {
            return rc;
        }
        size_t d = dist_base[dsym] + extra;
        if (d > o->len) {
            return gr_error(GR_EFORMAT, "deflate: distance %zu is too far "
                            "back (only %zu bytes written) at stream byte %zu", d,
                            o->len, at);
        }
        if (len > o->cap - o->len) {
            return output_full(o, br);
        }
        uint8_t *dst = o->buf + o->len;
        const uint8_t *src = dst - d;
        for (size_t i = 0; i < len; i++) {
            dst[i] = src[i]; /* overlapping copies repeat the pattern */
        }
        o->len += len;
    }
}

static int inflate_fixed(struct bitreader *br, struct output *o)
{
    uint8_t lengths[MAX_LITLEN];
    struct huffman lit, dist;
    int s = 0;
    for (; s < 144; s++) {
        lengths[s] = 8;
    }
    for (; s < 256; s++) {
        lengths[s] = 9;
    }
    for (; s < 280; s++) {
        lengths[s] = 7;
    }
    for (; s < 288; s++) {
        lengths[s] = 8;
    }
    int rc = build_huffman(&lit, lengths, MAX_LITLEN, KIND_LITLEN,
                           "literal/length", 0);
    for (s = 0; s < MAX_DIST; s++) {
        lengths[s] = 5;
    }
    if (rc == 0) {
        rc = build_huffman(&dist, lengths, MAX_DIST, KIND_DIST, "distance", 0);
    }
    if (rc < 0) {
        return rc; /* cannot happen: the fixed codes are complete */
    }
    return inflate_codes(br, o, &lit, &dist);
}

static int inflate_dynamic(struct bitreader *br, struct output *o)
{
    static const uint8_t order[19] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                      11, 4,  12, 3, 13, 2, 14, 1, 15};
    size_t at = bit_offset(br);
    unsigned hlit, hdist, hclen;
    int rc = get_bits(br, 5, &hlit);
    if (rc == 0) {
        rc = get_bits(br, 5, &hdist);
    }
    if (rc == 0) {
        rc = get_bits(br, 4, &hclen);
    }
    if (rc < 0) {
        return rc;
    }
    int nlit = (int)hlit + 257, ndist = (int)hdist + 1, ncode = (int)hclen + 4;
    if (nlit > 286 || ndist > 30) {
        return gr_error(GR_EFORMAT, "deflate: dynamic block declares %d "
                        "literal/length and %d distance codes (at most 286 "
                        "and 30) at stream byte %zu", nlit, ndist, at);
    }
    uint8_t lengths[MAX_LITLEN + MAX_DIST];
    memset(lengths, 0, 19);
    for (int i = 0; i < ncode; i++) {
        unsigned v;
        rc = get_bits(br, 3, &v);
        if (rc < 0) {
            return rc;
        }
        lengths[order[i]] = (uint8_t)v;
    }
    struct huffman lencode, lit, dist;
    rc = build_huffman(&lencode, lengths, 19, KIND_CODELEN, "code-length",
                       at);
    if (rc < 0) {
        return rc;
    }
    int i = 0;
    while (i < nlit + ndist) {
        size_t sym_at = bit_offset(br);
        int sym;
        rc = decode(br, &lencode, "code-length", &sym);
        if (rc < 0) {
            return rc;
        }
        if (sym < 16) {
            lengths[i++] = (uint8_t)sym;
            continue;
        }
        unsigned extra;
        int repeat;
        uint8_t value = 0;
        if (sym == 16) {
            if (i == 0) {
                return gr_error(GR_EFORMAT, "deflate: code-length repeat "
                                "with no previous length at stream byte %zu", sym_at);
            }
            value = lengths[i - 1];
            rc = get_bits(br, 2, &extra);
            repeat = 3 + (int)extra;
        } else if (sym == 17) {
            rc = get_bits(br, 3, &extra);
            repeat = 3 + (int)extra;
        } else {
            rc = get_bits(br, 7, &extra);
            repeat = 11 + (int)extra;
        }
        if (rc < 0) {
            return rc;
        }
        if (i + repeat > nlit + ndist) {
            return gr_error(GR_EFORMAT, "deflate: code-length repeat of %d "
                            "runs past the %d declared lengths at stream byte %zu",
                            repeat, nlit + ndist, sym_at);
        }
        while (repeat-- > 0) {
            lengths[i++] = value;
        }
    }
    if (lengths[256] == 0) {
        return gr_error(GR_EFORMAT, "deflate: dynamic block has no "
                        "end-of-block code at stream byte %zu", at);
    }
    rc = build_huffman(&lit, lengths, nlit, KIND_LITLEN, "literal/length", at);
    if (rc == 0) {
        rc = build_huffman(&dist, lengths + nlit, ndist, KIND_DIST,
                           "distance", at);
    }
    if (rc < 0) {
        return rc;
    }
    return inflate_codes(br, o, &lit, &dist);
}

int gr_inflate(const void *in, size_t in_size, void *out, size_t out_cap,
               size_t *out_size, size_t *in_used)
{
    struct bitreader br = {in, in_size, 0, 0, 0};
    struct output o = {out, out_cap, 0};
    unsigned final = 0;
    int rc = 0;
    *out_size = 0;
    do {
        unsigned type;
        size_t at = bit_offset(&br);
        rc = get_bits(&br, 1, &final);
        if (rc == 0) {
            rc = get_bits(&br, 2, &type);
        }
        if (rc < 0) {
            break;
        }
        if (type == 0) {
            rc = inflate_stored(&br, &o);
        } else if (type == 1) {
            rc = inflate_fixed(&br, &o);
        } else if (type == 2) {
            rc = inflate_dynamic(&br, &o);
        } else {
            rc = gr_error(GR_EFORMAT, "deflate: invalid block type 3 at "
                          "stream byte %zu", at);
        }
    } while (rc == 0 && !final);
    *out_size = o.len;
    if (rc == 0 && in_used != NULL) {
        /* Whole bytes still in the reservoir were not part of the stream. */
        *in_used = br.pos - (size_t)(br.count / 8);
    }
    return rc;
}
