/* The linear scan on CUDA (kernels/scan.h): c[s] = a[s]⊙c[s-1] + b[s]
 * over t steps of n independent lanes, as a parallel prefix scan over t.
 *
 * The step map x -> a·x + b composes associatively:
 * (a1, b1) then (a2, b2) = (a1·a2, a2·b1 + b2). A block holds 32 lanes
 * (threadIdx.x, so every global access of a warp is one coalesced row
 * segment) and kSeg segments of time (threadIdx.y). Three phases:
 *   1. each thread folds its segment of ⌈t/kSeg⌉ steps into one pair;
 *   2. the kSeg pairs of a lane are scanned in shared memory
 *      (Hillis-Steele, log2 kSeg rounds), giving each segment the value of
 *      c entering it;
 *   3. each thread replays its segment from that value, writing c.
 * So a window's recurrence takes O(t/kSeg + log kSeg) dependent steps
 * instead of t, with 2 reads of a and b per element. The backward's
 * d[s] = gc[s] + a[s+1]·d[s+1] is the same scan run from the end (the
 * coefficient of step s is a[s+1]); the gradients of a, b and c0 are then
 * one element-wise pass. No atomics: the result is deterministic.
 * Rounding differs from the sequential loop (products regrouped), at the
 * level of float rounding (test: kernels_scan_cuda). */
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "core/error.h"
}
#include "kernels/cuda_check.h"
#include "kernels/scan.h"

namespace {

const int kLanes = 32;
const int kSeg = 16;

/* Coefficient and input of processing position k (0 .. t-1).
 * Forward: step k, a[k], b[k]. Reverse: step s = t-1-k, coefficient
 * a[s+1] (0 past the end), input gc[s]. */
template <bool REV>
__device__ void step_terms(const float *a, const float *b, int64_t t,
                           int64_t n, int64_t k, int64_t j, float *ak,
                           float *bk, int64_t *s)
{
    if (!REV) {
        *s = k;
        *ak = a[k * n + j];
        *bk = b[k * n + j];
    } else {
        int64_t st = t - 1 - k;
        *s = st;
        *ak = st + 1 < t ? a[(st + 1) * n + j] : 0.0f;
        *bk = b ? b[st * n + j] : 0.0f;
    }
}

template <bool REV>
__global__ void k_scan(const float *a, const float *b, const float *c0,
                       float *out, int64_t t, int64_t n)
{
    __shared__ float sa[kSeg][kLanes];
    __shared__ float sb[kSeg][kLanes];
    int64_t j = (int64_t)blockIdx.x * kLanes + threadIdx.x;
    int seg = threadIdx.y;
    int64_t len = (t + kSeg - 1) / kSeg;
    int64_t k0 = seg * len, k1 = k0 + len < t ? k0 + len : t;
    int live = j < n;
    /* 1. fold the segment */
    float pa = 1.0f, pb = 0.0f;
    if (live) {
        for (int64_t k = k0; k < k1; k++) {
            float ak, bk;
            int64_t s;
            step_terms<REV>(a, b, t, n, k, j, &ak, &bk, &s);
            pa = pa * ak;
            pb = ak * pb + bk;
        }
    }
    sa[seg][threadIdx.x] = pa;
    sb[seg][threadIdx.x] = pb;
    __syncthreads();
    /* 2. inclusive scan of the segment pairs (earlier segment first) */
    for (int off = 1; off < kSeg; off <<= 1) {
        float qa = 1.0f, qb = 0.0f;
        if (seg >= off) {
            qa = sa[seg - off][threadIdx.x];
            qb = sb[seg - off][threadIdx.x];
        }
        __syncthreads();
        if (seg >= off) {
            float ca = sa[seg][threadIdx.x], cb = sb[seg][threadIdx.x];
            sa[seg][threadIdx.x] = qa * ca;
            sb[seg][threadIdx.x] = ca * qb + cb;
        }
        __syncthreads();
    }
    if (!live) {
        return;
    }
    /* 3. replay from the value entering the segment */
    float init = (!REV && c0) ? c0[j] : 0.0f;
    float x = init;
    if (seg > 0) {
        x = sa[seg - 1][threadIdx.x] * init + sb[seg - 1][threadIdx.x];
    }
    for (int64_t k = k0; k < k1; k++) {
        float ak, bk;
        int64_t s;
        step_terms<REV>(a, b, t, n, k, j, &ak, &bk, &s);
        x = ak * x + bk;
        out[s * n + j] = x;
    }
}

__global__ void k_scan_grads(const float *a, const float *c, const float *c0,
                             const float *d, float *ga, float *gb,
                             float *gc0, int64_t t, int64_t n)
{
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
         e < t * n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t s = e / n, j = e - s * n;
        float de = d[e];
        if (gb) {
            gb[e] += de;
        }
        if (ga) {
            float cp = s > 0 ? c[e - n] : (c0 ? c0[j] : 0.0f);
            ga[e] += de * cp;
        }
        if (gc0 && s == 0) {
            gc0[j] += a[j] * de;
        }
    }
}

dim3 scan_grid(int64_t n)
{
    return dim3((unsigned)((n + kLanes - 1) / kLanes));
}

} /* namespace */

extern "C" int gr_cu_scan_fwd(void *st, const float *a, const float *b,
                              const float *c0, float *c, int64_t t,
                              int64_t n)
{
    (void)st;
    if (t <= 0 || n <= 0) {
        return 0;
    }
    k_scan<false><<<scan_grid(n), dim3(kLanes, kSeg)>>>(a, b, c0, c, t, n);
    return gr_cuda_launched("k_scan (forward)");
}

extern "C" int gr_cu_scan_bwd(void *st, const float *a, const float *c,
                              const float *c0, const float *gc, float *d,
                              float *ga, float *gb, float *gc0, int64_t t,
                              int64_t n)
{
    (void)st;
    if (t <= 0 || n <= 0) {
        return 0;
    }
    k_scan<true><<<scan_grid(n), dim3(kLanes, kSeg)>>>(a, gc, NULL, d, t, n);
    int rc = gr_cuda_launched("k_scan (backward)");
    if (rc < 0 || (!ga && !gb && !gc0)) {
        return rc;
    }
    int64_t tot = t * n, blocks = (tot + 255) / 256;
    if (blocks > 65535) {
        blocks = 65535;
    }
    k_scan_grads<<<(unsigned)blocks, 256>>>(a, c, c0, d, ga, gb, gc0, t, n);
    return gr_cuda_launched("k_scan_grads");
}
