/* kernels/tape.h — reverse-mode automatic differentiation.
 *
 * While a step runs, every op whose inputs require a gradient appends a
 * node to the context's tape (kernels/ops.h). gr_backward(ctx, loss) seeds
 * d loss / d loss = 1 and walks the tape in reverse, each node adding its
 * inputs' gradients. Parameter gradients (tensor->grad of a GR_KIND_PARAM)
 * live in the persistent arena and ACCUMULATE over backward calls until
 * gr_zero_grad; activation gradients live in the step arena and vanish at
 * gr_step_reset. Frozen parameters (gr_param_set_trainable(.., 0)) take no
 * gradient and cut the tape where nothing else needs one.
 *
 * Memory: the tape and activation gradients are in the step arena. One
 * thread per context. Errors: 0 or a negative GR_E* code (core/error.h).
 *
 *   gr_zero_grad(ctx);
 *   for (micro = 0; micro < 4; micro++) {      // gradient accumulation
 *       gr_step_reset(ctx);
 *       struct gr_tensor *loss = model_loss(ctx, batch[micro]);
 *       if (gr_backward(ctx, loss) < 0) return -1;
 *   }
 *   gr_optim_step(opt);                         // kernels/optim.h
 *
 *   int was = gr_set_grad_enabled(ctx, 0);     // acting, evaluation:
 *   ... ops record nothing ...                  // no tape, no grads
 *   gr_set_grad_enabled(ctx, was);
 */
#ifndef GROVE_KERNELS_TAPE_H
#define GROVE_KERNELS_TAPE_H

#include "kernels/tensor.h"

/* Back-propagates from `loss` (an f32 tensor of one element, produced by
 * ops of the current step) into every tensor that requires a gradient.
 * Call at most once per step (the tape is consumed). Fails with the step's
 * first op error if any op failed, GR_EINVAL for a loss of another shape
 * or NULL. */
int gr_backward(struct gr_ctx *ctx, struct gr_tensor *loss);

/* Like gr_backward, but seeds `loss`'s gradient with `seed_grad` (same
 * shape as loss, f32, on the context's device): vector-Jacobian products
 * of any output, used by the gradient tests. */
int gr_backward_with(struct gr_ctx *ctx, struct gr_tensor *out,
                     struct gr_tensor *seed_grad);

/* Sets every parameter gradient to zero. */
int gr_zero_grad(struct gr_ctx *ctx);

/* Turns recording on (1, the default) or off (0); returns the previous
 * setting. With recording off, ops compute outputs only and nothing
 * requires a gradient. */
int gr_set_grad_enabled(struct gr_ctx *ctx, int on);

/* Nodes recorded in this step (for tests and benchmarks). */
int gr_tape_length(const struct gr_ctx *ctx);

#endif
