/* libgrove_cuda.so, the CUDA backend that grove loads on first GPU use
 * (kernels/cuda_plugin.h), opened directly as device_cuda.c opens it: it
 * exports its entry and nothing else (its gr_error must not take the place
 * of the process's), refuses another interface number, returns a complete
 * table whose sizes match this build's headers, hands a kernel's error
 * message to the gr_error it was given (so gr_last_error() reads it), and
 * answers the device queries (0 GPUs and the reason, without a driver).
 * Needs no GPU: with one, it also opens and frees a context on GPU 0.
 *
 *   test_cuda_plugin PATH/libgrove_cuda.so */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/attention_internal.h"
#include "kernels/backend.h"
#include "kernels/cuda_plugin.h"
#include "tests/test.h"

static void check_table(const struct gr_cuda_plugin *t)
{
    CHECK(t->abi == GR_CUDA_PLUGIN_ABI);
    CHECK(t->backend_size == sizeof(struct gr_backend));
    CHECK(t->attn_size == sizeof(struct gr_attn_backend));
    CHECK(t->device_count && t->device_describe && t->status);
    CHECK(t->state_new && t->state_free);
    CHECK(t->backend && t->attn);
    if (!t->backend || !t->attn) {
        return;
    }
    CHECK(t->backend->name && strcmp(t->backend->name, "cuda") == 0);
    /* the entries every op needs, and the ones of each .cu file */
    CHECK(t->backend->alloc && t->backend->free && t->backend->h2d &&
          t->backend->d2h && t->backend->gemm && t->backend->sync);
    CHECK(t->backend->scan_fwd && t->backend->scan_bwd); /* scan_cuda.cu */
    CHECK(t->attn->softmax && t->attn->softmax_bwd &&
          t->attn->lsxent_fwd); /* attention_cuda.cu */
}

/* A message set inside the library reaches this process's gr_error. */
static void check_errors(const struct gr_cuda_plugin *t, int gpus)
{
    void *st = (void *)&st;
    gr_clear_error();
    setenv("GROVE_CUDA_GEMM", "bogus", 1);
    int rc = t->state_new(&st, 0);
    unsetenv("GROVE_CUDA_GEMM");
    CHECK(rc == GR_EINVAL && st == NULL);
    CHECK_STR_CONTAINS(gr_last_error(), "GROVE_CUDA_GEMM=bogus");

    /* one past the last GPU (GPU 0 where there is none): a CUDA error */
    gr_clear_error();
    st = (void *)&st;
    rc = t->state_new(&st, gpus);
    CHECK_MSG(rc == GR_EDEVICE && st == NULL, "rc %d", rc);
    CHECK_STR_CONTAINS(gr_last_error(), "CUDA selecting the GPU");
    printf("GPU %d: %s\n", gpus, gr_last_error());

    char desc[256];
    gr_clear_error();
    CHECK(t->device_describe(gpus, desc, sizeof desc) == GR_EINVAL);
    CHECK(desc[0] == '\0');
    CHECK_STR_CONTAINS(gr_last_error(), "no GPU");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_cuda_plugin PATH/libgrove_cuda.so\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    CHECK_MSG(lib != NULL, "%s", dlerror());
    if (!lib) {
        return test_report("kernels_cuda_plugin");
    }
    void *sym = dlsym(lib, GR_CUDA_PLUGIN_ENTRY);
    CHECK_MSG(sym != NULL, "no %s", GR_CUDA_PLUGIN_ENTRY);
    /* nothing else is exported: not its gr_error, not the kernels' entries */
    CHECK(dlsym(lib, "gr_error") == NULL);
    CHECK(dlsym(lib, "gr_backend_cuda") == NULL);
    CHECK(dlsym(lib, "gr_cuda_state_new") == NULL);
    CHECK(dlsym(lib, "gr_cu_scan_fwd") == NULL);
    if (!sym) {
        return test_report("kernels_cuda_plugin");
    }
    gr_cuda_plugin_fn entry;
    memcpy(&entry, &sym, sizeof entry);
    CHECK(entry(GR_CUDA_PLUGIN_ABI + 1, gr_error) == NULL);
    const struct gr_cuda_plugin *t = entry(GR_CUDA_PLUGIN_ABI, gr_error);
    CHECK(t != NULL);
    if (!t) {
        return test_report("kernels_cuda_plugin");
    }
    check_table(t);

    char status[256];
    t->status(status, sizeof status);
    CHECK_STR_CONTAINS(status, "CUDA runtime ");
    int gpus = t->device_count();
    CHECK(gpus >= 0);
    printf("%d GPUs; %s\n", gpus, status);
    if (gpus == 0) {
        /* the count is 0 only with a reason */
        CHECK(strstr(status, "no CUDA driver found") != NULL ||
              strstr(status, ": ") != NULL);
    } else {
        char desc[256];
        CHECK(t->device_describe(0, desc, sizeof desc) == 0);
        CHECK_STR_CONTAINS(desc, ", sm_");
        void *st = NULL;
        int rc = t->state_new(&st, 0);
        CHECK_MSG(rc == 0 && st != NULL, "%s", gr_last_error());
        if (rc == 0) {
            t->state_free(st);
        }
    }
    check_errors(t, gpus);
    return test_report("kernels_cuda_plugin");
}
