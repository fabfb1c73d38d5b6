/* bench/ppo/bench_ppo.h — end-to-end speed of PPO fine-tuning with frozen
 * options (issue 20 §5): training frames per second of `grove train ppo`'s
 * loop (the worlds, acting, the update, as agents/ppo.h runs them) against
 * a cleanrl-style PyTorch PPO of the same model and the same loop
 * (bench/ppo/ppo_torch.py), run in the same invocation.
 *
 * Workload (S1 shapes, ocn.md §6-7): the ocn policy on task DCA with sparse
 * reward in the four-copy world; K = 3 frozen options with d = w = 128 (by
 * default freshly initialised from seed 1 and written to a temporary
 * checkpoint; --options gives trained ones) and a new controller with a
 * value head, τ_C = 10; `num_envs` worlds (16) × `num_steps` decisions (64)
 * per rollout, 4 minibatches, 4 epochs, Adam 3e-4. The PyTorch side reads
 * the same options' checkpoint (python/grove's read_checkpoint) and steps
 * the same C environment through grove's Python bindings (libgrove.so), so
 * the comparison isolates the learner: acting (per frame, batched over the
 * worlds, as a PyTorch user would write it) and the update. Both sides run
 * hard option execution, SMDP returns and waiting worlds exactly as
 * agents/ppo.h says, on `threads` threads.
 *
 * Each figure is the median of `runs` rounds; a round is `iterations`
 * timed iterations after one warm-up iteration (grove: one trainer for the
 * whole benchmark, so later rounds continue training; PyTorch: a child
 * process per round). The rounds of the two sides alternate (grove,
 * PyTorch, grove, ...), and the spread column gives the range of the
 * rounds' ratios (bench/bench_util.h). Rows: frames per second of wall
 * time, frames per CPU-second of the process (what one core gives when the
 * machine is shared), iterations per second. A second table says where
 * each side's time goes per iteration: the environment, the options'
 * forward, the controller (forward, sampling, storage), the rest of the
 * rollout and the update; grove's from SIGPROF samples of its timed rounds
 * (ppo_set_profile: the trainer stores the part it is in), the baseline's
 * from timers.
 *
 * The baseline runs as a child process (python with torch and numpy);
 * when it is missing its cells read "n/a" with the reason. Header: CPU,
 * threads, device, build, both BLAS lines (bench/baseline_info.py).
 *
 * Memory: everything is allocated per call and freed. Errors: 0 or a
 * negative GR_E* code with gr_last_error().
 *
 *   struct bench_ppo_options o; bench_ppo_options_default(&o);
 *   bench_ppo_run(&o, stdout);
 */
#ifndef GROVE_BENCH_PPO_H
#define GROVE_BENCH_PPO_H

#include <stdio.h>

struct bench_ppo_options {
    int quick;            /* tiny sizes (a smoke run for CI) */
    int num_envs;         /* worlds (16) */
    int num_steps;        /* decisions per world per rollout (64) */
    int iterations;       /* timed iterations per round (3) */
    int runs;             /* rounds, median reported (3) */
    int threads;          /* CPU threads of the update (grove, torch) (1) */
    int cuda;             /* 1: the update on CUDA (both sides) */
    const char *options;  /* options' checkpoint, NULL: fresh S1 options */
    const char *python;   /* interpreter ("/usr/bin/python3"), NULL: skip */
    const char *script;   /* ppo_torch.py (default: the source tree's) */
    const char *build;    /* build description for the header, or NULL */
    int quiet;            /* no progress lines on stderr */
};

void bench_ppo_options_default(struct bench_ppo_options *o);

int bench_ppo_run(const struct bench_ppo_options *o, FILE *out);

#endif
