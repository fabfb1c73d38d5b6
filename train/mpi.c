/* Data parallelism over MPI: see train/mpi.h. Compiled with GROVE_HAVE_MPI
 * when CMake found MPI; the stubs below make a single process otherwise. */
#include "train/mpi.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#ifdef GROVE_HAVE_MPI
#include <mpi.h>

static int mpi_on; /* MPI_Init ran (only under a launcher) */
#endif

static int mpi_rank_;
static int mpi_size_ = 1;

/* train_allreduce_grads' staging buffer: grown to the largest gradient
 * set seen and kept, so an update allocates nothing (one trainer per
 * process: train/train.h). Freed by train_mpi_finalize. */
static float *grads_buf;
static size_t grads_cap;

int train_mpi_built(void)
{
#ifdef GROVE_HAVE_MPI
    return 1;
#else
    return 0;
#endif
}

int train_mpi_init(int *argc, char ***argv)
{
#ifdef GROVE_HAVE_MPI
    /* only under a launcher: a plain `grove` never starts MPI */
    if (getenv("OMPI_COMM_WORLD_SIZE") == NULL && getenv("PMI_SIZE") == NULL &&
        getenv("PMIX_RANK") == NULL) {
        return 0;
    }
    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        return gr_error(GR_EDEVICE, "MPI_Init failed");
    }
    mpi_on = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi_size_);
#else
    (void)argc;
    (void)argv;
#endif
    return 0;
}

void train_mpi_finalize(void)
{
    free(grads_buf);
    grads_buf = NULL;
    grads_cap = 0;
#ifdef GROVE_HAVE_MPI
    if (mpi_on) {
        MPI_Finalize();
        mpi_on = 0;
    }
#endif
}

int train_mpi_rank(void)
{
    return mpi_rank_;
}

int train_mpi_size(void)
{
    return mpi_size_;
}

int train_allreduce_sum(double *x, int n)
{
#ifdef GROVE_HAVE_MPI
    if (mpi_on && mpi_size_ > 1 &&
        MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_DOUBLE, MPI_SUM,
                      MPI_COMM_WORLD) != MPI_SUCCESS) {
        return gr_error(GR_EDEVICE, "MPI_Allreduce failed");
    }
#else
    (void)x;
    (void)n;
#endif
    return 0;
}

void train_mpi_share(int n, int *lo, int *hi)
{
    *lo = (int)((int64_t)n * mpi_rank_ / mpi_size_);
    *hi = (int)((int64_t)n * (mpi_rank_ + 1) / mpi_size_);
}

int train_allgather_shares(void *buf, size_t size, int n)
{
#ifdef GROVE_HAVE_MPI
    if (mpi_on && mpi_size_ > 1) {
        int *counts = malloc(2 * (size_t)mpi_size_ * sizeof *counts);
        if (counts == NULL) {
            return gr_error(GR_ENOMEM, "all-gather: out of memory");
        }
        int *displs = counts + mpi_size_;
        for (int r = 0; r < mpi_size_; r++) {
            int64_t lo = (int64_t)n * r / mpi_size_;
            int64_t hi = (int64_t)n * (r + 1) / mpi_size_;
            displs[r] = (int)(lo * (int64_t)size);
            counts[r] = (int)((hi - lo) * (int64_t)size);
        }
        int ok = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf,
                                counts, displs, MPI_BYTE,
                                MPI_COMM_WORLD) == MPI_SUCCESS;
        free(counts);
        if (!ok) {
            return gr_error(GR_EDEVICE, "MPI_Allgatherv of %d shares failed",
                            n);
        }
    }
#else
    (void)buf;
    (void)size;
    (void)n;
#endif
    return 0;
}

int train_allreduce_max_int(int v)
{
#ifdef GROVE_HAVE_MPI
    if (mpi_on && mpi_size_ > 1) {
        int out = v;
        MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        return out;
    }
#endif
    return v;
}

int train_allreduce_grads(struct gr_ctx *ctx, double scale)
{
    if (mpi_size_ <= 1 && scale == 1.0) {
        return 0;
    }
    int n_named = gr_ctx_n_named(ctx);
    int64_t total = 0;
    for (int i = 0; i < n_named; i++) {
        struct gr_tensor *t = gr_ctx_named(ctx, i);
        if (t->kind == GR_KIND_PARAM && t->requires_grad && t->grad != NULL) {
            total += t->numel;
        }
    }
    size_t need = (size_t)(total > 0 ? total : 1);
    if (need > grads_cap) {
        float *grown = realloc(grads_buf, need * sizeof *grown);
        if (grown == NULL) {
            return gr_error(GR_ENOMEM, "all-reduce: out of memory");
        }
        grads_buf = grown;
        grads_cap = need;
    }
    float *buf = grads_buf;
    int rc = 0;
    int64_t off = 0;
    for (int i = 0; rc == 0 && i < n_named; i++) {
        struct gr_tensor *t = gr_ctx_named(ctx, i);
        if (t->kind == GR_KIND_PARAM && t->requires_grad && t->grad != NULL) {
            rc = gr_tensor_to_host(t->grad, buf + off);
            off += t->numel;
        }
    }
    for (int64_t k = 0; rc == 0 && k < total; k++) {
        buf[k] = (float)((double)buf[k] * scale);
    }
#ifdef GROVE_HAVE_MPI
    if (rc == 0 && mpi_on && mpi_size_ > 1 &&
        MPI_Allreduce(MPI_IN_PLACE, buf, (int)total, MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD) != MPI_SUCCESS) {
        rc = gr_error(GR_EDEVICE, "MPI_Allreduce of %lld gradients failed",
                      (long long)total);
    }
#endif
    off = 0;
    for (int i = 0; rc == 0 && i < n_named; i++) {
        struct gr_tensor *t = gr_ctx_named(ctx, i);
        if (t->kind == GR_KIND_PARAM && t->requires_grad && t->grad != NULL) {
            rc = gr_tensor_set_host(t->grad, buf + off);
            off += t->numel;
        }
    }
    return rc;
}
