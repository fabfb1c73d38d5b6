/* Runs a fuzz target's entry function over files, without libFuzzer:
 *   test_fuzz_NAME_regress PATH... [--valid PATH...]
 * PATH is a file or a folder (its regular files, not recursive). Each
 * input must come back without a crash (ASan in the sanitizer build
 * catches what a crash would hide); those after --valid (the seeds) must
 * also be accepted by the reader (fuzz_input_accepted, fuzz_util.h), so a
 * change of format that leaves the seeds behind is noticed. Prints how
 * many inputs ran. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern int fuzz_input_accepted;

static int want_valid;

static int run_file(const char *path)
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
    free(buf);
    if (want_valid && !fuzz_input_accepted) {
        fprintf(stderr, "%s: a seed the reader no longer accepts\n", path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int inputs = 0, errors = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--valid") == 0) {
            want_valid = 1;
            continue;
        }
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            errors++;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            errors += run_file(argv[i]) < 0;
            inputs++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        while (d != NULL && (e = readdir(d)) != NULL) {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
            if (stat(p, &st) == 0 && S_ISREG(st.st_mode) &&
                e->d_name[0] != '.') {
                errors += run_file(p) < 0;
                inputs++;
            }
        }
        if (d != NULL) {
            closedir(d);
        }
    }
    const char *prog = strrchr(argv[0], '/');
    printf("%s: %d inputs, %d failed\n", prog ? prog + 1 : argv[0], inputs,
           errors);
    return errors == 0 && inputs > 0 ? 0 : 1;
}
