/* kernels/optim.h — optimizers, gradient clipping, learning-rate schedules.
 *
 * An optimizer updates the trainable parameters of a context whose names
 * start with its `prefix` (NULL or "": all), from their accumulated
 * gradients (kernels/tape.h), on the context's device. Frozen parameters
 * (gr_param_set_trainable) are skipped at each step, so freezing can change
 * between steps (PPO: options frozen, controller trained). Several
 * optimizers may share a context with different prefixes.
 *
 * The update rules are PyTorch's (torch.optim, single-tensor code path):
 *   SGD:   g += wd·p; momentum μ > 0: b = μ·b + (1-dampening)·g (b = g on
 *          the first step), g = nesterov ? g + μ·b : b; p -= lr·g.
 *   Adam:  g += wd·p; m = β1 m + (1-β1) g; v = β2 v + (1-β2) g²;
 *          p -= lr · (m / (1-β1^t)) / (sqrt(v / (1-β2^t)) + eps).
 *   AdamW: p *= 1 - lr·wd, then Adam with no L2 term.
 *   ASGD:  g += wd·p; p *= 1 - λ·η; p -= η·g; ax = p while μ = 1, else
 *          ax += μ (p - ax); then η = lr / (1 + λ·lr·t)^α and
 *          μ = 1 / max(1, t - t0). η used at step t is the one computed at
 *          the end of step t-1 (initially lr), on_lstm.md §8.3.
 * Optimizer state (momentum, m, v, ax, step count) is held in named
 * GR_KIND_OPTIM tensors "<name>/<param>" of the context, so checkpoints
 * can save and restore it (kernels/checkpoint.h, GR_CKPT_OPTIM).
 *
 * Memory: state is allocated once at gr_optim_new; a step allocates
 * nothing. One thread per context. Errors: 0 or negative GR_E* codes.
 *
 *   struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
 *   oc.lr = 1e-3f;
 *   struct gr_optim *opt;
 *   if (gr_optim_new(&opt, ctx, "adam", &oc) < 0) return -1;
 *   ... gr_backward(ctx, loss);
 *   gr_clip_grad_norm(ctx, NULL, 0.2f, &norm);
 *   gr_optim_step(opt); gr_zero_grad(ctx);
 */
#ifndef GROVE_KERNELS_OPTIM_H
#define GROVE_KERNELS_OPTIM_H

#include <stdint.h>

#include "kernels/tensor.h"

enum gr_optim_kind {
    GR_OPTIM_SGD = 0,
    GR_OPTIM_ADAM = 1,
    GR_OPTIM_ADAMW = 2,
    GR_OPTIM_ASGD = 3,
};

struct gr_optim_config {
    enum gr_optim_kind kind;
    float lr;
    float weight_decay;  /* L2 (SGD, Adam, ASGD) or decoupled (AdamW) */
    /* SGD */
    float momentum;      /* 0: plain SGD */
    float dampening;
    int nesterov;
    /* Adam, AdamW */
    float beta1, beta2, eps;
    /* ASGD (PyTorch defaults 1e-4, 0.75, 1e6; AWD-LSTM uses 0, -, 0) */
    float asgd_lambd, asgd_alpha, asgd_t0;
    const char *prefix;  /* parameters updated: name prefix, NULL = all */
};

/* PyTorch's defaults for `kind` (lr 1e-3 for Adam/AdamW, 1e-2 for SGD and
 * ASGD; AdamW weight decay 1e-2; everything else 0 or as torch). */
struct gr_optim_config gr_optim_config_default(enum gr_optim_kind kind);

struct gr_optim;

/* Creates an optimizer named `name` (prefix of its state tensors, unique
 * per context) over the parameters matching cfg->prefix at this moment
 * (parameters created later are not included). */
int gr_optim_new(struct gr_optim **out, struct gr_ctx *ctx, const char *name,
                 const struct gr_optim_config *cfg);

/* Frees the optimizer object; its state tensors stay in the context. */
void gr_optim_free(struct gr_optim *opt);

/* One update of every trainable parameter it holds. */
int gr_optim_step(struct gr_optim *opt);

/* The learning rate the next step uses (schedules set it). */
void gr_optim_set_lr(struct gr_optim *opt, float lr);
float gr_optim_lr(const struct gr_optim *opt);

/* Steps taken (restored by checkpoints). */
int64_t gr_optim_steps(const struct gr_optim *opt);

/* ASGD only: exchanges every parameter with its running average (call
 * before evaluating, and again after). GR_EINVAL for other kinds. */
int gr_optim_swap_average(struct gr_optim *opt);

/* Global-norm clipping over the trainable parameters matching `prefix`
 * (torch.nn.utils.clip_grad_norm_): total = sqrt(Σ ||g||²); when
 * max_norm / (total + 1e-6) < 1 every gradient is scaled by it. Writes the
 * norm before clipping to *norm_out (may be NULL). */
int gr_clip_grad_norm(struct gr_ctx *ctx, const char *prefix, float max_norm,
                      float *norm_out);

/* ---- learning-rate schedules (plain values, host only) ---- */

/* Linear decay from lr_start at step 0 to lr_end at step `steps`, constant
 * after. */
struct gr_lr_linear {
    float lr_start, lr_end;
    int64_t steps;
};
float gr_lr_linear_at(const struct gr_lr_linear *s, int64_t step);

/* Step on plateau, torch.optim.lr_scheduler.ReduceLROnPlateau with
 * threshold_mode "rel": a metric is an improvement when it beats the best
 * by more than `threshold` relative (mode max: m > best·(1+threshold);
 * min: m < best·(1-threshold)); after more than `patience` epochs without
 * one, lr = max(lr·factor, min_lr) and the count restarts (then `cooldown`
 * epochs are ignored). */
struct gr_lr_plateau {
    int mode_max;  /* 1: higher metric is better (accuracy); 0: loss */
    float factor;  /* 0.1 in torch */
    int patience;  /* 10 in torch */
    float threshold; /* 1e-4 in torch */
    int cooldown;  /* 0 in torch */
    float min_lr;  /* 0 in torch */
    /* state (zero-initialise, then call gr_lr_plateau_init) */
    float lr;
    double best;
    int bad_epochs;
    int cooldown_left;
    int seen;
};

/* Sets the torch defaults listed above with mode and starting lr. */
void gr_lr_plateau_init(struct gr_lr_plateau *s, int mode_max, float lr);

/* Feeds one epoch's metric; returns the (possibly reduced) lr. */
float gr_lr_plateau_step(struct gr_lr_plateau *s, double metric);

#endif
