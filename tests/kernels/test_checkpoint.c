/* Checkpoints: round trip (parameters, buffers, optimizer state), no
 * overwrite without force, and damaged files rejected with an error that
 * names the tensor: truncation, a flipped byte, wrong names, wrong shapes,
 * wrong format or version; a failed load changes nothing. */
#define _POSIX_C_SOURCE 200809L
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/files.h"
#include "kernels/checkpoint.h"
#include "kernels/optim.h"
#include "kernels/tape.h"
#include "kernels/tensor.h"
#include "tests/test.h"

static char dir[256];

static struct gr_ctx *cpu_ctx(void)
{
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.device = GR_DEVICE_CPU;
    cfg.step_chunk_bytes = 1 << 16;
    struct gr_ctx *ctx = NULL;
    gr_ctx_new(&ctx, &cfg);
    return ctx;
}

/* A small model: two params, an i32 buffer, an Adam optimizer. */
static struct gr_ctx *model(int w_rows, int with_bias, int seed,
                            struct gr_optim **opt)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct gr_tensor *w = gr_param_new(ctx, "fc.weight", gr_shape2(w_rows, 4));
    gr_tensor_rand_uniform(w, -1, 1, gr_rng_make((uint64_t)seed, 1));
    if (with_bias) {
        struct gr_tensor *b = gr_param_new(ctx, "fc.bias", gr_shape1(w_rows));
        gr_tensor_rand_uniform(b, -1, 1, gr_rng_make((uint64_t)seed, 2));
    }
    struct gr_tensor *s = gr_buffer_new(ctx, "step", GR_I32, gr_shape1(2));
    int32_t sv[2] = {seed, -seed};
    gr_tensor_set_host(s, sv);
    if (opt) {
        struct gr_optim_config c = gr_optim_config_default(GR_OPTIM_ADAM);
        gr_optim_new(opt, ctx, "adam", &c);
        /* one step so that the state is not all zeros */
        for (int i = 0; i < gr_ctx_n_named(ctx); i++) {
            struct gr_tensor *t = gr_ctx_named(ctx, i);
            if (t->kind == GR_KIND_PARAM) {
                gr_tensor_rand_uniform(t->grad, -1, 1,
                                       gr_rng_make((uint64_t)seed, 3 + i));
            }
        }
        gr_optim_step(*opt);
    }
    return ctx;
}

static int same_tensors(struct gr_ctx *a, struct gr_ctx *b)
{
    if (gr_ctx_n_named(a) != gr_ctx_n_named(b)) {
        return 0;
    }
    for (int i = 0; i < gr_ctx_n_named(a); i++) {
        struct gr_tensor *x = gr_ctx_named(a, i);
        struct gr_tensor *y = gr_ctx_find(b, x->name);
        if (!y || x->numel != y->numel) {
            return 0;
        }
        float *u = malloc((size_t)x->numel * 4), *v = malloc((size_t)x->numel * 4);
        gr_tensor_to_host(x, u);
        gr_tensor_to_host(y, v);
        int eq = memcmp(u, v, (size_t)x->numel * 4) == 0;
        free(u);
        free(v);
        if (!eq) {
            return 0;
        }
    }
    return 1;
}

static char *slurp(const char *path, size_t *n)
{
    char *buf = NULL;
    gr_read_file(path, 1 << 24, &buf, n);
    return buf;
}

static void test_round_trip(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/a.ckpt", dir);
    struct gr_optim *o1, *o2;
    struct gr_ctx *a = model(3, 1, 7, &o1);
    CHECK(gr_checkpoint_save(a, path, "layers=1 hidden=3", GR_CKPT_ALL, 0) ==
          0);
    struct gr_ctx *b = model(3, 1, 8, &o2);
    CHECK(!same_tensors(a, b));
    char *cfg = NULL;
    int rc = gr_checkpoint_load(b, path, GR_CKPT_ALL, &cfg);
    CHECK_MSG(rc == 0, "load: %s", gr_last_error());
    CHECK(cfg && strcmp(cfg, "layers=1 hidden=3") == 0);
    free(cfg);
    CHECK(same_tensors(a, b));
    CHECK(gr_optim_steps(o2) == 1);
    cfg = NULL;
    CHECK(gr_checkpoint_read_config(path, &cfg) == 0);
    CHECK(cfg && strcmp(cfg, "layers=1 hidden=3") == 0);
    free(cfg);
    /* no overwrite without force; the file is untouched */
    size_t n0, n1;
    char *before = slurp(path, &n0);
    CHECK(gr_checkpoint_save(b, path, "other", GR_CKPT_PARAMS, 0) ==
          GR_EEXIST);
    CHECK_STR_CONTAINS(gr_last_error(), "--force");
    char *after = slurp(path, &n1);
    CHECK(n0 == n1 && memcmp(before, after, n0) == 0);
    free(after);
    CHECK(gr_checkpoint_save(b, path, "other", GR_CKPT_PARAMS, 1) == 0);
    /* a params-only file loads into a model with an optimizer when only
     * params are asked for, and is refused when optimizer state is */
    struct gr_ctx *c = model(3, 1, 9, NULL);
    CHECK(gr_checkpoint_load(c, path, GR_CKPT_PARAMS, NULL) == 0);
    CHECK(gr_checkpoint_load(a, path, GR_CKPT_ALL, NULL) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "that the file lacks");
    free(before);
    gr_optim_free(o1);
    gr_optim_free(o2);
    gr_ctx_free(a);
    gr_ctx_free(b);
    gr_ctx_free(c);
}

static void write_bytes(const char *path, const char *buf, size_t n)
{
    FILE *f = fopen(path, "wb");
    fwrite(buf, 1, n, f);
    fclose(f);
}

/* Loads `path` into a fresh (3, bias) model; expects failure, returns the
 * message; checks the model is untouched. */
static const char *load_fails(const char *path)
{
    static char msg[1024];
    struct gr_ctx *m = model(3, 1, 11, NULL);
    struct gr_ctx *ref = model(3, 1, 11, NULL);
    int rc = gr_checkpoint_load(m, path, GR_CKPT_PARAMS | GR_CKPT_BUFFERS,
                                NULL);
    snprintf(msg, sizeof msg, "%s", rc < 0 ? gr_last_error() : "(loaded)");
    CHECK_MSG(rc < 0, "damaged file %s was accepted", path);
    CHECK_MSG(same_tensors(m, ref), "a failed load changed the model (%s)",
              msg);
    gr_ctx_free(m);
    gr_ctx_free(ref);
    return msg;
}

static size_t find(const char *buf, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++) {
        if (memcmp(buf + i, needle, k) == 0) {
            return i;
        }
    }
    return (size_t)-1;
}

static void test_damage(void)
{
    char good[512], bad[512];
    snprintf(good, sizeof good, "%s/good.ckpt", dir);
    snprintf(bad, sizeof bad, "%s/bad.ckpt", dir);
    struct gr_ctx *a = model(3, 1, 5, NULL);
    CHECK(gr_checkpoint_save(a, good, "cfg", GR_CKPT_ALL, 0) == 0);
    size_t n;
    char *buf = slurp(good, &n);
    /* truncated inside the data of fc.bias: named */
    size_t at = find(buf, n, "fc.bias");
    CHECK(at != (size_t)-1);
    write_bytes(bad, buf, at + 40);
    const char *m = load_fails(bad);
    CHECK_STR_CONTAINS(m, "truncated");
    CHECK_STR_CONTAINS(m, "tensor 'fc.bias'");
    /* truncated anywhere: always a clean error */
    for (size_t cut = 0; cut < n; cut += 7) {
        write_bytes(bad, buf, cut);
        m = load_fails(bad);
        CHECK_MSG(strstr(m, "truncated") || strstr(m, "not a grove"),
                  "cut at %zu: %s", cut, m);
    }
    /* one flipped bit in fc.weight's data: CRC error naming it */
    size_t wat = find(buf, n, "fc.weight");
    size_t dat = find(buf + wat, n - wat, "data") + wat + 4 + 2 + 10;
    buf[dat] ^= 0x10;
    write_bytes(bad, buf, n);
    m = load_fails(bad);
    CHECK_STR_CONTAINS(m, "tensor 'fc.weight'");
    CHECK_STR_CONTAINS(m, "CRC mismatch");
    buf[dat] ^= 0x10;
    /* every single-byte corruption is caught (never a crash) */
    int caught = 0, tried = 0;
    for (size_t i = 0; i < n; i += 3) {
        buf[i] ^= 0x5a;
        write_bytes(bad, buf, n);
        struct gr_ctx *mm = model(3, 1, 11, NULL);
        caught += gr_checkpoint_load(mm, bad, GR_CKPT_ALL & ~GR_CKPT_OPTIM,
                                     NULL) < 0;
        gr_ctx_free(mm);
        tried++;
        buf[i] ^= 0x5a;
    }
    CHECK_MSG(caught == tried, "%d of %d corrupted files were accepted",
              tried - caught, tried);
    /* wrong name sets and shapes */
    struct gr_ctx *nobias = model(3, 0, 5, NULL);
    CHECK(gr_checkpoint_load(nobias, good, GR_CKPT_PARAMS, NULL) ==
          GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "the file has tensor 'fc.bias' "
                       "(param) that the model lacks");
    struct gr_ctx *bigger = model(4, 1, 5, NULL);
    CHECK(gr_checkpoint_load(bigger, good, GR_CKPT_PARAMS, NULL) ==
          GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "tensor 'fc.weight': shape [3, 4] "
                       "in the file, [4, 4] in the model");
    struct gr_ctx *extra = model(3, 1, 5, NULL);
    gr_param_new(extra, "fc.extra", gr_shape1(2));
    CHECK(gr_checkpoint_load(extra, good, GR_CKPT_PARAMS, NULL) ==
          GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "the model has tensor 'fc.extra' "
                       "(param) that the file lacks");
    /* wrong format, future version, not msgpack at all */
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 2);
    msgpack_pack_str(&pk, 6);
    msgpack_pack_str_body(&pk, "format", 6);
    msgpack_pack_str(&pk, 16);
    msgpack_pack_str_body(&pk, "grove-checkpoint", 16);
    msgpack_pack_str(&pk, 7);
    msgpack_pack_str_body(&pk, "version", 7);
    msgpack_pack_uint32(&pk, 2);
    write_bytes(bad, sb.data, sb.size);
    m = load_fails(bad);
    CHECK_STR_CONTAINS(m, "checkpoint version 2; this grove reads version 1");
    msgpack_sbuffer_destroy(&sb);
    write_bytes(bad, "hello world\n", 12);
    m = load_fails(bad);
    CHECK_STR_CONTAINS(m, "bad.ckpt");
    snprintf(bad, sizeof bad, "%s/missing.ckpt", dir);
    m = load_fails(bad);
    CHECK_STR_CONTAINS(m, "missing.ckpt");
    free(buf);
    gr_ctx_free(a);
    gr_ctx_free(nobias);
    gr_ctx_free(bigger);
    gr_ctx_free(extra);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/grove_ckpt_test_%d", (int)getpid());
    gr_mkdir_p(dir);
    test_round_trip();
    test_damage();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", dir);
    }
    return test_report("kernels_checkpoint");
}
