#!/usr/bin/python3
"""The PyTorch side of `grove bench trees` (bench/trees/bench_trees.h):
training sentences/s of the binary Tree-LSTM (hybrid_and_trees.md §3.2,
the same cell as grove's nlp/models/treenets.h) on SST-format trees, every
node supervised (Linear(H, 5), mean cross entropy over the batch's nodes),
Adam lr 1e-3, no dropout, no clipping, batches of B sentences in file order.

Two variants (issue 25 §4):
  pernode  the per-node recursion users usually write: one small matmul
           per node, children before parents;
  levels   level-batched: all nodes of one tree level of the batch at
           once (leaves, then every node whose children are done), the
           children's states gathered by index from a state bank that each
           level updates out of place (index_copy), one matmul per level.

    /usr/bin/python3 bench/trees/bench_treelstm.py speed --trees FILE
        --variant pernode|levels [--emsize 300] [--nhid 150] [--batch 25]
        [--warmup 1] [--threads 1]

FILE: one PTB-bracket SST tree per line (what grove also reads). The first
`warmup` batches are untimed. Prints the baseline_blas line of
bench/baseline_info.py, then
    sentences_per_s R seconds S cpu_sentences_per_s C
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import baseline_info  # noqa: E402  (bench/baseline_info.py)

CLASSES = 5


def parse(line):
    """(label, (left, right) or None, word) of a PTB-bracket tree."""
    toks = line.replace("(", " ( ").replace(")", " ) ").split()
    pos = 0

    def node():
        nonlocal pos
        assert toks[pos] == "("
        label = int(toks[pos + 1])
        pos += 2
        if toks[pos] != "(":
            word = toks[pos]
            pos += 2  # the word and ")"
            return (label, None, word)
        left = node()
        right = node()
        pos += 1
        return (label, (left, right), None)
    return node()


class TreeLSTM(torch.nn.Module):
    def __init__(self, vocab, E, H):
        super().__init__()
        self.H = H
        self.emb = torch.nn.Embedding(vocab, E)
        torch.nn.init.uniform_(self.emb.weight, -0.05, 0.05)
        self.leaf = torch.nn.Linear(E, 2 * H)
        self.ul = torch.nn.Linear(H, 5 * H)
        self.ur = torch.nn.Linear(H, 5 * H)
        self.out = torch.nn.Linear(H, CLASSES)

    # ---- per-node recursion ----
    def node(self, t, ids, hs, labels):
        label, kids, word = t
        H = self.H
        if kids is None:
            z = self.leaf(self.emb(torch.tensor(ids[word])))
            c = z[:H]
            h = torch.sigmoid(z[H:]) * torch.tanh(c)
        else:
            hl, cl = self.node(kids[0], ids, hs, labels)
            hr, cr = self.node(kids[1], ids, hs, labels)
            z = self.ul(hl) + self.ur(hr)
            i, fl, fr, o, u = z.split(H)
            c = torch.sigmoid(i) * torch.tanh(u) + torch.sigmoid(fl) * cl + \
                torch.sigmoid(fr) * cr
            h = torch.sigmoid(o) * torch.tanh(c)
        hs.append(h)
        labels.append(label)
        return h, c

    def loss_pernode(self, trees, ids):
        hs, labels = [], []
        for t in trees:
            self.node(t, ids, hs, labels)
        logits = self.out(torch.stack(hs))
        return torch.nn.functional.cross_entropy(logits, torch.tensor(labels))

    # ---- level batching ----
    def loss_levels(self, plan):
        """plan: (n, levels, labels) of a batch (schedule() below)."""
        n, levels, labels = plan
        H = self.H
        bank_h = torch.zeros(n, H)
        bank_c = torch.zeros(n, H)
        for lv, (rows, a, b) in enumerate(levels):
            if lv == 0:  # a: word ids
                z = self.leaf(self.emb(a))
                c = z[:, :H]
                h = torch.sigmoid(z[:, H:]) * torch.tanh(c)
            else:  # a, b: the left and right children's rows
                z = self.ul(bank_h[a]) + self.ur(bank_h[b])
                i, fl, fr, o, u = z.split(H, dim=1)
                c = torch.sigmoid(i) * torch.tanh(u) + \
                    torch.sigmoid(fl) * bank_c[a] + \
                    torch.sigmoid(fr) * bank_c[b]
                h = torch.sigmoid(o) * torch.tanh(c)
            bank_h = bank_h.index_copy(0, rows, h)
            bank_c = bank_c.index_copy(0, rows, c)
        logits = self.out(bank_h)
        return torch.nn.functional.cross_entropy(logits, labels)


def schedule(trees, ids):
    """Rows of every node of a batch by level: [(rows, a, b)] with a the
    word ids (level 0) or left-child rows, b the right-child rows."""
    by_level = []
    labels = []

    def walk(t):
        label, kids, word = t
        if kids is None:
            lv, a, b = 0, ids[word], 0
        else:
            rl, ll = walk(kids[0])
            rr, lr = walk(kids[1])
            lv, a, b = 1 + max(ll, lr), rl, rr
        row = len(labels)
        labels.append(label)
        while len(by_level) <= lv:
            by_level.append(([], [], []))
        by_level[lv][0].append(row)
        by_level[lv][1].append(a)
        by_level[lv][2].append(b)
        return row, lv

    for t in trees:
        walk(t)
    levels = [(torch.tensor(r), torch.tensor(a), torch.tensor(b))
              for r, a, b in by_level]
    return len(labels), levels, torch.tensor(labels)


def speed(a):
    with open(a.trees) as f:
        lines = [l for l in f if l.strip()]
    trees = [parse(l) for l in lines]
    ids = {}

    def words(t):
        if t[1] is None:
            ids.setdefault(t[2], len(ids))
        else:
            words(t[1][0])
            words(t[1][1])
    for t in trees:
        words(t)
    torch.manual_seed(1)
    m = TreeLSTM(len(ids), a.emsize, a.nhid)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    secs = cpu = 0.0
    done = 0
    for k, b in enumerate(range(0, len(trees), a.batch)):
        batch = trees[b:b + a.batch]
        t0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad()
        if a.variant == "pernode":
            loss = m.loss_pernode(batch, ids)
        else:
            loss = m.loss_levels(schedule(batch, ids))
        loss.backward()
        opt.step()
        if k >= a.warmup:
            secs += time.perf_counter() - t0
            cpu += time.process_time() - c0
            done += len(batch)
    baseline_info.print_line(torch)
    print("sentences_per_s %.4f seconds %.6f cpu_sentences_per_s %.4f" %
          (done / secs if secs > 0 else 0.0, secs,
           done / cpu if cpu > 0 else 0.0))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["speed"])
    p.add_argument("--trees", required=True)
    p.add_argument("--variant", choices=["pernode", "levels"],
                   required=True)
    p.add_argument("--emsize", type=int, default=300)
    p.add_argument("--nhid", type=int, default=150)
    p.add_argument("--batch", type=int, default=25)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    speed(a)


if __name__ == "__main__":
    sys.exit(main())
