#!/usr/bin/python3
"""The PyTorch baseline of `grove bench kernels` (bench/kernels/bench_kernels.c).

Runs the same cases as grove, on the same device and thread count, and
prints one line per case:

    INFO <torch version> <device> <threads>
    baseline_blas <the BLAS torch resolved, its threads> (baseline_info.py)
    RESULT <case-id> <seconds per call, median> <peak bytes or -1>

or, when torch cannot be imported, a single line `NO_TORCH <reason>`.
Timing: `warm` untimed calls, then the median of `reps` timed calls with
time.perf_counter (CUDA: synchronised before reading the clock).

    /usr/bin/python3 bench/kernels/bench_torch.py --device cpu --threads 2 \
        --cases sgemm:256,lstm:20:70:400:1150:0 --reps 3 --warm 1

Case syntax (the C side builds the list; REPS and WARM, when given,
override --reps and --warm for that case):
    sgemm:N:K[:REPS:WARM]          one call = K products C = A @ B, A, B [N, N]
    gemm:M:N:K:TB:CALLS[:REPS:WARM] one call = CALLS products A [M, K] @ B,
                                   B [K, N] (TB = 1: B [N, K], used as B.t())
    lstm:B:T:IN:H:0[:REPS:WARM]    one nn.LSTM layer, loss = mean(y),
                                   backward, Adam step, zero_grad
    onlstm:B:T:IN:H:C[:REPS:WARM]  one ON-LSTM layer written as the
                                   reference does (a Python loop over time,
                                   cumax master gates, chunk size C), same
                                   training step
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import baseline_info  # noqa: E402  (bench/baseline_info.py)

# measured faster with freed memory kept (bench/baseline_info.py)
baseline_info.keep_freed_memory()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warm", type=int, default=1)
    a = ap.parse_args()
    try:
        import torch
    except Exception as e:  # torch missing: the table says so
        print("NO_TORCH %s" % str(e).replace("\n", " "))
        return 0
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    # grove computes in plain FP32 (cuBLAS without TF32): so does the
    # baseline, also inside cuDNN's LSTM (whose default allows TF32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device(a.device)
    if a.device == "cuda" and not torch.cuda.is_available():
        print("NO_TORCH PyTorch sees no CUDA device")
        return 0
    print("INFO %s %s %d" % (torch.__version__, a.device,
                             torch.get_num_threads()), flush=True)
    baseline_info.print_line(torch)
    torch.manual_seed(0)

    def sync():
        if a.device == "cuda":
            torch.cuda.synchronize()

    def timed(fn, reps, warm):
        for _ in range(warm):
            fn()
        sync()
        if a.device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            sync()
            ts.append(time.perf_counter() - t0)
        peak = torch.cuda.max_memory_allocated() if a.device == "cuda" else -1
        return statistics.median(ts), peak

    def cumax(z):
        return torch.cumsum(torch.softmax(z, dim=-1), dim=-1)

    class ONLSTM(torch.nn.Module):
        def __init__(self, d_in, h, chunk):
            super().__init__()
            self.h, self.chunk, self.n = h, chunk, h // chunk
            g = 2 * self.n + 4 * h
            self.ih = torch.nn.Linear(d_in, g)
            self.hh = torch.nn.Linear(h, g)

        def forward(self, x):
            t_len, b, _ = x.shape
            n, c_sz = self.n, self.chunk
            hx = x.new_zeros(b, self.h)
            cx = x.new_zeros(b, n, c_sz)
            xw = self.ih(x)
            outs = []
            for t in range(t_len):
                g = xw[t] + self.hh(hx)
                mi = 1.0 - cumax(g[:, :n])
                mf = cumax(g[:, n:2 * n])
                o, c, i, f = g[:, 2 * n:].view(b, 4 * n, c_sz).chunk(4, 1)
                mi, mf = mi[:, :, None], mf[:, :, None]
                om = mf * mi
                f = torch.sigmoid(f) * om + (mf - om)
                i = torch.sigmoid(i) * om + (mi - om)
                cx = f * cx + i * torch.tanh(c)
                hx = torch.sigmoid(o).view(b, -1) * torch.tanh(cx.view(b, -1))
                outs.append(hx)
            return torch.stack(outs)

    for case in a.cases.split(","):
        parts = case.split(":")
        kind = parts[0]
        nfix = {"sgemm": 3}.get(kind, 6)
        reps = int(parts[nfix]) if len(parts) > nfix else a.reps
        warm = int(parts[nfix + 1]) if len(parts) > nfix + 1 else a.warm
        if kind == "sgemm":
            n, k = int(parts[1]), int(parts[2])
            x = torch.rand(n, n, device=dev)
            y = torch.rand(n, n, device=dev)

            def mm():
                for _ in range(k):
                    torch.mm(x, y)

            secs, peak = timed(mm, reps, warm)
        elif kind == "gemm":
            m, n, kk, tb, calls = map(int, parts[1:6])
            x = torch.rand(m, kk, device=dev) * 2 - 1
            y = torch.rand(n, kk, device=dev) * 2 - 1 if tb else \
                torch.rand(kk, n, device=dev) * 2 - 1

            def gemm():
                w = y.t() if tb else y
                for _ in range(calls):
                    torch.mm(x, w)

            secs, peak = timed(gemm, reps, warm)
        else:
            b, t_len, d_in, h, chunk = map(int, parts[1:6])
            if kind == "lstm":
                model = torch.nn.LSTM(d_in, h).to(dev)
            else:
                model = ONLSTM(d_in, h, chunk).to(dev)
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
            x = torch.rand(t_len, b, d_in, device=dev)

            def step():
                out = model(x)
                if isinstance(out, tuple):
                    out = out[0]
                loss = out.mean()
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=False)

            secs, peak = timed(step, reps, warm)
        print("RESULT %s %.9g %d" % (case, secs, peak), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
