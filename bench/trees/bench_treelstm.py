#!/usr/bin/python3
"""Training speed of grove's binary Tree-LSTM (level-batched,
nlp/models/treenets.h) against the per-node PyTorch recursion users would
otherwise write (issue 25 §4), on the same SST sentences, same sizes
(E 300, H 150, 5 classes, every node supervised), Adam, batch 25, one
thread each side, measured in the same run.

    /usr/bin/python3 bench/trees/bench_treelstm.py GROVE SST_DIR [N]

GROVE: the grove binary; SST_DIR: the PTB-bracket train/dev/test.txt;
N: training sentences timed (default 250). Prints one table row per side
with sentences/s and the ratio. grove's figure is its progress line's
batches/s over one epoch of the N sentences (training only: the
evaluation that follows is not timed).
"""
import os
import re
import subprocess
import sys
import tempfile
import time

import torch

E, H, C, BATCH = 300, 150, 5, 25


def parse(line):
    """(label, children, word) of a PTB-bracket tree, as nested tuples."""
    toks = line.replace("(", " ( ").replace(")", " ) ").split()
    pos = 0

    def node():
        nonlocal pos
        assert toks[pos] == "("
        label = int(toks[pos + 1])
        pos += 2
        if toks[pos] != "(":
            word = toks[pos]
            pos += 2  # word and ")"
            return (label, None, word)
        left = node()
        right = node()
        pos += 1
        return (label, (left, right), None)
    return node()


class TreeLSTM(torch.nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, E)
        self.leaf = torch.nn.Linear(E, 2 * H)
        self.ul = torch.nn.Linear(H, 5 * H)
        self.ur = torch.nn.Linear(H, 5 * H)
        self.out = torch.nn.Linear(H, C)

    def node(self, t, ids, logits, labels):
        label, kids, word = t
        if kids is None:
            z = self.leaf(self.emb(torch.tensor(ids[word])))
            c = z[:H]
            h = torch.sigmoid(z[H:]) * torch.tanh(c)
        else:
            hl, cl = self.node(kids[0], ids, logits, labels)
            hr, cr = self.node(kids[1], ids, logits, labels)
            z = self.ul(hl) + self.ur(hr)
            i, fl, fr, o, u = z.split(H)
            c = torch.sigmoid(i) * torch.tanh(u) + torch.sigmoid(fl) * cl + \
                torch.sigmoid(fr) * cr
            h = torch.sigmoid(o) * torch.tanh(c)
        logits.append(self.out(h))
        labels.append(label)
        return h, c


def torch_rate(trees, ids):
    torch.set_num_threads(1)
    torch.manual_seed(1)
    m = TreeLSTM(len(ids))
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    t0 = time.perf_counter()
    for b in range(0, len(trees), BATCH):
        opt.zero_grad()
        logits, labels = [], []
        for t in trees[b:b + BATCH]:
            m.node(t, ids, logits, labels)
        loss = torch.nn.functional.cross_entropy(torch.stack(logits),
                                                 torch.tensor(labels))
        loss.backward()
        opt.step()
    return len(trees) / (time.perf_counter() - t0)


def grove_rate(grove, sst, lines):
    with tempfile.TemporaryDirectory() as tmp:
        train = os.path.join(tmp, "train.txt")
        with open(train, "w") as f:
            f.writelines(lines)
        out = os.path.join(tmp, "run")
        r = subprocess.run(
            [grove, "nlp", "classify", "train", "--task", "sst5", "--model",
             "treelstm", "--train", train, "--valid",
             os.path.join(sst, "dev.txt"), "--test",
             os.path.join(sst, "test.txt"), "--epochs", "1", "--threads",
             "1", "--out", out], capture_output=True, text=True, check=True)
    rates = re.findall(r"([0-9.]+) batches/s", r.stderr)
    if not rates:
        sys.exit("no batches/s in grove's output:\n" + r.stderr)
    return float(rates[-1]) * BATCH


def main():
    grove, sst = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 250
    with open(os.path.join(sst, "train.txt")) as f:
        lines = f.readlines()[:n]
    trees = [parse(l) for l in lines]
    ids = {}
    for l in lines:
        for w in re.findall(r"\(\d ([^()\s]+)\)", l):
            ids.setdefault(w, len(ids))
    g = grove_rate(grove, sst, lines)
    t = torch_rate(trees, ids)
    print("| binary Tree-LSTM, SST, %d sentences, batch %d, 1 thread | "
          "sentences/s |" % (n, BATCH))
    print("|---|---|")
    print("| grove (level-batched) | %.1f |" % g)
    print("| PyTorch %s, per-node recursion | %.1f |" % (torch.__version__, t))
    print("| ratio | %.2fx |" % (g / t))


if __name__ == "__main__":
    main()
