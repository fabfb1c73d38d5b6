/* kernels/cuda_plugin.h — INTERNAL to kernels/: the one table between grove
 * and its CUDA backend, libgrove_cuda.so.
 *
 * The CUDA code (backend_cuda.cu, scan_cuda.cu, attention_cuda.cu and the
 * device queries of cuda_plugin.c) is built as its own shared library so
 * that a grove process loads cudart and cuBLAS (about a second of
 * libcublasLt start-up) only when it first asks for a GPU, never for
 * `grove --help` or a CPU run. device_cuda.c, linked into grove, dlopen()s
 * the library on the first device query or CUDA context and calls its one
 * exported function, GR_CUDA_PLUGIN_ENTRY, which returns this table. The
 * library calls back into grove only through `error` (core/error.h's
 * gr_error, so a message set by a kernel reads with gr_last_error() as
 * before); it links nothing of grove and exports nothing else.
 *
 * The loader and the library are built from the same tree; GR_CUDA_PLUGIN_ABI
 * and the table sizes guard against a library left from another version.
 * Bump GR_CUDA_PLUGIN_ABI when this struct changes. */
#ifndef GROVE_KERNELS_CUDA_PLUGIN_H
#define GROVE_KERNELS_CUDA_PLUGIN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GR_CUDA_PLUGIN_ABI 1
#define GR_CUDA_PLUGIN_ENTRY "grove_cuda_plugin"

struct gr_backend;
struct gr_attn_backend;

struct gr_cuda_plugin {
    int abi;                /* GR_CUDA_PLUGIN_ABI the library was built with */
    size_t backend_size;    /* sizeof(struct gr_backend) there */
    size_t attn_size;       /* sizeof(struct gr_attn_backend) there */
    /* kernels/device.h's queries, through the CUDA runtime */
    int (*device_count)(void);
    int (*device_describe)(int index, char *out, size_t cap);
    void (*status)(char *out, size_t cap);
    /* backend.h's gr_cuda_state_new / gr_cuda_state_free */
    int (*state_new)(void **st, int device);
    void (*state_free)(void *st);
    const struct gr_backend *backend;    /* backend.h's device table */
    const struct gr_attn_backend *attn;  /* attention_internal.h's */
};

/* The library's entry point: returns its table, or NULL when `abi` is not
 * its GR_CUDA_PLUGIN_ABI. `error` is grove's gr_error. */
typedef const struct gr_cuda_plugin *(*gr_cuda_plugin_fn)(
    int abi, int (*error)(int code, const char *fmt, ...));

#ifdef __cplusplus
}
#endif

#endif
