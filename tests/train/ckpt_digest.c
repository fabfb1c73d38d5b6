/* ckpt_digest --compare A B TOL [--skip NAME]: the f32 tensors of two checkpoints agree
 * (same names and shapes, |a - b| <= TOL * (1 + |a|) everywhere); prints
 * the largest difference and exits 1 when they do not.
 *
 * ckpt_digest FILE [--ignore KEY]...: prints a checkpoint as canonical text,
 * one line per fact, so that two checkpoints (or a checkpoint and a golden
 * digest) compare with diff: the config text line by line (lines whose first
 * word is an --ignore KEY dropped: wall-clock times), then per tensor its
 * name, kind, dtype, shape and the CRC-32 of its data as stored. Decoded with
 * msgpack-c directly (not kernels/checkpoint.c, the code under test), so a
 * file the reader would misread still digests as written. Exit 1 on a file
 * that is not a checkpoint map. */
#include <math.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int key_is(const msgpack_object *k, const char *s)
{
    return k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(s) &&
           memcmp(k->via.str.ptr, s, k->via.str.size) == 0;
}

static const msgpack_object *get(const msgpack_object *map, const char *key)
{
    if (map->type != MSGPACK_OBJECT_MAP) {
        return NULL;
    }
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        if (key_is(&map->via.map.ptr[i].key, key)) {
            return &map->via.map.ptr[i].val;
        }
    }
    return NULL;
}

static int ignored(const char *line, size_t len, char **keys, int n_keys)
{
    for (int i = 0; i < n_keys; i++) {
        size_t k = strlen(keys[i]);
        if (len >= k && memcmp(line, keys[i], k) == 0 &&
            (len == k || line[k] == ' ')) {
            return 1;
        }
    }
    return 0;
}

/* The whole file, unpacked; NULL after printing why. */
static int unpack_file(const char *path, msgpack_unpacked *u, char **buf)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "ckpt_digest: cannot open %s\n", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    *buf = malloc(size > 0 ? (size_t)size : 1);
    if (*buf == NULL || fread(*buf, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        fprintf(stderr, "ckpt_digest: cannot read %s\n", path);
        return -1;
    }
    fclose(f);
    msgpack_unpacked_init(u);
    size_t off = 0;
    if (msgpack_unpack_next(u, *buf, (size_t)size, &off) !=
        MSGPACK_UNPACK_SUCCESS) {
        fprintf(stderr, "ckpt_digest: %s: not MessagePack\n", path);
        return -1;
    }
    return 0;
}

static int compare(const char *pa, const char *pb, double tol,
                   const char *skip)
{
    msgpack_unpacked ua, ub;
    char *ba = NULL, *bb = NULL;
    if (unpack_file(pa, &ua, &ba) < 0 || unpack_file(pb, &ub, &bb) < 0) {
        return 1;
    }
    const msgpack_object *ta = get(&ua.data, "tensors");
    const msgpack_object *tb = get(&ub.data, "tensors");
    if (ta == NULL || tb == NULL || ta->type != MSGPACK_OBJECT_MAP ||
        tb->type != MSGPACK_OBJECT_MAP ||
        ta->via.map.size != tb->via.map.size) {
        printf("the tensor sets differ\n");
        return 1;
    }
    double worst = 0.0;
    int bad = 0;
    for (uint32_t i = 0; i < ta->via.map.size; i++) {
        const msgpack_object *k = &ta->via.map.ptr[i].key;
        const msgpack_object *x = &ta->via.map.ptr[i].val, *y = NULL;
        for (uint32_t j = 0; j < tb->via.map.size; j++) {
            const msgpack_object *kb = &tb->via.map.ptr[j].key;
            if (kb->via.str.size == k->via.str.size &&
                memcmp(kb->via.str.ptr, k->via.str.ptr, k->via.str.size) == 0) {
                y = &tb->via.map.ptr[j].val;
            }
        }
        if (skip != NULL && k->via.str.size == strlen(skip) &&
            memcmp(k->via.str.ptr, skip, k->via.str.size) == 0) {
            continue;
        }
        const msgpack_object *dx = get(x, "data"), *dy = y ? get(y, "data") : NULL;
        const msgpack_object *ty = get(x, "dtype");
        if (dy == NULL || dx == NULL || dx->via.bin.size != dy->via.bin.size) {
            printf("tensor %.*s: missing or of another size\n",
                   (int)k->via.str.size, k->via.str.ptr);
            bad = 1;
            continue;
        }
        if (ty == NULL || ty->via.str.size != 3 ||
            memcmp(ty->via.str.ptr, "f32", 3) != 0) {
            if (memcmp(dx->via.bin.ptr, dy->via.bin.ptr, dx->via.bin.size) != 0) {
                printf("tensor %.*s: integer data differs\n",
                       (int)k->via.str.size, k->via.str.ptr);
                bad = 1;
            }
            continue;
        }
        size_t n = dx->via.bin.size / 4;
        for (size_t e = 0; e < n; e++) {
            float a, b;
            memcpy(&a, dx->via.bin.ptr + 4 * e, 4);
            memcpy(&b, dy->via.bin.ptr + 4 * e, 4);
            double d = fabs((double)a - (double)b) / (1.0 + fabs((double)a));
            if (!(d <= tol)) {
                if (!bad) {
                    printf("tensor %.*s[%zu]: %.9g vs %.9g\n",
                           (int)k->via.str.size, k->via.str.ptr, e,
                           (double)a, (double)b);
                }
                bad = 1;
            }
            worst = d > worst ? d : worst;
        }
    }
    printf("%u tensors, largest relative difference %.3g (tolerance %.3g)\n",
           ta->via.map.size, worst, tol);
    msgpack_unpacked_destroy(&ua);
    msgpack_unpacked_destroy(&ub);
    free(ba);
    free(bb);
    return bad;
}

int main(int argc, char **argv)
{
    if ((argc == 5 || argc == 7) && strcmp(argv[1], "--compare") == 0) {
        const char *skip = argc == 7 && strcmp(argv[5], "--skip") == 0
                               ? argv[6]
                               : NULL;
        return compare(argv[2], argv[3], atof(argv[4]), skip);
    }
    if (argc < 2) {
        fprintf(stderr, "usage: ckpt_digest FILE [--ignore KEY]...\n");
        return 2;
    }
    char *keys[32];
    int n_keys = 0;
    for (int i = 2; i + 1 < argc && n_keys < 32; i += 2) {
        if (strcmp(argv[i], "--ignore") != 0) {
            fprintf(stderr, "ckpt_digest: unknown argument %s\n", argv[i]);
            return 2;
        }
        keys[n_keys++] = argv[i + 1];
    }
    FILE *f = fopen(argv[1], "rb");
    if (f == NULL) {
        fprintf(stderr, "ckpt_digest: cannot open %s\n", argv[1]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(size > 0 ? (size_t)size : 1);
    if (buf == NULL || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "ckpt_digest: cannot read %s\n", argv[1]);
        return 1;
    }
    fclose(f);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    if (msgpack_unpack_next(&u, buf, (size_t)size, &off) !=
        MSGPACK_UNPACK_SUCCESS) {
        fprintf(stderr, "ckpt_digest: %s: not MessagePack\n", argv[1]);
        return 1;
    }
    const msgpack_object *root = &u.data;
    const msgpack_object *config = get(root, "config");
    const msgpack_object *tensors = get(root, "tensors");
    if (config == NULL || config->type != MSGPACK_OBJECT_STR ||
        tensors == NULL || tensors->type != MSGPACK_OBJECT_MAP) {
        fprintf(stderr, "ckpt_digest: %s: not a grove checkpoint\n", argv[1]);
        return 1;
    }
    const char *p = config->via.str.ptr, *end = p + config->via.str.size;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        size_t len = eol ? (size_t)(eol - p) : (size_t)(end - p);
        if (!ignored(p, len, keys, n_keys)) {
            printf("config %.*s\n", (int)len, p);
        }
        p += len + (eol != NULL);
    }
    for (uint32_t i = 0; i < tensors->via.map.size; i++) {
        const msgpack_object *k = &tensors->via.map.ptr[i].key;
        const msgpack_object *t = &tensors->via.map.ptr[i].val;
        const msgpack_object *kind = get(t, "kind"), *dtype = get(t, "dtype");
        const msgpack_object *shape = get(t, "shape"), *crc = get(t, "crc32");
        const msgpack_object *data = get(t, "data");
        if (k->type != MSGPACK_OBJECT_STR || kind == NULL || dtype == NULL ||
            shape == NULL || shape->type != MSGPACK_OBJECT_ARRAY ||
            crc == NULL || crc->type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
            data == NULL || data->type != MSGPACK_OBJECT_BIN) {
            fprintf(stderr, "ckpt_digest: %s: tensor %u is malformed\n",
                    argv[1], i);
            return 1;
        }
        printf("tensor %.*s %.*s %.*s [", (int)k->via.str.size,
               k->via.str.ptr, (int)kind->via.str.size, kind->via.str.ptr,
               (int)dtype->via.str.size, dtype->via.str.ptr);
        for (uint32_t d = 0; d < shape->via.array.size; d++) {
            printf("%s%llu", d ? "," : "",
                   (unsigned long long)shape->via.array.ptr[d].via.u64);
        }
        printf("] %u bytes crc32 %08llx\n", data->via.bin.size,
               (unsigned long long)crc->via.u64);
    }
    msgpack_unpacked_destroy(&u);
    free(buf);
    return 0;
}
