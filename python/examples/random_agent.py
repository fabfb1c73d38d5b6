"""A random agent on 256 Craft worlds: the gymnasium-style loop.

    python3 python/examples/random_agent.py [--steps N] [--tasks AC,CD]

Prints the finished episodes' mean return and success rate, the same
totals from the C side's log, and the steps per second.
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import grove  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--envs", type=int, default=256)
    ap.add_argument("--steps", type=int, default=1000,
                    help="batch steps (each steps every world)")
    ap.add_argument("--tasks", default="AC,CD")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    try:
        env = grove.Craft(args.envs, args.tasks, seed=args.seed)
    except grove.GroveError as e:
        print("random_agent: %s" % e, file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    obs, info = env.reset()
    returns, successes = [], 0
    t0 = time.perf_counter()
    for _ in range(args.steps):
        actions = rng.integers(0, grove.N_ACTIONS, env.num_envs, np.uint8)
        obs, reward, terminated, truncated, info = env.step(actions)
        done = terminated | truncated
        if done.any():
            returns.extend(info["episode_return"][done].tolist())
            successes += int(terminated.sum())
    secs = time.perf_counter() - t0
    n = len(returns)
    print("%d episodes: mean return %.3f, success %.1f%%" % (
        n, np.mean(returns) if n else 0.0, 100.0 * successes / max(n, 1)))
    print("C log: %d episodes, %d successes, return sum %.1f" % (
        env.log.episodes, env.log.successes, env.log.return_sum))
    print("%.2fM steps/s (wall, random actions drawn in numpy included)" %
          (args.steps * env.num_envs / secs / 1e6))
    print(env.render(0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
