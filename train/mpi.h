/* train/mpi.h — data parallelism over MPI processes (Debian's OpenMPI;
 * optional at build time, -DGROVE_MPI=AUTO|ON|OFF).
 *
 * `mpirun -np N grove train bc ...` starts N copies; each reads its share of
 * every batch, and after the backward pass the gradients are summed across
 * processes (each first scaled by its share of the batch's loss
 * normaliser), so every process applies the same update and the weights
 * stay identical without ever being sent. Process 0 writes the run folder.
 * Without MPI (or when not launched by mpirun) every call is the identity:
 * rank 0 of 1.
 *
 *   train_mpi_init(&argc, &argv);                  // main(), first
 *   int r = train_mpi_rank(), n = train_mpi_size();
 *   double part[2] = {local_loss_sum, local_count};
 *   train_allreduce_sum(part, 2);                  // global sums
 *   gr_backward(...);                              // on the local mean
 *   train_allreduce_grads(ctx, local_count / part[1]);
 *   ... clip, optimizer step ...
 *   train_mpi_finalize();                          // main(), last
 *
 * Gradients travel through host memory (staged from the GPU for CUDA). */
#ifndef GROVE_TRAIN_MPI_H
#define GROVE_TRAIN_MPI_H

#include "kernels/tensor.h"

/* 1 when this build has MPI. */
int train_mpi_built(void);

/* Starts MPI when the process was launched by mpirun (the launcher's
 * environment says so); otherwise nothing. Returns 0 or GR_EDEVICE. */
int train_mpi_init(int *argc, char ***argv);
void train_mpi_finalize(void);

int train_mpi_rank(void);
int train_mpi_size(void);

/* x[0..n) <- the sum of every process's x (in place). */
int train_allreduce_sum(double *x, int n);

/* The largest of every process's v (a stop flag, for example). */
int train_allreduce_max_int(int v);

/* buf holds n items of `size` bytes, process r owning items
 * [n·r/N, (r+1)·n/N) (train_mpi_share); afterwards every process holds
 * every process's items (PPO gathers its worlds' states this way before
 * process 0 writes a checkpoint). */
int train_allgather_shares(void *buf, size_t size, int n);

/* [*lo, *hi): the items of this process's share of n (all n for one). */
void train_mpi_share(int n, int *lo, int *hi);

/* Every trainable parameter's gradient <- Σ_processes scale · gradient. */
int train_allreduce_grads(struct gr_ctx *ctx, double scale);

#endif
