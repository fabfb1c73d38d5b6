/* core/hash.h — FNV-1a 64 and CRC-32 (zlib's).
 *
 * FNV-1a 64: offset basis 0xcbf29ce484222325, prime 0x100000001b3; used for
 * Craft state hashes and task-name seeds (craft.md §9). CRC-32: reflected
 * polynomial 0xEDB88320, initial and final XOR 0xFFFFFFFF, the CRC of zlib
 * and PNG, computed by zlib's crc32_z; used for replay footers, checkpoints
 * and zip entries. Both are incremental and pure; safe from any thread.
 *
 *   uint64_t h = gr_fnv1a64(bytes, n);
 *   uint32_t c = gr_crc32(0, part1, n1);  c = gr_crc32(c, part2, n2);
 */
#ifndef GROVE_CORE_HASH_H
#define GROVE_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define GR_FNV1A64_BASIS 0xcbf29ce484222325ull
#define GR_FNV1A64_PRIME 0x100000001b3ull

/* Continues an FNV-1a 64 hash `h` over `n` bytes. Start from the basis. */
uint64_t gr_fnv1a64_update(uint64_t h, const void *data, size_t n);

/* FNV-1a 64 of `n` bytes. */
uint64_t gr_fnv1a64(const void *data, size_t n);

/* Continues a CRC-32 over `n` bytes, zlib's crc32() semantics: start with
 * crc = 0; gr_crc32(gr_crc32(0, a, na), b, nb) == CRC of a then b. */
uint32_t gr_crc32(uint32_t crc, const void *data, size_t n);

#endif
