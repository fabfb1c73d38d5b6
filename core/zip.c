/* Zip archive reader over libzip. See core/zip.h.
 *
 * libzip parses the end record and the central directory (zip_open*),
 * reads an entry's local header, inflates it with zlib and checks its
 * CRC-32 (zip_fopen_index, zip_fread). This file turns libzip's errors
 * into grove's convention, naming the archive and the entry, and never
 * trusts a declared size for an allocation: the output grows with what
 * zip_fread actually delivers, and more than the declared size is an
 * error. The size and the CRC-32 are checked here too, so the checks do
 * not depend on which libzip version validates what. */
#define _POSIX_C_SOURCE 200809L
#include "core/zip.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zip.h>

#include "core/error.h"
#include "core/hash.h"

/* The first buffer for an entry, and its growth: never more than the
 * declared size + 1, and never much more than the data delivered. */
#define READ_FIRST_BYTES ((size_t)1 << 16)

/* grove's code for a libzip error code. */
static int status_of(int ze)
{
    switch (ze) {
    case ZIP_ER_MEMORY:
        return GR_ENOMEM;
    case ZIP_ER_OPEN:
    case ZIP_ER_READ:
    case ZIP_ER_SEEK:
    case ZIP_ER_TELL:
    case ZIP_ER_NOENT:
        return GR_EIO;
    case ZIP_ER_MULTIDISK:
    case ZIP_ER_COMPNOTSUPP:
    case ZIP_ER_ENCRNOTSUPP:
    case ZIP_ER_NOPASSWD:
    case ZIP_ER_OPNOTSUPP:
        return GR_EUNSUPPORTED;
    default:
        return GR_EFORMAT;
    }
}

/* What a libzip error means for a reader of grove's files. */
static const char *hint_of(int ze)
{
    switch (ze) {
    case ZIP_ER_NOZIP:
        return "not a zip archive (no end-of-central-directory record), or "
               "truncated";
    case ZIP_ER_INCONS:
        return "inconsistent archive (its directory and its contents "
               "disagree): truncated or corrupt";
    case ZIP_ER_CRC:
        return "CRC-32 mismatch: the data is corrupt";
    case ZIP_ER_EOF:
        return "truncated (premature end of file)";
    case ZIP_ER_ZLIB:
    case ZIP_ER_COMPRESSED_DATA:
        return "corrupt compressed data";
    case ZIP_ER_MULTIDISK:
        return "split (multi-disk) archive: not supported";
    default:
        return NULL;
    }
}

/* Sets the message "<prefix>: <hint> (libzip: <its text>)" (no hint: just
 * "<prefix> (libzip: <its text>)") and returns the
 * grove code for the libzip error `err`. */
static int fail_zip(zip_error_t *err, const char *prefix)
{
    int ze = zip_error_code_zip(err);
    const char *hint = hint_of(ze);
    const char *text = zip_error_strerror(err);
    if (hint != NULL) {
        return gr_error(status_of(ze), "%s: %s (libzip: %s)", prefix, hint,
                        text);
    }
    return gr_error(status_of(ze), "%s (libzip: %s)", prefix, text);
}

void gr_zip_close(struct gr_zip *z)
{
    if (z->archive != NULL) {
        zip_discard(z->archive);
    }
    free(z->entries);
    free(z->names);
    memset(z, 0, sizeof *z);
}

/* Copies the central directory into z->entries and z->names. */
static int read_directory(struct gr_zip *z)
{
    zip_t *za = z->archive;
    zip_int64_t n = zip_get_num_entries(za, 0);
    if (n < 0) {
        return gr_error(GR_EFORMAT, "%s: cannot count its entries",
                        z->label);
    }
    size_t total = 0;
    for (zip_int64_t i = 0; i < n; i++) {
        const char *name = zip_get_name(za, (zip_uint64_t)i, 0);
        if (name == NULL) {
            return fail_zip(zip_get_error(za), z->label);
        }
        total += strlen(name) + 1;
    }
    z->entries = calloc(n > 0 ? (size_t)n : 1, sizeof *z->entries);
    z->names = malloc(total > 0 ? total : 1);
    if (z->entries == NULL || z->names == NULL) {
        return gr_error(GR_ENOMEM, "%s: out of memory for %lld entries",
                        z->label, (long long)n);
    }
    size_t pos = 0;
    for (zip_int64_t i = 0; i < n; i++) {
        zip_stat_t st;
        if (zip_stat_index(za, (zip_uint64_t)i, 0, &st) < 0) {
            return fail_zip(zip_get_error(za), z->label);
        }
        const zip_uint64_t need = ZIP_STAT_NAME | ZIP_STAT_SIZE |
                                  ZIP_STAT_COMP_SIZE | ZIP_STAT_CRC |
                                  ZIP_STAT_COMP_METHOD;
        if ((st.valid & need) != need) {
            return gr_error(GR_EFORMAT, "%s: entry %lld: its directory "
                            "record lacks a name, size or CRC-32", z->label,
                            (long long)i + 1);
        }
        size_t len = strlen(st.name);
        if (pos + len + 1 > total) {
            return gr_error(GR_EFORMAT, "%s: entry %lld: its name changed "
                            "while the directory was read", z->label,
                            (long long)i + 1);
        }
        memcpy(z->names + pos, st.name, len + 1);
        struct gr_zip_entry *en = &z->entries[i];
        en->name = z->names + pos;
        pos += len + 1;
        en->size = st.size;
        en->compressed_size = st.comp_size;
        en->crc32 = st.crc;
        en->method = st.comp_method;
        en->encrypted = (st.valid & ZIP_STAT_ENCRYPTION_METHOD) &&
                        st.encryption_method != ZIP_EM_NONE;
        en->is_dir = len > 0 && en->name[len - 1] == '/';
    }
    z->n_entries = (size_t)n;
    return 0;
}

int gr_zip_open_memory(struct gr_zip *z, const void *data, size_t size,
                       const char *label)
{
    memset(z, 0, sizeof *z);
    snprintf(z->label, sizeof z->label, "%s", label);
    if (size == 0) {
        /* libzip opens nothing as a new, empty archive. */
        return gr_error(GR_EFORMAT, "%s: 0 bytes: not a zip archive",
                        z->label);
    }
    zip_error_t err;
    zip_error_init(&err);
    zip_source_t *src = zip_source_buffer_create(data, size, 0, &err);
    if (src == NULL) {
        int rc = fail_zip(&err, z->label);
        zip_error_fini(&err);
        return rc;
    }
    z->archive = zip_open_from_source(src, ZIP_RDONLY, &err);
    if (z->archive == NULL) {
        zip_source_free(src);
        int rc = fail_zip(&err, z->label);
        zip_error_fini(&err);
        return rc;
    }
    zip_error_fini(&err);
    int rc = read_directory(z);
    if (rc < 0) {
        gr_zip_close(z);
    }
    return rc;
}

int gr_zip_open(struct gr_zip *z, const char *path)
{
    memset(z, 0, sizeof *z);
    snprintf(z->label, sizeof z->label, "%s", path);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) {
        return gr_error(GR_EFORMAT, "%s: 0 bytes: not a zip archive",
                        z->label);
    }
    int ze = 0;
    z->archive = zip_open(path, ZIP_RDONLY, &ze);
    if (z->archive == NULL) {
        zip_error_t err;
        zip_error_init_with_code(&err, ze);
        int rc = fail_zip(&err, z->label);
        zip_error_fini(&err);
        return rc;
    }
    int rc = read_directory(z);
    if (rc < 0) {
        gr_zip_close(z);
    }
    return rc;
}

long gr_zip_find(const struct gr_zip *z, const char *name)
{
    for (size_t i = 0; i < z->n_entries; i++) {
        if (strcmp(z->entries[i].name, name) == 0) {
            return (long)i;
        }
    }
    return -1;
}

/* Reads the open entry `zf` whole into *out (grown as data arrives; at
 * most declared + 1 bytes are ever asked for). */
static int read_entry(zip_file_t *zf, const char *where, uint64_t declared,
                      unsigned char **out, size_t *got)
{
    size_t cap = declared < READ_FIRST_BYTES ? (size_t)declared + 1
                                             : READ_FIRST_BYTES;
    unsigned char *buf = malloc(cap);
    size_t n = 0;
    if (buf == NULL) {
        return gr_error(GR_ENOMEM, "%s: out of memory", where);
    }
    for (;;) {
        if (n == cap) {
            /* The declared size is passed and one byte more was read. */
            if ((uint64_t)n > declared) {
                free(buf);
                return gr_error(GR_EFORMAT, "%s: inflates to more than the "
                                "%llu bytes its directory record declares",
                                where, (unsigned long long)declared);
            }
            uint64_t limit = declared < SIZE_MAX ? declared + 1 : SIZE_MAX;
            size_t next = cap <= SIZE_MAX / 2 ? cap * 2 : SIZE_MAX;
            if ((uint64_t)next > limit) {
                next = (size_t)limit;
            }
            unsigned char *p = realloc(buf, next);
            if (p == NULL) {
                free(buf);
                return gr_error(GR_ENOMEM, "%s: out of memory at %zu bytes",
                                where, n);
            }
            buf = p;
            cap = next;
        }
        zip_int64_t r = zip_fread(zf, buf + n, cap - n);
        if (r < 0) {
            free(buf);
            return fail_zip(zip_file_get_error(zf), where);
        }
        if (r == 0) {
            break;
        }
        n += (size_t)r;
    }
    *out = buf;
    *got = n;
    return 0;
}

int gr_zip_read(const struct gr_zip *z, size_t index, unsigned char **data,
                size_t *size)
{
    *data = NULL;
    *size = 0;
    if (index >= z->n_entries) {
        return gr_error(GR_EINVAL, "%s: no entry %zu (the archive has %zu)",
                        z->label, index, z->n_entries);
    }
    const struct gr_zip_entry *en = &z->entries[index];
    char where[1024];
    snprintf(where, sizeof where, "%s: entry '%s' (%zu of %zu)", z->label,
             en->name, index + 1, z->n_entries);
    if (en->encrypted) {
        return gr_error(GR_EUNSUPPORTED, "%s is encrypted: not supported",
                        where);
    }
    if (!zip_compression_method_supported((zip_int32_t)en->method, 0)) {
        return gr_error(GR_EUNSUPPORTED, "%s uses compression method %u: not "
                        "supported by this libzip (0 stored and 8 deflate "
                        "always are)", where, en->method);
    }
    zip_t *za = z->archive;
    zip_file_t *zf = zip_fopen_index(za, index, 0);
    if (zf == NULL) {
        char at[1100];
        snprintf(at, sizeof at, "%s: its local header or data cannot be "
                 "reached (a corrupt directory record?)", where);
        return fail_zip(zip_get_error(za), at);
    }
    unsigned char *out = NULL;
    size_t got = 0;
    int rc = read_entry(zf, where, en->size, &out, &got);
    zip_fclose(zf);
    if (rc < 0) {
        return rc;
    }
    if ((uint64_t)got != en->size) {
        free(out);
        return gr_error(GR_EFORMAT, "%s: inflates to %zu bytes, its "
                        "directory record declares %llu", where, got,
                        (unsigned long long)en->size);
    }
    uint32_t crc = gr_crc32(0, out, got);
    if (crc != en->crc32) {
        free(out);
        return gr_error(GR_EFORMAT, "%s: CRC-32 mismatch: stored 0x%08x, "
                        "computed 0x%08x", where, en->crc32, crc);
    }
    /* read_entry leaves room for the NUL: cap <= declared + 1 and got ==
     * declared means a spare byte. */
    out[got] = '\0';
    *data = out;
    *size = got;
    return 0;
}
