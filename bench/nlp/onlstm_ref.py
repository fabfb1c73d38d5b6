#!/usr/bin/python3
"""The ON-LSTM language model of on_lstm.md written in PyTorch the way the
reference (yikangshen/Ordered-Neurons) runs it: one input-side Linear per
layer per window, then a Python loop over time steps with the hidden-side
Linear (DropConnect mask sampled once per forward call, kept weights not
rescaled), cumax master gates, locked dropouts, embedding dropout, a tied
decoder, AR/TAR, clip_grad_norm_, SGD with weight decay -> NT-ASGD.
grove's baseline for `grove bench nlp` and for the scaled comparison run.

  speed: training tokens per second on random tokens (fixed window T)
    onlstm_ref.py speed --emsize 400 --nhid 1150 --batch 20 --bptt 70 \
        --windows 3 --warmup 1 --threads 2
    prints one line: "tokens_per_s 1234.5 seconds_per_window 1.23"
  train: the schedule of main.py (on_lstm.md §8) on PTB, one CSV row per
    epoch (epoch,val_loss,val_ppl,seconds) on stdout, test ppl at the end
    onlstm_ref.py train --data DIR --epochs 5 --max-batches 0 ...

Run with Debian's python3-torch (/usr/bin/python3).
"""
import argparse
import math
import os
import struct
import sys
import time
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import baseline_info  # noqa: E402  (bench/baseline_info.py)

# measured faster with freed memory kept (bench/baseline_info.py)
baseline_info.keep_freed_memory()


# ---- grove's random numbers (core/random.h, kernels/rng.h, nlp/models/onlstm.c,
# nlp/tasks/lm.c), for --grove-rng: the same window lengths and dropout
# masks as a grove run with the same --seed, so that from the same initial
# weights (--init-grove) the two runs compute the same steps with every
# dropout on ----

_M32, _M64 = 0xFFFFFFFF, (1 << 64) - 1


def _mix64(z):
    """splitmix64's finaliser on a Python int (64 bits)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def grove_key(seed, a, b, c, d):
    """The Philox key of grove's draw gr_rng_make(seed,
    gr_rng_stream(a, b, c, d))."""
    h = _mix64((a + 0x9E3779B97F4A7C15) & _M64)
    h = _mix64(h ^ ((b + 0x632BE59BD9B4E019) & _M64))
    h = _mix64(h ^ ((c + 0x85EBCA77C2B2AE63) & _M64))
    stream = _mix64(h ^ ((d + 0x27D4EB2F165667C5) & _M64))
    return _mix64(seed ^ _mix64((stream + 0x9E3779B97F4A7C15) & _M64))


def philox_words(key, n, first=0):
    """Words first .. first+n-1 of the Philox 4x32-10 stream keyed by key
    (counter from 0; word i is word i % 4 of block i / 4), as uint64."""
    if n <= 0:
        return np.zeros(0, dtype=np.uint64)
    b0, b1 = first // 4, (first + n - 1) // 4 + 1
    blk = np.arange(b0, b1, dtype=np.uint64)
    m32 = np.uint64(_M32)
    c0, c1 = blk & m32, blk >> np.uint64(32)
    c2, c3 = np.zeros_like(blk), np.zeros_like(blk)
    k0, k1 = key & _M32, key >> 32
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c0
        p1 = np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0),
                          p1 & m32,
                          (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1),
                          p0 & m32)
        k0, k1 = (k0 + 0x9E3779B9) & _M32, (k1 + 0xBB67AE85) & _M32
    out = np.stack([c0, c1, c2, c3], axis=1).reshape(-1)
    return out[first - 4 * b0:first - 4 * b0 + n]


def grove_uniform(words):
    """grove's gr_u32_to_uniform: 24 bits, exact in float32."""
    return (words >> np.uint64(8)).astype(np.float32) * \
        np.float32(1.0 / 16777216.0)


class GroveRng:
    """The draws of one grove training run (nlp/models/onlstm.h NLP_LM_RNG_*): window
    lengths from one stream per epoch, and per window the embedding mask,
    the input mask, each layer's DropConnect mask, the masks between
    layers and the output mask, each element i being word i of its own
    key. Masks come back as float32 tensors of 0/1."""
    WINDOW, EMBED, INPUT, WEIGHT, HIDDEN, OUTPUT = 1, 2, 3, 4, 5, 6

    def __init__(self, seed):
        self.seed = seed
        self.start_epoch(0)

    def start_epoch(self, epoch):
        self.epoch, self.window, self.drawn = epoch, 0, 0
        self.wkey = grove_key(self.seed, epoch, 0, self.WINDOW, 0)

    def window_length(self, bptt):
        """nlp_lm_window_length: 0.95 / 0.05 for bptt or bptt / 2, then a
        Box-Muller normal with sd 5, truncated toward zero, at least 5."""
        u, u1, u2 = (float(v) for v in
                     grove_uniform(philox_words(self.wkey, 3, self.drawn)))
        self.drawn += 3
        base = float(bptt) if u < 0.95 else bptt / 2.0
        z = math.sqrt(-2.0 * math.log(1.0 - u1)) * \
            math.cos(6.283185307179586 * u2)
        return int(max(5.0, min(1e6, math.trunc(base + 5.0 * z))))

    def keep(self, purpose, layer, shape, p):
        n = int(np.prod(shape))
        key = grove_key(self.seed, self.epoch, self.window, purpose, layer)
        u = grove_uniform(philox_words(key, n))
        return torch.from_numpy((u >= np.float32(p)).astype(np.float32)
                                .reshape(shape))

    def scaled(self, purpose, layer, shape, p):
        """A kept element times grove's 1.0f / (1.0f - p)."""
        scale = np.float32(1.0) / (np.float32(1.0) - np.float32(p))
        return self.keep(purpose, layer, shape, p) * float(scale)


def cumax(x):
    return torch.cumsum(F.softmax(x, dim=-1), dim=-1)


class Cell(nn.Module):
    """One ON-LSTM layer (on_lstm.md §3): rows mi, mf, o, c, i, f. With
    kind "ft" (FastTrees, fasttrees.md §2) hh has 4H rows and reaches the
    ordinary gates only; with "fft" (Faster FastTrees, §4) there is no hh
    (the reference allocates one and never uses it); both still loop over
    time in Python, as the reference does."""

    def __init__(self, n_in, n_hid, chunk, wdrop, kind="onlstm"):
        super().__init__()
        self.n_hid, self.chunk, self.n = n_hid, chunk, n_hid // chunk
        self.kind = kind
        rows = 4 * n_hid + 2 * self.n
        self.ih = nn.Linear(n_in, rows)
        self.hh = None
        if kind == "onlstm":
            self.hh = nn.Linear(n_hid, rows)
        elif kind == "ft":
            self.hh = nn.Linear(n_hid, 4 * n_hid)
        self.wdrop = wdrop
        self.u = None

    def sample_mask(self, training, grove=None, layer=0):
        if self.hh is None:
            return
        w = self.hh.weight
        if not training:
            self.u = w * (1 - self.wdrop)
        elif self.wdrop > 0:
            if grove is not None:
                keep = grove.keep(GroveRng.WEIGHT, layer, tuple(w.shape),
                                  self.wdrop).to(w.device)
            else:
                keep = torch.empty_like(w).bernoulli_(1 - self.wdrop)
            self.u = w * keep  # dropped -> 0, kept not rescaled
        else:
            # a plain tensor: assigning the Parameter itself would register
            # u as a second parameter, and the evaluation's product could
            # then not be assigned to it
            self.u = w.view_as(w)

    def step(self, xi, h, c):
        B, n, C = xi.shape[0], self.n, self.chunk
        if self.kind == "onlstm":
            z = xi + F.linear(h, self.u, self.hh.bias)
        elif self.kind == "ft":
            z = torch.cat([xi[:, :2 * n],
                           xi[:, 2 * n:] + F.linear(h, self.u, self.hh.bias)],
                          1)
        else:
            z = xi
        mi = 1.0 - cumax(z[:, :n])
        mf = cumax(z[:, n:2 * n])
        g = z[:, 2 * n:].view(B, 4 * n, C)
        o, cc, i, f = g.chunk(4, 1)
        o, cc, i, f = torch.sigmoid(o), torch.tanh(cc), torch.sigmoid(i), \
            torch.sigmoid(f)
        df = 1.0 - mf.sum(-1) / n
        mi, mf = mi[:, :, None], mf[:, :, None]
        ov = mf * mi
        c = (f * ov + (mf - ov)) * c + (i * ov + (mi - ov)) * cc
        h = o * torch.tanh(c)
        return h.view(B, -1), c, df


def locked(x, p, training, grove=None, purpose=0, layer=0):
    if not training or p == 0:
        return x
    if grove is not None:
        m = grove.scaled(purpose, layer, (1, x.size(1), x.size(2)), p)
        return x * m.to(x.device)
    m = x.new_empty(1, x.size(1), x.size(2)).bernoulli_(1 - p) / (1 - p)
    return x * m


class LM(nn.Module):
    def __init__(self, a, ntok):
        super().__init__()
        sizes = [a.emsize] + [a.nhid] * (a.nlayers - 1) + [a.emsize]
        self.cells = nn.ModuleList(
            [Cell(sizes[i], sizes[i + 1], a.chunk, a.wdrop,
                  getattr(a, "model", "onlstm"))
             for i in range(a.nlayers)])
        self.encoder = nn.Embedding(ntok, a.emsize)
        self.decoder_bias = nn.Parameter(torch.zeros(ntok))
        self.encoder.weight.data.uniform_(-0.1, 0.1)
        self.a = a
        self.grove = None  # a GroveRng: grove's masks instead of torch's

    def init_hidden(self, bsz):
        w = self.encoder.weight
        return [(w.new_zeros(bsz, c.n_hid), w.new_zeros(bsz, c.n, c.chunk))
                for c in self.cells]

    def forward(self, x, hidden):
        a, tr, g = self.a, self.training, self.grove
        w = self.encoder.weight
        if tr and a.dropoute > 0:
            if g is not None:
                w = w * g.scaled(GroveRng.EMBED, 0, (w.size(0), 1),
                                 a.dropoute).to(w.device)
            else:
                m = w.new_empty(w.size(0), 1).bernoulli_(1 - a.dropoute)
                w = w * (m / (1 - a.dropoute))
        y = locked(F.embedding(x, w), a.dropouti, tr, g, GroveRng.INPUT)
        new_hidden, raw = [], None
        for l, cell in enumerate(self.cells):
            cell.sample_mask(tr, g, l)
            xi = cell.ih(y)  # one product for the window
            h, c = hidden[l]
            outs = []
            for t in range(x.size(0)):
                h, c, _ = cell.step(xi[t], h, c)
                outs.append(h)
            y = torch.stack(outs)
            new_hidden.append((h, c))
            if l < len(self.cells) - 1:
                y = locked(y, a.dropouth, tr, g, GroveRng.HIDDEN, l)
            else:
                raw = y
        out = locked(raw, a.dropout, tr, g, GroveRng.OUTPUT)
        logits = F.linear(out.view(-1, out.size(2)), self.encoder.weight,
                          self.decoder_bias)
        return logits, new_hidden, raw


# ---- grove checkpoints (kernels/checkpoint.c: a msgpack map; tensors as
# little-endian f32 blobs with a CRC-32), for --init-grove ----

def _mp_unpack(b, i):
    """One msgpack value at b[i:], the subset grove's checkpoints use."""
    t = b[i]
    if t <= 0x7f:
        return t, i + 1
    if 0x80 <= t <= 0x8f or t in (0xde, 0xdf):
        n, i = _mp_len(b, i, t, 0xde)
        d = {}
        for _ in range(n):
            k, i = _mp_unpack(b, i)
            d[k], i = _mp_unpack(b, i)
        return d, i
    if 0x90 <= t <= 0x9f or t in (0xdc, 0xdd):
        n, i = _mp_len(b, i, t, 0xdc)
        out = []
        for _ in range(n):
            v, i = _mp_unpack(b, i)
            out.append(v)
        return out, i
    if 0xa0 <= t <= 0xbf:
        n = t & 31
        return bytes(b[i + 1:i + 1 + n]).decode(), i + 1 + n
    ints = {0xcc: ">B", 0xcd: ">H", 0xce: ">I", 0xcf: ">Q"}
    if t in ints:
        k = struct.calcsize(ints[t])
        return struct.unpack_from(ints[t], b, i + 1)[0], i + 1 + k
    blobs = {0xc4: ">B", 0xc5: ">H", 0xc6: ">I",
             0xd9: ">B", 0xda: ">H", 0xdb: ">I"}
    if t in blobs:
        k = struct.calcsize(blobs[t])
        n = struct.unpack_from(blobs[t], b, i + 1)[0]
        v = bytes(b[i + 1 + k:i + 1 + k + n])
        if len(v) != n:
            raise ValueError("truncated at byte %d" % i)
        return (v.decode() if t >= 0xd9 else v), i + 1 + k + n
    raise ValueError("unexpected msgpack type 0x%02x at byte %d" % (t, i))


def _mp_len(b, i, t, first16):
    """Element count of a map or array: fix form (count in the low 4 bits)
    below first16, else a 16- or 32-bit count after the type byte."""
    if t < first16:
        return t & 15, i + 1
    f = ">H" if t == first16 else ">I"
    return struct.unpack_from(f, b, i + 1)[0], i + 1 + struct.calcsize(f)


def load_grove_init(model, path):
    """Copies the parameters of a grove ON-LSTM LM checkpoint (for example
    the last.ckpt of `grove nlp lm train --epochs 0`) into model."""
    with open(path, "rb") as f:
        root, _ = _mp_unpack(f.read(), 0)
    if not isinstance(root, dict) or root.get("format") != "grove-checkpoint":
        sys.exit("%s: not a grove checkpoint" % path)
    tensors = root["tensors"]
    names = {"encoder.weight": model.encoder.weight,
             "decoder.bias": model.decoder_bias}
    for l, cell in enumerate(model.cells):
        for side, lin in (("ih.0", cell.ih), ("hh", cell.hh)):
            side_name = "rnn.cells.%d.%s." % (l, side)
            names[side_name + "weight"] = lin.weight
            names[side_name + "bias"] = lin.bias
    for name, p in names.items():
        t = tensors.get(name)
        if t is None:
            sys.exit("%s: no tensor '%s' (is it an ON-LSTM LM of the same "
                     "size?)" % (path, name))
        if list(t["shape"]) != list(p.shape):
            sys.exit("%s: tensor '%s' has shape %s, the model wants %s"
                     % (path, name, t["shape"], list(p.shape)))
        if zlib.crc32(t["data"]) != t["crc32"]:
            sys.exit("%s: tensor '%s' fails its CRC" % (path, name))
        v = torch.frombuffer(bytearray(t["data"]), dtype=torch.float32)
        with torch.no_grad():
            p.copy_(v.view(p.shape))
    return len(names)


def detach(hidden):
    return [(h.detach(), c.detach()) for h, c in hidden]


def train_step(model, opt, params, data, targets, hidden, a):
    model.train()
    hidden = detach(hidden)
    opt.zero_grad()
    logits, hidden, raw = model(data, hidden)
    raw_loss = F.cross_entropy(logits, targets.view(-1))
    loss = raw_loss + a.alpha * raw.pow(2).mean()  # AR on the raw output
    if raw.size(0) > 1:
        loss = loss + a.beta * (raw[1:] - raw[:-1]).pow(2).mean()
    loss.backward()
    if a.clip:
        torch.nn.utils.clip_grad_norm_(params, a.clip)
    opt.step()
    return raw_loss.item(), hidden


def speed(a):
    baseline_info.print_line(torch)
    dev = torch.device(a.device)
    model = LM(a, a.vocab).to(dev)
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=a.lr, weight_decay=a.wdecay)
    g = torch.Generator().manual_seed(a.seed)
    data = torch.randint(0, a.vocab, (a.bptt + 1, a.batch),
                         generator=g).to(dev)
    hidden = model.init_hidden(a.batch)
    times = []
    for k in range(a.warmup + a.windows):
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        _, hidden = train_step(model, opt, params, data[:-1], data[1:],
                               hidden, a)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        if k >= a.warmup:
            times.append(time.perf_counter() - t0)
    times.sort()
    med = times[len(times) // 2]
    print("tokens_per_s %.3f seconds_per_window %.6f" %
          (a.bptt * a.batch / med, med))


# ---- training (main.py's schedule) ----

def read_corpus(d):
    vocab, splits = {}, []
    for name in ("train", "valid", "test"):
        p = os.path.join(d, "ptb.%s.txt" % name)
        if not os.path.exists(p):
            p = os.path.join(d, "%s.txt" % name)
        ids = []
        with open(p) as f:
            for line in f:
                for w in line.split() + ["<eos>"]:
                    if w not in vocab:
                        vocab[w] = len(vocab)
                    ids.append(vocab[w])
        splits.append(torch.tensor(ids, dtype=torch.long))
    return vocab, splits


def batchify(ids, bsz, dev):
    n = ids.size(0) // bsz
    return ids[:n * bsz].view(bsz, n).t().contiguous().to(dev)


def evaluate(model, src, bsz, a):
    model.eval()
    total = 0.0
    hidden = model.init_hidden(bsz)
    with torch.no_grad():
        for i in range(0, src.size(0) - 1, a.bptt):
            T = min(a.bptt, src.size(0) - 1 - i)
            logits, hidden, _ = model(src[i:i + T], hidden)
            total += T * F.cross_entropy(
                logits, src[i + 1:i + 1 + T].reshape(-1)).item()
    return total / src.size(0)  # the reference's divisor (rows)


def train(a):
    np.random.seed(a.seed)
    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    vocab, (tr, va, te) = read_corpus(a.data)
    train_data = batchify(tr, a.batch, dev)
    val_data = batchify(va, 10, dev)
    test_data = batchify(te, a.test_batch, dev)
    model = LM(a, len(vocab))
    if a.init_grove:
        n = load_grove_init(model, a.init_grove)
        print("# initial weights: %d tensors from %s" % (n, a.init_grove),
              file=sys.stderr, flush=True)
    model = model.to(dev)
    if a.grove_rng:
        model.grove = GroveRng(a.seed)
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=a.lr, weight_decay=a.wdecay)
    best, hist, stored = None, [], 1e8
    print("epoch,val_loss,val_ppl,seconds,phase", flush=True)
    for epoch in range(1, a.epochs + 1):
        t0 = time.time()
        hidden = model.init_hidden(a.batch)
        i, batch = 0, 0
        if model.grove is not None:
            model.grove.start_epoch(epoch)
        while i < train_data.size(0) - 1 - 1:
            if a.max_batches and batch >= a.max_batches:
                break
            if model.grove is not None:
                model.grove.window = batch
            if a.fixed_windows:
                seq_len = a.bptt
            elif model.grove is not None:
                seq_len = model.grove.window_length(a.bptt)
            else:
                bptt = a.bptt if np.random.random() < 0.95 else a.bptt / 2.
                seq_len = max(5, int(np.random.normal(bptt, 5)))
            lr2 = opt.param_groups[0]["lr"]
            opt.param_groups[0]["lr"] = lr2 * seq_len / a.bptt
            T = min(seq_len, train_data.size(0) - 1 - i)
            _, hidden = train_step(model, opt, params, train_data[i:i + T],
                                   train_data[i + 1:i + 1 + T], hidden, a)
            opt.param_groups[0]["lr"] = lr2
            batch += 1
            i += seq_len
        asgd = "t0" in opt.param_groups[0]
        if asgd:
            tmp = {}
            for p in params:
                tmp[p] = p.data.clone()
                p.data = opt.state[p]["ax"].clone()
            v = evaluate(model, val_data, 10, a)
            if v < stored:
                best = {k: t.clone() for k, t in model.state_dict().items()}
                stored = v
            for p in params:
                p.data = tmp[p].clone()
            if epoch == a.finetuning:
                opt = torch.optim.ASGD(params, lr=a.lr, t0=0, lambd=0.,
                                       weight_decay=a.wdecay)
                hist = []
        else:
            v = evaluate(model, val_data, 10, a)
            if v < stored:
                best = {k: t.clone() for k, t in model.state_dict().items()}
                stored = v
            if len(hist) > a.nonmono and v > min(hist[:-a.nonmono]):
                opt = torch.optim.ASGD(params, lr=a.lr, t0=0, lambd=0.,
                                       weight_decay=a.wdecay)
            hist.append(v)
        print("%d,%.6f,%.4f,%.1f,%s" % (epoch, v, math.exp(v),
                                        time.time() - t0,
                                        "asgd" if asgd else "sgd"),
              flush=True)
    model.load_state_dict(best)
    t = evaluate(model, test_data, a.test_batch, a)
    print("test_loss %.6f test_ppl %.4f" % (t, math.exp(t)), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["speed", "train"])
    p.add_argument("--data", default="")
    p.add_argument("--model", choices=["onlstm", "ft", "fft"],
                   default="onlstm",
                   help="the cell (speed mode): ON-LSTM, FastTrees, Faster "
                        "FastTrees")
    p.add_argument("--vocab", type=int, default=10000)
    p.add_argument("--emsize", type=int, default=400)
    p.add_argument("--nhid", type=int, default=1150)
    p.add_argument("--nlayers", type=int, default=3)
    p.add_argument("--chunk", type=int, default=10)
    p.add_argument("--batch", type=int, default=20)
    p.add_argument("--test-batch", type=int, default=1)
    p.add_argument("--bptt", type=int, default=70)
    p.add_argument("--lr", type=float, default=30)
    p.add_argument("--clip", type=float, default=0.25)
    p.add_argument("--dropout", type=float, default=0.45)
    p.add_argument("--dropouth", type=float, default=0.3)
    p.add_argument("--dropouti", type=float, default=0.5)
    p.add_argument("--dropoute", type=float, default=0.1)
    p.add_argument("--wdrop", type=float, default=0.45)
    p.add_argument("--alpha", type=float, default=2)
    p.add_argument("--beta", type=float, default=1)
    p.add_argument("--wdecay", type=float, default=1.2e-6)
    p.add_argument("--nonmono", type=int, default=5)
    p.add_argument("--finetuning", type=int, default=500)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-batches", type=int, default=0)
    p.add_argument("--seed", type=int, default=141)
    p.add_argument("--init-grove", default="",
                   help="start from the weights of a grove checkpoint")
    p.add_argument("--fixed-windows", action="store_true",
                   help="windows of exactly --bptt steps (as grove's flag)")
    p.add_argument("--grove-rng", action="store_true",
                   help="window lengths and dropout masks drawn as grove "
                   "draws them for the same --seed")
    p.add_argument("--windows", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    if a.nhid % a.chunk or a.emsize % a.chunk:
        sys.exit("layer sizes must be multiples of --chunk")
    speed(a) if a.mode == "speed" else train(a)


if __name__ == "__main__":
    main()
