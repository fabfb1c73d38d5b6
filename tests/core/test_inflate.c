/* DEFLATE decoder: zlib's streams of every strategy (fixtures made by
 * tests/fixtures/zip/make_fixtures.py), a second, independent encoder
 * written here (fixed Huffman, every length and distance code, the longest
 * distance 32,768), hand-made malformed streams with the error each must
 * give, and truncated, bit-flipped and random inputs that must fail
 * cleanly (run under ASan in CI). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/inflate.h"
#include "core/random.h"
#include "tests/fixtures/zip/fixtures.h"
#include "tests/test.h"

/* ---- a small DEFLATE writer (fixed Huffman and stored blocks) ---------- */

struct bitwriter {
    unsigned char *buf;
    size_t cap, len; /* bytes */
    uint32_t acc;
    int n;
};

static void put_bits(struct bitwriter *w, uint32_t value, int n)
{
    for (int i = 0; i < n; i++) {
        w->acc |= ((value >> i) & 1u) << w->n;
        if (++w->n == 8) {
            if (w->len < w->cap) {
                w->buf[w->len] = (unsigned char)w->acc;
            }
            w->len++;
            w->acc = 0;
            w->n = 0;
        }
    }
}

/* Huffman codes go most-significant bit first. */
static void put_code(struct bitwriter *w, uint32_t code, int n)
{
    for (int i = n - 1; i >= 0; i--) {
        put_bits(w, (code >> i) & 1u, 1);
    }
}

static void flush_byte(struct bitwriter *w)
{
    if (w->n > 0) {
        put_bits(w, 0, 8 - w->n);
    }
}

/* RFC 1951 §3.2.6, the fixed literal/length code. */
static void put_fixed_symbol(struct bitwriter *w, int sym)
{
    if (sym < 144) {
        put_code(w, 0x30u + (uint32_t)sym, 8);
    } else if (sym < 256) {
        put_code(w, 0x190u + (uint32_t)(sym - 144), 9);
    } else if (sym < 280) {
        put_code(w, (uint32_t)(sym - 256), 7);
    } else {
        put_code(w, 0xC0u + (uint32_t)(sym - 280), 8);
    }
}

/* RFC 1951 §3.2.5, written out independently of the decoder's tables. */
static void put_match(struct bitwriter *w, int len, int dist)
{
    int sym, base, extra;
    if (len == 258) {
        sym = 285, base = 258, extra = 0;
    } else if (len <= 10) {
        sym = 257 + len - 3, base = len, extra = 0;
    } else {
        /* codes 265.. come in groups of 4 with 1..5 extra bits */
        extra = 1;
        base = 11;
        sym = 265;
        while (len >= base + (4 << extra)) {
            base += 4 << extra;
            sym += 4;
            extra++;
        }
        sym += (len - base) >> extra;
        base += ((len - base) >> extra) << extra;
    }
    put_fixed_symbol(w, sym);
    put_bits(w, (uint32_t)(len - base), extra);
    int dsym, dbase, dextra;
    if (dist <= 4) {
        dsym = dist - 1, dbase = dist, dextra = 0;
    } else {
        dextra = 1;
        dbase = 5;
        dsym = 4;
        while (dist >= dbase + (2 << dextra)) {
            dbase += 2 << dextra;
            dsym += 2;
            dextra++;
        }
        dsym += (dist - dbase) >> dextra;
        dbase += ((dist - dbase) >> dextra) << dextra;
    }
    put_code(w, (uint32_t)dsym, 5);
    put_bits(w, (uint32_t)(dist - dbase), dextra);
}

static void test_own_encoder(void)
{
    enum { PLAIN_CAP = 200000, COMP_CAP = 400000 };
    unsigned char *plain = malloc(PLAIN_CAP);
    unsigned char *comp = malloc(COMP_CAP);
    unsigned char *out = malloc(PLAIN_CAP);
    size_t n = 0;
    struct bitwriter w = {comp, COMP_CAP, 0, 0, 0};
    struct gr_philox_stream rng = gr_philox_stream_init(2024, 0);

    /* Block 1 (fixed, not final): every literal, then every length with a
     * distance that walks every distance code, then 33,000 literals. */
    put_bits(&w, 0, 1);
    put_bits(&w, 1, 2);
    for (int b = 0; b < 256; b++) {
        put_fixed_symbol(&w, b);
        plain[n++] = (unsigned char)b;
    }
    for (int len = 3; len <= 258; len++) {
        int dist = 1 + (int)(gr_philox_next_u32(&rng) % (uint32_t)n);
        put_match(&w, len, dist);
        for (int i = 0; i < len; i++, n++) {
            plain[n] = plain[n - (size_t)dist];
        }
    }
    for (int i = 0; i < 33000; i++) {
        int b = (int)(gr_philox_next_u32(&rng) & 0xFFu);
        put_fixed_symbol(&w, b);
        plain[n++] = (unsigned char)b;
    }
    put_fixed_symbol(&w, 256);
    /* Block 2: stored, 300 bytes. */
    put_bits(&w, 0, 1);
    put_bits(&w, 0, 2);
    flush_byte(&w);
    put_bits(&w, 300, 16);
    put_bits(&w, 300 ^ 0xFFFFu, 16);
    for (int i = 0; i < 300; i++) {
        int b = (int)(gr_philox_next_u32(&rng) & 0xFFu);
        put_bits(&w, (uint32_t)b, 8);
        plain[n++] = (unsigned char)b;
    }
    /* Block 3 (fixed, final): distances at the edges, 32,768 included. */
    put_bits(&w, 1, 1);
    put_bits(&w, 1, 2);
    const int dists[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 24, 25, 256, 257,
                         1024, 1025, 4096, 4097, 16384, 16385, 24576,
                         24577, 32767, 32768};
    for (size_t k = 0; k < sizeof dists / sizeof dists[0]; k++) {
        int len = 3 + (int)(gr_philox_next_u32(&rng) % 256u);
        put_match(&w, len, dists[k]);
        for (int i = 0; i < len; i++, n++) {
            plain[n] = plain[n - (size_t)dists[k]];
        }
    }
    put_fixed_symbol(&w, 256);
    flush_byte(&w);
    CHECK(w.len <= COMP_CAP);

    size_t got = 0, used = 0;
    int rc = gr_inflate(comp, w.len, out, PLAIN_CAP, &got, &used);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    CHECK_EQ_U64(got, n);
    CHECK_EQ_U64(used, w.len);
    CHECK(got == n && memcmp(out, plain, n) == 0);

    /* The same stream into a buffer one byte short. */
    rc = gr_inflate(comp, w.len, out, n - 1, &got, &used);
    CHECK(rc == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "output exceeds");

    /* Every truncation in the first 2,000 bytes and the last 300 fails. */
    int all_failed = 1;
    for (size_t cut = 0; cut < w.len; cut += (cut < 2000 || cut + 300 > w.len) ? 1 : 997) {
        if (gr_inflate(comp, cut, out, PLAIN_CAP, &got, NULL) == 0) {
            all_failed = 0;
            fprintf(stderr, "truncated at %zu decoded\n", cut);
            break;
        }
    }
    CHECK(all_failed);
    free(plain);
    free(comp);
    free(out);
}

/* ---- zlib's streams -------------------------------------------------- */

static void test_zlib_fixtures(void)
{
    size_t n_fix = sizeof deflate_fixtures / sizeof deflate_fixtures[0];
    unsigned char *out = malloc(8192);
    for (size_t f = 0; f < n_fix; f++) {
        const struct deflate_fixture *fx = &deflate_fixtures[f];
        size_t got = 0, used = 0;
        int rc = gr_inflate(fx->data, fx->size, out, fx->plain_size, &got,
                            &used);
        CHECK_MSG(rc == 0, "%s: %s", fx->name, gr_last_error());
        CHECK_MSG(got == fx->plain_size, "%s: %zu bytes", fx->name, got);
        CHECK_MSG(used == fx->size, "%s: used %zu of %zu", fx->name, used,
                  fx->size);
        CHECK_MSG(gr_crc32(0, out, got) == fx->plain_crc, "%s: CRC",
                  fx->name);
        /* Trailing bytes are not part of the stream. */
        unsigned char padded[4096];
        if (fx->size + 8 <= sizeof padded) {
            memcpy(padded, fx->data, fx->size);
            memset(padded + fx->size, 0xAB, 8);
            rc = gr_inflate(padded, fx->size + 8, out, fx->plain_size, &got,
                            &used);
            CHECK_MSG(rc == 0 && used == fx->size, "%s padded", fx->name);
        }
        /* Every truncation fails, with a message. */
        for (size_t cut = 0; cut < fx->size; cut++) {
            gr_clear_error();
            rc = gr_inflate(fx->data, cut, out, fx->plain_size, &got, NULL);
            CHECK_MSG(rc == GR_EFORMAT, "%s cut at %zu decoded", fx->name,
                      cut);
            CHECK_MSG(strstr(gr_last_error(), "deflate: ") != NULL,
                      "%s cut at %zu: '%s'", fx->name, cut, gr_last_error());
            if (rc == 0) {
                break;
            }
        }
        /* Flipped bits: an error or some output, never a crash. */
        unsigned char *copy = malloc(fx->size);
        struct gr_philox_stream rng = gr_philox_stream_init(7 + f, 0);
        for (int trial = 0; trial < 300 && fx->size > 0; trial++) {
            memcpy(copy, fx->data, fx->size);
            uint32_t bit = gr_philox_next_u32(&rng) % (uint32_t)(fx->size * 8);
            copy[bit / 8] ^= (unsigned char)(1u << (bit % 8));
            rc = gr_inflate(copy, fx->size, out, fx->plain_size, &got, NULL);
            CHECK(rc == 0 || rc == GR_EFORMAT);
            CHECK(got <= fx->plain_size);
        }
        free(copy);
    }
    free(out);
}

/* ---- malformed streams, each with its message ------------------------ */

static void expect_error(const unsigned char *in, size_t n, const char *what)
{
    unsigned char out[1024];
    size_t got = 0;
    gr_clear_error();
    int rc = gr_inflate(in, n, out, sizeof out, &got, NULL);
    CHECK_MSG(rc == GR_EFORMAT, "expected '%s', got rc %d", what, rc);
    CHECK_STR_CONTAINS(gr_last_error(), what);
}

static void test_malformed(void)
{
    const unsigned char type3[] = {0x07};
    expect_error(type3, sizeof type3, "invalid block type 3");
    const unsigned char nlen[] = {0x01, 0x05, 0x00, 0x00, 0x00, 'a'};
    expect_error(nlen, sizeof nlen, "does not match its complement");
    const unsigned char short_stored[] = {0x01, 0x05, 0x00, 0xFA, 0xFF, 'a'};
    expect_error(short_stored, sizeof short_stored, "runs past the end");
    expect_error(type3, 0, "truncated");

    unsigned char buf[64];
    struct bitwriter w = {buf, sizeof buf, 0, 0, 0};
    /* A match before the start of the output. */
    put_bits(&w, 1, 1);
    put_bits(&w, 1, 2);
    put_fixed_symbol(&w, 'a');
    put_match(&w, 3, 5);
    put_fixed_symbol(&w, 256);
    flush_byte(&w);
    expect_error(buf, w.len, "distance 5 is too far back");

    /* Fixed-code length symbols 286/287 and distance symbols 30/31 exist
     * in the code but are invalid. */
    w = (struct bitwriter){buf, sizeof buf, 0, 0, 0};
    put_bits(&w, 1, 1);
    put_bits(&w, 1, 2);
    put_fixed_symbol(&w, 286);
    flush_byte(&w);
    expect_error(buf, w.len, "invalid length symbol 286");
    w = (struct bitwriter){buf, sizeof buf, 0, 0, 0};
    put_bits(&w, 1, 1);
    put_bits(&w, 1, 2);
    put_fixed_symbol(&w, 'a');
    put_fixed_symbol(&w, 257);
    put_code(&w, 30, 5);
    flush_byte(&w);
    expect_error(buf, w.len, "invalid distance symbol 30");

    /* Dynamic headers. */
    w = (struct bitwriter){buf, sizeof buf, 0, 0, 0};
    put_bits(&w, 1, 1);
    put_bits(&w, 2, 2);
    put_bits(&w, 30, 5); /* 287 literal/length codes */
    put_bits(&w, 0, 5);
    put_bits(&w, 0, 4);
    flush_byte(&w);
    expect_error(buf, w.len, "287 literal/length");

    /* Code-length code {16: 1 bit, 0: 1 bit}; the first symbol is 16. */
    w = (struct bitwriter){buf, sizeof buf, 0, 0, 0};
    put_bits(&w, 1, 1);
    put_bits(&w, 2, 2);
    put_bits(&w, 0, 5);
    put_bits(&w, 0, 5);
    put_bits(&w, 0, 4); /* 4 code-length lengths: 16, 17, 18, 0 */
    put_bits(&w, 1, 3);
    put_bits(&w, 0, 3);
    put_bits(&w, 0, 3);
    put_bits(&w, 1, 3);
    put_code(&w, 1, 1); /* symbol 16 */
    put_bits(&w, 0, 2);
    flush_byte(&w);
    expect_error(buf, w.len, "no previous length");

    /* Three codes of length 1: over-subscribed. */
    w = (struct bitwriter){buf, sizeof buf, 0, 0, 0};
    put_bits(&w, 1, 1);
    put_bits(&w, 2, 2);
    put_bits(&w, 0, 5);
    put_bits(&w, 0, 5);
    put_bits(&w, 0, 4);
    put_bits(&w, 1, 3);
    put_bits(&w, 1, 3);
    put_bits(&w, 1, 3);
    put_bits(&w, 0, 3);
    flush_byte(&w);
    expect_error(buf, w.len, "over-subscribed");

    /* One code of length 1 for code lengths: incomplete. */
    w = (struct bitwriter){buf, sizeof buf, 0, 0, 0};
    put_bits(&w, 1, 1);
    put_bits(&w, 2, 2);
    put_bits(&w, 0, 5);
    put_bits(&w, 0, 5);
    put_bits(&w, 0, 4);
    put_bits(&w, 0, 3);
    put_bits(&w, 0, 3);
    put_bits(&w, 0, 3);
    put_bits(&w, 1, 3);
    flush_byte(&w);
    expect_error(buf, w.len, "incomplete");

    /* Code lengths {0: 1 bit, 18: 1 bit}: 18 repeats zero 11..138 times;
     * 257 + 1 lengths, all zero, leave no end-of-block code. */
    w = (struct bitwriter){buf, sizeof buf, 0, 0, 0};
    put_bits(&w, 1, 1);
    put_bits(&w, 2, 2);
    put_bits(&w, 0, 5);
    put_bits(&w, 0, 5);
    put_bits(&w, 0, 4);
    put_bits(&w, 0, 3); /* 16 */
    put_bits(&w, 0, 3); /* 17 */
    put_bits(&w, 1, 3); /* 18 */
    put_bits(&w, 1, 3); /* 0 */
    /* canonical: symbol 0 -> code 0, symbol 18 -> code 1 */
    put_code(&w, 1, 1);
    put_bits(&w, 127, 7); /* 138 zeros */
    put_code(&w, 1, 1);
    put_bits(&w, 108, 7); /* 119 zeros: 257 */
    put_code(&w, 0, 1);   /* one more zero: 258 */
    flush_byte(&w);
    expect_error(buf, w.len, "no end-of-block code");

    /* The same with a repeat running past the declared lengths. */
    w = (struct bitwriter){buf, sizeof buf, 0, 0, 0};
    put_bits(&w, 1, 1);
    put_bits(&w, 2, 2);
    put_bits(&w, 0, 5);
    put_bits(&w, 0, 5);
    put_bits(&w, 0, 4);
    put_bits(&w, 0, 3);
    put_bits(&w, 0, 3);
    put_bits(&w, 1, 3);
    put_bits(&w, 1, 3);
    put_code(&w, 1, 1);
    put_bits(&w, 127, 7);
    put_code(&w, 1, 1);
    put_bits(&w, 127, 7); /* 276 > 258 */
    flush_byte(&w);
    expect_error(buf, w.len, "runs past the 258 declared lengths");
}

static void test_random_inputs(void)
{
    struct gr_philox_stream rng = gr_philox_stream_init(99, 0);
    unsigned char in[300];
    unsigned char *out = malloc(1 << 16);
    int ok = 0;
    for (int trial = 0; trial < 3000; trial++) {
        size_t n = 1 + gr_philox_next_u32(&rng) % sizeof in;
        for (size_t i = 0; i < n; i++) {
            in[i] = (unsigned char)gr_philox_next_u32(&rng);
        }
        size_t got = 0;
        int rc = gr_inflate(in, n, out, 1 << 16, &got, NULL);
        CHECK(rc == 0 || rc == GR_EFORMAT);
        CHECK(got <= (1u << 16));
        ok += rc == 0;
    }
    printf("random inputs: %d of 3000 decoded without error\n", ok);
    free(out);
}

int main(void)
{
    test_zlib_fixtures();
    test_own_encoder();
    test_malformed();
    test_random_inputs();
    return test_report("core_inflate");
}
