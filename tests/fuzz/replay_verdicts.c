/* Runs the fuzz target's entry function over files, without libFuzzer,
 * and checks the reader's verdict on each:
 *   test_fuzz_replay_verdicts --refused PATH... --clean PATH...
 * PATH is a file or a folder (its regular files, not recursive). Each
 * input must come back without a crash (ASan in the sanitizer build
 * catches what a crash would hide). An input after --refused (the kept
 * regressions: each is broken) must be refused by a plain read (open or a
 * record fails with GR_EFORMAT and a message) and, with
 * REPLAY_READ_RECOVER | REPLAY_READ_VERIFY, be refused too or read as a
 * truncated file; one after --clean (the golden replay) must read to its
 * end in both modes with the footer, CRC and trailer checked, and re-read
 * the same from each keyframe of its index. Prints the counts. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "replays/replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum want { WANT_REFUSED, WANT_CLEAN };
static int bad_verdicts;

/* Reads data whole with `flags`: 0 at a clean end, else the error code;
 * *st gets the status at the end (zeroed when open failed). */
static int read_whole(const uint8_t *data, size_t n, unsigned flags,
                      struct replay_reader_status *st, uint64_t *records)
{
    struct replay_reader *r = NULL;
    memset(st, 0, sizeof *st);
    *records = 0;
    int rc = replay_reader_open_memory(&r, data, n, "input", flags);
    if (rc < 0) {
        return rc;
    }
    struct replay_record rec;
    while ((rc = replay_reader_next(r, &rec)) > 0) {
        (*records)++;
    }
    replay_reader_status(r, st);
    replay_reader_close(r);
    return rc;
}

/* The golden replay from each keyframe its footer's index names: a seek,
 * then records to the end, all of which must read cleanly. */
static int seeks_clean(const uint8_t *data, size_t n)
{
    struct replay_reader *r = NULL;
    if (replay_reader_open_memory(&r, data, n, "input",
                                  REPLAY_READ_VERIFY) < 0) {
        return 0;
    }
    struct replay_footer f;
    int ok = replay_reader_footer(r, &f) == 0 && f.n_index > 0;
    uint64_t n_index = ok ? f.n_index : 0;
    struct replay_index_entry *idx =
        ok ? malloc(n_index * sizeof *idx) : NULL;
    if (idx != NULL) {
        memcpy(idx, f.index, n_index * sizeof *idx);
    }
    ok = ok && idx != NULL;
    for (uint64_t i = 0; ok && i < n_index; i++) {
        struct replay_record rec;
        int rc = replay_reader_seek(r, &idx[i]);
        ok = rc == 0 && replay_reader_next(r, &rec) > 0 &&
             rec.type == REPLAY_RECORD_KEYFRAME && rec.offset == idx[i].offset;
        while (ok && (rc = replay_reader_next(r, &rec)) > 0) {
        }
        ok = ok && rc == 0;
    }
    free(idx);
    replay_reader_close(r);
    return ok;
}

static void check_verdict(const char *path, const uint8_t *data, size_t n,
                          enum want want)
{
    struct replay_reader_status st;
    uint64_t records = 0;
    int rc = read_whole(data, n, 0, &st, &records);
    const char *msg = rc < 0 ? gr_last_error() : "";
    if (want == WANT_REFUSED) {
        if (rc != GR_EFORMAT || msg[0] == 0) {
            fprintf(stderr, "%s: a broken input was not refused (rc %d, "
                    "%llu records)\n", path, rc,
                    (unsigned long long)records);
            bad_verdicts++;
        }
        rc = read_whole(data, n, REPLAY_READ_RECOVER | REPLAY_READ_VERIFY,
                        &st, &records);
        if (rc == 0 && !st.truncated) {
            fprintf(stderr, "%s: read with --recover as a whole, clean "
                    "file\n", path);
            bad_verdicts++;
        }
        return;
    }
    if (rc != 0 || !st.complete || !st.crc_ok || st.truncated ||
        st.episodes == 0) {
        fprintf(stderr, "%s: the clean file did not read cleanly (rc %d: "
                "%s; complete %d, crc %d, %llu episodes)\n", path, rc, msg,
                st.complete, st.crc_ok, (unsigned long long)st.episodes);
        bad_verdicts++;
    }
    uint64_t plain = records;
    rc = read_whole(data, n, REPLAY_READ_RECOVER | REPLAY_READ_VERIFY, &st,
                    &records);
    if (rc != 0 || !st.complete || !st.crc_ok || records != plain) {
        fprintf(stderr, "%s: verified read failed (rc %d: %s)\n", path, rc,
                rc < 0 ? gr_last_error() : "");
        bad_verdicts++;
    }
    if (!seeks_clean(data, n)) {
        fprintf(stderr, "%s: a seek to an index keyframe failed: %s\n",
                path, gr_last_error());
        bad_verdicts++;
    }
}

static int run_file(const char *path, enum want want)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf != NULL && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *p = realloc(buf, cap * 2);
            if (p == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = p;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf == NULL) {
        fprintf(stderr, "%s: out of memory\n", path);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, n);
    check_verdict(path, buf, n, want);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int inputs[2] = {0, 0}, errors = 0, mode = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--refused") == 0) {
            mode = WANT_REFUSED;
            continue;
        }
        if (strcmp(argv[i], "--clean") == 0) {
            mode = WANT_CLEAN;
            continue;
        }
        if (mode < 0) {
            fprintf(stderr, "usage: %s --refused PATH... --clean PATH...\n",
                    argv[0]);
            return 2;
        }
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            errors++;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            errors += run_file(argv[i], (enum want)mode) < 0;
            inputs[mode]++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        while (d != NULL && (e = readdir(d)) != NULL) {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
            if (stat(p, &st) == 0 && S_ISREG(st.st_mode) &&
                e->d_name[0] != '.') {
                errors += run_file(p, (enum want)mode) < 0;
                inputs[mode]++;
            }
        }
        if (d != NULL) {
            closedir(d);
        }
    }
    printf("replays_fuzz_regressions: %d inputs to be refused, "
           "%d to read cleanly, %d unreadable, %d wrong verdicts\n",
           inputs[WANT_REFUSED], inputs[WANT_CLEAN], errors, bad_verdicts);
    return errors == 0 && bad_verdicts == 0 && inputs[WANT_REFUSED] > 0 &&
                   inputs[WANT_CLEAN] > 0
               ? 0
               : 1;
}
