/* core/zip.h — reading zip archives, through libzip.
 *
 * A thin layer over libzip (Debian's libzip-dev, itself on zlib): it opens
 * an archive from a path or from the caller's bytes, lists its entries
 * (name, sizes, CRC-32, method) in a plain table, and extracts one entry at
 * a time into a malloc'd buffer, checking the size and the CRC-32 the
 * central directory declares. What libzip reads, grove reads: stored and
 * deflated entries (and bzip2/xz/zstd where Debian's libzip has them),
 * Zip64. Encrypted entries and split archives are GR_EUNSUPPORTED.
 *
 * Errors: a malformed archive is GR_EFORMAT, with a message that names the
 * archive and, from gr_zip_read on, the entry, e.g.
 *   "x.zip: entry 'a/b.mrg' (3 of 807): CRC-32 mismatch (CRC error)".
 * A damaged archive never crashes the reader, and a declared size is never
 * allocated on trust: the buffer grows with the data actually inflated.
 *
 * Memory: struct gr_zip owns libzip's handle and the entry table; bytes
 * given to gr_zip_open_memory are borrowed (the caller keeps them alive
 * until gr_zip_close); gr_zip_read returns a malloc'd buffer the caller
 * frees. Thread safety: one thread at a time per archive (libzip's rule);
 * separate archives are independent.
 *
 *   struct gr_zip z;
 *   if (gr_zip_open(&z, "treebank.zip") < 0) return -1;
 *   for (size_t i = 0; i < z.n_entries; i++) {
 *       unsigned char *data; size_t n;
 *       if (gr_zip_read(&z, i, &data, &n) < 0) { gr_zip_close(&z); return -1; }
 *       use(z.entries[i].name, data, n);
 *       free(data);
 *   }
 *   gr_zip_close(&z);
 */
#ifndef GROVE_CORE_ZIP_H
#define GROVE_CORE_ZIP_H

#include <stddef.h>
#include <stdint.h>

#define GR_ZIP_STORED 0
#define GR_ZIP_DEFLATE 8

struct gr_zip_entry {
    const char *name;         /* NUL-terminated, owned by the archive */
    uint64_t size;            /* uncompressed bytes, as declared */
    uint64_t compressed_size; /* bytes of stored/compressed data */
    uint32_t crc32;           /* of the uncompressed bytes, as declared */
    uint16_t method;          /* GR_ZIP_STORED, GR_ZIP_DEFLATE, or other */
    int encrypted;            /* 1 if the entry is encrypted */
    int is_dir;               /* name ends with '/' */
};

struct gr_zip {
    char label[256]; /* the path (or the caller's label), for messages */
    void *archive;   /* libzip's zip_t */
    struct gr_zip_entry *entries;
    size_t n_entries;
    char *names; /* all entry names, NUL-separated */
};

/* Opens the archive at `path` and reads its central directory. GR_EIO if
 * it cannot be read, GR_EFORMAT if it is not a well-formed zip. On failure
 * *z is left closed (gr_zip_close is safe). */
int gr_zip_open(struct gr_zip *z, const char *path);

/* Like gr_zip_open on bytes the caller keeps alive until gr_zip_close
 * (they are not copied). `label` names the archive in messages. */
int gr_zip_open_memory(struct gr_zip *z, const void *data, size_t size,
                       const char *label);

/* Index of the entry named exactly `name`, or -1 (no error is set). */
long gr_zip_find(const struct gr_zip *z, const char *name);

/* Extracts entry `index` into a malloc'd buffer of entry.size + 1 bytes
 * (NUL-terminated for text; *size excludes the NUL) and checks its size and
 * CRC-32. Errors name the archive and the entry. */
int gr_zip_read(const struct gr_zip *z, size_t index, unsigned char **data,
                size_t *size);

/* Frees everything the archive owns; safe on a zeroed or closed struct. */
void gr_zip_close(struct gr_zip *z);

#endif
