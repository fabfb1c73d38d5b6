/* tests/fuzz/fuzz_util.h — what the fuzz targets share: the fuzzer's bytes
 * as a file (for readers that take a path) and as a NUL-terminated string
 * (for text parsers). Header-only (static inline); each process gets its
 * own scratch folder under $TMPDIR (or /tmp), removed at exit, so ctest -j
 * and parallel fuzzers do not collide. */
#ifndef GROVE_TESTS_FUZZ_UTIL_H
#define GROVE_TESTS_FUZZ_UTIL_H

#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Set by a target when its reader accepted the input (0 otherwise): the
 * ctest replay (fuzz_main.c --valid) checks that every seed still parses,
 * so the fuzzer keeps starting from deep inside each reader. */
extern int fuzz_input_accepted;
int fuzz_input_accepted;

static char fuzz_dir[512];
static char fuzz_files[8][600];
static int fuzz_n_files;

static inline void fuzz_cleanup(void)
{
    for (int i = 0; i < fuzz_n_files; i++) {
        unlink(fuzz_files[i]);
    }
    if (fuzz_dir[0] != '\0') {
        rmdir(fuzz_dir);
    }
}

/* The process's scratch folder, made on first use (NULL if it cannot be). */
static inline const char *fuzz_scratch_dir(void)
{
    if (fuzz_dir[0] == '\0') {
        const char *tmp = getenv("TMPDIR");
        snprintf(fuzz_dir, sizeof fuzz_dir, "%s/grove-fuzz-XXXXXX",
                 tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
        if (mkdtemp(fuzz_dir) == NULL) {
            perror(fuzz_dir);
            fuzz_dir[0] = '\0';
            return NULL;
        }
        atexit(fuzz_cleanup);
    }
    return fuzz_dir;
}

/* Writes data[0, size) to SCRATCH/name (replacing it) and returns the path,
 * or NULL. At most 8 distinct names per process. */
static inline const char *fuzz_write_file(const char *name, const uint8_t *data,
                                   size_t size)
{
    const char *dir = fuzz_scratch_dir();
    if (dir == NULL) {
        return NULL;
    }
    static char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        perror(path);
        return NULL;
    }
    int ok = fwrite(data, 1, size, f) == size;
    ok &= fclose(f) == 0;
    int known = 0;
    for (int i = 0; i < fuzz_n_files; i++) {
        known |= strcmp(fuzz_files[i], path) == 0;
    }
    if (!known && fuzz_n_files < 8) {
        snprintf(fuzz_files[fuzz_n_files++], sizeof fuzz_files[0], "%s",
                 path);
    }
    return ok ? path : NULL;
}

/* A malloc'd NUL-terminated copy of data[0, size) (NULL on no memory). */
static inline char *fuzz_strdup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s != NULL) {
        memcpy(s, data, size);
        s[size] = '\0';
    }
    return s;
}

#endif
