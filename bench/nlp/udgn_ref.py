#!/usr/bin/python3
"""PyTorch reference of UDGN and StructFormer MLM training for grove's
benchmark (`grove bench nlp --model udgn|structformer`).

Written from ../shared/spec/udgn.md (§3-§5 UDGN, §7 StructFormer) with the
reference code's module structure: nn.Embedding / nn.LSTM (packed
sequences) / nn.Linear / nn.LayerNorm / nn.Conv1d, whole-tensor einsums
for the channel competition and the parent distribution. The StructFormer
is the configuration grove's MLM trainer builds (google-research's: affine
LayerNorms, 500 learned positions, conv 9, FFN 4d, LeakyReLU; plus the
UDGN copy's parser dropout). One training step: forward with every
dropout, mean cross entropy over the masked positions, backward, global
norm clipping at 0.25, Adam (lr 1e-3, eps 1e-9, weight decay 1.2e-6).

  udgn_ref.py speed --model udgn|structformer --batches FILE --vocab V
                    [--nemb 512 --nlayers 8 --nheads 8 --head-size 128
                     --parser-layers 3 --pos-classes 5]
                    [--warmup 1] [--threads 1]

FILE (written by grove, so both sides train on the same batches): first
line the number of batches; per batch a line "B n", a line of B lengths,
B lines of n input ids (batch-major, masked, right-padded with <pad> = 1),
B lines of n targets (-1 where not masked). The first --warmup batches are
untimed. Prints the baseline_blas line of bench/baseline_info.py and
  tokens_per_s <real tokens / timed seconds> seconds <timed seconds> \
      peak_rss_kb <ru_maxrss> cpu_tokens_per_s <per CPU second> \
      params <parameter count>
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


def xavier_linear(n_in, n_out, bias=True):
    lin = nn.Linear(n_in, n_out, bias=bias)
    nn.init.xavier_uniform_(lin.weight)
    if bias:
        nn.init.zeros_(lin.bias)
    return lin


def mlm_loss(z, emb, out_bias, targets):
    sel = targets >= 0
    logits = F.linear(z[sel], emb.weight, out_bias)
    return F.cross_entropy(logits, targets[sel])


# ---- UDGN (udgn.md §3-§5) -------------------------------------------------

class DGNLayer(nn.Module):
    def __init__(self, d, C, dc, dropout, dropatt):
        super().__init__()
        self.proj = xavier_linear(d, 4 * C * dc)
        self.relpos = nn.Parameter(torch.empty(2, C).uniform_(-0.1, 0.1))
        self.out = xavier_linear(C * dc, d)
        self.C, self.dc = C, dc
        self.drop = nn.Dropout(dropout)
        self.dropatt = nn.Dropout(dropatt)

    def forward(self, x, M, valid):
        B, n, _ = x.shape
        q, k, v, g = self.proj(x).view(B, n, 4, self.C, self.dc).unbind(2)
        s = torch.einsum("bicd,bjcd->bijc", q, k)           # [B, i, j, C]
        idx = torch.arange(n, device=x.device)
        left = (idx[None, :] < idx[:, None])[:, :, None]     # j < i
        right = (idx[None, :] > idx[:, None])[:, :, None]
        bias = left * self.relpos[0] + right * self.relpos[1]
        s = (s + bias) / math.sqrt(self.dc)                  # bias first
        w = torch.exp(F.log_softmax(s, -1) +
                      torch.log(M + 1e-6)[:, :, :, None])
        w = w.masked_fill(~valid[:, None, :, None], 0.0)
        w = self.dropatt(w)
        o = torch.sigmoid(g) * torch.einsum("bijc,bjcd->bicd", w,
                                            torch.tanh(v))
        return x + self.drop(self.out(self.drop(o.reshape(B, n, -1))))


class UDGN(nn.Module):
    def __init__(self, a):
        super().__init__()
        d, K = a.nemb, a.pos_classes
        self.emb = nn.Embedding(a.vocab, d)
        self.pemb = nn.Embedding(a.vocab, d)
        nn.init.uniform_(self.emb.weight, -0.1, 0.1)
        nn.init.uniform_(self.pemb.weight, -0.1, 0.1)
        self.K = K
        if K > 0:
            self.ptable = nn.Embedding(a.vocab, K + 1)
            nn.init.zeros_(self.ptable.weight)
            self.pproj = nn.Linear(K, d, bias=False)
            nn.init.uniform_(self.pproj.weight, -0.1, 0.1)
        self.lstm = nn.LSTM(d, d, a.parser_layers, batch_first=True,
                            bidirectional=True, dropout=a.parser_dropout
                            if a.parser_layers > 1 else 0.0)
        self.mlp = xavier_linear(2 * d, 2 * d)
        self.layers = nn.ModuleList(
            DGNLayer(d, a.nheads, a.head_size, a.dropout, a.dropatt)
            for _ in range(a.nlayers))
        self.norm = nn.LayerNorm(d)
        self.out_bias = nn.Parameter(torch.zeros(a.vocab))
        self.drop = nn.Dropout(a.dropout)
        self.pdrop = nn.Dropout(a.parser_dropout)
        self.d = d

    def parser(self, ids, lens, valid):
        B, n = ids.shape
        e = self.pemb(ids)
        if self.K > 0:
            tau = F.softmax(self.ptable(ids), -1)
            e = e + self.pproj(tau[:, :, 1:])
        packed = nn.utils.rnn.pack_padded_sequence(
            self.pdrop(e), lens.cpu(), batch_first=True,
            enforce_sorted=False)
        h, _ = self.lstm(packed)
        h, _ = nn.utils.rnn.pad_packed_sequence(h, batch_first=True,
                                                total_length=n)
        a, b = self.mlp(self.pdrop(h)).chunk(2, -1)
        s = torch.bmm(b, a.transpose(1, 2)) / math.sqrt(self.d)
        s = s.masked_fill(~valid[:, None, :], float("-inf"))
        return F.softmax(s, -1)

    def forward(self, ids, lens, targets):
        n = ids.size(1)
        valid = torch.arange(n, device=ids.device)[None, :] < lens[:, None]
        P = self.parser(ids, lens, valid)
        H = P * (1.0 - torch.eye(n, device=ids.device))
        M = H + H.transpose(1, 2) - H * H.transpose(1, 2)
        x = self.drop(self.emb(ids))
        for layer in self.layers:
            x = layer(x, M, valid)
        z = self.drop(self.norm(x))
        return mlm_loss(z, self.emb, self.out_bias, targets)


# ---- StructFormer (udgn.md §7) --------------------------------------------

class Conv(nn.Module):
    """Width-w 1-d convolution over time on [B, n, d]; "same" for odd w,
    positions i..i+1 for w = 2."""

    def __init__(self, d, w):
        super().__init__()
        self.conv = nn.Conv1d(d, d, w)
        nn.init.xavier_uniform_(self.conv.weight)
        nn.init.zeros_(self.conv.bias)
        self.pad = ((w - 1) // 2, w // 2) if w % 2 else (0, 1)

    def forward(self, x):
        return self.conv(F.pad(x.transpose(1, 2), self.pad)).transpose(1, 2)


class SFLayer(nn.Module):
    def __init__(self, d, H, ffn, dropout, dropatt):
        super().__init__()
        self.in_proj = xavier_linear(d, 3 * d)
        self.out_proj = xavier_linear(d, d)
        self.lin1 = xavier_linear(d, ffn)
        self.lin2 = xavier_linear(ffn, d)
        self.norm1 = nn.LayerNorm(d)
        self.norm2 = nn.LayerNorm(d)
        self.drop = nn.Dropout(dropout)
        self.dropatt = nn.Dropout(dropatt)
        self.H = H

    def forward(self, x, gate, valid):
        B, n, d = x.shape
        H, dh = self.H, d // self.H
        q, k, v = self.in_proj(self.norm1(x)).view(B, n, 3, H, dh).unbind(2)
        s = torch.einsum("bihd,bjhd->bhij", q, k) / math.sqrt(dh)
        s = s.masked_fill(~valid[:, None, None, :], float("-inf"))
        att = self.dropatt(torch.sigmoid(s) * gate)
        o = torch.einsum("bhij,bjhd->bihd", att, v).reshape(B, n, d)
        x = x + self.drop(self.out_proj(o))
        h = self.drop(F.leaky_relu(self.lin1(self.norm2(x))))
        return x + self.drop(self.lin2(h))


class StructFormer(nn.Module):
    def __init__(self, a):
        super().__init__()
        d = a.nemb
        self.emb = nn.Embedding(a.vocab, d)
        nn.init.uniform_(self.emb.weight, -0.1, 0.1)
        self.pos = nn.Embedding(500, d)
        nn.init.uniform_(self.pos.weight, -0.1, 0.1)
        self.out_bias = nn.Parameter(torch.zeros(a.vocab))
        self.pconv = nn.ModuleList(Conv(d, 9) for _ in range(a.parser_layers))
        self.dconv = Conv(d, 2)
        self.dout = xavier_linear(d, 1)
        self.hlin = xavier_linear(d, d)
        self.hout = xavier_linear(d, 1)
        self.size = nn.Parameter(torch.zeros(2))
        self.rel = nn.Parameter(torch.empty(a.nlayers, a.nheads, 2)
                                .normal_(0.0, 0.1))
        self.layers = nn.ModuleList(
            SFLayer(d, a.nheads, 4 * d, a.dropout, a.dropatt)
            for _ in range(a.nlayers))
        self.norm = nn.LayerNorm(d)
        self.drop = nn.Dropout(a.dropout)
        self.pdrop = nn.Dropout(a.parser_dropout)
        self.d = d

    def ln(self, x):
        return F.layer_norm(x, (self.d,))

    def parse(self, ids, lens, valid):
        B, n = ids.shape
        g = self.pdrop(self.emb(ids))
        for conv in self.pconv:
            g = g.masked_fill(~valid[:, :, None], 0.0)
            g = self.pdrop(torch.tanh(self.ln(conv(g))))
        height = self.hout(torch.tanh(self.ln(self.hlin(g)))).squeeze(-1)
        height = height.masked_fill(~valid, -1e9)
        dist = self.dout(torch.tanh(self.ln(self.dconv(g)))).squeeze(-1)
        idx = torch.arange(n, device=ids.device)
        gap = idx[None, :] < (lens - 1)[:, None]          # a real gap
        dist = dist.masked_fill(~gap, 1e9)
        # calibration: mu = the largest margin over the batch
        upper = idx[None, :] >= idx[:, None]               # j >= i
        hm = height[:, None, :].expand(B, n, n).masked_fill(~upper, -1e9)
        hmax = torch.cummax(hm, -1)[0]                     # max_{i<=k<=j}
        dl = torch.cat([dist.new_full((B, 1), 1e9), dist[:, :-1]], 1)
        m = torch.minimum(F.relu(dl[:, :, None] - hmax),
                          F.relu(dist[:, None, :] - hmax))
        ok = upper[None] & torch.where(idx[None, :, None] == 0,
                                       gap[:, None, :], valid[:, None, :])
        dist = dist - m.masked_fill(~ok, 0.0).max()
        # parent distribution
        s0, s1 = torch.exp(self.size[0]), torch.exp(self.size[1])
        gam = torch.sigmoid(-(dist[:, None, :] - height[:, :, None]) * s0)
        below = idx[None, :] < idx[:, None]                # k < i
        cl = torch.flip(torch.cummin(torch.flip(
            gam.masked_fill(~below, 1.0), [-1]), -1)[0], [-1])
        pl = cl - F.pad(cl, (1, 0))[:, :, :-1]
        cr0 = torch.cummin(gam.masked_fill(below, 1.0), -1)[0]
        cr = F.pad(cr0, (1, 0), value=1.0)[:, :, :-1]      # min_{i<=k<r}
        cr = torch.where(idx[None, :] <= idx[:, None], torch.ones_like(cr),
                         cr)
        pr = cr - F.pad(cr, (0, 1))[:, :, 1:]
        span = pl[:, :, :, None] * pr[:, :, None, :]       # [B, i, l, r]
        inside = ((idx[None, :, None] <= idx[None, None, :]) &
                  (idx[:, None, None] <= idx[None, None, :]) &
                  (idx[None, None, :] <= idx[None, :, None]))  # l<=k<=r
        hd = F.softmax((height[:, None, None, :] * s1)
                       .masked_fill(~inside[None], -1e9), -1)  # [B, l, r, k]
        par = torch.einsum("bilr,blrk->bik", span, hd)
        return par * (1.0 - torch.eye(n, device=ids.device))

    def forward(self, ids, lens, targets):
        n = ids.size(1)
        valid = torch.arange(n, device=ids.device)[None, :] < lens[:, None]
        par = self.parse(ids, lens, valid)
        w = F.softmax(self.rel, -1)                        # [L, H, 2]
        x = self.drop(self.emb(ids) + self.pos.weight[:n][None])
        for l, layer in enumerate(self.layers):
            gate = (w[l, :, 0, None, None, None] * par[None] +
                    w[l, :, 1, None, None, None] *
                    par.transpose(1, 2)[None]).transpose(0, 1)
            x = layer(x, gate, valid)
        z = self.drop(self.norm(x))
        return mlm_loss(z, self.emb, self.out_bias, targets)


def read_batches(path):
    with open(path) as f:
        tok = f.read().split()
    pos = 0

    def take(k):
        nonlocal pos
        pos += k
        return [int(t) for t in tok[pos - k:pos]]
    out = []
    for _ in range(take(1)[0]):
        B, n = take(2)
        lens = torch.tensor(take(B))
        ids = torch.tensor(take(B * n)).view(B, n)
        tg = torch.tensor(take(B * n)).view(B, n)
        out.append((ids, lens, tg))
    return out


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def speed(a):
    torch.manual_seed(1111)
    dev = torch.device(a.device)
    model = (UDGN(a) if a.model == "udgn" else StructFormer(a)).to(dev)
    params = list(model.parameters())
    opt = torch.optim.Adam(params, lr=1e-3, eps=1e-9, weight_decay=1.2e-6)
    model.train()
    secs, cpu, tokens = 0.0, 0.0, 0
    for k, (ids, lens, tg) in enumerate(read_batches(a.batches)):
        ids, lens, tg = ids.to(dev), lens.to(dev), tg.to(dev)
        sync(dev)
        t0 = time.perf_counter()
        c0 = time.process_time()
        opt.zero_grad()
        loss = model(ids, lens, tg)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 0.25)
        opt.step()
        sync(dev)
        if k >= a.warmup:
            secs += time.perf_counter() - t0
            cpu += time.process_time() - c0
            tokens += int(lens.sum())
    baseline_info.print_line(torch)
    print("tokens_per_s %.3f seconds %.6f peak_rss_kb %d cpu_tokens_per_s "
          "%.3f params %d" % (tokens / secs if secs > 0 else 0.0, secs,
                              resource.getrusage(
                                  resource.RUSAGE_SELF).ru_maxrss,
                              tokens / cpu if cpu > 0 else 0.0,
                              sum(q.numel() for q in params)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["speed"])
    p.add_argument("--model", choices=["udgn", "structformer"],
                   required=True)
    p.add_argument("--batches", required=True)
    p.add_argument("--vocab", type=int, required=True)
    p.add_argument("--nemb", type=int, default=512)
    p.add_argument("--nlayers", type=int, default=8)
    p.add_argument("--nheads", type=int, default=8)
    p.add_argument("--head-size", type=int, default=128)
    p.add_argument("--parser-layers", type=int, default=3)
    p.add_argument("--pos-classes", type=int, default=5)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--dropatt", type=float, default=0.1)
    p.add_argument("--parser-dropout", type=float, default=0.2)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
        torch.set_num_interop_threads(a.threads)
    speed(a)


if __name__ == "__main__":
    sys.exit(main())
