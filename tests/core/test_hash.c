/* FNV-1a 64 and CRC-32 against their standard check values. */
#include <string.h>

#include "core/hash.h"
#include "tests/test.h"

int main(void)
{
    /* FNV-1a 64 test vectors (Fowler, Noll, Vo: the published table). */
    CHECK_EQ_U64(gr_fnv1a64("", 0), 0xcbf29ce484222325ull);
    CHECK_EQ_U64(gr_fnv1a64("a", 1), 0xaf63dc4c8601ec8cull);
    CHECK_EQ_U64(gr_fnv1a64("foobar", 6), 0x85944171f73967e8ull);
    /* Incremental equals one shot. */
    uint64_t h = gr_fnv1a64_update(GR_FNV1A64_BASIS, "foo", 3);
    CHECK_EQ_U64(gr_fnv1a64_update(h, "bar", 3), gr_fnv1a64("foobar", 6));

    /* CRC-32 check value: "123456789" -> 0xCBF43926 (zlib, PNG). */
    CHECK_EQ_U64(gr_crc32(0, "123456789", 9), 0xCBF43926u);
    CHECK_EQ_U64(gr_crc32(0, "", 0), 0);
    CHECK_EQ_U64(gr_crc32(0, "The quick brown fox jumps over the lazy dog",
                          43),
                 0x414FA339u);
    uint32_t c = gr_crc32(0, "1234", 4);
    CHECK_EQ_U64(gr_crc32(c, "56789", 5), 0xCBF43926u);
    return test_report("core_hash");
}
