/* Checkpoints: written with msgpack-c, read by a small bounds-checked
 * MessagePack cursor so that every failure can name the byte offset and the
 * tensor being read. */
#include "kernels/checkpoint.h"

#include <msgpack.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"
#include "core/hash.h"
#include "kernels/internal.h"

#define CKPT_FORMAT "grove-checkpoint"
#define CKPT_VERSION 1
#define CKPT_MAX_BYTES ((size_t)1 << 36) /* 64 GiB */

static const char *kind_name(enum gr_tensor_kind k)
{
    switch (k) {
    case GR_KIND_PARAM:
        return "param";
    case GR_KIND_BUFFER:
        return "buffer";
    case GR_KIND_OPTIM:
        return "optim";
    default:
        return "step";
    }
}

static unsigned kind_bit(enum gr_tensor_kind k)
{
    switch (k) {
    case GR_KIND_PARAM:
        return GR_CKPT_PARAMS;
    case GR_KIND_BUFFER:
        return GR_CKPT_BUFFERS;
    case GR_KIND_OPTIM:
        return GR_CKPT_OPTIM;
    default:
        return 0;
    }
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

/* A string that is not UTF-8 (a path with other bytes) goes as bin, so
 * that msgpack readers return it as bytes instead of failing to decode
 * it (core/files.h). */
static void pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    if (!gr_utf8_valid(s, n)) {
        msgpack_pack_bin(pk, n);
        msgpack_pack_bin_body(pk, s, n);
        return;
    }
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

/* ---- save ---- */

int gr_checkpoint_save(struct gr_ctx *ctx, const char *path,
                       const char *config, unsigned what, int force)
{
    if (!host_is_little_endian()) {
        return gr_error(GR_EUNSUPPORTED, "%s: checkpoints are little-endian; "
                        "this host is not", path);
    }
    if (!config) {
        config = "";
    }
    int count = 0;
    size_t max_bytes = 0;
    for (int i = 0; i < ctx->n_named; i++) {
        struct gr_tensor *t = ctx->named[i];
        if (kind_bit(t->kind) & what) {
            count++;
            size_t b = (size_t)t->numel * 4;
            if (b > max_bytes) {
                max_bytes = b;
            }
        }
    }
    void *host = malloc(max_bytes ? max_bytes : 1);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    if (!host) {
        msgpack_sbuffer_destroy(&sb);
        return gr_error(GR_ENOMEM, "%s: out of memory", path);
    }
    msgpack_pack_map(&pk, 5);
    pack_str(&pk, "format");
    pack_str(&pk, CKPT_FORMAT);
    pack_str(&pk, "version");
    msgpack_pack_uint32(&pk, CKPT_VERSION);
    pack_str(&pk, "config");
    pack_str(&pk, config);
    pack_str(&pk, "config_crc32");
    msgpack_pack_uint32(&pk, gr_crc32(0, config, strlen(config)));
    pack_str(&pk, "tensors");
    msgpack_pack_map(&pk, (size_t)count);
    int rc = 0;
    for (int i = 0; i < ctx->n_named && rc == 0; i++) {
        struct gr_tensor *t = ctx->named[i];
        if (!(kind_bit(t->kind) & what)) {
            continue;
        }
        size_t bytes = (size_t)t->numel * 4;
        rc = gr_tensor_to_host(t, host);
        if (rc < 0) {
            gr_error_wrap(rc, "%s: reading tensor '%s'", path, t->name);
            break;
        }
        pack_str(&pk, t->name);
        msgpack_pack_map(&pk, 5);
        pack_str(&pk, "kind");
        pack_str(&pk, kind_name(t->kind));
        pack_str(&pk, "dtype");
        pack_str(&pk, t->dtype == GR_F32 ? "f32" : "i32");
        pack_str(&pk, "shape");
        msgpack_pack_array(&pk, (size_t)t->ndim);
        for (int d = 0; d < t->ndim; d++) {
            msgpack_pack_uint64(&pk, (uint64_t)t->shape[d]);
        }
        pack_str(&pk, "data");
        msgpack_pack_bin(&pk, bytes);
        msgpack_pack_bin_body(&pk, host, bytes);
        pack_str(&pk, "crc32");
        msgpack_pack_uint32(&pk, gr_crc32(0, host, bytes));
    }
    free(host);
    if (rc == 0) {
        rc = gr_write_file_atomic(path, sb.data, sb.size, force);
    }
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

/* ---- the reading cursor ---- */

struct cur {
    const uint8_t *b;
    size_t n, pos;
    const char *path;
    const char *where; /* "the header" or "tensor 'x'" */
    char where_buf[300];
};

static int cur_fail(struct cur *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int cur_fail(struct cur *c, int code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return gr_error(code, "%s: %s (in %s)", c->path, msg, c->where);
}

static int need(struct cur *c, size_t k)
{
    if (c->n - c->pos < k) {
        return cur_fail(c, GR_EFORMAT, "truncated at byte %zu (%zu more "
                        "bytes needed, %zu left)", c->n, k, c->n - c->pos);
    }
    return 0;
}

static uint64_t be_read(const uint8_t *p, int k)
{
    uint64_t v = 0;
    for (int i = 0; i < k; i++) {
        v = (v << 8) | p[i];
    }
    return v;
}

static int rd_uint(struct cur *c, uint64_t *out)
{
    if (need(c, 1) < 0) {
        return GR_EFORMAT;
    }
    size_t at = c->pos;
    uint8_t t = c->b[c->pos++];
    int k = 0;
    if (t <= 0x7f) {
        *out = t;
        return 0;
    }
    switch (t) {
    case 0xcc: k = 1; break;
    case 0xcd: k = 2; break;
    case 0xce: k = 4; break;
    case 0xcf: k = 8; break;
    default:
        return cur_fail(c, GR_EFORMAT, "byte %zu: expected an unsigned "
                        "integer, found type 0x%02x", at, t);
    }
    if (need(c, (size_t)k) < 0) {
        return GR_EFORMAT;
    }
    *out = be_read(c->b + c->pos, k);
    c->pos += (size_t)k;
    return 0;
}

/* str (want_bin 0), bin (1) or either (2, the config: bin when its bytes
 * are not UTF-8): pointer into the buffer and length. */
static int rd_raw(struct cur *c, int want_bin, const uint8_t **p, size_t *len)
{
    if (need(c, 1) < 0) {
        return GR_EFORMAT;
    }
    size_t at = c->pos;
    uint8_t t = c->b[c->pos++];
    int k = -1;
    uint64_t l = 0;
    if (want_bin != 1 && t >= 0xa0 && t <= 0xbf) {
        l = t & 0x1f;
        k = 0;
    } else if (want_bin != 1 && t >= 0xd9 && t <= 0xdb) {
        k = 1 << (t - 0xd9);
    } else if (want_bin != 0 && t >= 0xc4 && t <= 0xc6) {
        k = 1 << (t - 0xc4);
    }
    if (k < 0) {
        return cur_fail(c, GR_EFORMAT, "byte %zu: expected %s, found type "
                        "0x%02x", at,
                        want_bin == 1   ? "binary data"
                        : want_bin == 2 ? "a string or binary data"
                                        : "a string",
                        t);
    }
    if (k > 0) {
        if (need(c, (size_t)k) < 0) {
            return GR_EFORMAT;
        }
        l = be_read(c->b + c->pos, k);
        c->pos += (size_t)k;
    }
    if (need(c, (size_t)l) < 0) {
        return GR_EFORMAT;
    }
    *p = c->b + c->pos;
    *len = (size_t)l;
    c->pos += (size_t)l;
    return 0;
}

static int rd_str(struct cur *c, char *out, size_t cap)
{
    const uint8_t *p;
    size_t len;
    size_t at = c->pos;
    int rc = rd_raw(c, 0, &p, &len);
    if (rc < 0) {
        return rc;
    }
    if (len >= cap) {
        return cur_fail(c, GR_EFORMAT, "byte %zu: string of %zu bytes is too "
                        "long (at most %zu)", at, len, cap - 1);
    }
    memcpy(out, p, len);
    out[len] = '\0';
    return 0;
}

static int rd_container(struct cur *c, int map, uint64_t *count)
{
    if (need(c, 1) < 0) {
        return GR_EFORMAT;
    }
    size_t at = c->pos;
    uint8_t t = c->b[c->pos++];
    int k = -1;
    if (map && t >= 0x80 && t <= 0x8f) {
        *count = t & 0x0f;
        return 0;
    }
    if (!map && t >= 0x90 && t <= 0x9f) {
        *count = t & 0x0f;
        return 0;
    }
    if (map && (t == 0xde || t == 0xdf)) {
        k = t == 0xde ? 2 : 4;
    }
    if (!map && (t == 0xdc || t == 0xdd)) {
        k = t == 0xdc ? 2 : 4;
    }
    if (k < 0) {
        return cur_fail(c, GR_EFORMAT, "byte %zu: expected %s, found type "
                        "0x%02x", at, map ? "a map" : "an array", t);
    }
    if (need(c, (size_t)k) < 0) {
        return GR_EFORMAT;
    }
    *count = be_read(c->b + c->pos, k);
    c->pos += (size_t)k;
    return 0;
}

/* Skips one value of any type (unknown keys of a known version). */
static int skip_value(struct cur *c, int depth)
{
    if (depth > 32) {
        return cur_fail(c, GR_EFORMAT, "byte %zu: nesting too deep", c->pos);
    }
    if (need(c, 1) < 0) {
        return GR_EFORMAT;
    }
    size_t at = c->pos;
    uint8_t t = c->b[c->pos];
    uint64_t n = 0;
    if (t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3) {
        c->pos++;
        return 0;
    }
    if ((t >= 0x80 && t <= 0x8f) || t == 0xde || t == 0xdf) {
        int rc = rd_container(c, 1, &n);
        for (uint64_t i = 0; rc == 0 && i < 2 * n; i++) {
            rc = skip_value(c, depth + 1);
        }
        return rc;
    }
    if ((t >= 0x90 && t <= 0x9f) || t == 0xdc || t == 0xdd) {
        int rc = rd_container(c, 0, &n);
        for (uint64_t i = 0; rc == 0 && i < n; i++) {
            rc = skip_value(c, depth + 1);
        }
        return rc;
    }
    const uint8_t *p;
    size_t len;
    if ((t >= 0xa0 && t <= 0xbf) || (t >= 0xd9 && t <= 0xdb)) {
        return rd_raw(c, 0, &p, &len);
    }
    if (t >= 0xc4 && t <= 0xc6) {
        return rd_raw(c, 1, &p, &len);
    }
    size_t fixed = 0;
    switch (t) {
    case 0xcc: case 0xd0: fixed = 1; break;
    case 0xcd: case 0xd1: fixed = 2; break;
    case 0xce: case 0xd2: case 0xca: fixed = 4; break;
    case 0xcf: case 0xd3: case 0xcb: fixed = 8; break;
    case 0xd4: fixed = 2; break;
    case 0xd5: fixed = 3; break;
    case 0xd6: fixed = 5; break;
    case 0xd7: fixed = 9; break;
    case 0xd8: fixed = 17; break;
    case 0xc7: case 0xc8: case 0xc9: {
        int k = t == 0xc7 ? 1 : (t == 0xc8 ? 2 : 4);
        c->pos++;
        if (need(c, (size_t)k + 1) < 0) {
            return GR_EFORMAT;
        }
        uint64_t l = be_read(c->b + c->pos, k);
        c->pos += (size_t)k + 1;
        if (need(c, (size_t)l) < 0) {
            return GR_EFORMAT;
        }
        c->pos += (size_t)l;
        return 0;
    }
    default:
        return cur_fail(c, GR_EFORMAT, "byte %zu: invalid type byte 0x%02x",
                        at, t);
    }
    c->pos++;
    if (need(c, fixed) < 0) {
        return GR_EFORMAT;
    }
    c->pos += fixed;
    return 0;
}

/* One tensor entry of the file. */
struct entry {
    char name[256];
    int kind; /* enum gr_tensor_kind */
    int dtype;
    int ndim;
    int64_t shape[GR_MAX_DIMS];
    const uint8_t *data;
    size_t bytes;
    int used;
};

struct parsed {
    char *config;
    struct entry *e;
    int n;
};

static void parsed_free(struct parsed *p)
{
    free(p->config);
    free(p->e);
    memset(p, 0, sizeof *p);
}

static int parse_entry(struct cur *c, struct entry *e, int check_crc)
{
    uint64_t nkeys;
    int rc = rd_container(c, 1, &nkeys);
    int have_kind = 0, have_dtype = 0, have_shape = 0, have_data = 0,
        have_crc = 0;
    uint64_t crc = 0;
    for (uint64_t k = 0; rc == 0 && k < nkeys; k++) {
        char key[64];
        rc = rd_str(c, key, sizeof key);
        if (rc < 0) {
            break;
        }
        if (strcmp(key, "kind") == 0) {
            char v[16];
            rc = rd_str(c, v, sizeof v);
            if (rc == 0) {
                e->kind = strcmp(v, "param") == 0    ? GR_KIND_PARAM
                          : strcmp(v, "buffer") == 0 ? GR_KIND_BUFFER
                          : strcmp(v, "optim") == 0  ? GR_KIND_OPTIM
                                                     : -1;
                if (e->kind < 0) {
                    return cur_fail(c, GR_EFORMAT, "unknown kind '%s'", v);
                }
                have_kind = 1;
            }
        } else if (strcmp(key, "dtype") == 0) {
            char v[16];
            rc = rd_str(c, v, sizeof v);
            if (rc == 0) {
                e->dtype = strcmp(v, "f32") == 0   ? GR_F32
                           : strcmp(v, "i32") == 0 ? GR_I32
                                                   : -1;
                if (e->dtype < 0) {
                    return cur_fail(c, GR_EFORMAT, "unknown dtype '%s'", v);
                }
                have_dtype = 1;
            }
        } else if (strcmp(key, "shape") == 0) {
            uint64_t nd;
            rc = rd_container(c, 0, &nd);
            if (rc == 0 && nd > GR_MAX_DIMS) {
                return cur_fail(c, GR_EFORMAT, "%llu dimensions (at most 4)",
                                (unsigned long long)nd);
            }
            e->ndim = (int)nd;
            for (uint64_t d = 0; rc == 0 && d < nd; d++) {
                uint64_t v;
                rc = rd_uint(c, &v);
                if (rc == 0 && (v == 0 || v > ((uint64_t)1 << 40))) {
                    return cur_fail(c, GR_EFORMAT, "bad dimension %llu",
                                    (unsigned long long)v);
                }
                e->shape[d] = (int64_t)v;
            }
            have_shape = rc == 0;
        } else if (strcmp(key, "data") == 0) {
            rc = rd_raw(c, 1, &e->data, &e->bytes);
            have_data = rc == 0;
        } else if (strcmp(key, "crc32") == 0) {
            rc = rd_uint(c, &crc);
            have_crc = rc == 0;
        } else {
            rc = skip_value(c, 1);
        }
    }
    if (rc < 0) {
        return rc;
    }
    if (!have_kind || !have_dtype || !have_shape || !have_data || !have_crc) {
        return cur_fail(c, GR_EFORMAT, "missing field %s",
                        !have_kind    ? "'kind'"
                        : !have_dtype ? "'dtype'"
                        : !have_shape ? "'shape'"
                        : !have_data  ? "'data'"
                                      : "'crc32'");
    }
    int64_t numel = 1;
    for (int d = 0; d < e->ndim; d++) {
        numel *= e->shape[d];
    }
    if ((size_t)numel * 4 != e->bytes) {
        return cur_fail(c, GR_EFORMAT, "data has %zu bytes, its shape needs "
                        "%lld", e->bytes, (long long)numel * 4);
    }
    if (check_crc) {
        uint32_t got = gr_crc32(0, e->data, e->bytes);
        if (got != (uint32_t)crc) {
            return cur_fail(c, GR_EFORMAT, "CRC mismatch (stored 0x%08x, "
                            "computed 0x%08x): the data is damaged",
                            (unsigned)crc, (unsigned)got);
        }
    }
    return 0;
}

static int parse_file(const char *path, const uint8_t *buf, size_t n,
                      int check_crc, struct parsed *out)
{
    memset(out, 0, sizeof *out);
    struct cur c = {buf, n, 0, path, "the header", {0}};
    uint64_t nkeys;
    int rc = rd_container(&c, 1, &nkeys);
    if (rc < 0) {
        return gr_error_wrap(GR_EFORMAT, "not a grove checkpoint");
    }
    int have_format = 0, have_version = 0, have_config = 0,
        have_config_crc = 0, have_tensors = 0;
    uint64_t config_crc = 0;
    for (uint64_t k = 0; rc == 0 && k < nkeys; k++) {
        char key[64];
        c.where = "the header";
        rc = rd_str(&c, key, sizeof key);
        if (rc < 0) {
            break;
        }
        if (strcmp(key, "format") == 0) {
            char v[64];
            rc = rd_str(&c, v, sizeof v);
            if (rc == 0 && strcmp(v, CKPT_FORMAT) != 0) {
                rc = cur_fail(&c, GR_EFORMAT, "format is '%s', not '%s'", v,
                              CKPT_FORMAT);
            }
            have_format = 1;
        } else if (strcmp(key, "version") == 0) {
            uint64_t v;
            rc = rd_uint(&c, &v);
            if (rc == 0 && v != CKPT_VERSION) {
                rc = cur_fail(&c, GR_EFORMAT, "checkpoint version %llu; this "
                              "grove reads version %d",
                              (unsigned long long)v, CKPT_VERSION);
            }
            have_version = 1;
        } else if (strcmp(key, "config") == 0) {
            const uint8_t *p;
            size_t len;
            rc = rd_raw(&c, 2, &p, &len);
            if (rc == 0) {
                free(out->config);
                out->config = malloc(len + 1);
                if (!out->config) {
                    rc = gr_error(GR_ENOMEM, "out of memory");
                } else {
                    memcpy(out->config, p, len);
                    out->config[len] = '\0';
                    have_config = 1;
                }
            }
        } else if (strcmp(key, "config_crc32") == 0) {
            rc = rd_uint(&c, &config_crc);
            have_config_crc = 1;
        } else if (strcmp(key, "tensors") == 0) {
            uint64_t nt;
            rc = rd_container(&c, 1, &nt);
            if (rc == 0 && nt > (uint64_t)(n / 8 + 1)) {
                rc = cur_fail(&c, GR_EFORMAT, "claims %llu tensors in %zu "
                              "bytes", (unsigned long long)nt, n);
            }
            if (rc == 0) {
                free(out->e);
                out->e = calloc((size_t)nt + 1, sizeof *out->e);
                out->n = 0;
                if (!out->e) {
                    rc = gr_error(GR_ENOMEM, "out of memory");
                }
            }
            for (uint64_t i = 0; rc == 0 && i < nt; i++) {
                struct entry *e = &out->e[out->n];
                snprintf(c.where_buf, sizeof c.where_buf, "tensor #%llu",
                         (unsigned long long)i);
                c.where = c.where_buf;
                rc = rd_str(&c, e->name, sizeof e->name);
                if (rc < 0) {
                    break;
                }
                snprintf(c.where_buf, sizeof c.where_buf, "tensor '%s'",
                         e->name);
                for (int j = 0; j < out->n; j++) {
                    if (strcmp(out->e[j].name, e->name) == 0) {
                        rc = cur_fail(&c, GR_EFORMAT, "duplicate name");
                    }
                }
                if (rc == 0) {
                    rc = parse_entry(&c, e, check_crc);
                }
                if (rc == 0) {
                    out->n++;
                }
            }
            have_tensors = rc == 0;
        } else {
            rc = skip_value(&c, 1);
        }
    }
    c.where = "the header";
    if (rc == 0 && (!have_format || !have_version || !have_config ||
                    !have_config_crc || !have_tensors)) {
        rc = cur_fail(&c, GR_EFORMAT, "missing field %s",
                      !have_format       ? "'format' (not a grove checkpoint)"
                      : !have_version    ? "'version'"
                      : !have_config     ? "'config'"
                      : !have_config_crc ? "'config_crc32'"
                                         : "'tensors'");
    }
    if (rc == 0 && c.pos != n) {
        rc = cur_fail(&c, GR_EFORMAT, "%zu unexpected bytes after the end at "
                      "byte %zu", n - c.pos, c.pos);
    }
    if (rc == 0) {
        uint32_t got = gr_crc32(0, out->config, strlen(out->config));
        if (got != (uint32_t)config_crc) {
            rc = cur_fail(&c, GR_EFORMAT, "config CRC mismatch (stored "
                          "0x%08x, computed 0x%08x)", (unsigned)config_crc,
                          (unsigned)got);
        }
    }
    if (rc < 0) {
        parsed_free(out);
    }
    return rc;
}

static int read_parsed(const char *path, int check_crc, char **buf_out,
                       struct parsed *p)
{
    char *buf = NULL;
    size_t n = 0;
    int rc = gr_read_file(path, CKPT_MAX_BYTES, &buf, &n);
    if (rc < 0) {
        return rc;
    }
    rc = parse_file(path, (const uint8_t *)buf, n, check_crc, p);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    *buf_out = buf;
    return 0;
}

int gr_checkpoint_read_config(const char *path, char **config_out)
{
    char *buf = NULL;
    struct parsed p;
    *config_out = NULL;
    int rc = read_parsed(path, 0, &buf, &p);
    if (rc < 0) {
        return rc;
    }
    *config_out = p.config;
    p.config = NULL;
    parsed_free(&p);
    free(buf);
    return 0;
}

static void shape_text(int ndim, const int64_t *s, char *out, size_t cap)
{
    struct gr_shape sh;
    sh.ndim = ndim;
    for (int i = 0; i < GR_MAX_DIMS; i++) {
        sh.d[i] = i < ndim ? s[i] : 1;
    }
    gr_shape_format(sh, out, cap);
}

int gr_checkpoint_load(struct gr_ctx *ctx, const char *path, unsigned what,
                       char **config_out)
{
    if (config_out) {
        *config_out = NULL;
    }
    if (!host_is_little_endian()) {
        return gr_error(GR_EUNSUPPORTED, "%s: checkpoints are little-endian; "
                        "this host is not", path);
    }
    char *buf = NULL;
    struct parsed p;
    int rc = read_parsed(path, 1, &buf, &p);
    if (rc < 0) {
        return rc;
    }
    /* Check everything before writing anything. */
    for (int i = 0; i < ctx->n_named && rc == 0; i++) {
        struct gr_tensor *t = ctx->named[i];
        if (!(kind_bit(t->kind) & what)) {
            continue;
        }
        struct entry *e = NULL;
        for (int j = 0; j < p.n; j++) {
            if (strcmp(p.e[j].name, t->name) == 0) {
                e = &p.e[j];
                break;
            }
        }
        if (!e) {
            rc = gr_error(GR_EFORMAT, "%s: the model has tensor '%s' (%s) that "
                          "the file lacks", path, t->name, kind_name(t->kind));
            break;
        }
        e->used = 1;
        char a[96], b[96];
        if (e->kind != (int)t->kind) {
            rc = gr_error(GR_EFORMAT, "%s: tensor '%s' is a %s in the file, a "
                          "%s in the model", path, t->name,
                          kind_name((enum gr_tensor_kind)e->kind),
                          kind_name(t->kind));
        } else if (e->dtype != (int)t->dtype) {
            rc = gr_error(GR_EFORMAT, "%s: tensor '%s' is %s in the file, %s "
                          "in the model", path, t->name,
                          e->dtype == GR_F32 ? "f32" : "i32",
                          t->dtype == GR_F32 ? "f32" : "i32");
        } else {
            int same = e->ndim == t->ndim;
            for (int d = 0; same && d < t->ndim; d++) {
                same = e->shape[d] == t->shape[d];
            }
            if (!same) {
                shape_text(e->ndim, e->shape, a, sizeof a);
                gr_tensor_shape_str(t, b, sizeof b);
                rc = gr_error(GR_EFORMAT, "%s: tensor '%s': shape %s in the "
                              "file, %s in the model", path, t->name, a, b);
            }
        }
    }
    for (int j = 0; j < p.n && rc == 0; j++) {
        struct entry *e = &p.e[j];
        if (!e->used && (kind_bit((enum gr_tensor_kind)e->kind) & what)) {
            rc = gr_error(GR_EFORMAT, "%s: the file has tensor '%s' (%s) that "
                          "the model lacks", path, e->name,
                          kind_name((enum gr_tensor_kind)e->kind));
        }
    }
    for (int j = 0; j < p.n && rc == 0; j++) {
        struct entry *e = &p.e[j];
        if (!e->used) {
            continue;
        }
        struct gr_tensor *t = gr_ctx_find(ctx, e->name);
        /* The data may be unaligned inside the file buffer: copy through
         * the h2d path, which takes bytes. */
        if (t->dtype == GR_I32) {
            int32_t *tmp = malloc(e->bytes ? e->bytes : 1);
            if (!tmp) {
                rc = gr_error(GR_ENOMEM, "out of memory");
                break;
            }
            memcpy(tmp, e->data, e->bytes);
            rc = gr_tensor_set_host(t, tmp);
            free(tmp);
        } else {
            rc = ctx->be->h2d(ctx->st, t->data, e->data, e->bytes);
        }
        if (rc < 0) {
            gr_error_wrap(rc, "%s: writing tensor '%s'", path, e->name);
        }
    }
    if (rc == 0 && config_out) {
        *config_out = p.config;
        p.config = NULL;
    }
    parsed_free(&p);
    free(buf);
    return rc;
}
