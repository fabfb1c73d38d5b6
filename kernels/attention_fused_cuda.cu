/* The fused attention path on CUDA (attention_internal.h's fused_fwd and
 * fused_bwd; gr_attention's semantics without bias and dropout). Version 1,
 * fp32 on the CUDA cores, in the manner of FlashAttention-2:
 *
 *   forward   one block per (32 queries, b·H + h): the block's queries in
 *             registers, a loop over tiles of 32 keys (K and V of the tile
 *             in shared memory), an online softmax (running max and sum),
 *             P·V accumulated in registers; writes O and the log-sum-exp.
 *   backward  two kernels, so that every gradient element has one owner
 *             and no floating-point atomic is needed (the backend's rule;
 *             deterministic): one block per (32 keys, b·H + h) loops over
 *             the query tiles and accumulates dK and dV of its keys; one
 *             block per (32 queries, b·H + h) loops over the key tiles and
 *             accumulates dQ. Both recompute P = exp(scale·q·k - lse) and
 *             take dS = P ⊙ (dO·v - delta), delta = rowsum(dO ⊙ O) made by
 *             the rowdot kernel beforehand.
 *
 * A block has 256 threads: 32 rows (queries or keys) of 8 lanes. Lane t of
 * a row holds the row's vectors (q, k, v, dO and the accumulators) at
 * columns t, t + 8, ..., up to GR_ATTN_FUSED_MAX_D = 128 (16 registers
 * each); a dot product is 8 partial sums, combined by a butterfly of warp
 * shuffles among the row's 8 lanes (which all get the same sum). The keys
 * a query sees are a prefix j < lim(b, i) (key padding, causal with the
 * Tk - Tq offset), so a tile loop stops at the largest lim of its rows and
 * a query with lim = 0 gets a zero row, lse = -inf and zero gradients.
 *
 * tests/kernels/test_attention_tiled.c holds the same algorithm in plain C
 * (the same tiles, lanes and butterfly) and checks it against the
 * composition on the CPU; kernels_attention_fused_cuda_parity checks this
 * file against the composition on a GPU (passed on an H100, 2026-11-26). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

extern "C" {
#include "core/error.h"
}
#include "kernels/attention_internal.h"
#include "kernels/cuda_check.h"

namespace {

const int kTile = 32;                          /* rows per tile */
const int kLanes = 8;                          /* threads per row */
const int kBlock = kTile * kLanes;             /* 256 */
const int kMaxD = GR_ATTN_FUSED_MAX_D;         /* 128 */
const int kRegs = kMaxD / kLanes;              /* 16 */
static_assert(GR_ATTN_FUSED_MAX_T / kTile <= 65535,
              "the tiles of Tq or Tk must fit a grid's y");

/* The sum of v over the 8 lanes of a row (lanes 8g .. 8g + 7 of a warp);
 * every lane of the warp must call it. */
__device__ __forceinline__ float lanes_sum(float v)
{
    v += __shfl_xor_sync(0xffffffffu, v, 4);
    v += __shfl_xor_sync(0xffffffffu, v, 2);
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    return v;
}

/* The keys query i of batch item b sees: j < lim. */
__device__ __forceinline__ int64_t key_limit(const gr_attn_fused &f,
                                             int64_t b, int64_t i)
{
    int64_t lim = f.tk;
    if (f.key_len && f.key_len[b] < lim) {
        lim = f.key_len[b];
    }
    if (f.causal && i + (f.tk - f.tq) + 1 < lim) {
        lim = i + (f.tk - f.tq) + 1;
    }
    return lim < 0 ? 0 : lim;
}

/* rows [r0, r0 + kTile) of x (row stride ld, the head's columns at col0,
 * d of them) into sh [kTile][kMaxD]; rows at or past n are zero. */
__device__ __forceinline__ void load_tile(float *sh, const float *x,
                                          int64_t r0, int64_t n, int64_t ld,
                                          int64_t col0, int d)
{
    for (int e = threadIdx.x; e < kTile * d; e += kBlock) {
        int r = e / d, c = e % d;
        int64_t row = r0 + r;
        sh[r * kMaxD + c] = row < n ? x[row * ld + col0 + c] : 0.0f;
    }
}

/* this lane's columns of row `row` of x (zero past n or d) */
__device__ __forceinline__ void load_lanes(float *reg, const float *x,
                                           int64_t row, int64_t n,
                                           int64_t ld, int64_t col0, int d,
                                           int t)
{
#pragma unroll
    for (int m = 0; m < kRegs; m++) {
        int c = t + kLanes * m;
        reg[m] = (row < n && c < d) ? x[row * ld + col0 + c] : 0.0f;
    }
}

/* this lane's part of reg · sh_row over the first d columns */
__device__ __forceinline__ float lanes_dot(const float *reg,
                                           const float *sh_row, int d, int t)
{
    float s = 0.0f;
#pragma unroll
    for (int m = 0; m < kRegs; m++) {
        int c = t + kLanes * m;
        if (c < d) {
            s += reg[m] * sh_row[c];
        }
    }
    return s;
}

__global__ void __launch_bounds__(kBlock)
k_fused_fwd(const float *q, const float *k, const float *v, float *o,
            float *lse, gr_attn_fused f)
{
    __shared__ float ks[kTile * kMaxD];
    __shared__ float vs[kTile * kMaxD];
    const int64_t bh = blockIdx.x, b = bh / f.heads;
    const int64_t i0 = (int64_t)blockIdx.y * kTile;
    const int r = threadIdx.x / kLanes, t = threadIdx.x % kLanes;
    const int64_t i = i0 + r;
    const int dk = (int)f.dk, dv = (int)f.dv;
    const int64_t ldq = f.b * f.heads * f.dk, ldv = f.b * f.heads * f.dv;
    const int64_t lim = i < f.tq ? key_limit(f, b, i) : 0;
    /* lim grows with i: the block's last query sees the most keys */
    const int64_t last = (i0 + kTile < f.tq ? i0 + kTile : f.tq) - 1;
    const int64_t kend = key_limit(f, b, last);
    float qr[kRegs], acc[kRegs];
    load_lanes(qr, q, i, f.tq, ldq, bh * dk, dk, t);
#pragma unroll
    for (int m = 0; m < kRegs; m++) {
        acc[m] = 0.0f;
    }
    float run_max = -INFINITY, run_sum = 0.0f;
    for (int64_t j0 = 0; j0 < kend; j0 += kTile) {
        __syncthreads(); /* the previous tile is read */
        load_tile(ks, k, j0, f.tk, ldq, bh * dk, dk);
        load_tile(vs, v, j0, f.tk, ldv, bh * dv, dv);
        __syncthreads();
        float s[kTile];
        float tile_max = -INFINITY;
#pragma unroll
        for (int jr = 0; jr < kTile; jr++) {
            float z = f.scale * lanes_sum(lanes_dot(qr, ks + jr * kMaxD, dk,
                                                    t));
            s[jr] = j0 + jr < lim ? z : -INFINITY;
            tile_max = fmaxf(tile_max, s[jr]);
        }
        float new_max = fmaxf(run_max, tile_max);
        if (new_max != -INFINITY) { /* else no key of this row yet */
            float alpha = expf(run_max - new_max); /* 0 on the first keys */
            float tile_sum = 0.0f;
#pragma unroll
            for (int m = 0; m < kRegs; m++) {
                acc[m] *= alpha;
            }
#pragma unroll
            for (int jr = 0; jr < kTile; jr++) {
                float p = s[jr] == -INFINITY ? 0.0f : expf(s[jr] - new_max);
                tile_sum += p;
#pragma unroll
                for (int m = 0; m < kRegs; m++) {
                    int c = t + kLanes * m;
                    if (c < dv) {
                        acc[m] += p * vs[jr * kMaxD + c];
                    }
                }
            }
            run_sum = run_sum * alpha + tile_sum;
            run_max = new_max;
        }
    }
    if (i < f.tq) {
        float inv = run_sum > 0.0f ? 1.0f / run_sum : 0.0f;
#pragma unroll
        for (int m = 0; m < kRegs; m++) {
            int c = t + kLanes * m;
            if (c < dv) {
                o[i * ldv + bh * dv + c] = acc[m] * inv;
            }
        }
        if (t == 0) {
            lse[bh * f.tq + i] =
                run_sum > 0.0f ? run_max + logf(run_sum) : -INFINITY;
        }
    }
}

/* dK and dV of one tile of keys: a loop over the query tiles that can see
 * them. gk, gv accumulate; either may be NULL. */
__global__ void __launch_bounds__(kBlock)
k_fused_bwd_kv(const float *q, const float *k, const float *v,
               const float *go, const float *lse, const float *delta,
               float *gk, float *gv, gr_attn_fused f)
{
    __shared__ float qs[kTile * kMaxD];
    __shared__ float gos[kTile * kMaxD];
    __shared__ float ls[kTile], dl[kTile];
    const int64_t bh = blockIdx.x, b = bh / f.heads;
    const int64_t j0 = (int64_t)blockIdx.y * kTile;
    const int r = threadIdx.x / kLanes, t = threadIdx.x % kLanes;
    const int64_t j = j0 + r;
    const int dk = (int)f.dk, dv = (int)f.dv;
    const int64_t ldq = f.b * f.heads * f.dk, ldv = f.b * f.heads * f.dv;
    const int64_t klen = f.key_len && f.key_len[b] < f.tk ? f.key_len[b]
                                                          : f.tk;
    float kr[kRegs], vr[kRegs], dk_acc[kRegs], dv_acc[kRegs];
    load_lanes(kr, k, j, f.tk, ldq, bh * dk, dk, t);
    load_lanes(vr, v, j, f.tk, ldv, bh * dv, dv, t);
#pragma unroll
    for (int m = 0; m < kRegs; m++) {
        dk_acc[m] = 0.0f;
        dv_acc[m] = 0.0f;
    }
    /* the first query tile that sees key j0: i >= j0 - (Tk - Tq) when
     * causal; none when the tile is all padding */
    int64_t istart = 0;
    if (f.causal && j0 - (f.tk - f.tq) > 0) {
        istart = (j0 - (f.tk - f.tq)) / kTile * kTile;
    }
    if (j0 >= klen) {
        istart = f.tq;
    }
    for (int64_t i0 = istart; i0 < f.tq; i0 += kTile) {
        __syncthreads();
        load_tile(qs, q, i0, f.tq, ldq, bh * dk, dk);
        load_tile(gos, go, i0, f.tq, ldv, bh * dv, dv);
        if (threadIdx.x < kTile) {
            int64_t i = i0 + threadIdx.x;
            ls[threadIdx.x] = i < f.tq ? lse[bh * f.tq + i] : -INFINITY;
            dl[threadIdx.x] = i < f.tq ? delta[bh * f.tq + i] : 0.0f;
        }
        __syncthreads();
#pragma unroll 4
        for (int ir = 0; ir < kTile; ir++) {
            int64_t i = i0 + ir;
            const float *qrow = qs + ir * kMaxD, *grow = gos + ir * kMaxD;
            float z = f.scale * lanes_sum(lanes_dot(kr, qrow, dk, t));
            float dp = lanes_sum(lanes_dot(vr, grow, dv, t));
            int seen = i < f.tq && j < klen &&
                       (!f.causal || j <= i + (f.tk - f.tq)) &&
                       ls[ir] != -INFINITY;
            float p = seen ? expf(z - ls[ir]) : 0.0f;
            float ds = p * (dp - dl[ir]);
#pragma unroll
            for (int m = 0; m < kRegs; m++) {
                int c = t + kLanes * m;
                if (c < dv) {
                    dv_acc[m] += p * grow[c];
                }
                if (c < dk) {
                    dk_acc[m] += ds * qrow[c];
                }
            }
        }
    }
    if (j < f.tk) {
#pragma unroll
        for (int m = 0; m < kRegs; m++) {
            int c = t + kLanes * m;
            if (gk && c < dk) {
                gk[j * ldq + bh * dk + c] += f.scale * dk_acc[m];
            }
            if (gv && c < dv) {
                gv[j * ldv + bh * dv + c] += dv_acc[m];
            }
        }
    }
}

/* dQ of one tile of queries: a loop over the key tiles it sees. gq
 * accumulates. */
__global__ void __launch_bounds__(kBlock)
k_fused_bwd_q(const float *q, const float *k, const float *v,
              const float *go, const float *lse, const float *delta,
              float *gq, gr_attn_fused f)
{
    __shared__ float ks[kTile * kMaxD];
    __shared__ float vs[kTile * kMaxD];
    const int64_t bh = blockIdx.x, b = bh / f.heads;
    const int64_t i0 = (int64_t)blockIdx.y * kTile;
    const int r = threadIdx.x / kLanes, t = threadIdx.x % kLanes;
    const int64_t i = i0 + r;
    const int dk = (int)f.dk, dv = (int)f.dv;
    const int64_t ldq = f.b * f.heads * f.dk, ldv = f.b * f.heads * f.dv;
    const int64_t lim = i < f.tq ? key_limit(f, b, i) : 0;
    const int64_t last = (i0 + kTile < f.tq ? i0 + kTile : f.tq) - 1;
    const int64_t kend = key_limit(f, b, last);
    const float l = i < f.tq ? lse[bh * f.tq + i] : -INFINITY;
    const float dl = i < f.tq ? delta[bh * f.tq + i] : 0.0f;
    float qr[kRegs], gr[kRegs], dq[kRegs];
    load_lanes(qr, q, i, f.tq, ldq, bh * dk, dk, t);
    load_lanes(gr, go, i, f.tq, ldv, bh * dv, dv, t);
#pragma unroll
    for (int m = 0; m < kRegs; m++) {
        dq[m] = 0.0f;
    }
    for (int64_t j0 = 0; j0 < kend; j0 += kTile) {
        __syncthreads();
        load_tile(ks, k, j0, f.tk, ldq, bh * dk, dk);
        load_tile(vs, v, j0, f.tk, ldv, bh * dv, dv);
        __syncthreads();
#pragma unroll 4
        for (int jr = 0; jr < kTile; jr++) {
            const float *krow = ks + jr * kMaxD, *vrow = vs + jr * kMaxD;
            float z = f.scale * lanes_sum(lanes_dot(qr, krow, dk, t));
            float dp = lanes_sum(lanes_dot(gr, vrow, dv, t));
            float p = j0 + jr < lim && l != -INFINITY ? expf(z - l) : 0.0f;
            float ds = p * (dp - dl);
#pragma unroll
            for (int m = 0; m < kRegs; m++) {
                int c = t + kLanes * m;
                if (c < dk) {
                    dq[m] += ds * krow[c];
                }
            }
        }
    }
    if (i < f.tq) {
#pragma unroll
        for (int m = 0; m < kRegs; m++) {
            int c = t + kLanes * m;
            if (c < dk) {
                gq[i * ldq + bh * dk + c] += f.scale * dq[m];
            }
        }
    }
}

int check_args(const gr_attn_fused *f, const char *what)
{
    if (f->dk < 1 || f->dv < 1 || f->dk > kMaxD || f->dv > kMaxD ||
        f->tq > GR_ATTN_FUSED_MAX_T || f->tk > GR_ATTN_FUSED_MAX_T ||
        f->b * f->heads > INT32_MAX) {
        return gr_error(GR_EINVAL, "%s: dk %lld, dv %lld, Tq %lld, Tk %lld, "
                        "B·H %lld outside the fused tiles (dk, dv in [1, %d])",
                        what, (long long)f->dk, (long long)f->dv,
                        (long long)f->tq, (long long)f->tk,
                        (long long)(f->b * f->heads), kMaxD);
    }
    return 0;
}

dim3 grid_of(const gr_attn_fused *f, int64_t rows)
{
    return dim3((unsigned)(f->b * f->heads),
                (unsigned)((rows + kTile - 1) / kTile), 1);
}

} // namespace

extern "C" int gr_attn_cuda_fused_fwd(void *st, const float *q,
                                      const float *k, const float *v,
                                      float *o, float *lse,
                                      const gr_attn_fused *f)
{
    (void)st;
    int rc = check_args(f, "fused attention forward");
    if (rc < 0) {
        return rc;
    }
    if (f->tq == 0 || f->b * f->heads == 0) {
        return 0;
    }
    k_fused_fwd<<<grid_of(f, f->tq), kBlock>>>(q, k, v, o, lse, *f);
    return gr_cuda_launched("k_fused_fwd (attention)");
}

extern "C" int gr_attn_cuda_fused_bwd(void *st, const float *q,
                                      const float *k, const float *v,
                                      const float *go, const float *lse,
                                      const float *delta, float *gq,
                                      float *gk, float *gv,
                                      const gr_attn_fused *f)
{
    (void)st;
    int rc = check_args(f, "fused attention backward");
    if (rc < 0) {
        return rc;
    }
    if (f->tq == 0 || f->tk == 0 || f->b * f->heads == 0) {
        return 0; /* no pair (i, j): every gradient is zero */
    }
    if (gk || gv) {
        k_fused_bwd_kv<<<grid_of(f, f->tk), kBlock>>>(q, k, v, go, lse, delta,
                                                      gk, gv, *f);
        rc = gr_cuda_launched("k_fused_bwd_kv (attention)");
        if (rc < 0) {
            return rc;
        }
    }
    if (gq) {
        k_fused_bwd_q<<<grid_of(f, f->tq), kBlock>>>(q, k, v, go, lse, delta,
                                                     gq, *f);
        rc = gr_cuda_launched("k_fused_bwd_q (attention)");
    }
    return rc;
}
