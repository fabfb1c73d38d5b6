#include "core/hash.h"

#include <pthread.h>

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

/* Byte-wise table, computed once; 1 KiB. Slicing-by-8 is not worth its
 * code here: the CRC runs over files at write speed. */
static uint32_t crc_table[256];
static pthread_once_t crc_table_once = PTHREAD_ONCE_INIT;

static void crc_table_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) {
            c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        }
        crc_table[i] = c;
    }
}

uint32_t gr_crc32(uint32_t crc, const void *data, size_t n)
{
    const unsigned char *p = data;
    pthread_once(&crc_table_once, crc_table_init);
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc = crc_table[(crc ^ p[i]) & 0xFFu] ^ (crc >> 8);
    }
    return ~crc;
}
