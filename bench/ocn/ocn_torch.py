#!/usr/bin/python3
"""The baseline of `grove bench ocn`: behaviour cloning of the
Option-Controller Network (spec/ocn.md §3-6) written in PyTorch the way its
users would write it: dense observation input, nn.Linear cells, the forward
pass of §5 as a Python loop over time on padded, masked [T, B] batches,
autograd, Adam and gradient clipping.

Usage (the benchmark runs it; it is not needed at test time):
    /usr/bin/python3 bench/ocn/ocn_torch.py BATCHES.bin --threads 2 \
        --updates 5 --runs 3 [--device cpu|cuda]

BATCHES.bin (written by bench/ocn/bench_ocn.c), little endian:
    int32 magic 0x4F434E42 ("BNCO"), int32 n_batches, int32 O, int32 n_tasks
    per batch: int32 B, int32 T; int32 len[B]; int32 task[B];
               int32 action[T, B] (0 past the end); uint8 obs[T, B, O]
Prints "torch_version V", one line per run ("run R: U updates in S s") and
a last line
    updates_per_s X
with X the median over runs of updates per second (after one warm-up
update per batch). Options: K = 3, d = w = 128, A = 5, tau = 10, Adam
lr 1e-3, clip 0.2 (ocn.md §6).
"""
import argparse
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import baseline_info  # noqa: E402  (bench/baseline_info.py)


class Cell(nn.Module):
    """ocn.md §3: MLP on [x ; h] (depth 2, tanh), heads for the
    distribution, the next state and (options) the end probability."""

    def __init__(self, obs, hidden, width, n_out, with_end):
        super().__init__()
        self.l1 = nn.Linear(obs + hidden, width)
        self.l2 = nn.Linear(width, width)
        self.out = nn.Linear(width, n_out)
        self.hid = nn.Linear(width, hidden)
        self.end = nn.Linear(width, 1) if with_end else None

    def forward(self, x, h, tau=1.0):
        u = torch.tanh(self.l2(torch.tanh(self.l1(torch.cat([x, h], -1)))))
        pi = torch.softmax(self.out(u) / tau, -1)
        h_new = torch.tanh(self.hid(u))
        e = torch.sigmoid(self.end(u)) if self.end is not None else None
        return pi, h_new, e


class OCN(nn.Module):
    def __init__(self, obs, n_tasks, K=3, hidden=128, width=128, actions=5,
                 tau=10.0):
        super().__init__()
        self.K, self.hidden, self.tau = K, hidden, tau
        self.ctrl = Cell(obs, hidden, width, K, False)
        self.opts = nn.ModuleList(
            [Cell(obs, hidden, width, actions, True) for _ in range(K)])
        self.h_init = nn.Parameter(torch.randn(n_tasks, hidden) * 0.1)

    def loss(self, obs, actions, mask, tasks):
        """obs [T, B, O], actions [T, B] long, mask [T, B], tasks [B]."""
        T, B, _ = obs.shape
        zero = obs.new_zeros(B, self.hidden)
        hc = self.h_init[tasks]
        pic, ho = None, None
        ll = obs.new_zeros(())
        for t in range(T):
            x = obs[t]
            pc, hc_hat, _ = self.ctrl(x, hc, self.tau)
            sw = [o(x, zero) for o in self.opts]
            pi_hat = sum(pc[:, i:i + 1] * sw[i][0] for i in range(self.K))
            if t == 0:
                pi, pic, hc = pi_hat, pc, hc_hat
                ho = [s[1] for s in sw]
            else:
                cont = [o(x, ho[i]) for i, o in enumerate(self.opts)]
                e = sum(pic[:, i:i + 1] * cont[i][2] for i in range(self.K))
                pi_bar = sum(pic[:, i:i + 1] * cont[i][0]
                             for i in range(self.K))
                pi = e * pi_hat + (1 - e) * pi_bar
                pic = e * pc + (1 - e) * pic
                hc = e * hc_hat + (1 - e) * hc
                ho = [e * sw[i][1] + (1 - e) * cont[i][1]
                      for i in range(self.K)]
            p = pi.gather(1, actions[t][:, None]).squeeze(1)
            ll = ll + (torch.log(torch.clamp(p, min=1e-12)) * mask[t]).sum()
        return -ll / mask.sum()


def read_batches(path, device):
    with open(path, "rb") as f:
        data = f.read()
    magic, n, O, n_tasks = struct.unpack_from("<4i", data, 0)
    if magic != 0x4F434E42:
        sys.exit(f"{path}: not a grove OCN benchmark batch file")
    off, batches = 16, []
    for _ in range(n):
        B, T = struct.unpack_from("<2i", data, off)
        off += 8
        lens = np.frombuffer(data, np.int32, B, off)
        off += 4 * B
        tasks = np.frombuffer(data, np.int32, B, off)
        off += 4 * B
        actions = np.frombuffer(data, np.int32, T * B, off).reshape(T, B)
        off += 4 * T * B
        obs = np.frombuffer(data, np.uint8, T * B * O, off).reshape(T, B, O)
        off += T * B * O
        mask = (np.arange(T)[:, None] < lens[None, :]).astype(np.float32)
        batches.append((
            torch.tensor(obs.astype(np.float32), device=device),
            torch.tensor(actions.astype(np.int64), device=device),
            torch.tensor(mask, device=device),
            torch.tensor(tasks.astype(np.int64), device=device)))
    return O, n_tasks, batches


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("batches")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--updates", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    print(f"torch_version {torch.__version__}", flush=True)
    torch.set_num_threads(a.threads)
    baseline_info.print_line(torch)
    torch.manual_seed(1)
    device = torch.device(a.device)
    O, n_tasks, batches = read_batches(a.batches, device)
    model = OCN(O, n_tasks).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999),
                           eps=1e-8)

    def update(i):
        obs, actions, mask, tasks = batches[i % len(batches)]
        loss = model.loss(obs, actions, mask, tasks)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.2)
        opt.step()
        return loss

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    for i in range(len(batches)):  # warm-up
        update(i)
    sync()
    rates = []
    for r in range(a.runs):
        t0 = time.perf_counter()
        for i in range(a.updates):
            loss = update(i)
        sync()
        s = time.perf_counter() - t0
        rates.append(a.updates / s)
        print(f"run {r}: {a.updates} updates in {s:.3f} s "
              f"(loss {loss.item():.4f})", flush=True)
    rates.sort()
    print(f"updates_per_s {rates[len(rates) // 2]:.6g}", flush=True)


if __name__ == "__main__":
    main()
