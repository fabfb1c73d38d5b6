/* Enforces DESIGN.md's table of who may include whom by reading the
 * #include lines of every source file under the module folders of ROOT.
 *
 *   test_include_rules ROOT
 *
 * Prints "FILE:LINE: MODULE may not include HEADER (...)" for each breach
 * and exits 1 if there is any. tests/ and bench/ may include everything. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* External libraries a module may name, by the header that gives them away. */
enum lib {
    LIB_NONE = 0,
    LIB_SDL,
    LIB_PNG,
    LIB_MSGPACK,
    LIB_CBLAS,
    LIB_CUDA,
    LIB_MPI,
    LIB_ZLIB,
    LIB_ZIP
};
static const char *const lib_names[] = {"libc",  "SDL2",  "libpng",
                                        "msgpack-c", "CBLAS", "CUDA",
                                        "MPI",   "zlib",  "libzip"};

struct rule {
    const char *module;
    const char *grove_modules; /* space-separated, itself included */
    unsigned libs;             /* bit per enum lib */
};

#define BIT(x) (1u << (x))
static const struct rule rules[] = {
    {"core", "core", BIT(LIB_ZLIB) | BIT(LIB_ZIP)},
    {"kernels", "core kernels", BIT(LIB_CBLAS) | BIT(LIB_CUDA) |
                                    BIT(LIB_MSGPACK)},
    {"train", "core kernels train", BIT(LIB_MPI)},
    {"envs", "core envs", 0},
    {"replays", "core envs replays", BIT(LIB_MSGPACK)},
    {"render", "core envs replays render", BIT(LIB_SDL) | BIT(LIB_PNG)},
    {"agents", "core kernels train envs replays agents", 0},
    {"nlp", "core kernels train nlp", 0},
    {"cli", "core kernels train envs replays render agents nlp cli bench",
     BIT(LIB_SDL) | BIT(LIB_PNG) | BIT(LIB_MSGPACK) | BIT(LIB_CBLAS) |
         BIT(LIB_CUDA) | BIT(LIB_ZLIB) | BIT(LIB_ZIP)},
};
#define N_RULES (sizeof rules / sizeof rules[0])

static const char *const grove_modules[] = {
    "core", "kernels", "train", "envs", "replays", "render", "agents", "nlp",
    "cli", "tests", "bench"};

static int violations;
static int files_checked;

static enum lib classify_system_header(const char *h)
{
    if (strncmp(h, "SDL", 3) == 0) {
        return LIB_SDL;
    }
    if (strcmp(h, "png.h") == 0 || strcmp(h, "pngconf.h") == 0) {
        return LIB_PNG;
    }
    if (strncmp(h, "msgpack", 7) == 0) {
        return LIB_MSGPACK;
    }
    if (strcmp(h, "cblas.h") == 0 || strncmp(h, "openblas", 8) == 0) {
        return LIB_CBLAS;
    }
    if (strcmp(h, "mpi.h") == 0) {
        return LIB_MPI;
    }
    if (strncmp(h, "cuda", 4) == 0 || strncmp(h, "cublas", 6) == 0 ||
        strncmp(h, "curand", 6) == 0 || strncmp(h, "cub/", 4) == 0 ||
        strncmp(h, "device_launch", 13) == 0) {
        return LIB_CUDA;
    }
    if (strcmp(h, "zlib.h") == 0 || strcmp(h, "zconf.h") == 0) {
        return LIB_ZLIB;
    }
    /* libzip's headers; grove's own core/zip.h is named with its folder. */
    if (strcmp(h, "zip.h") == 0 || strcmp(h, "zipconf.h") == 0) {
        return LIB_ZIP;
    }
    return LIB_NONE;
}

static int word_in(const char *word, size_t len, const char *list)
{
    const char *p = list;
    while (*p) {
        const char *sp = strchr(p, ' ');
        size_t l = sp ? (size_t)(sp - p) : strlen(p);
        if (l == len && strncmp(p, word, len) == 0) {
            return 1;
        }
        p += l;
        while (*p == ' ') {
            p++;
        }
    }
    return 0;
}

static int is_grove_module(const char *word, size_t len)
{
    for (size_t i = 0; i < sizeof grove_modules / sizeof *grove_modules; i++) {
        if (strlen(grove_modules[i]) == len &&
            strncmp(grove_modules[i], word, len) == 0) {
            return 1;
        }
    }
    return 0;
}

static void check_file(const char *path, const char *shown,
                       const struct rule *rule)
{
    FILE *fp = fopen(path, "r");
    if (fp == NULL) {
        printf("%s: cannot read\n", shown);
        violations++;
        return;
    }
    files_checked++;
    char line[1024];
    int lineno = 0;
    while (fgets(line, sizeof line, fp) != NULL) {
        lineno++;
        char *p = line;
        while (*p == ' ' || *p == '\t') {
            p++;
        }
        if (*p != '#') {
            continue;
        }
        p++;
        while (*p == ' ' || *p == '\t') {
            p++;
        }
        if (strncmp(p, "include", 7) != 0) {
            continue;
        }
        p += 7;
        while (*p == ' ' || *p == '\t') {
            p++;
        }
        char open = *p;
        char close = open == '"' ? '"' : open == '<' ? '>' : 0;
        if (close == 0) {
            continue;
        }
        char *end = strchr(p + 1, close);
        if (end == NULL) {
            continue;
        }
        *end = '\0';
        const char *header = p + 1;
        const char *slash = strchr(header, '/');
        if (open == '"' && slash != NULL &&
            is_grove_module(header, (size_t)(slash - header))) {
            if (!word_in(header, (size_t)(slash - header),
                         rule->grove_modules)) {
                printf("%s:%d: %s may not include \"%s\" (DESIGN.md: %s "
                       "includes only %s)\n",
                       shown, lineno, rule->module, header, rule->module,
                       rule->grove_modules);
                violations++;
            }
            continue;
        }
        enum lib lib = classify_system_header(header);
        if (lib != LIB_NONE && !(rule->libs & BIT(lib))) {
            printf("%s:%d: %s may not include %c%s%c (%s is not among the "
                   "libraries DESIGN.md allows it)\n",
                   shown, lineno, rule->module, open, header, close,
                   lib_names[lib]);
            violations++;
        }
    }
    fclose(fp);
}

static int is_source(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot != NULL &&
           (strcmp(dot, ".c") == 0 || strcmp(dot, ".h") == 0 ||
            strcmp(dot, ".cu") == 0 || strcmp(dot, ".cuh") == 0 ||
            strcmp(dot, ".in") == 0);
}

static void walk(const char *dir, const char *shown_dir,
                 const struct rule *rule)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }
        char path[4096], shown[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        snprintf(shown, sizeof shown, "%s/%s", shown_dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0) {
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            walk(path, shown, rule);
        } else if (is_source(e->d_name)) {
            check_file(path, shown, rule);
        }
    }
    closedir(d);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_include_rules ROOT\n");
        return 2;
    }
    for (size_t i = 0; i < N_RULES; i++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", argv[1], rules[i].module);
        walk(dir, rules[i].module, &rules[i]);
    }
    printf("include rules: %d files checked, %d violations\n", files_checked,
           violations);
    if (files_checked == 0) {
        printf("no source files found under %s\n", argv[1]);
        return 1;
    }
    return violations == 0 ? 0 : 1;
}
