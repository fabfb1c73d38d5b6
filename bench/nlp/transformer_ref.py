"""The PyTorch side of `grove bench nlp --model transformer`: training
steps of a Transformer encoder classifier built from torch's own modules
(nn.Embedding, nn.TransformerEncoderLayer with norm_first=True and a final
nn.LayerNorm in nn.TransformerEncoder, a linear head on position 0), the
same structure as grove's side (bench/nlp/bench_transformer.c): embedding
scaled by sqrt(D) plus sinusoidal positions, dropout p everywhere, cross
entropy, backward, Adam step. Prints the median step time as
"tokens_per_s X seconds_per_window Y" (a window = one step of B x T
tokens) and the baseline_blas line.

    /usr/bin/python3 transformer_ref.py --d 128 --layers 2 --heads 4 \
        --ffn 512 --batch 64 --seq 32 --windows 5 --warmup 1 --threads 1
"""
import argparse
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import baseline_info  # noqa: E402  (bench/baseline_info.py)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--vocab", type=int, default=1000)
    p.add_argument("--d", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ffn", type=int, default=512)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--windows", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    baseline_info.print_line(torch)
    torch.manual_seed(1)
    dev = torch.device(a.device)
    emb = nn.Embedding(a.vocab, a.d).to(dev)
    layer = nn.TransformerEncoderLayer(a.d, a.heads, a.ffn, a.dropout,
                                       norm_first=True)
    enc = nn.TransformerEncoder(layer, a.layers,
                                norm=nn.LayerNorm(a.d)).to(dev)
    head = nn.Linear(a.d, a.classes).to(dev)
    params = list(emb.parameters()) + list(enc.parameters()) + \
        list(head.parameters())
    opt = torch.optim.Adam(params, lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    pos = torch.zeros(a.seq, 1, a.d)
    for t in range(a.seq):
        for i in range(0, a.d, 2):
            f = t / math.pow(10000.0, i / a.d)
            pos[t, 0, i] = math.sin(f)
            if i + 1 < a.d:
                pos[t, 0, i + 1] = math.cos(f)
    pos = pos.to(dev)
    drop = nn.Dropout(a.dropout)
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(0, a.vocab, (a.seq, a.batch), generator=g).to(dev)
    y = torch.randint(0, a.classes, (a.batch,), generator=g).to(dev)
    enc.train()
    times = []
    for w in range(a.warmup + a.windows):
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad()
        x = drop(emb(ids) * math.sqrt(a.d) + pos)
        h = enc(x)
        loss = nn.functional.cross_entropy(head(h[0]), y)
        loss.backward()
        opt.step()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        if w >= a.warmup:
            times.append(time.perf_counter() - t0)
    s = statistics.median(times)
    print("tokens_per_s %.3f seconds_per_window %.6f" %
          (a.batch * a.seq / s, s), flush=True)


if __name__ == "__main__":
    main()
