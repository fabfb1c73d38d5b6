#!/usr/bin/python3
"""PyTorch reference of Ordered Memory for grove's benchmark (`grove bench om`).

Written from ../shared/spec/ordered_memory.md with the structure of the
reference implementation the spec describes: nn.Linear / nn.LayerNorm /
nn.Dropout modules, one OM step per time step, and inside it a Python loop
over the N slots that calls the gated cell on the whole batch, skipping a
slot only when cp_t[i+1] is 0 for every sequence (§4 "reference
shortcut"). The logic classifier of §6-§7 (embedding U(-0.1, 0.1), input
dropout, the pair MLP on [u; v; u*v; |u-v|]) is trained with Adam
(lr 1e-3, betas (0, 0.999), eps 1e-9, weight decay 1.2e-6) and global
norm clipping at 1, as proplog.py does.

  om_ref.py speed --batches FILE [--emsize 200 --nhid 200 --nslot 12]
                  [--warmup 1] [--threads 1] [--device cpu]

FILE (written by grove bench om, so both sides train on the same batches):
first line the number of batches; per batch a line "T B P", then T lines of
B token ids (time-major, B = 2P sequences: P premises then P hypotheses,
padding id 11), then a line of P labels in 0..6. The first --warmup batches
are untimed. Prints the baseline_blas line of bench/baseline_info.py and
  tokens_per_s <real tokens / timed seconds> seconds <timed seconds> \
      peak_rss_kb <ru_maxrss> cpu_tokens_per_s <per CPU second> \
      cpu_seconds <process CPU time of the timed batches>
"""
import argparse
import math
import os
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import baseline_info  # noqa: E402  (bench/baseline_info.py)


class Distribution(nn.Module):
    """Scores over candidate slots and the masked softmax (eqs 3.5.8-11)."""

    def __init__(self, d, rm):
        super().__init__()
        self.query = nn.Sequential(nn.Dropout(rm), nn.Linear(d, d),
                                   nn.LayerNorm(d))
        self.key = nn.Sequential(nn.Dropout(rm), nn.Linear(d, d),
                                 nn.LayerNorm(d))
        self.beta = nn.Sequential(nn.ReLU(), nn.Dropout(rm), nn.Linear(d, 1))
        self.d = d

    def forward(self, xt, mh_prev, p_prev):
        q = self.query(xt)
        k = self.key(mh_prev)
        beta = self.beta(q[:, None, :] + k).squeeze(2) / math.sqrt(self.d)
        if p_prev is None:  # FRESH
            z = torch.zeros_like(beta)
            return z, torch.ones_like(beta), z
        e = torch.exp(beta - beta.max(dim=-1, keepdim=True)[0])
        m = torch.cumsum(p_prev, 1)[:, 1:]
        m = m.masked_fill(m < 1e-5, 0.0)
        m = F.pad(m, (0, 1), value=1.0)
        e = e * m
        p = e / e.sum(1, keepdim=True).clamp(min=1e-12)
        cp = torch.cumsum(p, 1)
        rcp = torch.cumsum(p.flip([1]), 1).flip([1])
        return cp, rcp, p


class Cell(nn.Module):
    """The gated recursive cell (eqs 3.5.12-13), LN shared with the input."""

    def __init__(self, d, rc, ln):
        super().__init__()
        self.net = nn.Sequential(nn.Dropout(rc), nn.Linear(2 * d, 4 * d),
                                 nn.ReLU(), nn.Dropout(rc),
                                 nn.Linear(4 * d, 4 * d))
        self.ln = ln
        self.d = d

    def forward(self, v, h):
        z = self.net(torch.cat([v, h], -1))
        g = torch.sigmoid(z[:, :3 * self.d])
        u = z[:, 3 * self.d:]
        gv, gh, gc = g.chunk(3, 1)
        return self.ln(gv * v + gh * h + gc * u)


class OM(nn.Module):
    def __init__(self, din, d, rc, rm):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.proj = nn.Sequential(nn.Linear(din, d), self.ln)
        self.dist = Distribution(d, rm)
        self.cell = Cell(d, rc, self.ln)
        self.d = d

    def forward(self, X, valid, nslot):
        T, B, _ = X.shape
        xt_all = self.proj(X)
        M = X.new_zeros(B, nslot, self.d)
        Mh = M
        p = None
        ys = []
        pad = ~valid
        for t in range(T):
            xt = xt_all[t]
            cp, rcp, p = self.dist(xt, Mh, p)
            M = M * (1 - rcp)[:, :, None] + Mh * rcp[:, :, None]
            h = xt
            slots = []
            for i in range(nslot):
                if i == nslot - 1 or cp[:, i + 1].max() > 0:
                    h = self.cell(h, M[:, i])
                    h = xt * (1 - cp)[:, i, None] + h * cp[:, i, None]
                slots.append(h)
            Mh = torch.stack(slots, 1)
            y = h
            pt = pad[t]
            y = y.masked_fill(pt[:, None], 0.0)
            p = p.masked_fill(pt[:, None], 0.0)
            M = M.masked_fill(pt[:, None, None], 0.0)
            Mh = Mh.masked_fill(pt[:, None, None], 0.0)
            ys.append(y)
        return torch.stack(ys)


class Classifier(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.embedding = nn.Embedding(12, a.emsize, padding_idx=11)
        self.embedding.weight.data.uniform_(-0.1, 0.1)
        self.om = OM(a.emsize, a.nhid, a.dropout, a.dropoutm)
        self.mlp = nn.Sequential(nn.Dropout(a.dropouto),
                                 nn.Linear(4 * a.nhid, a.nhid), nn.ELU(),
                                 nn.Dropout(a.dropouto),
                                 nn.Linear(a.nhid, 7))
        self.drop = nn.Dropout(a.dropouti)
        self.nslot = a.nslot

    def forward(self, ids):
        valid = ids != 11
        ys = self.om(self.drop(self.embedding(ids)), valid, self.nslot)
        B = ids.size(1)
        out = ys[valid.sum(0) - 1, torch.arange(B, device=ids.device)]
        u, v = out[:B // 2], out[B // 2:]
        return self.mlp(torch.cat([u, v, u * v, (u - v).abs()], 1))


def read_batches(path):
    with open(path) as f:
        tok = f.read().split()
    pos = 0

    def nxt():
        nonlocal pos
        pos += 1
        return int(tok[pos - 1])
    out = []
    for _ in range(nxt()):
        T, B, P = nxt(), nxt(), nxt()
        ids = torch.tensor([nxt() for _ in range(T * B)]).view(T, B)
        lab = torch.tensor([nxt() for _ in range(P)])
        out.append((ids, lab))
    return out


def speed(a):
    dev = torch.device(a.device)
    torch.manual_seed(1111)
    model = Classifier(a).to(dev)
    params = list(model.parameters())
    opt = torch.optim.Adam(params, lr=1e-3, betas=(0.0, 0.999), eps=1e-9,
                           weight_decay=1.2e-6)
    batches = read_batches(a.batches)
    model.train()
    secs, cpu, tokens = 0.0, 0.0, 0
    for k, (ids, lab) in enumerate(batches):
        ids, lab = ids.to(dev), lab.to(dev)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        c0 = time.process_time()
        opt.zero_grad()
        loss = F.cross_entropy(model(ids), lab)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        if k >= a.warmup:
            secs += time.perf_counter() - t0
            cpu += time.process_time() - c0
            tokens += int((ids != 11).sum())
    baseline_info.print_line(torch)
    print("tokens_per_s %.3f seconds %.6f peak_rss_kb %d cpu_tokens_per_s "
          "%.3f cpu_seconds %.6f" %
          (tokens / secs if secs > 0 else 0.0, secs,
           resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
           tokens / cpu if cpu > 0 else 0.0, cpu))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["speed"])
    p.add_argument("--batches", required=True)
    p.add_argument("--emsize", type=int, default=200)
    p.add_argument("--nhid", type=int, default=200)
    p.add_argument("--nslot", type=int, default=12)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--dropoutm", type=float, default=0.2)
    p.add_argument("--dropouti", type=float, default=0.1)
    p.add_argument("--dropouto", type=float, default=0.3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    speed(a)


if __name__ == "__main__":
    sys.exit(main())
