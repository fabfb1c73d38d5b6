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
  om_ref.py replay --init CKPT --trace FILE [--double] [sizes, dropouts]
  om_ref.py train --data DIR --out CSV [--epochs 10] [--seed 1]
                  [--nslot 12 --nslot-eval 24] [sizes, dropouts]

replay (bench/nlp/om_compare.sh, step agreement): starts from the weights
of a grove checkpoint (CKPT: `grove nlp classify train --task logic
--model om --epochs 0`, read with python/grove's read_checkpoint) and
trains on the batches grove recorded with GROVE_CLASSIFY_TRACE=FILE, one
optimizer step per batch; prints per batch grove's loss, this side's
loss and their relative difference. Use dropouts 0 on both sides (the
masks are not shared). --double runs this side in float64.

train (om_compare.sh, the scaled run): the logic protocol of the spec's
section 9 on DIR's train0-6 / test0-12: every 10th training pair (counting
from 1 over the files in order) for validation, the rest shuffled into
batches of 128 each epoch (the last one short), ReduceLROnPlateau on
validation accuracy (factor 0.5, patience 2, threshold 0), validation at
--nslot slots, test per file at --nslot-eval; writes CSV with the columns
of grove's metrics.csv (epoch, train_loss, train_acc, valid_acc,
test_acc, test_acc_1..12, lr, wall_s).

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
# python/grove's checkpoint reader (replay; msgpack and numpy, no libgrove)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))
import grove  # noqa: E402


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
    opt = make_optimizer(model)
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


# ---- grove's weights (replay) -------------------------------------------

# grove's tensor names (the reference's module paths) -> this file's modules
GROVE_NAMES = {
    "enc.embedding.weight": "embedding.weight",
    "enc.encoder.OM_forward.input_projection.0": "om.proj.0",
    "enc.encoder.OM_forward.activation": "om.ln",
    "enc.encoder.OM_forward.distribution.query.1": "om.dist.query.1",
    "enc.encoder.OM_forward.distribution.query.2": "om.dist.query.2",
    "enc.encoder.OM_forward.distribution.key.1": "om.dist.key.1",
    "enc.encoder.OM_forward.distribution.key.2": "om.dist.key.2",
    "enc.encoder.OM_forward.distribution.beta.2": "om.dist.beta.2",
    "enc.encoder.OM_forward.cell.input_t.1": "om.cell.net.1",
    "enc.encoder.OM_forward.cell.input_t.4": "om.cell.net.4",
    "head.fc1": "mlp.1",
    "head.out": "mlp.4",
}


def load_grove(model, path):
    try:
        w = grove.read_checkpoint(path, kinds=("param",)).params()
    except grove.GroveError as e:
        raise SystemExit(str(e))
    own = dict(model.named_parameters())
    done = set()
    for gname, arr in w.items():
        mine = None
        for g, m in GROVE_NAMES.items():
            if gname == g:
                mine = m
            elif gname.startswith(g + "."):
                mine = m + gname[len(g):]
        if mine is None or mine not in own:
            raise SystemExit("%s: tensor %s has no place in this model "
                             "(an OM logic classifier?)" % (path, gname))
        if tuple(own[mine].shape) != arr.shape:
            raise SystemExit("%s: %s is %s, this model's %s is %s" %
                             (path, gname, arr.shape, mine,
                              tuple(own[mine].shape)))
        with torch.no_grad():
            own[mine].copy_(torch.from_numpy(arr.copy()))
        done.add(mine)
    missing = sorted(set(own) - done - {"om.cell.ln.weight",
                                        "om.cell.ln.bias",
                                        "om.proj.1.weight", "om.proj.1.bias"})
    if missing:
        raise SystemExit("%s: no tensor for %s" % (path, ", ".join(missing)))


def read_trace(path):
    """The records of GROVE_CLASSIFY_TRACE: (ids [T, rows], labels, loss)."""
    with open(path) as f:
        lines = f.read().split("\n")
    out, i = [], 0
    while i < len(lines) and lines[i]:
        head = lines[i].split()
        if head[0] != "batch" or len(head) != 7:
            raise SystemExit("%s:%d: not a batch record" % (path, i + 1))
        T, rows, n, loss = int(head[3]), int(head[4]), int(head[5]), \
            float(head[6])
        ids = torch.tensor([[int(x) for x in lines[i + 1 + t].split()]
                            for t in range(T)])
        lab = torch.tensor([int(x) for x in lines[i + 1 + T].split()])
        if ids.shape != (T, rows) or lab.shape != (n,):
            raise SystemExit("%s:%d: sizes do not match the record" %
                             (path, i + 1))
        out.append((ids, lab, loss))
        i += T + 2
    return out


def make_optimizer(model, lr=1e-3):
    return torch.optim.Adam(model.parameters(), lr=lr, betas=(0.0, 0.999),
                            eps=1e-9, weight_decay=1.2e-6)


def replay(a):
    torch.manual_seed(1111)
    model = Classifier(a)
    load_grove(model, a.init)
    if a.double:
        model = model.double()
    params = list(model.parameters())
    opt = make_optimizer(model)
    model.train()
    print("step grove_loss ref_loss rel_diff")
    worst = 0.0
    for k, (ids, lab, gloss) in enumerate(read_trace(a.trace)):
        opt.zero_grad()
        loss = F.cross_entropy(model(ids), lab)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        r = abs(float(loss) - gloss) / abs(gloss)
        worst = max(worst, r)
        print("%d %.9g %.9g %.3g" % (k + 1, gloss, float(loss), r))
    print("worst_rel_diff %.3g" % worst)


# ---- the scaled run (train) ---------------------------------------------

TOKENS = {w: i for i, w in enumerate(
    "( ) a b c d e f or and not".split())}
RELATIONS = "<>=^|#v"


def read_pairs(path):
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\r\n").split("\t")
            if len(parts) != 3 or parts[0] not in RELATIONS:
                raise SystemExit("%s:%d: not REL<TAB>LEFT<TAB>RIGHT" %
                                 (path, n))
            try:
                seqs = [[TOKENS[w] for w in p.split()] for p in parts[1:]]
            except KeyError as e:
                raise SystemExit("%s:%d: unknown token %s" % (path, n, e))
            out.append((seqs[0], seqs[1], RELATIONS.index(parts[0])))
    return out


def pair_batch(pairs):
    """ids [T, 2P] (the P premises then the P hypotheses, right padding
    with id 11) and the P labels, as grove's harness builds them."""
    P = len(pairs)
    T = max(max(len(a), len(b)) for a, b, _ in pairs)
    ids = torch.full((T, 2 * P), 11, dtype=torch.long)
    for j, (a, b, _) in enumerate(pairs):
        ids[:len(a), j] = torch.tensor(a)
        ids[:len(b), P + j] = torch.tensor(b)
    return ids, torch.tensor([r for _, _, r in pairs])


def accuracy(model, pairs, nslot, batch=256):
    model.eval()
    model.nslot = nslot
    order = sorted(range(len(pairs)),
                   key=lambda i: max(len(pairs[i][0]), len(pairs[i][1])))
    right = 0
    with torch.no_grad():
        for s in range(0, len(order), batch):
            ids, lab = pair_batch([pairs[i] for i in order[s:s + batch]])
            right += int((model(ids).argmax(1) == lab).sum())
    return right / max(1, len(pairs))


def train(a):
    torch.manual_seed(a.seed)
    pool = []
    for k in range(7):
        pool += read_pairs(os.path.join(a.data, "train%d" % k))
    valid = [p for i, p in enumerate(pool, 1) if i % 10 == 0]
    tr = [p for i, p in enumerate(pool, 1) if i % 10 != 0]
    tests = [read_pairs(os.path.join(a.data, "test%d" % k))
             for k in range(13)]
    model = Classifier(a)
    params = list(model.parameters())
    opt = make_optimizer(model)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(
        opt, mode="max", factor=0.5, patience=2, threshold=0.0)
    cols = ["epoch", "train_loss", "train_acc", "valid_acc", "test_acc"] + \
        ["test_acc_%d" % k for k in range(1, 13)] + ["lr", "wall_s"]
    print("data: %d train / %d valid pairs, %d test; torch %s, threads %d" %
          (len(tr), len(valid), sum(map(len, tests)), torch.__version__,
           torch.get_num_threads()), flush=True)
    t0 = time.perf_counter()
    with open(a.out, "w") as out:
        out.write(",".join(cols) + "\n")
        for epoch in range(1, a.epochs + 1):
            model.train()
            model.nslot = a.nslot
            perm = torch.randperm(len(tr)).tolist()
            loss_sum, right, seen = 0.0, 0, 0
            for s in range(0, len(perm), a.batch):
                ids, lab = pair_batch([tr[i] for i in perm[s:s + a.batch]])
                opt.zero_grad()
                logits = model(ids)
                loss = F.cross_entropy(logits, lab)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                opt.step()
                loss_sum += float(loss) * len(lab)
                right += int((logits.argmax(1) == lab).sum())
                seen += len(lab)
            lr = opt.param_groups[0]["lr"]
            v = accuracy(model, valid, a.nslot)
            sched.step(v)
            per = [accuracy(model, t, a.nslot_eval) if t else float("nan")
                   for t in tests]
            n_test = sum(map(len, tests))
            test = sum(p * len(t) for p, t in zip(per, tests) if t) / n_test
            row = [epoch, loss_sum / seen, right / seen, v, test] + \
                per[1:] + [lr, time.perf_counter() - t0]
            out.write(",".join("%.6g" % x for x in row) + "\n")
            out.flush()
            print("epoch %d: train loss %.4f acc %.4f, valid %.4f, test %.4f"
                  " (%.0f s)" % (epoch, row[1], row[2], v, test, row[-1]),
                  flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["speed", "replay", "train"])
    p.add_argument("--batches", help="speed: the batch file")
    p.add_argument("--init", help="replay: a grove checkpoint")
    p.add_argument("--trace", help="replay: GROVE_CLASSIFY_TRACE's file")
    p.add_argument("--double", action="store_true",
                   help="replay: float64 on this side")
    p.add_argument("--data", help="train: train0-6 and test0-12")
    p.add_argument("--out", help="train: the CSV written")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--emsize", type=int, default=200)
    p.add_argument("--nhid", type=int, default=200)
    p.add_argument("--nslot", type=int, default=12)
    p.add_argument("--nslot-eval", type=int, default=24)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--dropoutm", type=float, default=0.2)
    p.add_argument("--dropouti", type=float, default=0.1)
    p.add_argument("--dropouto", type=float, default=0.3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    need = {"speed": ["batches"], "replay": ["init", "trace"],
            "train": ["data", "out"]}[a.mode]
    for n in need:
        if getattr(a, n) is None:
            p.error("%s needs --%s" % (a.mode, n))
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    {"speed": speed, "replay": replay, "train": train}[a.mode](a)


if __name__ == "__main__":
    sys.exit(main())
