#include "core/hash.h"

#include <zlib.h>

uint64_t gr_fnv1a64_update(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= GR_FNV1A64_PRIME;
    }
    return h;
}

uint64_t gr_fnv1a64(const void *data, size_t n)
{
    return gr_fnv1a64_update(GR_FNV1A64_BASIS, data, n);
}

/* zlib's CRC-32 (braided, table-driven): the same values as before, from a
 * library that every PNG and zip reader already trusts. crc32_z takes a
 * size_t length, so no chunking is needed for buffers over 4 GiB. */
uint32_t gr_crc32(uint32_t crc, const void *data, size_t n)
{
    if (n == 0) {
        return crc; /* zlib's crc32(crc, NULL, 0) would return 0 */
    }
    return (uint32_t)crc32_z(crc, data, n);
}
