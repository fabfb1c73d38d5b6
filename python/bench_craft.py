"""Craft from Python: steps per CPU-second of grove.Craft at 256 worlds.

    python3 python/bench_craft.py [--envs 256] [--seconds 2]

Prints a table (bench/README.md's form: case | grove | baseline | ratio)
whose baseline, measured in the same run, is the bare ctypes call of
craft_batch_step on the same batch (what any Python binding pays at
least); the observation (1075 floats per world) is written on every step
in every case. CPU time is the process's (time.process_time), so threads
and a busy machine do not inflate it. Target (issue 19): >= 1M steps per
CPU-second at 256 worlds.
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grove  # noqa: E402


def rate(fn, envs, seconds):
    """Steps (worlds x batch steps) per CPU-second and per wall second."""
    fn()
    n, c0, w0 = 0, time.process_time(), time.perf_counter()
    while time.process_time() - c0 < seconds:
        for _ in range(100):
            fn()
        n += 100
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    return n * envs / cpu, n * envs / wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--envs", type=int, default=256)
    ap.add_argument("--tasks", default="AC,CD")
    ap.add_argument("--seconds", type=float, default=2.0,
                    help="CPU seconds per case")
    args = ap.parse_args()
    N = args.envs
    env = grove.Craft(N, args.tasks, seed=1)
    rng = np.random.default_rng(1)
    pool = rng.integers(0, grove.N_ACTIONS, (256, N)).astype(np.uint8)
    pool64 = pool.astype(np.int64)
    i = [0]

    lib = env._lib
    args_raw = env._step_args

    def raw():
        env._actions[:] = pool[i[0] & 255]
        i[0] += 1
        lib.craft_batch_step(*args_raw)

    def own_buffer():
        env.actions[:] = pool[i[0] & 255]
        i[0] += 1
        env.step(env.actions)

    def uint8_actions():
        i[0] += 1
        env.step(pool[i[0] & 255])

    def int64_actions():
        i[0] += 1
        env.step(pool64[i[0] & 255])

    def sampled():
        env.step(rng.integers(0, grove.N_ACTIONS, N))

    base_cpu, base_wall = rate(raw, N, args.seconds)
    print("grove.Craft, %d worlds, tasks %s, observation written every step "
          "(%s)" % (N, args.tasks, grove.find_library()))
    print()
    print("| case | grove (M steps/CPU-s) | baseline: bare ctypes call "
          "(M steps/CPU-s) | ratio | grove wall (M steps/s) |")
    print("|---|---:|---:|---:|---:|")
    cases = [("step(env.actions), no conversion", own_buffer),
             ("step(uint8 array)", uint8_actions),
             ("step(int64 array), range-checked and converted", int64_actions),
             ("step(rng.integers(...)), actions sampled in numpy", sampled)]
    worst = None
    for name, fn in cases:
        cpu, wall = rate(fn, N, args.seconds)
        worst = cpu if worst is None else min(worst, cpu)
        print("| %s | %.2f | %.2f | %.2f | %.2f |" % (
            name, cpu / 1e6, base_cpu / 1e6, cpu / base_cpu, wall / 1e6))
    print()
    ok = worst >= 1e6
    print("slowest case %.2fM steps per CPU-second: %s the 1M target" % (
        worst / 1e6, "meets" if ok else "MISSES"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
