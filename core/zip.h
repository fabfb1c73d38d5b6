/* core/zip.h — reading zip archives (PKWARE APPNOTE), libc only.
 *
 * Opens an archive held in memory (read whole from a path, or the caller's
 * bytes), lists its entries from the central directory and extracts one
 * entry at a time. Entries may be stored (method 0) or deflated (method 8,
 * core/inflate.h); every extracted entry's size and CRC-32 (core/hash.h) are
 * checked against the central directory. Not supported, each with a clear
 * GR_EUNSUPPORTED message: Zip64 archives (> 65,535 entries or > 4 GiB),
 * split archives, encrypted entries, other compression methods.
 *
 * Errors: a malformed archive is GR_EFORMAT with a message that names the
 * archive, the entry (when there is one) and the byte offset in the
 * archive, e.g. "x.zip: entry 'a/b.mrg' (data at byte 1234): CRC-32
 * mismatch: stored 0x1c291ca3, computed 0x5e2a3f01". Nothing crashes on
 * a damaged archive: all offsets and sizes are checked against the file.
 *
 * Memory: struct gr_zip owns the archive bytes (unless borrowed through
 * gr_zip_open_memory) and the entry table; gr_zip_read returns a malloc'd
 * buffer the caller frees. Thread safety: after open, the archive is
 * read-only, so several threads may gr_zip_read from it at once.
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
    uint64_t size;            /* uncompressed bytes */
    uint64_t compressed_size; /* bytes of stored/deflated data */
    uint64_t header_offset;   /* local file header, from archive start */
    uint64_t dir_offset;      /* this entry's central-directory record */
    uint32_t crc32;
    uint16_t method; /* GR_ZIP_STORED, GR_ZIP_DEFLATE, or other */
    uint16_t flags;  /* general-purpose bits (bit 0: encrypted) */
    int is_dir;      /* name ends with '/' */
};

struct gr_zip {
    char label[256]; /* the path (or the caller's label), for messages */
    const unsigned char *data;
    size_t size;
    unsigned char *owned; /* data when read by gr_zip_open, else NULL */
    struct gr_zip_entry *entries;
    size_t n_entries;
    char *names; /* all entry names, NUL-separated */
};

/* Reads the archive at `path` (whole, up to 4 GiB) and its central
 * directory. GR_EIO if it cannot be read, GR_EFORMAT if it is not a
 * well-formed zip. On failure *z is left closed (gr_zip_close is safe). */
int gr_zip_open(struct gr_zip *z, const char *path);

/* Like gr_zip_open on bytes the caller keeps alive until gr_zip_close
 * (they are not copied). `label` names the archive in messages. */
int gr_zip_open_memory(struct gr_zip *z, const void *data, size_t size,
                       const char *label);

/* Index of the entry named exactly `name`, or -1 (no error is set). */
long gr_zip_find(const struct gr_zip *z, const char *name);

/* Extracts entry `index` into a malloc'd buffer of entry.size + 1 bytes
 * (NUL-terminated for text; *size excludes the NUL) and checks its size and
 * CRC-32. Errors name the entry and the byte offset. */
int gr_zip_read(const struct gr_zip *z, size_t index, unsigned char **data,
                size_t *size);

/* Frees everything the archive owns; safe on a zeroed or closed struct. */
void gr_zip_close(struct gr_zip *z);

#endif
