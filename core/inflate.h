/* core/inflate.h — a DEFLATE decoder (RFC 1951), libc only.
 *
 * Decodes a raw DEFLATE stream (no zlib or gzip wrapper: the form zip
 * archives store) from one memory buffer into another. All three block
 * types are handled: stored, fixed Huffman and dynamic Huffman. The decoder
 * checks everything a malformed or hostile stream can get wrong (truncation,
 * invalid block type, stored length/complement mismatch, over-subscribed or
 * incomplete Huffman codes, repeat codes without a previous length,
 * lengths past the declared counts, back-references before the start of
 * the output, output past the caller's capacity) and reports it as
 * GR_EFORMAT with a message naming the byte offset in the compressed stream,
 * e.g. "deflate: distance 40 is too far back (only 12 bytes written) at
 * stream byte 17". It never reads or writes outside the two buffers.
 *
 * Memory: the caller owns both buffers; the decoder allocates nothing (its
 * Huffman tables, ~3 KiB, live on the stack). Thread safety: pure function
 * of its arguments, safe from any thread.
 *
 *   size_t got = 0, used = 0;
 *   if (gr_inflate(comp, comp_size, out, expected_size, &got, &used) < 0)
 *       fprintf(stderr, "%s\n", gr_last_error());
 *
 * Speed: codes of up to 9 bits are decoded by one table lookup, longer ones
 * bit by bit; tens of MB/s, ample for reading corpora.
 */
#ifndef GROVE_CORE_INFLATE_H
#define GROVE_CORE_INFLATE_H

#include <stddef.h>

/* Decodes the DEFLATE stream in in[0, in_size) into out[0, out_cap).
 * On success returns 0, *out_size = bytes written (<= out_cap) and, when
 * in_used is not NULL, *in_used = bytes of `in` the stream occupied (the
 * final block's last byte included). Bytes after the final block are
 * ignored. A stream that would write more than out_cap bytes is GR_EFORMAT
 * ("output exceeds N bytes"): size out_cap from a trusted declared size.
 * On error *out_size holds the bytes written so far. */
int gr_inflate(const void *in, size_t in_size, void *out, size_t out_cap,
               size_t *out_size, size_t *in_used);

#endif
