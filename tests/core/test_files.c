/* Atomic writes, --force refusal, run folders, whole-file reads, errors. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/files.h"
#include "core/progress.h"
#include "tests/test.h"

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            n++;
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return n;
}

/* UTF-8 validity against hand-made sequences (RFC 3629's table), and the
 * escaped form of paths that are not UTF-8 (core/files.h). */
static void test_utf8(void)
{
    static const struct {
        const char *s;
        int valid;
    } cases[] = {
        {"", 1},
        {"plain/ascii.ckpt", 1},
        {"caf\xc3\xa9", 1},              /* U+00E9 */
        {"\xe2\x82\xac", 1},              /* U+20AC */
        {"\xf0\x9f\x8c\xb3", 1},          /* U+1F333 */
        {"\xf4\x8f\xbf\xbf", 1},          /* U+10FFFF */
        {"\xff", 0},                      /* never in UTF-8 */
        {"caf\xe9", 0},                   /* Latin-1 e-acute */
        {"\xc0\xaf", 0},                  /* overlong '/' */
        {"\xe0\x80\xaf", 0},              /* overlong '/' */
        {"\xed\xa0\x80", 0},              /* surrogate U+D800 */
        {"\xf4\x90\x80\x80", 0},          /* U+110000 */
        {"\xe2\x82", 0},                  /* cut short */
        {"\x80", 0},                      /* lone continuation */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK_MSG(gr_utf8_valid(cases[i].s, strlen(cases[i].s)) ==
                      cases[i].valid,
                  "case %zu", i);
    }
    char out[64];
    CHECK(strcmp(gr_escape_bytes("runs/caf\xc3\xa9/a\\b", out, sizeof out),
                 "runs/caf\xc3\xa9/a\\b") == 0); /* valid: as it is */
    CHECK(strcmp(gr_escape_bytes("d\xff/caf\xc3\xa9\\x", out, sizeof out),
                 "d\\xff/caf\xc3\xa9\\\\x") == 0);
    CHECK(strcmp(gr_escape_bytes("\xff\xfe", out, 6), "\\xff") == 0);
}

int main(void)
{
    test_utf8();
    char root[] = "/tmp/grove_test_files_XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    char path[1024], dir[512];
    snprintf(path, sizeof path, "%s/a.txt", root);

    /* Write, read back. */
    CHECK(gr_write_file_atomic(path, "hello", 5, 0) == 0);
    char *data = NULL;
    size_t size = 0;
    CHECK(gr_read_file(path, 1 << 20, &data, &size) == 0);
    CHECK(size == 5 && memcmp(data, "hello", 5) == 0 && data[5] == '\0');
    free(data);

    /* No overwrite without force; the old content stays. */
    int rc = gr_write_file_atomic(path, "world!", 6, 0);
    CHECK(rc == GR_EEXIST);
    CHECK_STR_CONTAINS(gr_last_error(), "--force");
    CHECK_STR_CONTAINS(gr_last_error(), path);
    CHECK(gr_read_file(path, 1 << 20, &data, &size) == 0);
    CHECK(size == 5);
    free(data);
    CHECK(gr_write_file_atomic(path, "world!", 6, 1) == 0);
    CHECK(gr_read_file(path, 1 << 20, &data, &size) == 0);
    CHECK(size == 6 && memcmp(data, "world!", 6) == 0);
    free(data);

    /* An aborted write leaves nothing behind and the file unchanged. */
    struct gr_atomic_file af;
    CHECK(gr_atomic_open(&af, path, 1) == 0);
    fputs("partial", af.fp);
    gr_atomic_abort(&af);
    CHECK(count_entries(root) == 1);
    CHECK(gr_read_file(path, 1 << 20, &data, &size) == 0);
    CHECK(size == 6);
    free(data);

    /* Size limit and missing files are clear errors. */
    CHECK(gr_read_file(path, 3, &data, &size) == GR_EFORMAT);
    snprintf(dir, sizeof dir, "%s/missing.txt", root);
    CHECK(gr_read_file(dir, 100, &data, &size) == GR_EIO);
    CHECK_STR_CONTAINS(gr_last_error(), "missing.txt");

    /* An unwritable folder is an I/O error naming the path. */
    CHECK(gr_write_file_atomic("/nonexistent_dir/x.txt", "x", 1, 0) ==
          GR_EIO);
    CHECK_STR_CONTAINS(gr_last_error(), "/nonexistent_dir/x.txt");

    /* A folder in the way is refused even with force. */
    CHECK(gr_write_file_atomic(root, "x", 1, 1) == GR_EINVAL);

    /* Run folders: created with parents, refused when present. */
    snprintf(dir, sizeof dir, "%s/runs/first", root);
    char *argv[] = {"grove", "train", "bc", "--out", "runs/first",
                    "it's quoted", NULL};
    CHECK(gr_run_dir_create(dir, 0, 6, argv, "lr = 0.001\n") == 0);
    snprintf(path, sizeof path, "%s/command", dir);
    CHECK(gr_read_file(path, 1 << 20, &data, &size) == 0);
    CHECK(strcmp(data, "grove train bc --out runs/first 'it'\\''s quoted'\n")
          == 0);
    free(data);
    snprintf(path, sizeof path, "%s/config", dir);
    CHECK(gr_read_file(path, 1 << 20, &data, &size) == 0);
    CHECK(strcmp(data, "lr = 0.001\n") == 0);
    free(data);
    CHECK(gr_run_dir_create(dir, 0, 6, argv, NULL) == GR_EEXIST);
    CHECK_STR_CONTAINS(gr_last_error(), "--force");
    CHECK(gr_run_dir_create(dir, 1, 6, argv, NULL) == 0);

    /* gr_error_wrap keeps the cause. */
    gr_error(GR_EFORMAT, "bad CRC at byte %d", 12);
    gr_error_wrap(GR_EFORMAT, "reading %s", "x.replay");
    CHECK(strcmp(gr_last_error(), "reading x.replay: bad CRC at byte 12") ==
          0);

    /* Durations format as a person reads them. */
    char text[32];
    gr_format_duration(12.34, text, sizeof text);
    CHECK(strcmp(text, "12.3s") == 0);
    gr_format_duration(185, text, sizeof text);
    CHECK(strcmp(text, "3m05s") == 0);
    gr_format_duration(3720, text, sizeof text);
    CHECK(strcmp(text, "1h02m") == 0);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
    return test_report("core_files");
}
