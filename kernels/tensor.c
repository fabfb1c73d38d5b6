/* Contexts, arenas, tensors and the registry of named tensors. */
#include "kernels/tensor.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"
#include "kernels/device.h"
#include "kernels/internal.h"

/* ---- errors ---- */

static void keep_message(struct gr_ctx *ctx, int code)
{
    if (ctx && ctx->status == 0) {
        ctx->status = code;
        snprintf(ctx->errmsg, sizeof ctx->errmsg, "%s", gr_last_error());
    }
}

void *gr_fail(struct gr_ctx *ctx, int code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gr_error(code, "%s", msg);
    keep_message(ctx, code);
    return NULL;
}

int gr_fail_code(struct gr_ctx *ctx, int code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gr_error(code, "%s", msg);
    keep_message(ctx, code);
    return code;
}

int gr_keep_error(struct gr_ctx *ctx, int code)
{
    if (code < 0) {
        keep_message(ctx, code);
    }
    return code;
}

int gr_ctx_status(const struct gr_ctx *ctx) { return ctx->status; }

const char *gr_ctx_error(const struct gr_ctx *ctx) { return ctx->errmsg; }

/* ---- arenas ---- */

void gr_arena_init(struct gr_arena *a, int host, const struct gr_backend *be,
                   void *st, size_t chunk_bytes)
{
    memset(a, 0, sizeof *a);
    a->host = host;
    a->be = be;
    a->st = st;
    a->chunk_bytes = chunk_bytes;
}

static void *chunk_alloc(struct gr_arena *a, size_t bytes)
{
    if (a->host) {
        void *p = malloc(bytes);
        if (!p) {
            gr_error(GR_ENOMEM, "out of host memory (%zu bytes)", bytes);
        }
        return p;
    }
    return a->be->alloc(a->st, bytes);
}

static void chunk_free(struct gr_arena *a, void *p)
{
    if (a->host) {
        free(p);
    } else {
        a->be->free(a->st, p);
    }
}

static int push_chunk(struct gr_arena *a, size_t cap)
{
    if (a->n_chunks == a->cap_chunks) {
        int nc = a->cap_chunks ? 2 * a->cap_chunks : 8;
        struct gr_arena_chunk *c = realloc(a->chunks, (size_t)nc * sizeof *c);
        if (!c) {
            return gr_error(GR_ENOMEM, "out of host memory");
        }
        a->chunks = c;
        a->cap_chunks = nc;
    }
    char *p = chunk_alloc(a, cap);
    if (!p) {
        return GR_ENOMEM;
    }
    a->chunks[a->n_chunks].base = p;
    a->chunks[a->n_chunks].cap = cap;
    a->n_chunks++;
    a->capacity += cap;
    return 0;
}

void *gr_arena_alloc(struct gr_arena *a, size_t bytes)
{
    size_t need = (bytes + GR_ALIGN - 1) / GR_ALIGN * GR_ALIGN;
    if (need == 0) {
        need = GR_ALIGN;
    }
    while (a->cur < a->n_chunks) {
        struct gr_arena_chunk *c = &a->chunks[a->cur];
        if (a->cur_used + need <= c->cap) {
            void *p = c->base + a->cur_used;
            a->cur_used += need;
            a->used += need;
            if (a->used > a->peak) {
                a->peak = a->used;
            }
            return p;
        }
        if (a->cur + 1 >= a->n_chunks) {
            break;
        }
        a->cur++;
        a->cur_used = 0;
    }
    size_t cap = need > a->chunk_bytes ? need : a->chunk_bytes;
    if (push_chunk(a, cap) < 0) {
        return NULL;
    }
    a->cur = a->n_chunks - 1;
    a->cur_used = need;
    a->used += need;
    if (a->used > a->peak) {
        a->peak = a->used;
    }
    return a->chunks[a->cur].base;
}

void gr_arena_reset(struct gr_arena *a)
{
    if (a->n_chunks > 1) {
        /* Coalesce: one chunk as large as all of them, so the next steps
         * find their memory in one piece. */
        size_t total = a->capacity;
        for (int i = 0; i < a->n_chunks; i++) {
            chunk_free(a, a->chunks[i].base);
        }
        a->n_chunks = 0;
        a->capacity = 0;
        if (push_chunk(a, total) < 0) {
            gr_clear_error(); /* retried by the next allocation */
        }
    }
    a->cur = 0;
    a->cur_used = 0;
    a->used = 0;
}

void gr_arena_free(struct gr_arena *a)
{
    for (int i = 0; i < a->n_chunks; i++) {
        chunk_free(a, a->chunks[i].base);
    }
    free(a->chunks);
    memset(a, 0, sizeof *a);
}

/* ---- context ---- */

struct gr_ctx_config gr_ctx_config_default(void)
{
    struct gr_ctx_config c;
    memset(&c, 0, sizeof c);
    c.device = GR_DEVICE_AUTO;
    c.cuda_device = 0;
    c.step_chunk_bytes = (size_t)64 << 20;
    c.threads = 0;
    return c;
}

const char *gr_device_name(enum gr_device d)
{
    switch (d) {
    case GR_DEVICE_CPU:
        return "cpu";
    case GR_DEVICE_CUDA:
        return "cuda";
    default:
        return "auto";
    }
}

int gr_device_parse(const char *text, enum gr_device *out)
{
    if (text && strcmp(text, "cpu") == 0) {
        *out = GR_DEVICE_CPU;
    } else if (text && strcmp(text, "cuda") == 0) {
        *out = GR_DEVICE_CUDA;
    } else if (text && strcmp(text, "auto") == 0) {
        *out = GR_DEVICE_AUTO;
    } else {
        return gr_error(GR_EINVAL, "unknown device '%s' (cpu, cuda or auto)",
                        text ? text : "(null)");
    }
    return 0;
}

void gr_cpu_set_threads(int n); /* backend_cpu.c */

enum gr_device gr_device_resolve(enum gr_device d)
{
    if (d == GR_DEVICE_AUTO) {
        return gr_cuda_device_count() > 0 ? GR_DEVICE_CUDA : GR_DEVICE_CPU;
    }
    return d;
}

int gr_ctx_new(struct gr_ctx **out, const struct gr_ctx_config *cfg_in)
{
    *out = NULL;
    struct gr_ctx_config cfg =
        cfg_in ? *cfg_in : gr_ctx_config_default();
    if (cfg.step_chunk_bytes == 0) {
        cfg.step_chunk_bytes = (size_t)64 << 20;
    }
    enum gr_device dev = gr_device_resolve(cfg.device);
    struct gr_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        return gr_error(GR_ENOMEM, "out of memory creating a context");
    }
    ctx->device = dev;
    ctx->grad_enabled = 1;
    if (dev == GR_DEVICE_CPU) {
        ctx->be = gr_backend_cpu();
        ctx->st = NULL;
        if (cfg.threads > 0) {
            gr_cpu_set_threads(cfg.threads);
        }
    } else {
#ifdef GROVE_HAVE_CUDA_BACKEND
        int n = gr_cuda_device_count();
        if (n <= 0) {
            char why[256];
            gr_cuda_status(why, sizeof why);
            free(ctx);
            return gr_error(GR_EUNSUPPORTED,
                            "device cuda requested but no GPU is visible (%s)",
                            why);
        }
        if (cfg.cuda_device < 0 || cfg.cuda_device >= n) {
            free(ctx);
            return gr_error(GR_EINVAL, "GPU %d requested; %d visible",
                            cfg.cuda_device, n);
        }
        int rc = gr_cuda_state_new(&ctx->st, cfg.cuda_device);
        if (rc < 0) {
            free(ctx);
            return rc;
        }
        ctx->be = gr_backend_cuda();
#else
        free(ctx);
        return gr_error(GR_EUNSUPPORTED,
                        "device cuda requested but this build has no CUDA "
                        "backend (configure with -DGROVE_CUDA=ON)");
#endif
    }
    gr_arena_init(&ctx->step, 0, ctx->be, ctx->st, cfg.step_chunk_bytes);
    gr_arena_init(&ctx->persist, 0, ctx->be, ctx->st, (size_t)16 << 20);
    gr_arena_init(&ctx->host, 1, NULL, NULL, (size_t)1 << 20);
    gr_arena_init(&ctx->host_persist, 1, NULL, NULL, (size_t)256 << 10);
    *out = ctx;
    return 0;
}

void gr_ctx_free(struct gr_ctx *ctx)
{
    if (!ctx) {
        return;
    }
    gr_arena_free(&ctx->step);
    gr_arena_free(&ctx->persist);
    gr_arena_free(&ctx->host);
    gr_arena_free(&ctx->host_persist);
    free(ctx->named);
    free(ctx->tape);
#ifdef GROVE_HAVE_CUDA_BACKEND
    if (ctx->device == GR_DEVICE_CUDA) {
        gr_cuda_state_free(ctx->st);
    }
#endif
    free(ctx);
}

enum gr_device gr_ctx_device(const struct gr_ctx *ctx) { return ctx->device; }

void gr_step_reset(struct gr_ctx *ctx)
{
    gr_arena_reset(&ctx->step);
    gr_arena_reset(&ctx->host);
    ctx->n_tape = 0;
    ctx->status = 0;
    ctx->errmsg[0] = '\0';
}

int gr_ctx_sync(struct gr_ctx *ctx) { return ctx->be->sync(ctx->st); }

void gr_ctx_memory(const struct gr_ctx *ctx, struct gr_mem_stats *out)
{
    memset(out, 0, sizeof *out);
    out->param_bytes = ctx->param_bytes;
    out->state_bytes = ctx->state_bytes;
    out->step_bytes = ctx->step.used;
    out->step_peak_bytes = ctx->step.peak;
    out->step_capacity = ctx->step.capacity;
    out->device_peak_bytes = ctx->step.capacity + ctx->persist.capacity;
}

/* ---- shapes ---- */

static int64_t shape_numel(struct gr_shape s) /* -1 when invalid */
{
    if (s.ndim < 0 || s.ndim > GR_MAX_DIMS) {
        return -1;
    }
    int64_t n = 1;
    for (int i = 0; i < s.ndim; i++) {
        if (s.d[i] <= 0 || s.d[i] > ((int64_t)1 << 40)) {
            return -1;
        }
        n *= s.d[i];
        if (n > ((int64_t)1 << 40)) {
            return -1;
        }
    }
    return n;
}

void gr_shape_format(struct gr_shape s, char *out, size_t cap)
{
    size_t len = 0;
    if (cap == 0) {
        return;
    }
    len += (size_t)snprintf(out + len, cap - len, "[");
    for (int i = 0; i < s.ndim && i < GR_MAX_DIMS && len < cap; i++) {
        len += (size_t)snprintf(out + len, cap - len, "%s%lld", i ? ", " : "",
                                (long long)s.d[i]);
    }
    if (len < cap) {
        snprintf(out + len, cap - len, "]");
    }
}

struct gr_shape gr_tensor_shape(const struct gr_tensor *t)
{
    struct gr_shape s;
    s.ndim = t->ndim;
    for (int i = 0; i < GR_MAX_DIMS; i++) {
        s.d[i] = i < t->ndim ? t->shape[i] : 1;
    }
    return s;
}

void gr_tensor_shape_str(const struct gr_tensor *t, char *out, size_t cap)
{
    gr_shape_format(gr_tensor_shape(t), out, cap);
}

int gr_shape_equal(const struct gr_tensor *a, const struct gr_tensor *b)
{
    if (a->ndim != b->ndim) {
        return 0;
    }
    for (int i = 0; i < a->ndim; i++) {
        if (a->shape[i] != b->shape[i]) {
            return 0;
        }
    }
    return 1;
}

static size_t dtype_size(enum gr_dtype d) { return d == GR_I32 ? 4 : 4; }

static void set_shape(struct gr_tensor *t, struct gr_shape s, int64_t numel)
{
    t->ndim = s.ndim;
    for (int i = 0; i < GR_MAX_DIMS; i++) {
        t->shape[i] = i < s.ndim ? s.d[i] : 1;
    }
    t->numel = numel;
}

/* ---- step tensors ---- */

void *gr_host_scratch(struct gr_ctx *ctx, size_t bytes)
{
    void *p = gr_arena_alloc(&ctx->host, bytes);
    if (!p) {
        gr_keep_error(ctx, GR_ENOMEM);
    }
    return p;
}

float *gr_step_floats(struct gr_ctx *ctx, int64_t n)
{
    void *p = gr_arena_alloc(&ctx->step, (size_t)n * sizeof(float));
    if (!p) {
        gr_keep_error(ctx, GR_ENOMEM);
    }
    return p;
}

struct gr_step_mark gr_step_mark(struct gr_ctx *ctx)
{
    struct gr_step_mark m = {ctx->step.cur, ctx->step.cur_used,
                             ctx->step.used};
    return m;
}

void gr_step_release(struct gr_ctx *ctx, struct gr_step_mark m)
{
    /* chunks pushed since the mark stay in the list and are used again
     * when the earlier ones fill up */
    if (m.cur <= ctx->step.cur && m.used <= ctx->step.used) {
        ctx->step.cur = m.cur;
        ctx->step.cur_used = m.cur_used;
        ctx->step.used = m.used;
    }
}

struct gr_tensor *gr_new_step(struct gr_ctx *ctx, enum gr_dtype dtype,
                              struct gr_shape shape, int zero)
{
    int64_t n = shape_numel(shape);
    if (n < 0) {
        char s[96];
        gr_shape_format(shape, s, sizeof s);
        return gr_fail(ctx, GR_EINVAL, "bad tensor shape %s (1 to 4 dims, "
                       "each >= 1)", s);
    }
    struct gr_tensor *t = gr_arena_alloc(&ctx->host, sizeof *t);
    if (!t) {
        gr_keep_error(ctx, GR_ENOMEM);
        return NULL;
    }
    memset(t, 0, sizeof *t);
    set_shape(t, shape, n);
    t->dtype = dtype;
    t->device = ctx->device;
    t->kind = GR_KIND_STEP;
    t->ctx_ = ctx;
    t->node_ = -1;
    t->data = gr_arena_alloc(&ctx->step, (size_t)n * dtype_size(dtype));
    if (!t->data) {
        char s[96];
        gr_shape_format(shape, s, sizeof s);
        return gr_fail(ctx, GR_ENOMEM, "step arena: cannot allocate %s: %s",
                       s, gr_last_error());
    }
    if (zero) {
        int rc = ctx->be->zero(ctx->st, t->data,
                               (size_t)n * dtype_size(dtype));
        if (rc < 0) {
            gr_keep_error(ctx, rc);
            return NULL;
        }
    }
    return t;
}

struct gr_tensor *gr_tensor_new(struct gr_ctx *ctx, enum gr_dtype dtype,
                                struct gr_shape shape)
{
    return gr_new_step(ctx, dtype, shape, 1);
}

struct gr_tensor *gr_zeros(struct gr_ctx *ctx, struct gr_shape shape)
{
    return gr_new_step(ctx, GR_F32, shape, 1);
}

struct gr_tensor *gr_full(struct gr_ctx *ctx, struct gr_shape shape,
                          float value)
{
    struct gr_tensor *t = gr_new_step(ctx, GR_F32, shape, 0);
    if (t && gr_tensor_fill(t, value) < 0) {
        gr_keep_error(ctx, GR_EDEVICE);
        return NULL;
    }
    return t;
}

struct gr_tensor *gr_tensor_from_host(struct gr_ctx *ctx, enum gr_dtype dtype,
                                      struct gr_shape shape, const void *host)
{
    struct gr_tensor *t = gr_new_step(ctx, dtype, shape, 0);
    if (t && gr_tensor_set_host(t, host) < 0) {
        gr_keep_error(ctx, GR_EDEVICE);
        return NULL;
    }
    return t;
}

void gr_tensor_set_requires_grad(struct gr_tensor *t, int on)
{
    if (t && t->kind == GR_KIND_STEP && t->dtype == GR_F32) {
        t->requires_grad = on ? 1 : 0;
    }
}

/* ---- named tensors ---- */

static int name_is_valid(const char *name)
{
    if (!name || !*name || strlen(name) > 250) {
        return 0;
    }
    for (const char *p = name; *p; p++) {
        if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e) {
            return 0;
        }
    }
    return 1;
}

static struct gr_tensor *named_new(struct gr_ctx *ctx, const char *name,
                                   enum gr_tensor_kind kind,
                                   enum gr_dtype dtype, struct gr_shape shape)
{
    if (!name_is_valid(name)) {
        return gr_fail(ctx, GR_EINVAL,
                       "bad tensor name '%s' (1-250 printable characters, "
                       "no spaces)", name ? name : "(null)");
    }
    if (gr_ctx_find(ctx, name)) {
        return gr_fail(ctx, GR_EINVAL, "tensor name '%s' is already used",
                       name);
    }
    int64_t n = shape_numel(shape);
    if (n < 0) {
        char s[96];
        gr_shape_format(shape, s, sizeof s);
        return gr_fail(ctx, GR_EINVAL, "tensor '%s': bad shape %s", name, s);
    }
    if (ctx->n_named == ctx->cap_named) {
        int nc = ctx->cap_named ? 2 * ctx->cap_named : 64;
        struct gr_tensor **a = realloc(ctx->named, (size_t)nc * sizeof *a);
        if (!a) {
            return gr_fail(ctx, GR_ENOMEM, "out of host memory");
        }
        ctx->named = a;
        ctx->cap_named = nc;
    }
    struct gr_tensor *t = gr_arena_alloc(&ctx->host_persist, sizeof *t);
    char *nm = gr_arena_alloc(&ctx->host_persist, strlen(name) + 1);
    if (!t || !nm) {
        return gr_fail(ctx, GR_ENOMEM, "out of host memory");
    }
    memset(t, 0, sizeof *t);
    strcpy(nm, name);
    set_shape(t, shape, n);
    t->dtype = dtype;
    t->device = ctx->device;
    t->kind = kind;
    t->name = nm;
    t->ctx_ = ctx;
    t->node_ = -1;
    size_t bytes = (size_t)n * dtype_size(dtype);
    t->data = gr_arena_alloc(&ctx->persist, bytes);
    if (!t->data || ctx->be->zero(ctx->st, t->data, bytes) < 0) {
        return gr_fail(ctx, GR_ENOMEM, "tensor '%s': %s", name,
                       gr_last_error());
    }
    if (kind == GR_KIND_PARAM) {
        struct gr_tensor *g = gr_arena_alloc(&ctx->host_persist, sizeof *g);
        if (!g) {
            return gr_fail(ctx, GR_ENOMEM, "out of host memory");
        }
        *g = *t;
        g->kind = GR_KIND_STEP;
        g->name = NULL;
        g->grad = NULL;
        g->data = gr_arena_alloc(&ctx->persist, bytes);
        if (!g->data || ctx->be->zero(ctx->st, g->data, bytes) < 0) {
            return gr_fail(ctx, GR_ENOMEM, "gradient of '%s': %s", name,
                           gr_last_error());
        }
        t->grad = g;
        t->requires_grad = 1;
        ctx->param_bytes += 2 * bytes;
    } else {
        ctx->state_bytes += bytes;
    }
    ctx->named[ctx->n_named++] = t;
    return t;
}

struct gr_tensor *gr_param_new(struct gr_ctx *ctx, const char *name,
                               struct gr_shape shape)
{
    return named_new(ctx, name, GR_KIND_PARAM, GR_F32, shape);
}

struct gr_tensor *gr_buffer_new(struct gr_ctx *ctx, const char *name,
                                enum gr_dtype dtype, struct gr_shape shape)
{
    return named_new(ctx, name, GR_KIND_BUFFER, dtype, shape);
}

/* Used by optim.c for its state tensors. */
struct gr_tensor *gr_optim_tensor_new(struct gr_ctx *ctx, const char *name,
                                      enum gr_dtype dtype,
                                      struct gr_shape shape);
struct gr_tensor *gr_optim_tensor_new(struct gr_ctx *ctx, const char *name,
                                      enum gr_dtype dtype,
                                      struct gr_shape shape)
{
    return named_new(ctx, name, GR_KIND_OPTIM, dtype, shape);
}

struct gr_tensor *gr_ctx_find(struct gr_ctx *ctx, const char *name)
{
    for (int i = 0; i < ctx->n_named; i++) {
        if (strcmp(ctx->named[i]->name, name) == 0) {
            return ctx->named[i];
        }
    }
    return NULL;
}

int gr_ctx_n_named(const struct gr_ctx *ctx) { return ctx->n_named; }

struct gr_tensor *gr_ctx_named(struct gr_ctx *ctx, int i)
{
    return (i >= 0 && i < ctx->n_named) ? ctx->named[i] : NULL;
}

static int has_prefix(const char *name, const char *prefix)
{
    return !prefix || strncmp(name, prefix, strlen(prefix)) == 0;
}

int gr_param_set_trainable(struct gr_ctx *ctx, const char *prefix, int on)
{
    int n = 0;
    for (int i = 0; i < ctx->n_named; i++) {
        struct gr_tensor *t = ctx->named[i];
        if (t->kind == GR_KIND_PARAM && has_prefix(t->name, prefix)) {
            t->requires_grad = on ? 1 : 0;
            n++;
        }
    }
    return n;
}

int64_t gr_param_count(const struct gr_ctx *ctx, const char *prefix)
{
    int64_t n = 0;
    for (int i = 0; i < ctx->n_named; i++) {
        const struct gr_tensor *t = ctx->named[i];
        if (t->kind == GR_KIND_PARAM && has_prefix(t->name, prefix)) {
            n += t->numel;
        }
    }
    return n;
}

/* ---- data movement ---- */

/* Bounds recorded on upload let ops check indices on a device without
 * copying them back: the range, and whether the negative values are all one
 * value (the ignore index of a cross entropy). */
static void update_bounds(struct gr_tensor *t, const int32_t *v)
{
    int32_t lo = 0, hi = 0, neg = 0, neg_many = 0;
    for (int64_t i = 0; i < t->numel; i++) {
        if (v[i] < 0) {
            if (neg == 0) {
                neg = v[i];
            } else if (v[i] != neg) {
                neg_many = 1;
            }
        }
        if (i == 0 || v[i] < lo) {
            lo = v[i];
        }
        if (i == 0 || v[i] > hi) {
            hi = v[i];
        }
    }
    t->imin_ = lo;
    t->imax_ = hi;
    t->ineg_ = neg;
    t->ineg_many_ = neg_many;
}

int gr_tensor_set_host(struct gr_tensor *t, const void *host)
{
    struct gr_ctx *ctx = t->ctx_;
    if (t->dtype == GR_I32) {
        update_bounds(t, host);
    }
    return ctx->be->h2d(ctx->st, t->data, host,
                        (size_t)t->numel * dtype_size(t->dtype));
}

int gr_tensor_to_host(const struct gr_tensor *t, void *host)
{
    struct gr_ctx *ctx = t->ctx_;
    return ctx->be->d2h(ctx->st, host, t->data,
                        (size_t)t->numel * dtype_size(t->dtype));
}

int gr_tensor_copy(struct gr_tensor *dst, const struct gr_tensor *src)
{
    if (!dst || !src) {
        return gr_error(GR_EINVAL, "gr_tensor_copy: NULL tensor");
    }
    if (dst->ctx_ != src->ctx_) {
        return gr_error(GR_EINVAL,
                        "gr_tensor_copy: tensors of different contexts");
    }
    if (dst->dtype != src->dtype || dst->numel != src->numel) {
        char a[96], b[96];
        gr_tensor_shape_str(dst, a, sizeof a);
        gr_tensor_shape_str(src, b, sizeof b);
        return gr_error(GR_EINVAL,
                        "gr_tensor_copy: dst %s%s%s vs src %s (same dtype "
                        "and element count needed)",
                        dst->name ? dst->name : "", dst->name ? " " : "", a,
                        b);
    }
    if (dst->data == src->data) {
        return 0;
    }
    dst->imin_ = src->imin_;
    dst->imax_ = src->imax_;
    dst->ineg_ = src->ineg_;
    dst->ineg_many_ = src->ineg_many_;
    struct gr_ctx *ctx = dst->ctx_;
    return ctx->be->d2d(ctx->st, dst->data, src->data,
                        (size_t)src->numel * dtype_size(src->dtype));
}

int gr_tensor_fill(struct gr_tensor *t, float value)
{
    if (t->dtype != GR_F32) {
        return gr_error(GR_EINVAL, "gr_tensor_fill: tensor is not f32");
    }
    struct gr_ctx *ctx = t->ctx_;
    return ctx->be->fill(ctx->st, t->data, t->numel, value);
}

float gr_tensor_item(const struct gr_tensor *t)
{
    if (!t || t->numel != 1 || t->dtype != GR_F32) {
        gr_error(GR_EINVAL, "gr_tensor_item: not a one-element f32 tensor");
        return NAN;
    }
    float v = NAN;
    if (gr_tensor_to_host(t, &v) < 0) {
        return NAN;
    }
    return v;
}

/* ---- random fills ---- */

static int fill_host_values(struct gr_tensor *t, float *vals)
{
    int rc = gr_tensor_set_host(t, vals);
    free(vals);
    return rc;
}

int gr_tensor_rand_uniform(struct gr_tensor *t, float lo, float hi,
                           struct gr_rng rng)
{
    if (t->dtype != GR_F32) {
        return gr_error(GR_EINVAL, "gr_tensor_rand_uniform: not f32");
    }
    float *v = malloc((size_t)t->numel * sizeof *v);
    if (!v) {
        return gr_error(GR_ENOMEM, "out of host memory");
    }
    /* Word i of the draw, one Philox block per four words (the same
     * numbers as gr_rng_uniform(key, i), four times fewer blocks). */
    uint64_t key = gr_rng_key(rng);
    uint32_t k2[2] = {(uint32_t)key, (uint32_t)(key >> 32)};
    for (int64_t i = 0; i < t->numel; i += 4) {
        uint64_t blk = (uint64_t)i >> 2;
        uint32_t ctr[4] = {(uint32_t)blk, (uint32_t)(blk >> 32), 0u, 0u};
        uint32_t w[4];
        gr_philox4x32_10(ctr, k2, w);
        for (int j = 0; j < 4 && i + j < t->numel; j++) {
            v[i + j] = lo + (hi - lo) * gr_u32_to_uniform(w[j]);
        }
    }
    return fill_host_values(t, v);
}

int gr_tensor_rand_normal(struct gr_tensor *t, float mean, float std,
                          struct gr_rng rng)
{
    if (t->dtype != GR_F32) {
        return gr_error(GR_EINVAL, "gr_tensor_rand_normal: not f32");
    }
    float *v = malloc((size_t)t->numel * sizeof *v);
    if (!v) {
        return gr_error(GR_ENOMEM, "out of host memory");
    }
    uint64_t key = gr_rng_key(rng);
    for (int64_t i = 0; i < t->numel; i++) {
        /* u1 in (0, 1] so the log is finite; computed in double on the
         * host, so the value does not depend on the device. */
        double u1 = 1.0 - (double)gr_rng_uniform(key, 2 * (uint64_t)i);
        double u2 = (double)gr_rng_uniform(key, 2 * (uint64_t)i + 1);
        double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
        v[i] = (float)(mean + std * z);
    }
    return fill_host_values(t, v);
}
