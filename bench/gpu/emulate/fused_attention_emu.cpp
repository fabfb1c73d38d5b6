// bench/gpu/emulate/fused_attention_emu.cpp — runs the kernels of
// kernels/attention_fused_cuda.cu (the file itself, through run.sh's sed)
// on the host: every block's 256 threads as std::threads, __syncthreads a
// barrier, __shfl_xor_sync a slot exchange between two barriers (emu.h).
// Checks O, the lse and dQ, dK, dV (accumulated onto non-zero gradients)
// against a double-precision truth, max-relative 1e-5, on the cases of
// tests/kernels/test_attention_tiled.c and two more. For checking an edit
// of the kernels' indexing, masks, barriers and shuffles without a GPU;
// it says nothing about speed, the memory model or register limits.
#include "emu.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <stdarg.h>
extern "C" {
#include "kernels/attention_internal.h"
}
/* the one grove function the kernels' file calls (core/error.h) */
extern "C" int gr_error(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return code;
}
thread_local emu_idx threadIdx, blockIdx;
emu_idx gridDim_, blockDim_;
pthread_barrier_t emu_bar;
float emu_slots[1024];
void emu_launch(dim3 grid, int block, std::function<void()> body)
{
    gridDim_ = {grid.x, grid.y, grid.z};
    blockDim_ = {(unsigned)block, 1, 1};
    pthread_barrier_init(&emu_bar, NULL, block);
    for (unsigned by = 0; by < grid.y; by++)
        for (unsigned bx = 0; bx < grid.x; bx++) {
            std::vector<std::thread> ts;
            for (int t = 0; t < block; t++)
                ts.emplace_back([&, t, bx, by]() {
                    threadIdx = {(unsigned)t, 0, 0};
                    blockIdx = {bx, by, 0};
                    body();
                });
            for (auto &th : ts) th.join();
        }
    pthread_barrier_destroy(&emu_bar);
}
struct fc { const char *name; int tq, tk, b, h, dk, dv; int kl[4]; int causal; };
static uint64_t rs = 88172645463325252ull;
static float urand() { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return (float)((rs >> 40) / 16777216.0); }
static double worst(const float *a, const double *b, int64_t n) {
    double m = 0, w = 0;
    for (int64_t e = 0; e < n; e++) { m = fmax(m, fabs(b[e])); w = fmax(w, fabs(a[e] - b[e])); }
    return m > 0 ? w / m : w;
}
int main(int argc, char **argv)
{
    /* argv[1]: run only the first N cases */
    int n_run = argc > 1 ? atoi(argv[1]) : 1 << 30;
    const fc cases[] = {
        {"self no mask", 5, 5, 2, 2, 3, 3, {-1}, 0},
        {"self pad causal 70", 70, 70, 3, 2, 8, 8, {70, 33, 1}, 1},
        {"cross 40x75 causal pad", 40, 75, 2, 3, 16, 12, {75, 50}, 1},
        {"cross 67x33 causal no-key rows", 67, 33, 2, 2, 5, 9, {33, 20}, 1},
        {"no-key item 64", 64, 64, 2, 1, 32, 32, {0, 64}, 0},
        {"heads 128", 33, 65, 1, 2, 128, 128, {-1}, 0},
        {"one query", 1, 97, 2, 2, 64, 24, {97, 40}, 1},
        {"cross 129x300 128/96, padding", 129, 300, 1, 2, 128, 96, {260}, 0},
        {"T 100 causal heads 64", 100, 100, 2, 1, 64, 64, {100, 77}, 1},
    };
    int fails = 0, n_done = 0;
    for (const fc &c : cases) {
        if (n_done++ >= n_run) {
            break;
        }
        int64_t B = c.b, H = c.h, dk = c.dk, dv = c.dv;
        int64_t ldq = B * H * dk, ldv = B * H * dv;
        int64_t nq = c.tq * ldq, nk = c.tk * ldq, nv = c.tk * ldv, no = c.tq * ldv;
        std::vector<float> q(nq), k(nk), v(nv), go(no), o(no), lse(B * H * c.tq), delta(B * H * c.tq);
        std::vector<float> gq(nq, 0.5f), gk(nk, -0.25f), gv(nv, 0.125f); /* accumulate onto these */
        for (auto &x : q) x = 4 * urand() - 2;
        for (auto &x : k) x = 4 * urand() - 2;
        for (auto &x : v) x = 2 * urand() - 1;
        for (auto &x : go) x = 2 * urand() - 1;
        std::vector<int32_t> kl(B);
        for (int b = 0; b < B; b++) kl[b] = c.kl[0] >= 0 ? c.kl[b] : c.tk;
        gr_attn_fused f = {};
        f.tq = c.tq; f.tk = c.tk; f.b = B; f.heads = H; f.dk = dk; f.dv = dv;
        f.scale = 1.0f / sqrtf((float)dk); f.key_len = c.kl[0] >= 0 ? kl.data() : NULL; f.causal = c.causal;
        if (gr_attn_cuda_fused_fwd(NULL, q.data(), k.data(), v.data(), o.data(), lse.data(), &f) < 0) { printf("fwd failed\n"); return 1; }
        for (int64_t bh = 0; bh < B * H; bh++) for (int64_t i = 0; i < c.tq; i++) {
            double s = 0; for (int64_t e = 0; e < dv; e++) s += (double)go[i * ldv + bh * dv + e] * o[i * ldv + bh * dv + e];
            delta[bh * c.tq + i] = (float)s; }
        if (gr_attn_cuda_fused_bwd(NULL, q.data(), k.data(), v.data(), go.data(), lse.data(), delta.data(), gq.data(), gk.data(), gv.data(), &f) < 0) { printf("bwd failed\n"); return 1; }
        /* truth */
        std::vector<double> to(no, 0), tq_(nq, 0.5), tk_(nk, -0.25), tv(nv, 0.125), tl(B * H * c.tq);
        std::vector<double> p(c.tk);
        for (int64_t b = 0; b < B; b++) for (int64_t h = 0; h < H; h++) { int64_t bh = b * H + h;
            for (int64_t i = 0; i < c.tq; i++) {
                int64_t lim = kl[b] < c.tk ? kl[b] : c.tk;
                if (c.causal && i + (c.tk - c.tq) + 1 < lim) lim = i + (c.tk - c.tq) + 1;
                if (lim < 0) lim = 0;
                double mx = -INFINITY, sum = 0, dl = 0;
                for (int64_t j = 0; j < lim; j++) { double z = 0; for (int64_t e = 0; e < dk; e++) z += (double)q[i*ldq+bh*dk+e]*k[j*ldq+bh*dk+e]; p[j] = z / sqrt((double)dk); mx = fmax(mx, p[j]); }
                for (int64_t j = 0; j < lim; j++) { p[j] = exp(p[j] - mx); sum += p[j]; }
                tl[bh * c.tq + i] = lim ? mx + log(sum) : -INFINITY;
                for (int64_t e = 0; e < dv; e++) { double a = 0; for (int64_t j = 0; j < lim; j++) a += p[j] / sum * v[j*ldv+bh*dv+e]; to[i*ldv+bh*dv+e] = a; dl += a * go[i*ldv+bh*dv+e]; }
                for (int64_t j = 0; j < lim; j++) { double pj = p[j] / sum, dp = 0;
                    for (int64_t e = 0; e < dv; e++) { dp += (double)go[i*ldv+bh*dv+e] * v[j*ldv+bh*dv+e]; tv[j*ldv+bh*dv+e] += pj * go[i*ldv+bh*dv+e]; }
                    double ds = pj * (dp - dl) / sqrt((double)dk);
                    for (int64_t e = 0; e < dk; e++) { tq_[i*ldq+bh*dk+e] += ds * k[j*ldq+bh*dk+e]; tk_[j*ldq+bh*dk+e] += ds * q[i*ldq+bh*dk+e]; } }
            } }
        double wl = 0; int lse_ok = 1;
        for (size_t e = 0; e < lse.size(); e++) { if (isinf(tl[e]) || isinf(lse[e])) lse_ok &= (isinf(tl[e]) && isinf(lse[e]) && lse[e] < 0); else wl = fmax(wl, fabs(lse[e] - tl[e])); }
        double w[4] = {worst(o.data(), to.data(), no), worst(gq.data(), tq_.data(), nq), worst(gk.data(), tk_.data(), nk), worst(gv.data(), tv.data(), nv)};
        int ok = lse_ok && wl < 1e-5 && w[0] < 1e-5 && w[1] < 1e-5 && w[2] < 1e-5 && w[3] < 1e-5;
        fails += !ok;
        printf("%-34s %s out %.1e gq %.1e gk %.1e gv %.1e lse %.1e%s\n", c.name, ok ? "ok  " : "FAIL", w[0], w[1], w[2], w[3], wl, lse_ok ? "" : " (lse -inf mismatch)");
    }
    printf("%d failed\n", fails);
    return fails != 0;
}
