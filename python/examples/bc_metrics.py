"""Reading a BC run's metrics.csv (grove train bc --out RUN).

    python3 python/examples/bc_metrics.py RUN

Prints the validation curve (update, nll, action_acc, nmi, f1_tol1) and
the update with the lowest validation NLL, the one best.ckpt holds; with
matplotlib installed, --plot FILE.png draws nll and nmi against update.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import grove  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", help="a run folder of grove train bc")
    ap.add_argument("--plot", metavar="FILE.png")
    args = ap.parse_args()
    try:
        m = grove.read_metrics(os.path.join(args.run, "metrics.csv"))
        ck = grove.read_checkpoint(os.path.join(args.run, "best.ckpt"),
                                   kinds=("param",))
    except grove.GroveError as e:
        print("bc_metrics: %s" % e, file=sys.stderr)
        return 1
    cols = [c for c in ("update", "nll", "action_acc", "nmi", "f1_tol1",
                        "greedy_return") if c in m]
    print(" ".join("%12s" % c for c in cols))
    for i in range(len(m["update"])):
        print(" ".join("%12.4f" % m[c][i] if c != "update" else
                       "%12d" % m[c][i] for c in cols))
    best = int(np.nanargmin(m["nll"]))
    print("lowest validation nll %.4f at update %d (best.ckpt: %d "
          "parameters; model: %s)" % (
              m["nll"][best], m["update"][best],
              sum(a.size for a in ck.tensors.values()),
              ", ".join("%s %s" % kv for kv in ck.config_lines().items()
                        if kv[0] in ("kind", "options", "tasks"))))
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(1, 2, figsize=(8, 3))
        ax[0].plot(m["update"], m["nll"])
        ax[0].set_title("validation nll")
        ax[1].plot(m["update"], m["nmi"])
        ax[1].set_title("nmi")
        fig.savefig(args.plot)
        print("wrote %s" % args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
