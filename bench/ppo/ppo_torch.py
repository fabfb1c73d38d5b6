#!/usr/bin/python3
"""The baseline of `grove bench ppo`: PPO fine-tuning of a new controller
over frozen options (spec/ocn.md §7, agents/ppo.h) written in PyTorch the
way a cleanrl user would write it: nn.Linear cells on the dense
observation, acting batched over the worlds one frame at a time under
torch.no_grad(), a rollout buffer of dense observations, GAE as a loop over
the decisions vectorised over the worlds, minibatch epochs with autograd,
clip_grad_norm_ and Adam.

The loop is grove's (agents/ppo.h), so that the two sides do the same
work: hard option execution (the running option checks its end at the new
observation, e > 0.5; then the controller decides at that observation and
the fresh option acts at once), SMDP decisions (R = sum gamma^i r, the
successor discounted by gamma^n), --num-steps DECISIONS per world per
rollout (a world that reaches its next decision point after its last one
waits there for the next rollout, and its value bootstraps the last one),
a truncated episode bootstrapping from the controller's value at its final
observation. The environment is grove's own Craft, stepped through the
Python bindings (python/grove, libgrove.so), so the comparison isolates the
learner; the options are read from grove's checkpoint (read_checkpoint).

Usage (the benchmark runs it; it is not needed at test time):
    /usr/bin/python3 bench/ppo/ppo_torch.py OPTIONS.ckpt --task DCA \
        --num-envs 16 --num-steps 64 --iterations 3 --threads 1 \
        [--device cpu|cuda]

Runs one warm-up iteration, then --iterations timed ones, and prints
"torch_version V", "baseline_blas ..." (bench/baseline_info.py), and

    frames_per_s X            frames of the timed iterations / their time
    frames_per_cpu_s X        the same per CPU-second of this process
    iterations_per_s X
    frames_per_iteration X    decisions_per_iteration X
    part_s NAME X             seconds per timed iteration of NAME: env,
                              options, ctrl, other (rest of the rollout),
                              update
    last minibatch: ...       its losses, entropy, approx_kl, clipfrac

Hyperparameters: ocn.md §7 with cleanrl's names (lr 3e-4, gamma 0.99,
lambda 0.95, 4 minibatches, 4 epochs, clip 0.2, ent 0.01, vf 0.5, max grad
norm 0.5, Adam eps 1e-5, advantages normalised per minibatch, tau_C 10).
Acting runs on the CPU (as grove's does); with --device cuda the update
runs on the GPU and the acting copy of the controller is refreshed after
every update.
"""
import argparse
import ctypes
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))  # bench/baseline_info.py
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import baseline_info  # noqa: E402
import grove  # noqa: E402
from grove import _lib as glib  # noqa: E402


class Controller(nn.Module):
    """ocn.md §3's cell with K outputs and a value head: MLP on [x ; h]
    (depth 2, tanh), logits / tau, the next state tanh(W_hid u), V = w_v u
    + b_v; one learned initial state."""

    def __init__(self, obs, hidden, width, K, tau):
        super().__init__()
        self.tau = tau
        self.l1 = nn.Linear(obs + hidden, width)
        self.l2 = nn.Linear(width, width)
        self.out = nn.Linear(width, K)
        self.hid = nn.Linear(width, hidden)
        self.value = nn.Linear(width, 1)
        self.h_init = nn.Parameter(torch.randn(hidden) * 0.1)

    def trunk(self, x, h):
        return torch.tanh(self.l2(torch.tanh(self.l1(torch.cat([x, h], -1)))))

    def act(self, x, h):
        u = self.trunk(x, h)
        return (self.out(u) / self.tau, torch.tanh(self.hid(u)),
                self.value(u).squeeze(-1))

    def evaluate(self, x, h):
        u = self.trunk(x, h)
        return self.out(u) / self.tau, self.value(u).squeeze(-1)


class Options:
    """K frozen option cells from a grove checkpoint (ocn.h's stacked
    layout) as nn.Linear-style weights, run for a batch of worlds each with
    its own option: one group of rows per option in use."""

    def __init__(self, ck):
        wx = torch.tensor(ck["opt.l1.wx"]).float()           # [O, K*w]
        wh = torch.tensor(ck["opt.l1.wh"]).float()           # [K, w, d]
        self.K, self.w, self.d = wh.shape
        ign = ck.config_lines().get("options_ignore")
        if ign:  # the options' first layer skips these features
            lo, hi = (int(v) for v in ign.split(":"))
            wx[lo:hi] = 0.0
        K, w = self.K, self.w
        # layer 1 on [x ; h] as one [w, O + d] weight per option
        self.w1 = [torch.cat([wx[:, i * w:(i + 1) * w].t(), wh[i]], 1)
                   .contiguous() for i in range(K)]
        self.b1 = torch.tensor(ck["opt.l1.bias"]).float()    # [K, w]
        self.w2 = torch.tensor(ck["opt.l2.weight"]).float()  # [K, w, w]
        self.b2 = torch.tensor(ck["opt.l2.bias"]).float()
        self.wo = torch.tensor(ck["opt.head.weight"]).float()  # [K, A+d+1, w]
        self.bo = torch.tensor(ck["opt.head.bias"]).float()
        self.A = self.wo.shape[1] - self.d - 1

    def __call__(self, x, k, h):
        """x [n, O], k [n] long, h [n, d] or None (fresh: zeros): logits
        [n, A], next state [n, d], end probability [n]."""
        F = torch.nn.functional
        n = x.shape[0]
        if h is None:
            h = x.new_zeros(n, self.d)
        head = x.new_empty(n, self.wo.shape[1])
        for i in range(self.K):
            rows = (k == i).nonzero().squeeze(1)
            if rows.numel() == 0:
                continue
            z = torch.tanh(F.linear(torch.cat([x[rows], h[rows]], 1),
                                    self.w1[i], self.b1[i]))
            u = torch.tanh(F.linear(z, self.w2[i], self.b2[i]))
            head[rows] = F.linear(u, self.wo[i], self.bo[i])
        A, d = self.A, self.d
        return (head[:, :A], torch.tanh(head[:, A:A + d]),
                torch.sigmoid(head[:, A + d]))


def sample(logits):
    """Categorical(logits) draws and their log-probabilities."""
    dist = torch.distributions.Categorical(logits=logits)
    a = dist.sample()
    return a, dist.log_prob(a)


class Trainer:
    def __init__(self, a):
        ck = grove.read_checkpoint(a.options)
        lines = ck.config_lines()
        world = {"n_each": 1}  # the options' world ("world KEY VALUE")
        for line in ck.config.splitlines():
            parts = line.split(None, 2)
            if len(parts) == 3 and parts[0] == "world" and \
                    parts[1] != "reward":
                world[parts[1]] = parts[2]
        self.env = grove.Craft(a.num_envs, [a.task], seed=a.seed,
                               reward="sparse", **world)
        self.lib = glib.load()
        self.lib.craft_batch_step_range.restype = ctypes.c_int
        self.lib.craft_batch_step_range.argtypes = [
            ctypes.POINTER(glib.CraftBatch), ctypes.c_int, ctypes.c_int,
            ctypes.c_void_p, ctypes.POINTER(glib.CraftBatchOut),
            ctypes.POINTER(glib.CraftLog)]
        self.max_steps = int(self.env.config.get("max_steps", 64))
        self.opts = Options(ck)
        self.K, self.d = self.opts.K, self.opts.d
        self.E, self.S = a.num_envs, a.num_steps
        self.device = torch.device(a.device)
        O = grove.OBS_SIZE
        self.ctrl = Controller(O, self.d, self.opts.w, self.K,
                               10.0).to(self.device)
        self.actor = self.ctrl if self.device.type == "cpu" else \
            Controller(O, self.d, self.opts.w, self.K, 10.0)
        self.sync_actor()
        self.optim = torch.optim.Adam(self.ctrl.parameters(), lr=3e-4,
                                      eps=1e-5)
        self.gamma, self.lam = 0.99, 0.95
        E, S, d, D = self.E, self.S, self.d, self.E * self.S
        # acting state per world
        self.ask = np.ones(E, bool)
        self.first = np.ones(E, bool)
        self.opt = torch.zeros(E, dtype=torch.long)
        self.hc = torch.zeros(E, d)
        self.ho = torch.zeros(E, d)
        self.disc = np.zeros(E, np.float32)
        self.cur = np.zeros(E, np.int64)
        self.ep_t = np.zeros(E, np.int64)
        self.actions = np.zeros(E, np.uint8)
        # rollout storage: decision i of world e at e*S + i
        self.b_obs = torch.zeros(D, O)
        self.b_hc = torch.zeros(D, d)
        self.b_first = torch.zeros(D, dtype=torch.bool)
        self.b_opt = torch.zeros(D, dtype=torch.long)
        self.b_logp = torch.zeros(D)
        self.b_value = np.zeros(D, np.float32)
        self.b_R = np.zeros(D, np.float32)
        self.b_n = np.zeros(D, np.int64)
        self.b_term = np.zeros(D, bool)
        self.b_trunc = np.zeros(D, bool)
        self.b_boot = np.zeros(D, np.float32)
        self.last_value = np.zeros(E, np.float32)
        self.parts = dict(env=0.0, options=0.0, ctrl=0.0, other=0.0,
                          update=0.0)
        self.global_step = 0

    def sync_actor(self):
        if self.actor is not self.ctrl:
            self.actor.load_state_dict(
                {k: v.cpu() for k, v in self.ctrl.state_dict().items()})

    def step_worlds(self, stepping):
        """Steps the worlds where stepping[e]; a world about to be truncated
        is played on a copy first to keep its final observation."""
        env, E = self.env, self.E
        final = {}
        for e in np.nonzero(stepping & (self.ep_t + 1 >= self.max_steps))[0]:
            w = env.world(int(e))
            w.step(int(self.actions[e]))
            if w.done:
                final[int(e)] = w.observe().copy()
        if stepping.all():
            env.step(self.actions)
        else:
            act = self.actions.ctypes.data_as(ctypes.c_void_p)
            e = 0
            while e < E:
                if not stepping[e]:
                    e += 1
                    continue
                f = e
                while f < E and stepping[f]:
                    f += 1
                rc = self.lib.craft_batch_step_range(
                    ctypes.byref(env._batch), e, f, act,
                    ctypes.byref(env._out), ctypes.byref(env.log))
                if rc < 0:
                    raise grove.GroveError("craft_batch_step_range failed")
                e = f
        return final

    @torch.no_grad()
    def rollout(self):
        E, S, K = self.E, self.S, self.K
        env, actor, opts, P = self.env, self.actor, self.opts, self.parts
        count = np.zeros(E, np.int64)
        active = np.ones(E, bool)
        frames = 0
        t_start = time.perf_counter()
        while active.any():
            x = torch.from_numpy(env.obs)
            # 1. the running options at the new observation
            t0 = time.perf_counter()
            cont = active & ~self.ask
            if cont.any():
                rows = torch.from_numpy(np.nonzero(cont)[0])
                logits, hn, end = opts(x[rows], self.opt[rows], self.ho[rows])
                ends = (end > 0.5).numpy()
                a, _ = sample(logits)
                keep = torch.from_numpy(~ends)
                self.ho[rows[keep]] = hn[keep]
                self.actions[rows[keep].numpy()] = a[keep].numpy()
                self.ask[rows.numpy()[ends]] = True
            t1 = time.perf_counter()
            P["options"] += t1 - t0
            # 2. the controller where a decision is due
            dec = active & self.ask
            if dec.any():
                r_np = np.nonzero(dec)[0]
                rows = torch.from_numpy(r_np)
                first = torch.from_numpy(self.first[r_np])[:, None]
                h = torch.where(first, actor.h_init.expand(len(r_np), -1),
                                self.hc[rows])
                logits, hnext, v = actor.act(x[rows], h)
                vn = v.numpy()
                wait = count[r_np] == S
                if wait.any():  # waits for the next rollout
                    rw = r_np[wait]
                    self.last_value[rw] = vn[wait]
                    count[rw] = S + 1
                    active[rw] = False
                go = ~wait
                if go.any():
                    rg = r_np[go]
                    gt = torch.from_numpy(go)
                    k, logp = sample(logits[gt])
                    j = rg * S + count[rg]
                    count[rg] += 1
                    jt = torch.from_numpy(j)
                    self.b_obs[jt] = x[rows[gt]]
                    self.b_hc[jt] = h[gt]
                    self.b_first[jt] = first[gt, 0]
                    self.b_opt[jt] = k
                    self.b_logp[jt] = logp
                    self.b_value[j] = vn[go]
                    self.b_R[j] = 0.0
                    self.b_n[j] = 0
                    self.b_term[j] = False
                    self.b_trunc[j] = False
                    self.b_boot[j] = 0.0
                    self.hc[rows[gt]] = hnext[gt]
                    self.first[rg] = False
                    self.ask[rg] = False
                    self.cur[rg] = j
                    self.disc[rg] = 1.0
                    self.opt[rows[gt]] = k
                    t2 = time.perf_counter()
                    P["ctrl"] += t2 - t1
                    # 3. the fresh option acts at once
                    la, hn, _ = opts(x[rows[gt]], k, None)
                    self.ho[rows[gt]] = hn
                    a, _ = sample(la)
                    self.actions[rg] = a.numpy()
                    t1 = time.perf_counter()
                    P["options"] += t1 - t2
                else:
                    t2 = time.perf_counter()
                    P["ctrl"] += t2 - t1
                    t1 = t2
            # 4. the worlds still in this rollout step
            stepping = active.copy()
            if not stepping.any():
                break
            final = self.step_worlds(stepping)
            t2 = time.perf_counter()
            P["env"] += t2 - t1
            frames += int(stepping.sum())
            s_np = np.nonzero(stepping)[0]
            j = self.cur[s_np]
            self.b_R[j] += self.disc[s_np] * env.rewards[s_np]
            self.disc[s_np] *= self.gamma
            self.b_n[j] += 1
            self.ep_t[s_np] += 1
            done = stepping & (env.terminated | env.truncated)
            if done.any():
                dn = np.nonzero(done)[0]
                jd = self.cur[dn]
                self.b_term[jd] = env.terminated[dn]
                self.b_trunc[jd] = env.truncated[dn]
                fr = [e for e in dn if env.truncated[e] and int(e) in final]
                if fr:
                    t1 = time.perf_counter()
                    xf = torch.from_numpy(np.stack([final[int(e)]
                                                    for e in fr]))
                    _, _, vf = actor.act(xf, self.hc[torch.tensor(fr)])
                    self.b_boot[self.cur[fr]] = vf.numpy()
                    P["ctrl"] += time.perf_counter() - t1
                self.ask[dn] = True
                self.first[dn] = True
                self.ep_t[dn] = 0
        P["other"] += time.perf_counter() - t_start
        self.global_step += frames
        return frames

    def gae(self):
        E, S = self.E, self.S
        R = self.b_R.reshape(E, S)
        n = self.b_n.reshape(E, S)
        value = self.b_value.reshape(E, S)
        term = self.b_term.reshape(E, S)
        trunc = self.b_trunc.reshape(E, S)
        boot = self.b_boot.reshape(E, S)
        adv = np.zeros((E, S), np.float32)
        last = np.zeros(E, np.float32)
        for j in reversed(range(S)):
            nextv = self.last_value if j == S - 1 else value[:, j + 1]
            nextv = np.where(trunc[:, j], boot[:, j], nextv)
            g = self.gamma ** n[:, j]
            delta = R[:, j] + g * (1.0 - term[:, j]) * nextv - value[:, j]
            last = delta + g * self.lam * (1.0 - (term[:, j] | trunc[:, j])) \
                * last
            adv[:, j] = last
        return adv.reshape(-1), (adv + value).reshape(-1)

    def update(self):
        dev = self.device
        adv, ret = self.gae()
        b_obs, b_hc = self.b_obs.to(dev), self.b_hc.to(dev)
        b_first = self.b_first.to(dev)[:, None]
        b_opt, b_logp = self.b_opt.to(dev), self.b_logp.to(dev)
        b_adv = torch.from_numpy(adv).to(dev)
        b_ret = torch.from_numpy(ret).to(dev)
        D = self.E * self.S
        M = D // 4
        inds = np.arange(D)
        ctrl = self.ctrl
        for epoch in range(4):
            np.random.shuffle(inds)
            for start in range(0, D, M):
                mb = torch.from_numpy(inds[start:start + M]).to(dev)
                h = torch.where(b_first[mb], ctrl.h_init.expand(M, -1),
                                b_hc[mb])
                logits, v = ctrl.evaluate(b_obs[mb], h)
                lp = torch.log_softmax(logits, -1)
                newlogp = lp.gather(1, b_opt[mb][:, None]).squeeze(1)
                entropy = -(lp.exp() * lp).sum(-1).mean()
                logratio = newlogp - b_logp[mb]
                ratio = logratio.exp()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfrac = ((ratio - 1.0).abs() > 0.2).float().mean()
                a = b_adv[mb]
                a = (a - a.mean()) / (a.std() + 1e-8)
                pg = torch.max(-a * ratio,
                               -a * torch.clamp(ratio, 0.8, 1.2)).mean()
                vloss = ((v - b_ret[mb]) ** 2).mean()
                loss = pg + 0.5 * vloss - 0.01 * entropy
                self.optim.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(ctrl.parameters(), 0.5)
                self.optim.step()
        self.stats = (pg.item(), vloss.item(), entropy.item(),
                      approx_kl.item(), clipfrac.item())
        if dev.type == "cuda":
            torch.cuda.synchronize()
        self.sync_actor()

    def iteration(self):
        frames = self.rollout()
        t0 = time.perf_counter()
        self.update()
        self.parts["update"] += time.perf_counter() - t0
        return frames


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("options")
    ap.add_argument("--task", default="DCA")
    ap.add_argument("--num-envs", type=int, default=16)
    ap.add_argument("--num-steps", type=int, default=64)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    print(f"torch_version {torch.__version__}", flush=True)
    torch.set_num_threads(a.threads)
    baseline_info.print_line(torch)
    torch.manual_seed(a.seed)
    # Categorical's argument checks cost a third of the sampling
    torch.distributions.Distribution.set_default_validate_args(False)
    np.random.seed(a.seed)
    tr = Trainer(a)
    tr.iteration()  # warm-up
    for k in tr.parts:
        tr.parts[k] = 0.0
    frames = 0
    c0 = time.process_time()
    t0 = time.perf_counter()
    for _ in range(a.iterations):
        frames += tr.iteration()
    s = time.perf_counter() - t0
    c = time.process_time() - c0
    P = tr.parts
    P["other"] -= P["env"] + P["options"] + P["ctrl"]
    print(f"frames_per_s {frames / s:.6g}")
    print(f"frames_per_cpu_s {frames / c:.6g}")
    print(f"iterations_per_s {a.iterations / s:.6g}")
    print(f"frames_per_iteration {frames / a.iterations:.6g}")
    print(f"decisions_per_iteration {a.num_envs * a.num_steps}")
    for k, v in P.items():
        print(f"part_s {k} {v / a.iterations:.6g}")
    print("last minibatch: policy_loss %.4g value_loss %.4g entropy %.4g "
          "approx_kl %.3g clipfrac %.3g" % tr.stats)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
