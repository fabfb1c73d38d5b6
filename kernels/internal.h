/* kernels/internal.h — INTERNAL to kernels/: the context, arenas and tape.
 * Not for users; the public API is tensor.h, ops.h, tape.h, optim.h,
 * checkpoint.h, layers.h. */
#ifndef GROVE_KERNELS_INTERNAL_H
#define GROVE_KERNELS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/backend.h"
#include "kernels/tensor.h"

#define GR_ALIGN 256

/* A chunked bump allocator over device memory (or host memory when
 * host != 0). Chunks are kept over resets; a reset that finds more than one
 * chunk replaces them by one chunk of their total size, so after the first
 * steps one chunk serves every step. */
struct gr_arena_chunk {
    char *base;
    size_t cap;
};

struct gr_arena {
    int host; /* 1: malloc; 0: backend alloc */
    const struct gr_backend *be;
    void *st;
    struct gr_arena_chunk *chunks;
    int n_chunks, cap_chunks;
    int cur;          /* chunk in use */
    size_t cur_used;  /* bytes used in chunk cur */
    size_t used;      /* bytes handed out since reset (incl. padding) */
    size_t peak;      /* most `used` ever */
    size_t capacity;  /* sum of chunk caps */
    size_t chunk_bytes; /* default new chunk size */
};

void gr_arena_init(struct gr_arena *a, int host, const struct gr_backend *be,
                   void *st, size_t chunk_bytes);
/* NULL with a message when the memory cannot be had. */
void *gr_arena_alloc(struct gr_arena *a, size_t bytes);
void gr_arena_reset(struct gr_arena *a);
void gr_arena_free(struct gr_arena *a);

struct gr_node;
typedef int (*gr_backward_fn)(struct gr_ctx *ctx, struct gr_node *n);

#define GR_NODE_MAX_OUT 4

struct gr_node {
    const char *op;
    gr_backward_fn backward;
    struct gr_tensor **in; /* n_in inputs (host arena) */
    int n_in;
    struct gr_tensor *out[GR_NODE_MAX_OUT];
    int n_out;
    void *aux[2];          /* saved device buffers (step arena) */
    float f[4];
    int64_t i[8];
    uint64_t key;
    struct gr_bcast bc;
};

struct gr_ctx {
    enum gr_device device;
    const struct gr_backend *be;
    void *st; /* backend state */
    struct gr_arena step;    /* device: step tensors, activation grads */
    struct gr_arena persist; /* device: named tensors, param grads */
    struct gr_arena host;    /* host: tensor structs, nodes (per step) */
    struct gr_arena host_persist; /* host: named tensor structs, names */
    struct gr_tensor **named;
    int n_named, cap_named;
    struct gr_node **tape;
    int n_tape, cap_tape;
    int grad_enabled;
    int status;
    char errmsg[512];
    size_t param_bytes, state_bytes;
    size_t device_bytes, device_peak; /* all device memory reserved */
    int n_optims; /* optimizers created (for unique names) */
};

/* Records the first error of the step and returns NULL (for op returns). */
void *gr_fail(struct gr_ctx *ctx, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same, returning the code. */
int gr_fail_code(struct gr_ctx *ctx, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* In an op with `ctx` and `op` (its name) in scope: unless `have` (the
 * backend entries the op needs are there), fail with GR_EUNSUPPORTED and
 * "OP is not implemented on device NAME" through `fail`: gr_fail in ops
 * that return a tensor, gr_fail_code in those that return a code. An op a
 * device lacks is this error, never a silent fallback. */
#define GR_NEED_DEVICE(have, fail)                                           \
    do {                                                                     \
        if (!(have)) {                                                       \
            return fail(ctx, GR_EUNSUPPORTED,                                \
                        "%s is not implemented on device %s", op,            \
                        ctx->be->name);                                      \
        }                                                                    \
    } while (0)
/* Keeps a backend failure (message already set) as the step's error. */
int gr_keep_error(struct gr_ctx *ctx, int code);

/* In a function returning int with a `ctx` in scope: run a backend call
 * and return its error, kept in the context, when it fails. */
#define CALLB(expr)                                                          \
    do {                                                                     \
        int rc__ = (expr);                                                   \
        if (rc__ < 0) {                                                      \
            return gr_keep_error(ctx, rc__);                                 \
        }                                                                    \
    } while (0)

/* A new step tensor (uninitialised data when zero == 0). */
struct gr_tensor *gr_new_step(struct gr_ctx *ctx, enum gr_dtype dtype,
                              struct gr_shape shape, int zero);
/* Host-arena scratch for this step. */
void *gr_host_scratch(struct gr_ctx *ctx, size_t bytes);
/* Device scratch in the step arena. */
float *gr_step_floats(struct gr_ctx *ctx, int64_t n);

/* A position in the step arena. A backward that needs scratch only while
 * it runs takes a mark after it has obtained every gradient buffer it
 * writes, allocates its scratch, and releases the mark when done: the
 * next allocation reuses that memory (still in cache) instead of fresh
 * arena memory. Nothing allocated after the mark may be used after the
 * release. */
struct gr_step_mark {
    int cur;
    size_t cur_used, used;
};
struct gr_step_mark gr_step_mark(struct gr_ctx *ctx);
void gr_step_release(struct gr_ctx *ctx, struct gr_step_mark m);

/* The gradient buffer of t (allocated zeroed on first use; views share
 * their base's), or NULL when t takes no gradient or on failure (then the
 * ctx status is set). */
float *gr_grad_buf(struct gr_ctx *ctx, struct gr_tensor *t);

/* The same for a backward that writes every element of t's gradient: when
 * this is the first contribution (*acc = 0) the buffer is not zeroed and
 * must be written, not accumulated into; otherwise (*acc = 1: the buffer
 * exists, or t is a view of another tensor's) accumulate. Saves zeroing
 * what the first contribution overwrites anyway. */
float *gr_grad_buf_acc(struct gr_ctx *ctx, struct gr_tensor *t, int *acc);

/* Appends a node; returns it (host arena) or NULL. */
struct gr_node *gr_tape_push(struct gr_ctx *ctx, const char *op,
                             gr_backward_fn fn, int n_in,
                             struct gr_tensor *const *in);

/* Whether an op over in[0..n) (NULL entries allowed) must be recorded:
 * gradients are on and some input requires one. */
int gr_wants_grad(struct gr_ctx *ctx, int n, struct gr_tensor *const *in);

/* Records an op of one output: the node (gr_tape_push), out marked as
 * requiring a gradient and pointing at it. NULL when out of memory. */
struct gr_node *gr_record1(struct gr_ctx *ctx, const char *op,
                           gr_backward_fn fn, int n_in,
                           struct gr_tensor *const *in,
                           struct gr_tensor *out);

/* The fused recurrent sequence (kernels/rnn.c) behind gr_lstm_forward
 * (cell GR_RNN_LSTM) and gr_onlstm_forward (GR_RNN_ONLSTM, chunk): one tape
 * node for the window. Arguments already checked by the layer (x [T, B,
 * IN], u [gates, H], h0/c0 [B, H] or NULL); fills *out like the layers. */
enum { GR_RNN_LSTM = 0, GR_RNN_ONLSTM = 1,
       /* FastTrees (fasttrees.md §2): the ON-LSTM cell, but u [4H, H] and
        * b_hh [4H] add to the ordinary gates only (columns 2n..); the
        * master gates come from x alone. */
       GR_RNN_FT = 2 };
struct gr_rnn_out;
int gr_rnn_seq(struct gr_ctx *ctx, int cell, int chunk, struct gr_tensor *x,
               struct gr_tensor *w_ih, struct gr_tensor *b_ih,
               struct gr_tensor *u, struct gr_tensor *b_hh,
               struct gr_tensor *h0, struct gr_tensor *c0,
               struct gr_rnn_out *out);

/* Shared by the layer files (layers.c, fasttrees.c): "<prefix>.<part>"
 * parameters, U(-bound, bound) init from the parameter's name, and the
 * argument check of a recurrent window (x [T, B, in], h0/c0 [B, hidden],
 * w_hh [rows, hidden], each optional but x). */
struct gr_tensor *gr_layer_param(struct gr_ctx *ctx, const char *prefix,
                                 const char *part, struct gr_shape s);
int gr_layer_init_u(struct gr_tensor *t, float bound, struct gr_rng rng);
int gr_rnn_check_seq(struct gr_ctx *ctx, const char *what,
                     struct gr_tensor *x, int in, int hidden,
                     struct gr_tensor *h0, struct gr_tensor *c0,
                     struct gr_tensor *w_hh, int64_t rows);

int gr_shape_equal(const struct gr_tensor *a, const struct gr_tensor *b);
void gr_tensor_shape_str(const struct gr_tensor *t, char *out, size_t cap);

#endif
