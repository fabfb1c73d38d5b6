/* Zip archive reader. See core/zip.h.
 *
 * Layout (APPNOTE 4.3): local file header + data for each entry, then the
 * central directory (one record per entry), then the end-of-central-
 * directory record (EOCD, 22 bytes + a comment of up to 65,535 bytes). We
 * find the EOCD by scanning backwards, read the central directory, and go
 * to an entry's local header only when it is extracted. */
#include "core/zip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"
#include "core/hash.h"
#include "core/inflate.h"

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD 0x06054b50u
#define SIG_ZIP64_LOCATOR 0x07064b50u
#define EOCD_SIZE 22
#define CENTRAL_SIZE 46
#define LOCAL_SIZE 30
/* DEFLATE expands at most ~1032:1 (a 258-byte match costs 2 bits), so a
 * larger declared size is a damaged header, not a reason to allocate it. */
#define DEFLATE_MAX_RATIO 1032u

static uint16_t rd16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

void gr_zip_close(struct gr_zip *z)
{
    free(z->owned);
    free(z->entries);
    free(z->names);
    memset(z, 0, sizeof *z);
}

/* Position of the EOCD record, or an error. */
static int find_eocd(const struct gr_zip *z, size_t *pos)
{
    if (z->size < EOCD_SIZE) {
        return gr_error(GR_EFORMAT, "%s: %zu bytes is too short to be a zip "
                        "archive (the end record alone is 22 bytes)",
                        z->label, z->size);
    }
    size_t last = z->size - EOCD_SIZE;
    size_t lowest = last > 65535 ? last - 65535 : 0;
    for (size_t p = last + 1; p-- > lowest;) {
        const unsigned char *q = z->data + p;
        if (rd32(q) == SIG_EOCD &&
            p + EOCD_SIZE + (size_t)rd16(q + 20) <= z->size) {
            *pos = p;
            return 0;
        }
    }
    return gr_error(GR_EFORMAT, "%s: no end-of-central-directory record in "
                    "the last %zu bytes: not a zip archive, or truncated",
                    z->label, z->size - lowest);
}

static int read_directory(struct gr_zip *z)
{
    size_t eocd = 0;
    int rc = find_eocd(z, &eocd);
    if (rc < 0) {
        return rc;
    }
    const unsigned char *e = z->data + eocd;
    uint16_t disk = rd16(e + 4), cd_disk = rd16(e + 6);
    uint16_t n_disk = rd16(e + 8), n_total = rd16(e + 10);
    uint32_t cd_size = rd32(e + 12), cd_offset = rd32(e + 16);
    if (n_total == 0xFFFFu || cd_size == 0xFFFFFFFFu ||
        cd_offset == 0xFFFFFFFFu ||
        (eocd >= 20 && rd32(z->data + eocd - 20) == SIG_ZIP64_LOCATOR)) {
        return gr_error(GR_EUNSUPPORTED, "%s: Zip64 archive (end record at "
                        "byte %zu): not supported (more than 65,535 entries "
                        "or 4 GiB); repack it as a plain zip or unpack it "
                        "and pass the folder", z->label, eocd);
    }
    if (disk != 0 || cd_disk != 0 || n_disk != n_total) {
        return gr_error(GR_EUNSUPPORTED, "%s: split (multi-disk) archive "
                        "(end record at byte %zu): not supported", z->label,
                        eocd);
    }
    if ((uint64_t)cd_offset + cd_size > eocd) {
        return gr_error(GR_EFORMAT, "%s: central directory (%u bytes at byte "
                        "%u) runs past the end record at byte %zu: truncated "
                        "or corrupt archive", z->label, cd_size, cd_offset,
                        eocd);
    }
    z->entries = calloc(n_total ? n_total : 1, sizeof *z->entries);
    z->names = malloc((size_t)cd_size + 1);
    if (z->entries == NULL || z->names == NULL) {
        return gr_error(GR_ENOMEM, "%s: out of memory for %u entries",
                        z->label, n_total);
    }
    size_t p = cd_offset, end = (size_t)cd_offset + cd_size, name_pos = 0;
    for (size_t i = 0; i < n_total; i++) {
        const unsigned char *c = z->data + p;
        if (p + CENTRAL_SIZE > end || rd32(c) != SIG_CENTRAL) {
            return gr_error(GR_EFORMAT, "%s: central directory record %zu of "
                            "%u at byte %zu is %s", z->label, i + 1, n_total,
                            p, p + CENTRAL_SIZE > end
                                   ? "cut off by the end of the directory"
                                   : "missing (bad signature)");
        }
        size_t name_len = rd16(c + 28), extra_len = rd16(c + 30),
               comment_len = rd16(c + 32);
        if (p + CENTRAL_SIZE + name_len + extra_len + comment_len > end) {
            return gr_error(GR_EFORMAT, "%s: central directory record %zu at "
                            "byte %zu: its name, extra field and comment run "
                            "past the directory's end (byte %zu)", z->label,
                            i + 1, p, end);
        }
        const char *name = (const char *)c + CENTRAL_SIZE;
        if (memchr(name, '\0', name_len) != NULL || name_len == 0) {
            return gr_error(GR_EFORMAT, "%s: central directory record %zu at "
                            "byte %zu has an %s name", z->label, i + 1, p,
                            name_len == 0 ? "empty" : "embedded NUL in its");
        }
        /* Names take at most cd_size - 46 * n bytes + n NULs: they fit. */
        memcpy(z->names + name_pos, name, name_len);
        z->names[name_pos + name_len] = '\0';
        struct gr_zip_entry *en = &z->entries[i];
        en->name = z->names + name_pos;
        name_pos += name_len + 1;
        en->flags = rd16(c + 8);
        en->method = rd16(c + 10);
        en->crc32 = rd32(c + 16);
        en->compressed_size = rd32(c + 20);
        en->size = rd32(c + 24);
        en->header_offset = rd32(c + 42);
        en->dir_offset = p;
        en->is_dir = name[name_len - 1] == '/';
        if (en->header_offset + LOCAL_SIZE > cd_offset) {
            return gr_error(GR_EFORMAT, "%s: entry '%s' (directory record at "
                            "byte %zu) points to a local header at byte %llu, "
                            "past the start of the central directory (byte "
                            "%u)", z->label, en->name, p,
                            (unsigned long long)en->header_offset, cd_offset);
        }
        if (en->size == 0xFFFFFFFFu || en->compressed_size == 0xFFFFFFFFu ||
            en->header_offset == 0xFFFFFFFFu) {
            return gr_error(GR_EUNSUPPORTED, "%s: entry '%s' (directory "
                            "record at byte %zu) uses Zip64 sizes: not "
                            "supported", z->label, en->name, p);
        }
        p += CENTRAL_SIZE + name_len + extra_len + comment_len;
    }
    z->n_entries = n_total;
    return 0;
}

int gr_zip_open_memory(struct gr_zip *z, const void *data, size_t size,
                       const char *label)
{
    memset(z, 0, sizeof *z);
    snprintf(z->label, sizeof z->label, "%s", label);
    z->data = data;
    z->size = size;
    int rc = read_directory(z);
    if (rc < 0) {
        gr_zip_close(z);
    }
    return rc;
}

int gr_zip_open(struct gr_zip *z, const char *path)
{
    char *buf = NULL;
    size_t size = 0;
    memset(z, 0, sizeof *z);
    int rc = gr_read_file(path, (size_t)0xFFFFFFFFu, &buf, &size);
    if (rc < 0) {
        return rc;
    }
    rc = gr_zip_open_memory(z, buf, size, path);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    z->owned = (unsigned char *)buf;
    return 0;
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
    size_t h = (size_t)en->header_offset;
    const unsigned char *l = z->data + h;
    if (rd32(l) != SIG_LOCAL) {
        return gr_error(GR_EFORMAT, "%s: entry '%s': no local file header at "
                        "byte %zu (bad signature)", z->label, en->name, h);
    }
    size_t name_len = rd16(l + 26), extra_len = rd16(l + 28);
    size_t start = h + LOCAL_SIZE + name_len + extra_len;
    if (start > z->size || en->compressed_size > z->size - start) {
        return gr_error(GR_EFORMAT, "%s: entry '%s': its %llu bytes of data "
                        "(local header at byte %zu) run past the end of the "
                        "archive (%zu bytes): truncated", z->label, en->name,
                        (unsigned long long)en->compressed_size, h, z->size);
    }
    if (name_len != strlen(en->name) ||
        memcmp(l + LOCAL_SIZE, en->name, name_len) != 0) {
        return gr_error(GR_EFORMAT, "%s: entry '%s': the local header at "
                        "byte %zu names a different file than the central "
                        "directory", z->label, en->name, h);
    }
    if (en->flags & 1u) {
        return gr_error(GR_EUNSUPPORTED, "%s: entry '%s' is encrypted: not "
                        "supported", z->label, en->name);
    }
    if (en->method != GR_ZIP_STORED && en->method != GR_ZIP_DEFLATE) {
        return gr_error(GR_EUNSUPPORTED, "%s: entry '%s' uses compression "
                        "method %u: not supported (only 0 stored and 8 "
                        "deflate)", z->label, en->name, en->method);
    }
    if ((en->method == GR_ZIP_STORED && en->size != en->compressed_size) ||
        (en->method == GR_ZIP_DEFLATE &&
         en->size > (uint64_t)en->compressed_size * DEFLATE_MAX_RATIO + 64)) {
        return gr_error(GR_EFORMAT, "%s: entry '%s' (directory record at "
                        "byte %llu) declares %llu bytes from %llu %s bytes: "
                        "impossible, the header is corrupt", z->label,
                        en->name, (unsigned long long)en->dir_offset,
                        (unsigned long long)en->size,
                        (unsigned long long)en->compressed_size,
                        en->method == GR_ZIP_STORED ? "stored" : "deflated");
    }
    unsigned char *out = malloc((size_t)en->size + 1);
    if (out == NULL) {
        return gr_error(GR_ENOMEM, "%s: out of memory for entry '%s' (%llu "
                        "bytes)", z->label, en->name,
                        (unsigned long long)en->size);
    }
    size_t got = 0;
    if (en->method == GR_ZIP_STORED) {
        memcpy(out, z->data + start, (size_t)en->size);
        got = (size_t)en->size;
    } else {
        int rc = gr_inflate(z->data + start, (size_t)en->compressed_size, out,
                            (size_t)en->size, &got, NULL);
        if (rc < 0) {
            free(out);
            return gr_error_wrap(rc, "%s: entry '%s' (compressed data from "
                                 "archive byte %zu)", z->label, en->name,
                                 start);
        }
        if (got != en->size) {
            free(out);
            return gr_error(GR_EFORMAT, "%s: entry '%s' (compressed data from "
                            "archive byte %zu) inflates to %zu bytes, the "
                            "central directory says %llu", z->label,
                            en->name, start, got,
                            (unsigned long long)en->size);
        }
    }
    uint32_t crc = gr_crc32(0, out, got);
    if (crc != en->crc32) {
        free(out);
        return gr_error(GR_EFORMAT, "%s: entry '%s' (data at byte %zu): "
                        "CRC-32 mismatch: stored 0x%08x, computed 0x%08x",
                        z->label, en->name, start, en->crc32, crc);
    }
    out[got] = '\0';
    *data = out;
    *size = got;
    return 0;
}
