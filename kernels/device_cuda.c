/* kernels/device.h and the CUDA entries of backend.h and
 * attention_internal.h in a CUDA build: the CUDA backend itself lives in
 * libgrove_cuda.so (kernels/cuda_plugin.h), loaded here on the first device
 * query or CUDA context, so that a process that never asks for a GPU never
 * loads cudart or cuBLAS. Plain C; no CUDA header.
 *
 * Where the library is looked for, first found wins:
 *   1. $GROVE_CUDA_LIB, a path, when set (then nothing else);
 *   2. beside the object this file is linked into (the grove binary);
 *   3. where this build tree puts it (GROVE_CUDA_BUILD_LIB), so that tests
 *      and benchmarks in other folders of the build find it.
 * A library that is missing, does not load (cuBLAS absent, say) or was
 * built for another grove leaves the count at 0 and gr_cuda_status names
 * the reason, so `--device cuda` is refused the way a machine without a GPU
 * refuses it. Without a CUDA driver (libcuda.so.1) the library is not
 * loaded at all: the runtime would see no GPU either, and loading cuBLAS
 * for that would cost a second. */
#define _GNU_SOURCE /* dladdr1, RTLD_DL_LINKMAP */
#include "kernels/device.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "kernels/attention_internal.h"
#include "kernels/backend.h"
#include "kernels/cuda_plugin.h"

#define PLUGIN_NAME "libgrove_cuda.so"

#ifndef GROVE_CUDA_RUNTIME_VERSION
#define GROVE_CUDA_RUNTIME_VERSION "?"
#endif

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const struct gr_cuda_plugin *plugin; /* NULL: none usable */
static char why[512]; /* when plugin is NULL: the reason */

static void set_why(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void set_why(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap); /* cut to fit */
    va_end(ap);
}

/* The folder of the object this code is linked into, into dir[cap]. */
static int own_dir(char *dir, size_t cap)
{
    char path[PATH_MAX];
    Dl_info info;
    struct link_map *map = NULL;
    path[0] = '\0';
    /* a shared library has its name in the link map; the main program has
     * "" there and is /proc/self/exe */
    if (dladdr1((void *)own_dir, &info, (void **)&map, RTLD_DL_LINKMAP) &&
        map && map->l_name && map->l_name[0] != '\0') {
        if (!realpath(map->l_name, path)) {
            path[0] = '\0';
        }
    }
    if (path[0] == '\0') {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        if (n <= 0) {
            return -1;
        }
        path[n] = '\0';
    }
    char *slash = strrchr(path, '/');
    if (!slash || (size_t)(slash - path) >= cap) {
        return -1;
    }
    *slash = '\0';
    memcpy(dir, path, (size_t)(slash - path) + 1);
    return 0;
}

/* Finds the library's file into path[cap]; 0, or -1 with `why` set. */
static int find_plugin(char *path, size_t cap)
{
    const char *env = getenv("GROVE_CUDA_LIB");
    if (env && *env) {
        if (strlen(env) >= cap || access(env, R_OK) != 0) {
            set_why("the CUDA backend GROVE_CUDA_LIB=%s cannot be read: %s",
                    env, strlen(env) >= cap ? "path too long"
                                            : strerror(errno));
            return -1;
        }
        memcpy(path, env, strlen(env) + 1);
        return 0;
    }
    char dir[PATH_MAX];
    if (own_dir(dir, sizeof dir) == 0) {
        int n = snprintf(path, cap, "%s/%s", dir, PLUGIN_NAME);
        if (n > 0 && (size_t)n < cap && access(path, R_OK) == 0) {
            return 0;
        }
    } else {
        memcpy(dir, "(unknown folder)", sizeof "(unknown folder)");
    }
#ifdef GROVE_CUDA_BUILD_LIB
    if (sizeof GROVE_CUDA_BUILD_LIB <= cap &&
        access(GROVE_CUDA_BUILD_LIB, R_OK) == 0) {
        memcpy(path, GROVE_CUDA_BUILD_LIB, sizeof GROVE_CUDA_BUILD_LIB);
        return 0;
    }
#endif
    set_why("the CUDA backend %s is not in %s (set GROVE_CUDA_LIB to its "
            "path)",
            PLUGIN_NAME, dir);
    return -1;
}

static void load(void)
{
    char path[PATH_MAX];
    if (find_plugin(path, sizeof path) < 0) {
        return;
    }
    /* kept open: the CUDA runtime loads it again when the library starts */
    if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
        set_why("CUDA runtime %s; no CUDA driver found",
                GROVE_CUDA_RUNTIME_VERSION);
        return;
    }
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        set_why("cannot load the CUDA backend: %s", e ? e : path);
        return;
    }
    void *sym = dlsym(lib, GR_CUDA_PLUGIN_ENTRY);
    gr_cuda_plugin_fn entry = NULL;
    memcpy(&entry, &sym, sizeof entry);
    const struct gr_cuda_plugin *t =
        entry ? entry(GR_CUDA_PLUGIN_ABI, gr_error) : NULL;
    if (!t || t->abi != GR_CUDA_PLUGIN_ABI ||
        t->backend_size != sizeof(struct gr_backend) ||
        t->attn_size != sizeof(struct gr_attn_backend) || !t->backend ||
        !t->attn) {
        set_why("%s is not the CUDA backend of this grove (rebuild it)",
                path);
        dlclose(lib);
        return;
    }
    plugin = t;
}

static const struct gr_cuda_plugin *get(void)
{
    pthread_once(&load_once, load);
    return plugin;
}

int gr_cuda_compiled(void) { return 1; }

int gr_cuda_device_count(void)
{
    const struct gr_cuda_plugin *p = get();
    return p ? p->device_count() : 0;
}

int gr_cuda_device_describe(int index, char *out, size_t cap)
{
    const struct gr_cuda_plugin *p = get();
    if (p) {
        return p->device_describe(index, out, cap);
    }
    if (cap > 0) {
        out[0] = '\0';
    }
    return gr_error(GR_EINVAL, "no GPU %d (%s)", index, why);
}

void gr_cuda_status(char *out, size_t cap)
{
    const struct gr_cuda_plugin *p = get();
    if (p) {
        p->status(out, cap);
    } else {
        snprintf(out, cap, "%s", why);
    }
}

int gr_cuda_state_new(void **st, int device)
{
    const struct gr_cuda_plugin *p = get();
    if (!p) {
        *st = NULL;
        return gr_error(GR_EUNSUPPORTED, "device cuda: %s", why);
    }
    return p->state_new(st, device);
}

void gr_cuda_state_free(void *st)
{
    const struct gr_cuda_plugin *p = get();
    if (p) {
        p->state_free(st);
    }
}

const struct gr_backend *gr_backend_cuda(void)
{
    const struct gr_cuda_plugin *p = get();
    return p ? p->backend : NULL;
}

const struct gr_attn_backend *gr_attn_backend_cuda(void)
{
    const struct gr_cuda_plugin *p = get();
    return p ? p->attn : NULL;
}
