/* Zip reader (core/zip.h over libzip): archives made by Python's zipfile
 * (stored, deflated, a folder, an empty file, a comment, data
 * descriptors), hand-damaged copies of them with the error each must give
 * (the code, libzip's finding in words, and the archive and entry named),
 * every truncation and every single-byte corruption (an error or
 * CRC-correct data, never a crash; ASan in CI), and the real NLTK
 * treebank.zip when its folder is given:
 *
 *   test_zip [TREEBANK_SAMPLE_DIR]
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"
#include "core/hash.h"
#include "core/zip.h"
#include "tests/fixtures/zip/fixtures.h"
#include "tests/test.h"

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static void wr16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static void wr32(unsigned char *p, uint32_t v)
{
    wr16(p, v & 0xFFFFu);
    wr16(p + 2, v >> 16);
}

/* Offset of the central record (or local header) of `name` in a copy. */
static size_t find_record(const unsigned char *z, size_t n, uint32_t sig,
                          const char *name)
{
    size_t off = sig == 0x02014b50u ? 46 : 30;
    size_t len = strlen(name);
    for (size_t p = 0; p + off + len <= n; p++) {
        if (rd32(z + p) == sig && memcmp(z + p + off, name, len) == 0) {
            return p;
        }
    }
    return (size_t)-1;
}

static void test_good_archives(void)
{
    struct gr_zip z;
    int rc = gr_zip_open_memory(&z, zip_plain, ZIP_PLAIN_BYTES, "plain.zip");
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    CHECK_EQ_U64(z.n_entries, 4);
    long i_dir = gr_zip_find(&z, "dir/");
    long i_stored = gr_zip_find(&z, "dir/stored.txt");
    long i_defl = gr_zip_find(&z, "dir/deflated.txt");
    long i_empty = gr_zip_find(&z, "empty.txt");
    CHECK(i_dir >= 0 && i_stored >= 0 && i_defl >= 0 && i_empty >= 0);
    CHECK(gr_zip_find(&z, "missing") == -1);
    if (i_dir >= 0 && i_stored >= 0 && i_defl >= 0 && i_empty >= 0) {
        CHECK(z.entries[i_dir].is_dir);
        CHECK(!z.entries[i_stored].is_dir);
        CHECK(z.entries[i_stored].method == GR_ZIP_STORED);
        CHECK(z.entries[i_defl].method == GR_ZIP_DEFLATE);
        CHECK(!z.entries[i_defl].encrypted);
        CHECK_EQ_U64(z.entries[i_defl].size, ZIP_DEFLATED_SIZE);
        CHECK(z.entries[i_defl].compressed_size < ZIP_DEFLATED_SIZE);
        CHECK_EQ_U64(z.entries[i_defl].crc32, ZIP_DEFLATED_CRC);
        unsigned char *data;
        size_t n;
        CHECK(gr_zip_read(&z, (size_t)i_stored, &data, &n) == 0);
        CHECK(n == ZIP_STORED_SIZE && gr_crc32(0, data, n) == ZIP_STORED_CRC);
        CHECK(data[n] == '\0');
        CHECK(memcmp(data, ZIP_STORED_HEAD, strlen(ZIP_STORED_HEAD)) == 0);
        free(data);
        CHECK(gr_zip_read(&z, (size_t)i_defl, &data, &n) == 0);
        CHECK(n == ZIP_DEFLATED_SIZE &&
              gr_crc32(0, data, n) == ZIP_DEFLATED_CRC);
        CHECK(data[n] == '\0');
        free(data);
        CHECK(gr_zip_read(&z, (size_t)i_empty, &data, &n) == 0);
        CHECK(n == 0 && data != NULL && data[0] == '\0');
        free(data);
        CHECK(gr_zip_read(&z, (size_t)i_dir, &data, &n) == 0 && n == 0);
        free(data);
    }
    CHECK(gr_zip_read(&z, 99, &(unsigned char *){NULL}, &(size_t){0}) ==
          GR_EINVAL);
    gr_zip_close(&z);
    gr_zip_close(&z); /* closing twice is safe */

    /* Written to a stream that cannot seek: the local header has general-
     * purpose bit 3 (sizes and CRC in a data descriptor after the data). */
    CHECK(rd32(zip_streamed) == 0x04034b50u && (zip_streamed[6] & 8u));
    rc = gr_zip_open_memory(&z, zip_streamed, ZIP_STREAMED_BYTES,
                            "streamed.zip");
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    CHECK(z.n_entries == 1);
    unsigned char *data;
    size_t n;
    rc = gr_zip_read(&z, 0, &data, &n);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc == 0) {
        CHECK(n == ZIP_STREAMED_SIZE &&
              gr_crc32(0, data, n) == ZIP_STREAMED_CRC);
        free(data);
    }
    gr_zip_close(&z);
}

/* Opens and reads every entry of a (damaged) copy; returns 0 if all went
 * well, else the first error code, with the message in gr_last_error(). */
static int open_and_read_all(const unsigned char *buf, size_t n)
{
    struct gr_zip z;
    int rc = gr_zip_open_memory(&z, buf, n, "damaged.zip");
    if (rc < 0) {
        return rc;
    }
    for (size_t i = 0; i < z.n_entries && rc == 0; i++) {
        unsigned char *data;
        size_t size;
        rc = gr_zip_read(&z, i, &data, &size);
        if (rc == 0) {
            free(data);
        }
    }
    gr_zip_close(&z);
    return rc;
}

static void expect_damage(const unsigned char *buf, size_t n, int code,
                          const char *what)
{
    gr_clear_error();
    int rc = open_and_read_all(buf, n);
    CHECK_MSG(rc == code, "want %d ('%s'), got %d: %s", code, what, rc,
              gr_last_error());
    CHECK_STR_CONTAINS(gr_last_error(), what);
}

/* An entry-level damage: the code, the words, and the entry named. */
static void expect_entry_damage(const unsigned char *buf, size_t n, int code,
                                const char *what, const char *entry)
{
    expect_damage(buf, n, code, what);
    char named[256];
    snprintf(named, sizeof named, "damaged.zip: entry '%s'", entry);
    CHECK_STR_CONTAINS(gr_last_error(), named);
}

static void test_damaged(void)
{
    unsigned char *c = malloc(ZIP_PLAIN_BYTES);
    const size_t n = ZIP_PLAIN_BYTES;
    const char *defl = "dir/deflated.txt", *st = "dir/stored.txt";
    size_t cd = find_record(zip_plain, n, 0x02014b50u, defl);
    size_t cd_st = find_record(zip_plain, n, 0x02014b50u, st);
    size_t lh_st = find_record(zip_plain, n, 0x04034b50u, st);
    size_t eocd = n - 22 - strlen("grove test archive");
    CHECK(cd != (size_t)-1 && cd_st != (size_t)-1 && lh_st != (size_t)-1);
    CHECK(rd32(zip_plain + eocd) == 0x06054b50u);

    /* The archive as a whole: named, no entry yet. */
    expect_damage(zip_plain, 10, GR_EFORMAT, "damaged.zip: not a zip");
    expect_damage(zip_plain, 0, GR_EFORMAT, "damaged.zip: 0 bytes");
    memcpy(c, zip_plain, n);
    memset(c + eocd, 0, 4);
    expect_damage(c, n, GR_EFORMAT, "no end-of-central-directory record");

    memcpy(c, zip_plain, n);
    wr32(c + eocd + 16, (uint32_t)n); /* directory offset past the end */
    expect_damage(c, n, GR_EFORMAT, "inconsistent archive");

    memcpy(c, zip_plain, n);
    wr16(c + eocd + 4, 1);
    expect_damage(c, n, GR_EUNSUPPORTED, "multi-disk");

    memcpy(c, zip_plain, n);
    wr16(c + eocd + 8, 5); /* 5 entries declared, 4 present */
    wr16(c + eocd + 10, 5);
    expect_damage(c, n, GR_EFORMAT, "inconsistent archive");

    memcpy(c, zip_plain, n);
    c[cd] = 'X'; /* a directory record's signature */
    expect_damage(c, n, GR_EFORMAT, "damaged.zip: ");

    memcpy(c, zip_plain, n);
    wr16(c + cd_st + 28, 200); /* name runs past the directory */
    expect_damage(c, n, GR_EFORMAT, "inconsistent archive");

    /* One entry: named, with what is wrong with it. */
    memcpy(c, zip_plain, n);
    wr32(c + cd + 42, (uint32_t)(n - 10)); /* local header out of range */
    expect_entry_damage(c, n, GR_EFORMAT, "cannot be reached", defl);

    memcpy(c, zip_plain, n);
    wr16(c + cd + 10, 77); /* no such method */
    expect_entry_damage(c, n, GR_EUNSUPPORTED, "compression method 77", defl);

    memcpy(c, zip_plain, n);
    wr16(c + cd + 8, 1); /* encrypted */
    expect_entry_damage(c, n, GR_EUNSUPPORTED, "is encrypted", defl);

    memcpy(c, zip_plain, n);
    wr32(c + cd + 16, rd32(c + cd + 16) ^ 1u); /* stored CRC */
    expect_entry_damage(c, n, GR_EFORMAT, "CRC-32 mismatch", defl);

    memcpy(c, zip_plain, n);
    size_t data_st = lh_st + 30 + strlen(st);
    c[data_st + 3] ^= 0x20; /* one stored byte */
    expect_entry_damage(c, n, GR_EFORMAT, "CRC-32 mismatch", st);

    memcpy(c, zip_plain, n);
    wr32(c + cd + 24, rd32(c + cd + 24) + 1); /* one byte more declared */
    expect_entry_damage(c, n, GR_EFORMAT, "inflates to 1210 bytes", defl);

    memcpy(c, zip_plain, n);
    wr32(c + cd + 24, rd32(c + cd + 24) - 1); /* one byte less declared */
    expect_entry_damage(c, n, GR_EFORMAT, "more than the 1209 bytes", defl);

    /* An absurd declared size is not allocated (ASan would notice 2 GiB):
     * the data stops at 1210 bytes and that is the error. */
    memcpy(c, zip_plain, n);
    wr32(c + cd + 24, 0x7FFFFFFFu);
    expect_entry_damage(c, n, GR_EFORMAT, "declares 2147483647", defl);

    memcpy(c, zip_plain, n);
    wr32(c + cd + 20, rd32(c + cd + 20) - 20); /* compressed data cut */
    gr_clear_error();
    CHECK(open_and_read_all(c, n) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "damaged.zip: entry 'dir/deflated");

    /* Every truncation fails (the end record is at the end). */
    int truncations_ok = 1;
    for (size_t cut = 0; cut < n; cut++) {
        memcpy(c, zip_plain, cut);
        if (open_and_read_all(c, cut) == 0) {
            truncations_ok = 0;
            fprintf(stderr, "archive cut at %zu read without error\n", cut);
        }
    }
    CHECK(truncations_ok);

    /* Every single-byte change: an error, or every entry CRC-correct. */
    int errors = 0, read_fine = 0;
    for (size_t p = 0; p < n; p++) {
        memcpy(c, zip_plain, n);
        c[p] ^= 0x5A;
        gr_clear_error();
        int rc = open_and_read_all(c, n);
        CHECK(rc == 0 || rc == GR_EFORMAT || rc == GR_EUNSUPPORTED);
        if (rc == 0) {
            read_fine++;
        } else {
            errors++;
            CHECK(gr_last_error()[0] != '\0');
        }
    }
    printf("single-byte corruptions: %d refused, %d harmless (times, "
           "attributes, comment, the local header's copies of the "
           "directory's fields)\n", errors, read_fine);
    CHECK(errors > (int)n / 2);
    free(c);
}

static void test_real_archive(const char *dir)
{
    char path[4096];
    if (gr_path_join(path, sizeof path, dir, "treebank.zip") < 0 ||
        !gr_path_exists(path)) {
        test_absent(TEST_NEED_DATA,
                    "no %s/treebank.zip: real-archive checks skipped", dir);
        return;
    }
    struct gr_zip z;
    int rc = gr_zip_open(&z, path);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc < 0) {
        return;
    }
    CHECK_EQ_U64(z.n_entries, 807);
    size_t mrg = 0, deflated = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < z.n_entries; i++) {
        unsigned char *data;
        size_t n;
        rc = gr_zip_read(&z, i, &data, &n);
        CHECK_MSG(rc == 0, "%s", gr_last_error());
        if (rc < 0) {
            break;
        }
        total += n;
        deflated += z.entries[i].method == GR_ZIP_DEFLATE;
        size_t len = strlen(z.entries[i].name);
        if (len > 4 && strcmp(z.entries[i].name + len - 4, ".mrg") == 0 &&
            strstr(z.entries[i].name, "/wsj_") != NULL) {
            mrg++;
        }
        free(data);
    }
    /* The README: 807 entries, 5,924,903 bytes unpacked, 199 wsj_*.mrg
     * files (and a README.mrg). */
    CHECK_EQ_U64(total, 5924903);
    CHECK_EQ_U64(mrg, 199);
    CHECK_EQ_U64(deflated, 802);
    long k = gr_zip_find(&z, "treebank/combined/wsj_0001.mrg");
    CHECK(k >= 0);
    if (k >= 0) {
        unsigned char *data;
        size_t n;
        CHECK(gr_zip_read(&z, (size_t)k, &data, &n) == 0);
        CHECK(n == 645);
        CHECK(strstr((char *)data, "(NNP Pierre)") != NULL);
        free(data);
    }
    gr_zip_close(&z);

    /* Not a zip. */
    char readme[4096];
    gr_path_join(readme, sizeof readme, dir, "README.md");
    if (gr_path_exists(readme)) {
        CHECK(gr_zip_open(&z, readme) == GR_EFORMAT);
        CHECK_STR_CONTAINS(gr_last_error(), "README.md: not a zip archive");
    }
    CHECK(gr_zip_open(&z, "/nonexistent/x.zip") == GR_EIO);
}

int main(int argc, char **argv)
{
    test_good_archives();
    test_damaged();
    if (argc > 1) {
        test_real_archive(argv[1]);
    }
    return test_report("core_zip");
}
