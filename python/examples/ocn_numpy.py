"""The Option-Controller Network of spec/ocn.md in numpy, on the weights of
a grove checkpoint, checked against what grove itself computed.

    python3 python/examples/ocn_numpy.py runs/s1/best.ckpt ocn.replay

where ocn.replay was recorded by
    grove craft run --agent ocn --checkpoint runs/s1/best.ckpt --record ocn.replay
It loads the parameters into numpy (grove.read_checkpoint), re-simulates the
replay's observations through libgrove (grove.Replay), runs the soft model
of ocn.md §5 online as grove's `ocn_act` does (agents/ocn.h) and compares,
step by step, its greedy action, end probability e_t and the controller's
distribution in force Π^C_t with the replay's a, pe and po. It prints the
largest differences (float32 rounding: about 1e-6).

The cell (ocn.md §3) for option k on observation x and state h:
    z = tanh(x·U1x + h·U1h^T + c1);  u = tanh(z·U2^T + c2)
    head = u·W^T + b = [action logits (A); state (d); end (1)]
    π = softmax(logits), h' = tanh(state), e = sigmoid(end)
grove stores the observation block of layer 1 as a table [O, w] per cell
(options side by side: opt.l1.wx [O, K·w]) and the heads stacked in one
matrix (agents/ocn.h lists every tensor).
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import grove  # noqa: E402


def softmax(v):
    v = v - v.max(axis=-1, keepdims=True)
    p = np.exp(v)
    return p / p.sum(axis=-1, keepdims=True)


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


class OCN:
    """The model of a `grove train bc` checkpoint, in float64 numpy."""

    def __init__(self, path):
        ck = grove.read_checkpoint(path, kinds=("param",))
        cfg = ck.config_lines()
        self.kind = cfg["kind"]
        self.K = int(cfg["options"])
        self.d = int(cfg["hidden"])
        self.w = int(cfg["width"])
        self.A = int(cfg["actions"])
        self.tau = float(cfg["tau"])
        self.tasks = cfg["tasks"].split(",")
        self.blind = cfg.get("controller") == "blind"
        lo, hi = (int(v) for v in cfg.get("options_ignore", "0:0").split(":"))
        self.ignore = (lo, hi)
        # the Craft world the model learned in ("world KEY VALUE" lines)
        self.world = {}
        for line in ck.config.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == "world":
                self.world[parts[1]] = parts[2]
        p = {n: a.astype(np.float64) for n, a in ck.params().items()}
        K, w = self.K, self.w
        self.c_wx, self.c_wh, self.c_b1 = (p["ctrl.l1.wx"], p["ctrl.l1.wh"],
                                           p["ctrl.l1.bias"])
        self.c_w2, self.c_b2 = p["ctrl.l2.weight"], p["ctrl.l2.bias"]
        self.c_wo, self.c_bo = p["ctrl.head.weight"], p["ctrl.head.bias"]
        self.h_init = p["ctrl.h_init"]
        # options: per option k its [O, w] block of the side-by-side table
        self.o_wx = p["opt.l1.wx"].reshape(-1, K, w).transpose(1, 0, 2)
        self.o_wh, self.o_b1 = p["opt.l1.wh"], p["opt.l1.bias"]
        self.o_w2, self.o_b2 = p["opt.l2.weight"], p["opt.l2.bias"]
        self.o_wo, self.o_bo = p["opt.head.weight"], p["opt.head.bias"]

    def option_inputs(self, x):
        """The observation part of each option's layer 1 (bias included):
        [K, w]. Features the options ignore (options_ignore) are left out."""
        lo, hi = self.ignore
        if hi > lo:
            x = x.copy()
            x[lo:hi] = 0.0
        return np.einsum("o,kow->kw", x, self.o_wx) + self.o_b1

    def option_step(self, k, xo_k, h):
        """One step of option k (ocn.md §3): xo_k = option_inputs(x)[k],
        h [d] or None for its initial state z_k = 0 -> (π [A], h' [d], e)."""
        pre = xo_k if h is None else xo_k + self.o_wh[k] @ h
        z = np.tanh(pre)
        u = np.tanh(self.o_w2[k] @ z + self.o_b2[k])
        head = self.o_wo[k] @ u + self.o_bo[k]
        A, d = self.A, self.d
        return (softmax(head[:A]), np.tanh(head[A:A + d]),
                float(sigmoid(head[A + d])))

    def controller_step(self, x, h):
        """The controller's cell: (Π̂^C [K] at temperature τ_C, h' [d])."""
        pre = self.c_b1 + self.c_wh @ h
        if not self.blind:
            pre = pre + x @ self.c_wx
        z = np.tanh(pre)
        u = np.tanh(self.c_w2 @ z + self.c_b2)
        head = self.c_wo @ u + self.c_bo
        return softmax(head[:self.K] / self.tau), np.tanh(head[self.K:])


class Actor:
    """ocn.md §5 online for one world (what grove's ocn_act does per row):
    the soft state (H^C, Π^C, H^i) carried from step to step."""

    def __init__(self, model, task):
        self.m = model
        self.task = model.tasks.index(task)
        self.first = True

    def step(self, x):
        """-> (greedy action, π_t [A], e_t, Π^C_t [K])."""
        m, K = self.m, self.m.K
        x = np.asarray(x, np.float64)
        if self.first:
            self.hc = m.h_init[self.task]
        xo = m.option_inputs(x)
        # switch branch: the controller steps, every option restarts
        pc, hc_new = m.controller_step(x, self.hc)
        sw = [m.option_step(k, xo[k], None) for k in range(K)]
        pi_hat = sum(pc[k] * sw[k][0] for k in range(K))
        if self.first or m.kind == "moe":
            e, pi = 1.0, pi_hat
            self.pic, self.hc = pc, hc_new
            self.ho = [s[1] for s in sw]
        else:
            # continue branch: every option steps from its own state
            co = [m.option_step(k, xo[k], self.ho[k]) for k in range(K)]
            e = sum(self.pic[k] * co[k][2] for k in range(K))
            pi_bar = sum(self.pic[k] * co[k][0] for k in range(K))
            pi = e * pi_hat + (1 - e) * pi_bar
            self.pic = e * pc + (1 - e) * self.pic
            self.hc = e * hc_new + (1 - e) * self.hc
            self.ho = [e * sw[k][1] + (1 - e) * co[k][1] for k in range(K)]
        self.first = False
        return int(np.argmax(pi)), pi, e, self.pic


def compare(checkpoint, replay_path):
    """Runs the numpy model over every episode of an `--agent ocn` replay.
    Returns (steps, action mismatches outside near-ties, max |Δ pe|,
    max |Δ po|)."""
    m = OCN(checkpoint)
    steps = mismatches = 0
    dpe = dpo = 0.0
    with grove.Replay(replay_path) as r:
        for ep in r.episodes(observations=True):
            actor = Actor(m, ep["task_name"])
            for t in range(len(ep["actions"])):
                a, pi, e, pic = actor.step(ep["obs"][t])
                top = np.sort(pi)[-2:]
                if a != ep["actions"][t] and top[1] - top[0] > 1e-5:
                    mismatches += 1
                dpe = max(dpe, abs(e - ep["pe"][t]))
                dpo = max(dpo, float(np.abs(pic - ep["po"][t]).max()))
                steps += 1
    return steps, mismatches, dpe, dpo


def main(argv):
    if len(argv) != 3:
        print("usage: ocn_numpy.py CHECKPOINT OCN.replay", file=sys.stderr)
        return 2
    try:
        steps, bad, dpe, dpo = compare(argv[1], argv[2])
    except (grove.GroveError, KeyError, ValueError) as e:
        print("ocn_numpy: %s" % e, file=sys.stderr)
        return 1
    print("%d steps: %d greedy actions differ from grove's; largest "
          "|e_t - pe| %.2e, |Π^C_t - po| %.2e" % (steps, bad, dpe, dpo))
    return 0 if bad == 0 and dpe < 1e-4 and dpo < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
