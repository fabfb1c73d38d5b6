/* Philox 4x32-10 against the published known-answer vectors (Random123's
 * kat_vectors, Salmon et al. 2011), streams, splitmix64. */
#include <stdint.h>

#include "core/random.h"
#include "tests/test.h"

static void check_kat(const uint32_t ctr[4], const uint32_t key[2],
                      const uint32_t want[4])
{
    uint32_t out[4];
    gr_philox4x32_10(ctr, key, out);
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_U64(out[i], want[i]);
    }
}

int main(void)
{
    const uint32_t zero_ctr[4] = {0, 0, 0, 0}, zero_key[2] = {0, 0};
    const uint32_t zero_out[4] = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu,
                                  0x9b00dbd8u};
    check_kat(zero_ctr, zero_key, zero_out);

    const uint32_t ones_ctr[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu,
                                  0xffffffffu};
    const uint32_t ones_key[2] = {0xffffffffu, 0xffffffffu};
    const uint32_t ones_out[4] = {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u,
                                  0x6d5451fdu};
    check_kat(ones_ctr, ones_key, ones_out);

    const uint32_t pi_ctr[4] = {0x243f6a88u, 0x85a308d3u, 0x13198a2eu,
                                0x03707344u};
    const uint32_t pi_key[2] = {0xa4093822u, 0x299f31d0u};
    const uint32_t pi_out[4] = {0xd16cfe09u, 0x94fdccebu, 0x5001e420u,
                                0x24126ea1u};
    check_kat(pi_ctr, pi_key, pi_out);

    /* A stream keyed by seed 0 yields block(0) words in order, then
     * block(1); gr_philox_word_at agrees with the stream everywhere. */
    struct gr_philox_stream s = gr_philox_stream_init(0, 0);
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_U64(gr_philox_next_u32(&s), zero_out[i]);
    }
    uint64_t seed = 0x123456789abcdef0ull;
    s = gr_philox_stream_init(seed, 0);
    for (uint64_t i = 0; i < 1000; i++) {
        CHECK_EQ_U64(gr_philox_next_u32(&s), gr_philox_word_at(seed, i));
    }
    /* Key word 0 is the low half of the seed. */
    uint32_t key[2] = {0x9abcdef0u, 0x12345678u}, block[4];
    gr_philox4x32_10(zero_ctr, key, block);
    CHECK_EQ_U64(gr_philox_word_at(seed, 2), block[2]);
    /* An offset stream starts at that counter. */
    struct gr_philox_stream t = gr_philox_stream_init(seed, 5);
    CHECK_EQ_U64(gr_philox_next_u32(&t), gr_philox_word_at(seed, 20));
    /* The counter carries across 32-bit words. */
    struct gr_philox_stream c = gr_philox_stream_init(7, 0xffffffffull);
    (void)gr_philox_next_u32(&c);
    CHECK(c.counter[0] == 0 && c.counter[1] == 1);

    /* Uniforms lie in [0, 1) and average about one half. */
    double sum = 0;
    int in_range = 1;
    s = gr_philox_stream_init(42, 0);
    for (int i = 0; i < 100000; i++) {
        float u = gr_philox_next_uniform(&s);
        in_range &= u >= 0.0f && u < 1.0f;
        sum += u;
    }
    CHECK(in_range);
    CHECK_NEAR(sum / 100000, 0.5, 0.01);
    CHECK(gr_u32_to_uniform(0xffffffffu) < 1.0f);

    /* splitmix64 from state 0: the reference sequence of Vigna's
     * splitmix64.c (first three outputs). */
    uint64_t state = 0;
    CHECK_EQ_U64(gr_splitmix64_next(&state), 0xe220a8397b1dcdafull);
    CHECK_EQ_U64(gr_splitmix64_next(&state), 0x6e789e6aa1b965f4ull);
    CHECK_EQ_U64(gr_splitmix64_next(&state), 0x06c45d188009454full);
    CHECK_EQ_U64(gr_mix64(0), 0);

    return test_report("core_random");
}
