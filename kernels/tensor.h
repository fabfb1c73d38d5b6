/* kernels/tensor.h — tensors, the context that owns them, and its arenas.
 *
 * A `struct gr_ctx` is one compute device (CPU or one CUDA GPU) with:
 *   - a persistent arena: named parameters (trained, with a gradient),
 *     named buffers (kept across steps, not trained: a carried hidden
 *     state, running statistics) and optimizer state; these live until
 *     gr_ctx_free;
 *   - a step arena: every tensor an op returns, every activation gradient
 *     and the tape of the current step. gr_step_reset rewinds it in O(1);
 *     nothing is ever freed piecewise. The arena grows in chunks during the
 *     first steps and, once it has seen the largest step, never calls
 *     malloc/cudaMalloc again (a hot loop allocates nothing).
 *
 * Tensors are f32 (activations, parameters) or i32 (token ids, targets,
 * gather indices; never differentiated), 0 to 4 dimensions, row-major and
 * contiguous, each on its context's device. Users read the public fields;
 * they never write them and never free a tensor (its arena does).
 * Dimension letters used in comments across kernels/: see kernels/README.md
 * (B batch, T time, C/D features, H hidden, V vocabulary, N rows, K inner).
 *
 * Data on a CUDA context is GPU memory: move it with gr_tensor_set_host /
 * gr_tensor_to_host (they work on both devices; on CPU t->data is also a
 * plain host pointer). A step tensor is invalid after gr_step_reset: copy
 * what must survive into a buffer (gr_tensor_copy).
 *
 * Errors: functions returning int give 0 or a negative GR_E* code with a
 * message (core/error.h). Functions returning a tensor give NULL on failure;
 * the first failure of a step is also kept in the context (gr_ctx_status,
 * gr_ctx_error) and every op given a NULL input returns NULL, so a model can
 * be written as straight-line code and checked once (see kernels/ops.h).
 *
 * Thread safety: a context and its tensors belong to one thread at a time.
 * Distinct contexts are independent.
 *
 *   struct gr_ctx *ctx;
 *   struct gr_ctx_config cfg = gr_ctx_config_default();   // device auto
 *   if (gr_ctx_new(&ctx, &cfg) < 0) { puts(gr_last_error()); return 1; }
 *   struct gr_tensor *w = gr_param_new(ctx, "fc.weight", gr_shape2(4, 3));
 *   gr_tensor_rand_uniform(w, -0.5f, 0.5f, gr_rng_make(seed, 1));
 *   for (step...) {
 *       gr_step_reset(ctx);
 *       struct gr_tensor *x = gr_tensor_from_host(ctx, GR_F32,
 *                                                 gr_shape2(8, 3), xs);
 *       ... ops (kernels/ops.h), gr_backward (kernels/tape.h), optimizer
 *   }
 *   gr_ctx_free(ctx);
 */
#ifndef GROVE_KERNELS_TENSOR_H
#define GROVE_KERNELS_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/rng.h"

#define GR_MAX_DIMS 4

enum gr_device {
    GR_DEVICE_CPU = 0,
    GR_DEVICE_CUDA = 1,
    GR_DEVICE_AUTO = 2, /* CUDA when compiled in and a GPU is visible */
};

enum gr_dtype {
    GR_F32 = 0,
    GR_I32 = 1,
};

/* A shape argument: gr_shape2(B, H). Unused trailing d[] are 1. */
struct gr_shape {
    int ndim; /* 0 (scalar) to 4 */
    int64_t d[GR_MAX_DIMS];
};

static inline struct gr_shape gr_shape0(void)
{
    struct gr_shape s = {0, {1, 1, 1, 1}};
    return s;
}
static inline struct gr_shape gr_shape1(int64_t a)
{
    struct gr_shape s = {1, {a, 1, 1, 1}};
    return s;
}
static inline struct gr_shape gr_shape2(int64_t a, int64_t b)
{
    struct gr_shape s = {2, {a, b, 1, 1}};
    return s;
}
static inline struct gr_shape gr_shape3(int64_t a, int64_t b, int64_t c)
{
    struct gr_shape s = {3, {a, b, c, 1}};
    return s;
}
static inline struct gr_shape gr_shape4(int64_t a, int64_t b, int64_t c,
                                        int64_t d)
{
    struct gr_shape s = {4, {a, b, c, d}};
    return s;
}

struct gr_ctx;

/* What a tensor is, for the registry of named tensors. */
enum gr_tensor_kind {
    GR_KIND_STEP = 0,   /* in the step arena, unnamed */
    GR_KIND_PARAM = 1,  /* named, persistent, has a gradient */
    GR_KIND_BUFFER = 2, /* named, persistent, no gradient */
    GR_KIND_OPTIM = 3,  /* named optimizer state (kernels/optim.h) */
};

struct gr_tensor {
    /* ---- public, read-only ---- */
    void *data;                 /* numel elements on `device` */
    int64_t shape[GR_MAX_DIMS]; /* shape[ndim..3] are 1 */
    int ndim;
    int64_t numel;
    enum gr_dtype dtype;
    enum gr_device device;
    enum gr_tensor_kind kind;
    int requires_grad;     /* gradients flow into it (see gr_param_*) */
    struct gr_tensor *grad; /* f32, same shape; params: always present;
                               step tensors: set by gr_backward when
                               reached, else NULL */
    const char *name;      /* named tensors: unique name; else NULL */
    /* ---- internal to kernels/ ---- */
    struct gr_ctx *ctx_;
    struct gr_tensor *base_; /* views: the tensor owning the memory */
    int64_t offset_;         /* views: element offset into base_ */
    int32_t imin_, imax_;    /* i32: bounds of the values (checked by ops) */
    int32_t ineg_;           /* i32: the negative value when all negative
                                values are equal (an ignore index), else 0 */
    int32_t ineg_many_;      /* i32: 1 when two different negative values
                                occur */
    int32_t node_;           /* tape index of the producing op, or -1 */
};

/* ---- context ---- */

struct gr_ctx_config {
    enum gr_device device; /* CPU, CUDA or AUTO (default AUTO) */
    int cuda_device;       /* GPU index for CUDA (default 0) */
    size_t step_chunk_bytes; /* first step-arena chunk (default 64 MiB);
                                the arena grows by chunks as needed */
    int threads;           /* CPU BLAS threads, 0 = leave as is */
};

struct gr_ctx_config gr_ctx_config_default(void);

/* Creates a context. GR_EUNSUPPORTED for CUDA in a CPU-only build or with
 * no GPU visible; GR_EDEVICE when the CUDA runtime or cuBLAS fails. */
int gr_ctx_new(struct gr_ctx **out, const struct gr_ctx_config *cfg);

/* Frees everything the context owns (NULL is fine). */
void gr_ctx_free(struct gr_ctx *ctx);

/* The device the context computes on (never AUTO). */
enum gr_device gr_ctx_device(const struct gr_ctx *ctx);

/* "cpu" or "cuda". */
const char *gr_device_name(enum gr_device d);

/* The device a context made with `d` computes on: AUTO is CUDA when this
 * build has it and a GPU is visible, else CPU; CPU and CUDA are kept. */
enum gr_device gr_device_resolve(enum gr_device d);

/* Parses "cpu", "cuda" or "auto"; GR_EINVAL naming the text otherwise. */
int gr_device_parse(const char *text, enum gr_device *out);

/* Ends the current step: rewinds the step arena and clears the tape and the
 * step's error. Every step tensor becomes invalid. Parameter gradients are
 * kept (gradients accumulate until gr_zero_grad). */
void gr_step_reset(struct gr_ctx *ctx);

/* 0 if every op of this step succeeded, else the first error code. */
int gr_ctx_status(const struct gr_ctx *ctx);

/* The message of the first error of this step ("" when none). */
const char *gr_ctx_error(const struct gr_ctx *ctx);

/* Waits for the device to finish queued work (timing). */
int gr_ctx_sync(struct gr_ctx *ctx);

struct gr_mem_stats {
    size_t param_bytes;     /* parameters and their gradients */
    size_t state_bytes;     /* buffers and optimizer state */
    size_t step_bytes;      /* step arena in use now */
    size_t step_peak_bytes; /* most step arena used by one step so far */
    size_t step_capacity;   /* step arena reserved (chunks) */
    size_t device_peak_bytes; /* all device memory reserved, at its peak */
};

void gr_ctx_memory(const struct gr_ctx *ctx, struct gr_mem_stats *out);

/* ---- step tensors (valid until gr_step_reset) ---- */

/* Zero-filled tensor of `dtype` and `shape`. */
struct gr_tensor *gr_tensor_new(struct gr_ctx *ctx, enum gr_dtype dtype,
                                struct gr_shape shape);

/* f32 zeros. */
struct gr_tensor *gr_zeros(struct gr_ctx *ctx, struct gr_shape shape);

/* f32 filled with `value`. */
struct gr_tensor *gr_full(struct gr_ctx *ctx, struct gr_shape shape,
                          float value);

/* A tensor holding a copy of `host` (numel elements of dtype, row-major). */
struct gr_tensor *gr_tensor_from_host(struct gr_ctx *ctx, enum gr_dtype dtype,
                                      struct gr_shape shape, const void *host);

/* Marks a step tensor as a leaf that gradients flow into (its grad is set
 * by gr_backward). For inputs whose gradient a caller wants (tests,
 * saliency). Parameters are controlled with gr_param_set_trainable. */
void gr_tensor_set_requires_grad(struct gr_tensor *t, int on);

/* ---- named persistent tensors ---- */

/* A trainable f32 parameter, zero-filled, with a zeroed gradient. `name`
 * is copied; it must be unique in the context ("rnn.0.ih.weight"). Returns
 * NULL on a duplicate name, a bad shape or no memory. */
struct gr_tensor *gr_param_new(struct gr_ctx *ctx, const char *name,
                               struct gr_shape shape);

/* A named persistent tensor without gradient (dtype f32 or i32). */
struct gr_tensor *gr_buffer_new(struct gr_ctx *ctx, const char *name,
                                enum gr_dtype dtype, struct gr_shape shape);

/* The named tensor `name` (any kind), or NULL. */
struct gr_tensor *gr_ctx_find(struct gr_ctx *ctx, const char *name);

/* Named tensors in creation order: i in [0, gr_ctx_n_named). */
int gr_ctx_n_named(const struct gr_ctx *ctx);
struct gr_tensor *gr_ctx_named(struct gr_ctx *ctx, int i);

/* Freezes (on = 0) or unfreezes every parameter whose name starts with
 * `prefix` ("" or NULL: all). A frozen parameter takes no gradient and no
 * optimizer update. Returns how many parameters matched. */
int gr_param_set_trainable(struct gr_ctx *ctx, const char *prefix, int on);

/* Elements in the parameters whose name starts with `prefix` (""/NULL:
 * all), trainable or not. */
int64_t gr_param_count(const struct gr_ctx *ctx, const char *prefix);

/* ---- data movement (any tensor, any kind; synchronous) ---- */

/* Copies numel elements from host memory into t. */
int gr_tensor_set_host(struct gr_tensor *t, const void *host);

/* Copies t's numel elements to host memory. */
int gr_tensor_to_host(const struct gr_tensor *t, void *host);

/* dst = src on the device (same dtype and numel; shapes may differ). Not
 * recorded on the tape: this is how a step's result is carried into a
 * buffer (truncated BPTT: the copy is detached). */
int gr_tensor_copy(struct gr_tensor *dst, const struct gr_tensor *src);

/* Sets every element of an f32 tensor to `value`. */
int gr_tensor_fill(struct gr_tensor *t, float value);

/* The value of a one-element f32 tensor (NaN and an error otherwise). */
float gr_tensor_item(const struct gr_tensor *t);

/* ---- random fills (drawn on the host from kernels/rng.h, then copied,
 * so they are the same bits on CPU and CUDA) ---- */

/* Element i = lo + (hi - lo) * gr_rng_uniform(key, i). */
int gr_tensor_rand_uniform(struct gr_tensor *t, float lo, float hi,
                           struct gr_rng rng);

/* Element i = mean + std * z_i, z_i standard normal by Box-Muller from the
 * words 2i and 2i+1 of the draw. */
int gr_tensor_rand_normal(struct gr_tensor *t, float mean, float std,
                          struct gr_rng rng);

/* The shape of t as a struct gr_shape. */
struct gr_shape gr_tensor_shape(const struct gr_tensor *t);

/* Writes "[3, 4]" into out[cap] (for messages). */
void gr_shape_format(struct gr_shape s, char *out, size_t cap);

#endif
