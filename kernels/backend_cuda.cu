/* The CUDA device: one kernel (or cuBLAS call) per entry of the device
 * table, with the semantics of backend_cpu.c (the reference). Internal to
 * kernels/: nothing here is seen by users.
 *
 * Determinism: no floating-point atomics anywhere. Every reduction (sums,
 * softmax rows, bias and broadcast gradients, embedding and sparse scatter)
 * has a fixed order, so a run repeated on the same GPU gives the same bits
 * (cuBLAS SGEMM is deterministic for a fixed configuration). Random masks
 * come from core/random.h's Philox through kernels/rng.h (GR_HOSTDEV), so
 * they are the CPU's bits.
 *
 * Version 1 of every kernel is the plain port (one thread per element or
 * per row, grid-stride loops); faster variants belong in bench/ first. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "core/error.h"
}
#include "kernels/backend.h"
#include "kernels/cuda_check.h"
#include "kernels/rng.h"
#include "kernels/scan.h"

namespace {

struct cuda_state {
    int device;
    cublasHandle_t blas;
    double *d_scratch;  /* one double for sumsq */
    float *d_dense;     /* the sparse backward's densified rows */
    size_t d_dense_cap; /* floats */
    int gemm_mode;      /* GEMM_AUTO, GEMM_CUBLAS or GEMM_SKINNY */
};

/* Which products go to grove's skinny kernels instead of cuBLAS
 * (GROVE_CUDA_GEMM=auto|cublas|skinny; see cu_gemm). */
enum { GEMM_AUTO, GEMM_CUBLAS, GEMM_SKINNY };

const int kBlock = 256;

int blocks_for(int64_t n)
{
    int64_t b = (n + kBlock - 1) / kBlock;
    if (b < 1) {
        b = 1;
    }
    if (b > 65535) {
        b = 65535;
    }
    return (int)b;
}

int check_rt(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        return gr_error(GR_EDEVICE, "CUDA %s: %s", what,
                        cudaGetErrorString(e));
    }
    return 0;
}

const char *blas_name(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "invalid value";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "architecture mismatch";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "execution failed";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "internal error";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported";
    default: return "error";
    }
}

#define GRID_STRIDE(i, n)                                                    \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (int64_t)gridDim.x * blockDim.x)

#define LAUNCH(kernel, n, ...)                                               \
    do {                                                                     \
        kernel<<<blocks_for(n), kBlock>>>(__VA_ARGS__);                      \
        return gr_cuda_launched(#kernel);                                        \
    } while (0)

/* ---- device helpers ---- */

__device__ float d_sigmoid(float x)
{
    if (x >= 0.0f) {
        return 1.0f / (1.0f + expf(-x));
    }
    float e = expf(x);
    return e / (1.0f + e);
}

/* Offset into a broadcast operand of output element e. */
__device__ int64_t bcast_offset(const gr_bcast &bc, int64_t e)
{
    int64_t i3 = e % bc.shape[3];
    int64_t q = e / bc.shape[3];
    int64_t i2 = q % bc.shape[2];
    q /= bc.shape[2];
    int64_t i1 = q % bc.shape[1];
    int64_t i0 = q / bc.shape[1];
    return i0 * bc.bstride[0] + i1 * bc.bstride[1] + i2 * bc.bstride[2] +
           i3 * bc.bstride[3];
}

/* Block-wide reductions (blockDim.x a power of two <= 1024). */
__device__ float block_sum(float v, float *sh)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            sh[threadIdx.x] += sh[threadIdx.x + s];
        }
        __syncthreads();
    }
    float r = sh[0];
    __syncthreads();
    return r;
}

__device__ float block_max(float v, float *sh)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]);
        }
        __syncthreads();
    }
    float r = sh[0];
    __syncthreads();
    return r;
}

__device__ double block_sum_d(double v, double *sh)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            sh[threadIdx.x] += sh[threadIdx.x + s];
        }
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

const int kRowBlock = 128; /* threads per row in row kernels */

/* ---- memory ---- */

void *cu_alloc(void *st, size_t bytes)
{
    (void)st;
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 256);
    if (e != cudaSuccess) {
        cudaGetLastError();
        gr_error(GR_ENOMEM, "out of GPU memory (%zu bytes): %s", bytes,
                 cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

void cu_free(void *st, void *p)
{
    (void)st;
    cudaFree(p);
}

int cu_h2d(void *st, void *dst, const void *src, size_t n)
{
    (void)st;
    return n ? check_rt(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice),
                        "copy to the GPU")
             : 0;
}

int cu_d2h(void *st, void *dst, const void *src, size_t n)
{
    (void)st;
    return n ? check_rt(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost),
                        "copy from the GPU")
             : 0;
}

int cu_d2d(void *st, void *dst, const void *src, size_t n)
{
    (void)st;
    if (!n || dst == src) {
        return 0;
    }
    /* async on the default stream: ordered with the kernels, and no
     * blocking runtime call per step of a recurrent layer */
    return check_rt(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, 0),
                    "copy on the GPU");
}

int cu_zero(void *st, void *dst, size_t n)
{
    (void)st;
    return n ? check_rt(cudaMemsetAsync(dst, 0, n, 0), "memset") : 0;
}

int cu_sync(void *st)
{
    (void)st;
    return check_rt(cudaDeviceSynchronize(), "synchronize");
}

__global__ void k_fill(float *x, int64_t n, float v)
{
    GRID_STRIDE(i, n) { x[i] = v; }
}

int cu_fill(void *st, float *x, int64_t n, float v)
{
    (void)st;
    LAUNCH(k_fill, n, x, n, v);
}

__global__ void k_scale(float *x, int64_t n, float s)
{
    GRID_STRIDE(i, n) { x[i] *= s; }
}

int cu_scale(void *st, float *x, int64_t n, float s)
{
    (void)st;
    LAUNCH(k_scale, n, x, n, s);
}

/* ---- matrix products (row-major via C^T = B^T A^T) ---- */

/* Skinny products: C [m, n] = alpha · op(A) [m, k] · op(B) [k, n] + beta · C
 * with few rows (m <= kSkinnyMaxRows), the per-step h U^T and dG U of a
 * recurrent layer at the agents' sizes (m = batch 16, n and k 128..512).
 * cuBLAS's kernels for that shape leave most of the chip idle (25 and 52 us
 * per product on an H200, as PyTorch's). These keep a row group's 16 rows
 * of C in registers, stage A in shared memory a chunk of k at a time, read
 * each element of B once per row group with several loads in flight, and
 * reduce in a fixed order (deterministic, like every grove kernel).
 *   k_gemm_skinny_dot  (B transposed: rows of B contiguous along k): one
 *                      warp per output column, lanes stride over k, then
 *                      a butterfly sum per row.
 *   k_gemm_skinny_axpy (B as stored: rows of B contiguous along n): one
 *                      lane per column, the block's warps split k, then a
 *                      sum over the warps in shared memory. */
const int kSkinnyRows = 16;    /* rows of C per row group (registers) */
const int kSkinnyMaxRows = 32; /* auto: m above this goes to cuBLAS */
const int kSkinnyWarps = 16;   /* warps per block (512 threads) */
const int kSkinnyChunk = 128;  /* k per shared-memory chunk of A */
static_assert(kSkinnyWarps * 32 == kSkinnyRows * 32 &&
                  kSkinnyChunk % kSkinnyWarps == 0 && kSkinnyChunk % 32 == 0,
              "the axpy kernel's final sum gives each thread one output");

__device__ __forceinline__ float a_at(const float *a, int lda, int ta, int i,
                                      int k)
{
    return ta ? a[(int64_t)k * lda + i] : a[(int64_t)i * lda + k];
}

/* sa[r][kk] = op(A)[m0 + r][c0 + kk], zero outside the matrix; consecutive
 * threads read consecutive addresses in either layout. */
__device__ void skinny_load_a(float (*sa)[kSkinnyChunk], const float *a,
                              int lda, int ta, int m0, int rows, int c0,
                              int len)
{
    for (int e = threadIdx.x; e < kSkinnyRows * kSkinnyChunk;
         e += blockDim.x) {
        int r = ta ? e % kSkinnyRows : e / kSkinnyChunk;
        int kk = ta ? e / kSkinnyRows : e % kSkinnyChunk;
        sa[r][kk] = r < rows && kk < len ? a_at(a, lda, ta, m0 + r, c0 + kk)
                                         : 0.0f;
    }
}

__global__ void __launch_bounds__(kSkinnyWarps * 32)
    k_gemm_skinny_dot(int ta, int m, int n, int k, float alpha,
                      const float *a, int lda, int64_t sa_, const float *b,
                      int ldb, int64_t sb, float beta, float *c, int ldc,
                      int64_t sc)
{
    __shared__ float sa[kSkinnyRows][kSkinnyChunk];
    const int lane = threadIdx.x & 31;
    const int j = blockIdx.x * kSkinnyWarps + (threadIdx.x >> 5);
    const int m0 = blockIdx.y * kSkinnyRows;
    a += blockIdx.z * sa_;
    b += blockIdx.z * sb;
    c += blockIdx.z * sc;
    const int rows = min(kSkinnyRows, m - m0);
    const bool live = j < n; /* the same across a warp */
    const float *bj = b + (int64_t)(live ? j : 0) * ldb;
    float acc[kSkinnyRows];
#pragma unroll
    for (int r = 0; r < kSkinnyRows; r++) {
        acc[r] = 0.0f;
    }
    for (int c0 = 0; c0 < k; c0 += kSkinnyChunk) {
        const int len = min(kSkinnyChunk, k - c0);
        skinny_load_a(sa, a, lda, ta, m0, rows, c0, len);
        __syncthreads();
        if (live) {
            float bv[kSkinnyChunk / 32];
#pragma unroll
            for (int i = 0; i < kSkinnyChunk / 32; i++) {
                const int kk = lane + 32 * i;
                bv[i] = kk < len ? bj[c0 + kk] : 0.0f;
            }
#pragma unroll
            for (int i = 0; i < kSkinnyChunk / 32; i++) {
#pragma unroll
                for (int r = 0; r < kSkinnyRows; r++) {
                    acc[r] += sa[r][lane + 32 * i] * bv[i];
                }
            }
        }
        __syncthreads();
    }
    if (!live) {
        return;
    }
#pragma unroll
    for (int r = 0; r < kSkinnyRows; r++) {
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], off);
        }
    }
    /* every lane now holds every row's sum: lane r writes row r */
#pragma unroll
    for (int r = 0; r < kSkinnyRows; r++) {
        if (lane == r && r < rows) {
            float *cij = c + (int64_t)(m0 + r) * ldc + j;
            *cij = alpha * acc[r] + (beta == 0.0f ? 0.0f : beta * *cij);
        }
    }
}

__global__ void __launch_bounds__(kSkinnyWarps * 32)
    k_gemm_skinny_axpy(int ta, int m, int n, int k, float alpha,
                       const float *a, int lda, int64_t sa_, const float *b,
                       int ldb, int64_t sb, float beta, float *c, int ldc,
                       int64_t sc)
{
    __shared__ float sa[kSkinnyRows][kSkinnyChunk];
    __shared__ float part[kSkinnyWarps][kSkinnyRows][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int j = blockIdx.x * 32 + lane;
    const int m0 = blockIdx.y * kSkinnyRows;
    a += blockIdx.z * sa_;
    b += blockIdx.z * sb;
    c += blockIdx.z * sc;
    const int rows = min(kSkinnyRows, m - m0);
    const int per = kSkinnyChunk / kSkinnyWarps; /* k per warp per chunk */
    float acc[kSkinnyRows];
#pragma unroll
    for (int r = 0; r < kSkinnyRows; r++) {
        acc[r] = 0.0f;
    }
    for (int c0 = 0; c0 < k; c0 += kSkinnyChunk) {
        const int len = min(kSkinnyChunk, k - c0);
        skinny_load_a(sa, a, lda, ta, m0, rows, c0, len);
        __syncthreads();
        if (j < n) {
            float bv[per];
#pragma unroll
            for (int i = 0; i < per; i++) {
                const int kk = warp + kSkinnyWarps * i;
                bv[i] = kk < len ? b[(int64_t)(c0 + kk) * ldb + j] : 0.0f;
            }
#pragma unroll
            for (int i = 0; i < per; i++) {
                const int kk = warp + kSkinnyWarps * i;
#pragma unroll
                for (int r = 0; r < kSkinnyRows; r++) {
                    acc[r] += sa[r][kk] * bv[i];
                }
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < kSkinnyRows; r++) {
        part[warp][r][lane] = acc[r];
    }
    __syncthreads();
    /* 512 threads, 16 x 32 outputs: one each, warps summed in order */
    const int r = threadIdx.x / 32, col = threadIdx.x % 32;
    const int jj = blockIdx.x * 32 + col;
    if (r < rows && jj < n) {
        float s = 0.0f;
        for (int w = 0; w < kSkinnyWarps; w++) {
            s += part[w][r][col];
        }
        float *cij = c + (int64_t)(m0 + r) * ldc + jj;
        *cij = alpha * s + (beta == 0.0f ? 0.0f : beta * *cij);
    }
}

bool skinny_wanted(const cuda_state *s, int m, int n, int k, int batch)
{
    if (s->gemm_mode == GEMM_CUBLAS || m < 1 || n < 1 || k < 1 ||
        batch > 65535) {
        return false;
    }
    if (s->gemm_mode == GEMM_SKINNY) {
        return m <= 4 * kSkinnyRows;
    }
    /* auto: few rows, and a B small enough that reading it once per row
     * group is cheap (the agents' recurrent sizes; the PTB LM's
     * 20 x 4600 x 1150 stays with cuBLAS, which matched cuDNN there) */
    return m <= kSkinnyMaxRows && (int64_t)n * k <= ((int64_t)1 << 20);
}

int cu_gemm(void *st, int ta, int tb, int m, int n, int k, float alpha,
            const float *a, int lda, int64_t sa, const float *b, int ldb,
            int64_t sb, float beta, float *c, int ldc, int64_t sc, int batch)
{
    cuda_state *s = (cuda_state *)st;
    if (skinny_wanted(s, m, n, k, batch)) {
        const int groups = (m + kSkinnyRows - 1) / kSkinnyRows;
        if (tb) {
            dim3 grid((n + kSkinnyWarps - 1) / kSkinnyWarps, groups, batch);
            k_gemm_skinny_dot<<<grid, kSkinnyWarps * 32>>>(
                ta, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc);
            return gr_cuda_launched("k_gemm_skinny_dot");
        }
        dim3 grid((n + 31) / 32, groups, batch);
        k_gemm_skinny_axpy<<<grid, kSkinnyWarps * 32>>>(
            ta, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc);
        return gr_cuda_launched("k_gemm_skinny_axpy");
    }
    cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasStatus_t r;
    if (batch == 1) {
        r = cublasSgemm(s->blas, ob, oa, n, m, k, &alpha, b, ldb, a, lda,
                        &beta, c, ldc);
    } else {
        r = cublasSgemmStridedBatched(s->blas, ob, oa, n, m, k, &alpha, b,
                                      ldb, (long long)sb, a, lda,
                                      (long long)sa, &beta, c, ldc,
                                      (long long)sc, batch);
    }
    if (r != CUBLAS_STATUS_SUCCESS) {
        return gr_error(GR_EDEVICE, "cuBLAS SGEMM (%d x %d x %d, batch %d): "
                        "%s", m, n, k, batch, blas_name(r));
    }
    return 0;
}

__global__ void k_rows_set(float *y, const float *v, int64_t rows,
                           int64_t cols)
{
    GRID_STRIDE(i, rows * cols) { y[i] = v[i % cols]; }
}

int cu_rows_set(void *st, float *y, const float *v, int64_t rows,
                int64_t cols)
{
    (void)st;
    LAUNCH(k_rows_set, rows * cols, y, v, rows, cols);
}

/* ---- element-wise ---- */

__global__ void k_unary_fwd(int op, const float *x, float *y, int64_t n,
                            float a, float b)
{
    GRID_STRIDE(i, n)
    {
        float v = x[i], r;
        switch (op) {
        case GR_U_SIGMOID: r = d_sigmoid(v); break;
        case GR_U_TANH: r = tanhf(v); break;
        case GR_U_RELU: r = v > 0.0f ? v : 0.0f; break;
        case GR_U_ELU: r = v > 0.0f ? v : expm1f(v); break;
        case GR_U_EXP: r = expf(v); break;
        case GR_U_LOG: r = logf(v); break;
        case GR_U_ABS: r = fabsf(v); break;
        case GR_U_SQUARE: r = v * v; break;
        case GR_U_SQRT: r = sqrtf(v); break;
        case GR_U_AFFINE: r = a * v + b; break;
        default: r = v < a ? a : (v > b ? b : v); break;
        }
        y[i] = r;
    }
}

int cu_unary_fwd(void *st, int op, const float *x, float *y, int64_t n,
                 float a, float b)
{
    (void)st;
    LAUNCH(k_unary_fwd, n, op, x, y, n, a, b);
}

__global__ void k_unary_bwd(int op, const float *x, const float *y,
                            const float *gy, float *gx, int64_t n, float a,
                            float b)
{
    GRID_STRIDE(i, n)
    {
        float v = x[i], o = y[i], d;
        switch (op) {
        case GR_U_SIGMOID: d = o * (1.0f - o); break;
        case GR_U_TANH: d = 1.0f - o * o; break;
        case GR_U_RELU: d = v > 0.0f ? 1.0f : 0.0f; break;
        case GR_U_ELU: d = v > 0.0f ? 1.0f : o + 1.0f; break;
        case GR_U_EXP: d = o; break;
        case GR_U_LOG: d = 1.0f / v; break;
        case GR_U_ABS: d = v > 0.0f ? 1.0f : (v < 0.0f ? -1.0f : 0.0f); break;
        case GR_U_SQUARE: d = 2.0f * v; break;
        case GR_U_SQRT: d = 0.5f / o; break;
        case GR_U_AFFINE: d = a; break;
        default: d = (v >= a && v <= b) ? 1.0f : 0.0f; break;
        }
        gx[i] += gy[i] * d;
    }
}

int cu_unary_bwd(void *st, int op, const float *x, const float *y,
                 const float *gy, float *gx, int64_t n, float a, float b)
{
    (void)st;
    LAUNCH(k_unary_bwd, n, op, x, y, gy, gx, n, a, b);
}

__device__ float d_binary(int op, float a, float b)
{
    switch (op) {
    case GR_B_ADD: return a + b;
    case GR_B_SUB: return a - b;
    case GR_B_MUL: return a * b;
    case GR_B_DIV: return a / b;
    case GR_B_MIN: return a <= b ? a : b;
    default: return a >= b ? a : b;
    }
}

/* d/da and d/db of op at (a, b) times g */
__device__ void d_binary_grad(int op, float a, float b, float g, float *da,
                              float *db)
{
    switch (op) {
    case GR_B_ADD: *da = g; *db = g; break;
    case GR_B_SUB: *da = g; *db = -g; break;
    case GR_B_MUL: *da = g * b; *db = g * a; break;
    case GR_B_DIV: *da = g / b; *db = -g * a / (b * b); break;
    case GR_B_MIN:
        *da = a <= b ? g : 0.0f;
        *db = a <= b ? 0.0f : g;
        break;
    default:
        *da = a >= b ? g : 0.0f;
        *db = a >= b ? 0.0f : g;
        break;
    }
}

__global__ void k_binary_fwd(int op, const float *a, const float *b,
                             float *y, gr_bcast bc)
{
    GRID_STRIDE(i, bc.n)
    {
        int64_t bi = bc.same ? i : bcast_offset(bc, i);
        y[i] = d_binary(op, a[i], b[bi]);
    }
}

int cu_binary_fwd(void *st, int op, const float *a, const float *b, float *y,
                  const gr_bcast *bc)
{
    (void)st;
    LAUNCH(k_binary_fwd, bc->n, op, a, b, y, *bc);
}

__global__ void k_binary_bwd_a(int op, const float *a, const float *b,
                               const float *gy, float *ga, float *gb_same,
                               gr_bcast bc)
{
    GRID_STRIDE(i, bc.n)
    {
        int64_t bi = bc.same ? i : bcast_offset(bc, i);
        float da, db;
        d_binary_grad(op, a[i], b[bi], gy[i], &da, &db);
        if (ga) {
            ga[i] += da;
        }
        if (gb_same) {
            gb_same[i] += db;
        }
    }
}

/* One thread per element of b: sums over the broadcast sub-space in a
 * fixed order (deterministic, no atomics). */
__global__ void k_binary_bwd_b(int op, const float *a, const float *b,
                               const float *gy, float *gb, gr_bcast bc)
{
    int64_t reps = bc.n / bc.bn;
    GRID_STRIDE(j, bc.bn)
    {
        int64_t jd[4], r = j;
        for (int d = 3; d >= 0; d--) {
            jd[d] = r % bc.bshape[d];
            r /= bc.bshape[d];
        }
        float acc = 0.0f;
        for (int64_t q = 0; q < reps; q++) {
            int64_t idx[4], rr = q;
            for (int d = 3; d >= 0; d--) {
                if (bc.bshape[d] == 1 && bc.shape[d] > 1) {
                    idx[d] = rr % bc.shape[d];
                    rr /= bc.shape[d];
                } else {
                    idx[d] = jd[d];
                }
            }
            int64_t e = ((idx[0] * bc.shape[1] + idx[1]) * bc.shape[2] +
                         idx[2]) * bc.shape[3] + idx[3];
            float da, db;
            d_binary_grad(op, a[e], b[j], gy[e], &da, &db);
            acc += db;
        }
        gb[j] += acc;
    }
}

int cu_binary_bwd(void *st, int op, const float *a, const float *b,
                  const float *gy, float *ga, float *gb, const gr_bcast *bc)
{
    (void)st;
    if (ga || (gb && bc->same)) {
        k_binary_bwd_a<<<blocks_for(bc->n), kBlock>>>(
            op, a, b, gy, ga, bc->same ? gb : NULL, *bc);
        int rc = gr_cuda_launched("k_binary_bwd_a");
        if (rc < 0) {
            return rc;
        }
    }
    if (gb && !bc->same) {
        LAUNCH(k_binary_bwd_b, bc->bn, op, a, b, gy, gb, *bc);
    }
    return 0;
}

/* ---- rows: softmax, cumsum, cumax, layer norm ---- */

__global__ void k_softmax_fwd(const float *x, const float *mask, gr_bcast mbc,
                              float *y, int64_t rows, int64_t cols, int is_log)
{
    __shared__ float sh[kRowBlock];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -INFINITY;
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
            float v = xr[c];
            if (mask) {
                v += mask[bcast_offset(mbc, r * cols + c)];
            }
            yr[c] = v;
            m = fmaxf(m, v);
        }
        m = block_max(m, sh);
        if (m == -INFINITY) {
            for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
                yr[c] = is_log ? -INFINITY : 0.0f;
            }
            __syncthreads();
            continue;
        }
        float s = 0.0f;
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
            s += expf(yr[c] - m);
        }
        s = block_sum(s, sh);
        float ls = logf(s), inv = 1.0f / s;
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
            yr[c] = is_log ? yr[c] - m - ls : expf(yr[c] - m) * inv;
        }
        __syncthreads();
    }
}

int cu_softmax_fwd(void *st, const float *x, const float *mask,
                   const gr_bcast *mbc, float *y, int64_t rows, int64_t cols,
                   int is_log)
{
    (void)st;
    gr_bcast none;
    memset(&none, 0, sizeof none);
    int grid = rows < 65535 ? (int)rows : 65535;
    k_softmax_fwd<<<grid, kRowBlock>>>(x, mask, mbc ? *mbc : none, y, rows,
                                       cols, is_log);
    return gr_cuda_launched("k_softmax_fwd");
}

__global__ void k_softmax_bwd(const float *y, const float *gy, float *gx,
                              int64_t rows, int64_t cols, int is_log)
{
    __shared__ float sh[kRowBlock];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *yr = y + r * cols, *gr = gy + r * cols;
        float *gxr = gx + r * cols;
        float dot = 0.0f;
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
            if (is_log) {
                if (yr[c] != -INFINITY) {
                    dot += gr[c];
                }
            } else {
                dot += gr[c] * yr[c];
            }
        }
        dot = block_sum(dot, sh);
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
            if (is_log) {
                if (yr[c] != -INFINITY) {
                    gxr[c] += gr[c] - expf(yr[c]) * dot;
                }
            } else {
                gxr[c] += yr[c] * (gr[c] - dot);
            }
        }
        __syncthreads();
    }
}

int cu_softmax_bwd(void *st, const float *y, const float *gy, float *gx,
                   int64_t rows, int64_t cols, int is_log)
{
    (void)st;
    int grid = rows < 65535 ? (int)rows : 65535;
    k_softmax_bwd<<<grid, kRowBlock>>>(y, gy, gx, rows, cols, is_log);
    return gr_cuda_launched("k_softmax_bwd");
}

__global__ void k_cumsum_fwd(const float *x, float *y, int64_t rows,
                             int64_t cols)
{
    GRID_STRIDE(r, rows)
    {
        float s = 0.0f;
        for (int64_t c = 0; c < cols; c++) {
            s += x[r * cols + c];
            y[r * cols + c] = s;
        }
    }
}

int cu_cumsum_fwd(void *st, const float *x, float *y, int64_t rows,
                  int64_t cols)
{
    (void)st;
    LAUNCH(k_cumsum_fwd, rows, x, y, rows, cols);
}

__global__ void k_cumsum_bwd(const float *gy, float *gx, int64_t rows,
                             int64_t cols)
{
    GRID_STRIDE(r, rows)
    {
        float s = 0.0f;
        for (int64_t c = cols - 1; c >= 0; c--) {
            s += gy[r * cols + c];
            gx[r * cols + c] += s;
        }
    }
}

int cu_cumsum_bwd(void *st, const float *gy, float *gx, int64_t rows,
                  int64_t cols)
{
    (void)st;
    LAUNCH(k_cumsum_bwd, rows, gy, gx, rows, cols);
}

/* One row of cumax, sequential (as the CPU). */
__device__ void d_cumax_row(const float *x, float *p, float *y, int64_t n)
{
    float m = -INFINITY;
    for (int64_t k = 0; k < n; k++) {
        m = fmaxf(m, x[k]);
    }
    float sum = 0.0f;
    for (int64_t k = 0; k < n; k++) {
        p[k] = expf(x[k] - m);
        sum += p[k];
    }
    float run = 0.0f;
    for (int64_t k = 0; k < n; k++) {
        p[k] /= sum;
        run += p[k];
        y[k] = run;
    }
}

__device__ void d_cumax_row_bwd(const float *p, const float *g, float *gx,
                                int64_t n, float sign)
{
    float s = 0.0f, dot = 0.0f;
    for (int64_t k = n - 1; k >= 0; k--) {
        s += sign * g[k];
        dot += p[k] * s;
    }
    s = 0.0f;
    for (int64_t k = n - 1; k >= 0; k--) {
        s += sign * g[k];
        gx[k] += p[k] * (s - dot);
    }
}

__global__ void k_cumax_fwd(const float *x, float *y, float *p, int64_t rows,
                            int64_t cols)
{
    GRID_STRIDE(r, rows)
    {
        d_cumax_row(x + r * cols, p + r * cols, y + r * cols, cols);
    }
}

int cu_cumax_fwd(void *st, const float *x, float *y, float *p, int64_t rows,
                 int64_t cols)
{
    (void)st;
    LAUNCH(k_cumax_fwd, rows, x, y, p, rows, cols);
}

__global__ void k_cumax_bwd(const float *p, const float *gy, float *gx,
                            int64_t rows, int64_t cols)
{
    GRID_STRIDE(r, rows)
    {
        d_cumax_row_bwd(p + r * cols, gy + r * cols, gx + r * cols, cols,
                        1.0f);
    }
}

int cu_cumax_bwd(void *st, const float *p, const float *gy, float *gx,
                 int64_t rows, int64_t cols)
{
    (void)st;
    LAUNCH(k_cumax_bwd, rows, p, gy, gx, rows, cols);
}

__global__ void k_layernorm_fwd(const float *x, const float *gamma,
                                const float *beta, float *y, float *mean,
                                float *rstd, int64_t rows, int64_t cols,
                                float eps)
{
    __shared__ float sh[kRowBlock];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *xr = x + r * cols;
        float s = 0.0f;
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
            s += xr[c];
        }
        float mu = block_sum(s, sh) / (float)cols;
        float v = 0.0f;
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
            float d = xr[c] - mu;
            v += d * d;
        }
        v = block_sum(v, sh) / (float)cols;
        float rs = rsqrtf(v + eps);
        if (threadIdx.x == 0) {
            mean[r] = mu;
            rstd[r] = rs;
        }
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
            float h = (xr[c] - mu) * rs;
            y[r * cols + c] = h * (gamma ? gamma[c] : 1.0f) +
                              (beta ? beta[c] : 0.0f);
        }
        __syncthreads();
    }
}

int cu_layernorm_fwd(void *st, const float *x, const float *gamma,
                     const float *beta, float *y, float *mean, float *rstd,
                     int64_t rows, int64_t cols, float eps)
{
    (void)st;
    int grid = rows < 65535 ? (int)rows : 65535;
    k_layernorm_fwd<<<grid, kRowBlock>>>(x, gamma, beta, y, mean, rstd, rows,
                                         cols, eps);
    return gr_cuda_launched("k_layernorm_fwd");
}

__global__ void k_layernorm_bwd_x(const float *x, const float *gamma,
                                  const float *mean, const float *rstd,
                                  const float *gy, float *gx, int64_t rows,
                                  int64_t cols)
{
    __shared__ float sh[kRowBlock];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *xr = x + r * cols, *gr = gy + r * cols;
        float mu = mean[r], rs = rstd[r];
        float s1 = 0.0f, s2 = 0.0f;
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
            float h = (xr[c] - mu) * rs;
            float dh = gr[c] * (gamma ? gamma[c] : 1.0f);
            s1 += dh;
            s2 += dh * h;
        }
        float m1 = block_sum(s1, sh) / (float)cols;
        float m2 = block_sum(s2, sh) / (float)cols;
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
            float h = (xr[c] - mu) * rs;
            float dh = gr[c] * (gamma ? gamma[c] : 1.0f);
            gx[r * cols + c] += rs * (dh - m1 - h * m2);
        }
        __syncthreads();
    }
}

/* Column sums over rows, one thread per column (fixed order). */
__global__ void k_layernorm_bwd_params(const float *x, const float *mean,
                                       const float *rstd, const float *gy,
                                       float *ggamma, float *gbeta,
                                       int64_t rows, int64_t cols)
{
    GRID_STRIDE(c, cols)
    {
        float sg = 0.0f, sb = 0.0f;
        for (int64_t r = 0; r < rows; r++) {
            float g = gy[r * cols + c];
            sg += g * (x[r * cols + c] - mean[r]) * rstd[r];
            sb += g;
        }
        if (ggamma) {
            ggamma[c] += sg;
        }
        if (gbeta) {
            gbeta[c] += sb;
        }
    }
}

int cu_layernorm_bwd(void *st, const float *x, const float *gamma,
                     const float *mean, const float *rstd, const float *gy,
                     float *gx, float *ggamma, float *gbeta, int64_t rows,
                     int64_t cols)
{
    (void)st;
    if (gx) {
        int grid = rows < 65535 ? (int)rows : 65535;
        k_layernorm_bwd_x<<<grid, kRowBlock>>>(x, gamma, mean, rstd, gy, gx,
                                               rows, cols);
        int rc = gr_cuda_launched("k_layernorm_bwd_x");
        if (rc < 0) {
            return rc;
        }
    }
    if (ggamma || gbeta) {
        LAUNCH(k_layernorm_bwd_params, cols, x, mean, rstd, gy, ggamma, gbeta,
               rows, cols);
    }
    return 0;
}

/* ---- indexing ---- */

__global__ void k_rows_gather(const float *table, const int32_t *ids,
                              float *y, int64_t n, int64_t d)
{
    GRID_STRIDE(i, n * d)
    {
        int64_t r = i / d, j = i % d;
        y[i] = table[(int64_t)ids[r] * d + j];
    }
}

int cu_rows_gather(void *st, const float *table, const int32_t *ids,
                   float *y, int64_t n, int64_t d)
{
    (void)st;
    LAUNCH(k_rows_gather, n * d, table, ids, y, n, d);
}

/* One thread per column; rows visited in order (deterministic). */
__global__ void k_rows_scatter_add(const float *gy, const int32_t *ids,
                                   float *gtable, int64_t n, int64_t d)
{
    GRID_STRIDE(j, d)
    {
        for (int64_t i = 0; i < n; i++) {
            gtable[(int64_t)ids[i] * d + j] += gy[i * d + j];
        }
    }
}

int cu_rows_scatter_add(void *st, const float *gy, const int32_t *ids,
                        float *gtable, int64_t n, int64_t d)
{
    (void)st;
    LAUNCH(k_rows_scatter_add, d, gy, ids, gtable, n, d);
}

__global__ void k_sparse_fwd(const int32_t *idx, const float *val,
                             const float *table, float *y, int64_t rows,
                             int64_t nz, int64_t out)
{
    GRID_STRIDE(i, rows * out)
    {
        int64_t r = i / out, o = i % out;
        float s = 0.0f;
        for (int64_t j = 0; j < nz; j++) {
            int32_t id = idx[r * nz + j];
            if (id >= 0) {
                s += (val ? val[r * nz + j] : 1.0f) * table[(int64_t)id * out + o];
            }
        }
        y[i] = s;
    }
}

int cu_sparse_fwd(void *st, const int32_t *idx, const float *val,
                  const float *table, float *y, int64_t rows, int64_t nz,
                  int64_t out)
{
    (void)st;
    LAUNCH(k_sparse_fwd, rows * out, idx, val, table, y, rows, nz, out);
}

__global__ void k_sparse_bwd_val(const int32_t *idx, const float *table,
                                 const float *gy, float *gval, int64_t rows,
                                 int64_t nz, int64_t out)
{
    GRID_STRIDE(i, rows * nz)
    {
        int32_t id = idx[i];
        if (id >= 0) {
            int64_t r = i / nz;
            float dot = 0.0f;
            for (int64_t o = 0; o < out; o++) {
                dot += gy[r * out + o] * table[(int64_t)id * out + o];
            }
            gval[i] += dot;
        }
    }
}

/* Row r of a dense [rows, n_table] block gets the sparse row r: one thread
 * per row, entries in j order (a repeated id adds up in a fixed order). */
__global__ void k_sparse_densify(const int32_t *idx, const float *val,
                                 float *dense, int64_t rows, int64_t nz,
                                 int64_t n_table)
{
    GRID_STRIDE(r, rows)
    {
        float *d = dense + r * n_table;
        for (int64_t j = 0; j < nz; j++) {
            int32_t id = idx[r * nz + j];
            if (id >= 0) {
                d[id] += val ? val[r * nz + j] : 1.0f;
            }
        }
    }
}

/* The table gradient is X^T gy with X the sparse rows made dense: a block
 * of rows is densified on the device and multiplied by cuBLAS, so nothing
 * goes through the host and no thread walks a long list of entries alone
 * (an observation feature present in every row has rows · 1 entries).
 * Deterministic: fixed-order densify, then one SGEMM per block. */
int cu_sparse_bwd(void *st, const int32_t *idx, const float *val,
                  const float *table, const float *gy, float *gval,
                  float *gtable, int64_t rows, int64_t nz, int64_t out,
                  int64_t n_table)
{
    cuda_state *s = (cuda_state *)st;
    if (gval) {
        k_sparse_bwd_val<<<blocks_for(rows * nz), kBlock>>>(
            idx, table, gy, gval, rows, nz, out);
        int rc = gr_cuda_launched("k_sparse_bwd_val");
        if (rc < 0) {
            return rc;
        }
    }
    if (!gtable || rows == 0 || n_table == 0) {
        return 0;
    }
    /* Blocks of at most 16 Mi floats (64 MiB) of dense rows. */
    const int64_t cap_floats = (int64_t)1 << 24;
    int64_t block = cap_floats / n_table;
    if (block < 1) {
        block = 1;
    }
    if (block > rows) {
        block = rows;
    }
    size_t need = (size_t)(block * n_table);
    if (need > s->d_dense_cap) {
        /* grows during the first steps only, kept afterwards */
        cudaFree(s->d_dense);
        s->d_dense = NULL;
        s->d_dense_cap = 0;
        int rc = check_rt(cudaMalloc(&s->d_dense, need * sizeof(float)),
                          "allocating the sparse backward's dense block");
        if (rc < 0) {
            return rc;
        }
        s->d_dense_cap = need;
    }
    for (int64_t r0 = 0; r0 < rows; r0 += block) {
        int64_t n = rows - r0 < block ? rows - r0 : block;
        int rc = check_rt(cudaMemsetAsync(s->d_dense, 0,
                                          (size_t)(n * n_table) *
                                              sizeof(float)),
                          "clearing the sparse backward's dense block");
        if (rc < 0) {
            return rc;
        }
        k_sparse_densify<<<blocks_for(n), kBlock>>>(
            idx + r0 * nz, val ? val + r0 * nz : NULL, s->d_dense, n, nz,
            n_table);
        rc = gr_cuda_launched("k_sparse_densify");
        if (rc < 0) {
            return rc;
        }
        /* gtable [n_table, out] += X^T [n_table, n] · gy [n, out] */
        rc = cu_gemm(st, 1, 0, (int)n_table, (int)out, (int)n, 1.0f,
                     s->d_dense, (int)n_table, 0, gy + r0 * out, (int)out, 0,
                     1.0f, gtable, (int)out, 0, 1);
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

__global__ void k_gather_fwd(const float *x, const int32_t *idx, float *y,
                             int64_t rows, int64_t n, int64_t k)
{
    GRID_STRIDE(i, rows * k)
    {
        int64_t r = i / k;
        y[i] = x[r * n + idx[i]];
    }
}

int cu_gather_fwd(void *st, const float *x, const int32_t *idx, float *y,
                  int64_t rows, int64_t n, int64_t k)
{
    (void)st;
    LAUNCH(k_gather_fwd, rows * k, x, idx, y, rows, n, k);
}

__global__ void k_gather_bwd(const float *gy, const int32_t *idx, float *gx,
                             int64_t rows, int64_t n, int64_t k)
{
    GRID_STRIDE(r, rows)
    {
        for (int64_t j = 0; j < k; j++) {
            gx[r * n + idx[r * k + j]] += gy[r * k + j];
        }
    }
}

int cu_gather_bwd(void *st, const float *gy, const int32_t *idx, float *gx,
                  int64_t rows, int64_t n, int64_t k)
{
    (void)st;
    LAUNCH(k_gather_bwd, rows, gy, idx, gx, rows, n, k);
}

/* ---- copies and reductions ---- */

__global__ void k_copy2d(float *dst, int64_t dld, const float *src,
                         int64_t sld, int64_t rows, int64_t cols, int acc)
{
    GRID_STRIDE(i, rows * cols)
    {
        int64_t r = i / cols, c = i % cols;
        float v = src[r * sld + c];
        if (acc) {
            dst[r * dld + c] += v;
        } else {
            dst[r * dld + c] = v;
        }
    }
}

int cu_copy2d(void *st, float *dst, int64_t dld, const float *src,
              int64_t sld, int64_t rows, int64_t cols, int acc)
{
    (void)st;
    LAUNCH(k_copy2d, rows * cols, dst, dld, src, sld, rows, cols, acc);
}

struct perm4 {
    int64_t ys[4]; /* output shape */
    int64_t st[4]; /* input stride for each output dim */
};

__global__ void k_permute(const float *x, float *y, perm4 p, int64_t n,
                          int acc)
{
    GRID_STRIDE(i, n)
    {
        int64_t r = i, off = 0;
        for (int d = 3; d >= 0; d--) {
            off += (r % p.ys[d]) * p.st[d];
            r /= p.ys[d];
        }
        if (acc) {
            y[i] += x[off];
        } else {
            y[i] = x[off];
        }
    }
}

int cu_permute(void *st, const float *x, float *y, const int64_t shape[4],
               const int perm[4], int acc)
{
    (void)st;
    int64_t xs[4];
    xs[3] = 1;
    for (int d = 2; d >= 0; d--) {
        xs[d] = xs[d + 1] * shape[d + 1];
    }
    perm4 p;
    int64_t n = 1;
    for (int d = 0; d < 4; d++) {
        p.ys[d] = shape[perm[d]];
        p.st[d] = xs[perm[d]];
        n *= shape[d];
    }
    LAUNCH(k_permute, n, x, y, p, n, acc);
}

/* One block per output (o, i): a tree over n (fixed order). */
__global__ void k_reduce(const float *x, float *y, int64_t outer, int64_t n,
                         int64_t inner, float scale, int acc)
{
    __shared__ float sh[kBlock];
    for (int64_t out = blockIdx.x; out < outer * inner; out += gridDim.x) {
        int64_t o = out / inner, i = out % inner;
        float s = 0.0f;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
            s += x[(o * n + j) * inner + i];
        }
        s = block_sum(s, sh);
        if (threadIdx.x == 0) {
            float v = s * scale;
            y[out] = acc ? y[out] + v : v;
        }
    }
}

/* Small n: one thread per output. */
__global__ void k_reduce_small(const float *x, float *y, int64_t outer,
                               int64_t n, int64_t inner, float scale, int acc)
{
    GRID_STRIDE(out, outer * inner)
    {
        int64_t o = out / inner, i = out % inner;
        float s = 0.0f;
        for (int64_t j = 0; j < n; j++) {
            s += x[(o * n + j) * inner + i];
        }
        float v = s * scale;
        y[out] = acc ? y[out] + v : v;
    }
}

int cu_reduce(void *st, const float *x, float *y, int64_t outer, int64_t n,
              int64_t inner, float scale, int acc)
{
    (void)st;
    int64_t outs = outer * inner;
    if (n <= 64 || outs >= 4096) {
        LAUNCH(k_reduce_small, outs, x, y, outer, n, inner, scale, acc);
    }
    int grid = outs < 65535 ? (int)outs : 65535;
    k_reduce<<<grid, kBlock>>>(x, y, outer, n, inner, scale, acc);
    return gr_cuda_launched("k_reduce");
}

__global__ void k_expand(const float *gy, float *gx, int64_t outer,
                         int64_t n, int64_t inner, float scale)
{
    GRID_STRIDE(e, outer * n * inner)
    {
        int64_t i = e % inner, o = e / (n * inner);
        gx[e] += scale * gy[o * inner + i];
    }
}

int cu_expand(void *st, const float *gy, float *gx, int64_t outer, int64_t n,
              int64_t inner, float scale)
{
    (void)st;
    LAUNCH(k_expand, outer * n * inner, gy, gx, outer, n, inner, scale);
}

/* ---- dropout: the mask from Philox, the CPU's bits ---- */

__global__ void k_dropout(const float *x, float *y, gr_bcast mbc,
                          uint64_t key, float p, float scale, int acc)
{
    GRID_STRIDE(i, mbc.n)
    {
        uint64_t m = (uint64_t)bcast_offset(mbc, i);
        float v = gr_rng_keep(key, m, p) ? x[i] * scale : 0.0f;
        if (acc) {
            y[i] += v;
        } else {
            y[i] = v;
        }
    }
}

int cu_dropout(void *st, const float *x, float *y, const gr_bcast *mbc,
               uint64_t key, float p, float scale, int acc)
{
    (void)st;
    LAUNCH(k_dropout, mbc->n, x, y, *mbc, key, p, scale, acc);
}

/* ---- cross entropy ---- */

__global__ void k_xent_lse(const float *logits, const int32_t *targets,
                           int64_t rows, int64_t v, int32_t ignore,
                           float *lse)
{
    __shared__ float sh[kRowBlock];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        if (targets[r] == ignore) {
            if (threadIdx.x == 0) {
                lse[r] = 0.0f;
            }
            continue;
        }
        const float *xr = logits + r * v;
        float m = -INFINITY;
        for (int64_t j = threadIdx.x; j < v; j += blockDim.x) {
            m = fmaxf(m, xr[j]);
        }
        m = block_max(m, sh);
        float s = 0.0f;
        for (int64_t j = threadIdx.x; j < v; j += blockDim.x) {
            s += expf(xr[j] - m);
        }
        s = block_sum(s, sh);
        if (threadIdx.x == 0) {
            lse[r] = m + logf(s);
        }
    }
}

__global__ void k_xent_sum(const float *logits, const int32_t *targets,
                           const float *lse, int64_t rows, int64_t v,
                           int32_t ignore, float *loss, float *count)
{
    __shared__ double sh[kBlock];
    double s = 0.0, c = 0.0;
    for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
        int32_t t = targets[r];
        if (t != ignore) {
            s += (double)lse[r] - (double)logits[r * v + t];
            c += 1.0;
        }
    }
    s = block_sum_d(s, sh);
    c = block_sum_d(c, sh);
    if (threadIdx.x == 0) {
        count[0] = (float)c;
        loss[0] = (float)(s / (c > 0.0 ? c : 1.0));
    }
}

int cu_xent_fwd(void *st, const float *logits, const int32_t *targets,
                int64_t rows, int64_t v, int32_t ignore, float *loss,
                float *count, float *lse)
{
    (void)st;
    int grid = rows < 65535 ? (int)rows : 65535;
    k_xent_lse<<<grid, kRowBlock>>>(logits, targets, rows, v, ignore, lse);
    int rc = gr_cuda_launched("k_xent_lse");
    if (rc < 0) {
        return rc;
    }
    k_xent_sum<<<1, kBlock>>>(logits, targets, lse, rows, v, ignore, loss,
                              count);
    return gr_cuda_launched("k_xent_sum");
}

__global__ void k_xent_bwd(const float *logits, const int32_t *targets,
                           const float *lse, int64_t rows, int64_t v,
                           int32_t ignore, const float *gloss,
                           const float *count, float *glogits)
{
    float g = gloss[0] / (count[0] > 0.0f ? count[0] : 1.0f);
    GRID_STRIDE(i, rows * v)
    {
        int64_t r = i / v, j = i % v;
        int32_t t = targets[r];
        if (t == ignore) {
            continue;
        }
        float d = g * expf(logits[i] - lse[r]);
        if (j == t) {
            d -= g;
        }
        glogits[i] += d;
    }
}

int cu_xent_bwd(void *st, const float *logits, const int32_t *targets,
                const float *lse, int64_t rows, int64_t v, int32_t ignore,
                const float *gloss, const float *count, float *glogits)
{
    (void)st;
    LAUNCH(k_xent_bwd, rows * v, logits, targets, lse, rows, v, ignore, gloss,
           count, glogits);
}

/* ---- fused cells ---- */

__global__ void k_lstm_fwd(const float *gates, const float *c_prev, float *h,
                           float *c, float *act, int64_t b, int64_t hd)
{
    GRID_STRIDE(k, b * hd)
    {
        int64_t r = k / hd, u = k % hd;
        const float *g = gates + r * 4 * hd;
        float *a = act + r * 5 * hd;
        float i = d_sigmoid(g[u]);
        float f = d_sigmoid(g[hd + u]);
        float gg = tanhf(g[2 * hd + u]);
        float o = d_sigmoid(g[3 * hd + u]);
        float cn = f * c_prev[k] + i * gg;
        float tc = tanhf(cn);
        c[k] = cn;
        h[k] = o * tc;
        a[u] = i;
        a[hd + u] = f;
        a[2 * hd + u] = gg;
        a[3 * hd + u] = o;
        a[4 * hd + u] = tc;
    }
}

/* ---- Ordered Memory's gated sum ---- */

__global__ void k_om_gate_fwd(const float *z, const float *v, const float *h,
                              float *y, int64_t r, int64_t d)
{
    GRID_STRIDE(k, r * d)
    {
        int64_t i = k / d, u = k % d;
        const float *zr = z + i * 4 * d;
        y[k] = d_sigmoid(zr[u]) * v[k] + d_sigmoid(zr[d + u]) * h[k] +
               d_sigmoid(zr[2 * d + u]) * zr[3 * d + u];
    }
}

int cu_om_gate_fwd(void *st, const float *z, const float *v, const float *h,
                   float *y, int64_t r, int64_t d)
{
    (void)st;
    LAUNCH(k_om_gate_fwd, r * d, z, v, h, y, r, d);
}

__global__ void k_om_gate_bwd(const float *z, const float *v, const float *h,
                              const float *gy, float *gz, float *gv,
                              float *gh, int64_t r, int64_t d)
{
    GRID_STRIDE(k, r * d)
    {
        int64_t i = k / d, u = k % d;
        const float *zr = z + i * 4 * d;
        float sv = d_sigmoid(zr[u]), sh = d_sigmoid(zr[d + u]);
        float sc = d_sigmoid(zr[2 * d + u]);
        float dy = gy[k];
        if (gz != NULL) {
            float *dz = gz + i * 4 * d;
            dz[u] += dy * v[k] * sv * (1.0f - sv);
            dz[d + u] += dy * h[k] * sh * (1.0f - sh);
            dz[2 * d + u] += dy * zr[3 * d + u] * sc * (1.0f - sc);
            dz[3 * d + u] += dy * sc;
        }
        if (gv != NULL) {
            gv[k] += dy * sv;
        }
        if (gh != NULL) {
            gh[k] += dy * sh;
        }
    }
}

int cu_om_gate_bwd(void *st, const float *z, const float *v, const float *h,
                   const float *gy, float *gz, float *gv, float *gh, int64_t r,
                   int64_t d)
{
    (void)st;
    LAUNCH(k_om_gate_bwd, r * d, z, v, h, gy, gz, gv, gh, r, d);
}

__global__ void k_om_cell_mask(const float *a, float *g, int64_t n,
                               float scale)
{
    GRID_STRIDE(k, n)
    {
        g[k] = a[k] > 0.0f ? g[k] * scale : 0.0f;
    }
}

int cu_om_cell_mask(void *st, const float *a, float *g, int64_t n,
                    float scale)
{
    (void)st;
    LAUNCH(k_om_cell_mask, n, a, g, n, scale);
}

/* gr_om_attend's pointer: one thread per row (rows are short: n slots). */
__global__ void k_om_pointer_fwd(const float *s, const int32_t *bpos,
                                 const float *pprev, float *p, float *cp,
                                 float *rcp, float *save, int64_t b,
                                 int64_t n)
{
    GRID_STRIDE(r, b)
    {
        const int32_t *bp = bpos + r * n;
        const float *pp = pprev + r * n;
        float *pr = p + r * n;
        float *sm = save + r * (3 * n + 1), *m = sm + n;
        float c = 0.0f;
        for (int64_t i = 0; i < n; i++) {
            c += pp[i];
            m[i] = c;
        }
        for (int64_t i = 0; i + 1 < n; i++) {
            m[i] = bp[i] >= 0 ? m[i + 1] : 0.0f;
        }
        m[n - 1] = 1.0f;
        float mx = -INFINITY;
        for (int64_t i = 0; i < n; i++) {
            if (bp[i] >= 0 && s[bp[i]] > mx) {
                mx = s[bp[i]];
            }
        }
        if (mx == -INFINITY) {
            for (int64_t i = 0; i < n; i++) {
                sm[i] = 0.0f;
            }
        } else {
            double sum = 0.0;
            for (int64_t i = 0; i < n; i++) {
                if (bp[i] >= 0) {
                    sum += (double)expf(s[bp[i]] - mx);
                }
            }
            float inv = (float)(1.0 / sum);
            for (int64_t i = 0; i < n; i++) {
                sm[i] = bp[i] >= 0 ? expf(s[bp[i]] - mx) * inv : 0.0f;
            }
        }
        double tot = 0.0;
        for (int64_t i = 0; i < n; i++) {
            tot += sm[i] * m[i];
        }
        float t = (float)tot;
        float S = t > 1e-12f ? t : 1e-12f;
        sm[3 * n] = t;
        float acc = 0.0f;
        for (int64_t i = 0; i < n; i++) {
            pr[i] = sm[i] * m[i] / S;
            acc += pr[i];
            cp[i * b + r] = acc;
        }
        acc = 0.0f;
        for (int64_t i = n - 1; i >= 0; i--) {
            acc += pr[i];
            rcp[i * b + r] = acc;
        }
    }
}

int cu_om_pointer_fwd(void *st, const float *s, const int32_t *bpos,
                      const float *pprev, float *p, float *cp, float *rcp,
                      float *save, int64_t b, int64_t n)
{
    (void)st;
    LAUNCH(k_om_pointer_fwd, b, s, bpos, pprev, p, cp, rcp, save, b, n);
}

__global__ void k_om_pointer_bwd(const int32_t *bpos, float *save,
                                 const float *gp, const float *gcp,
                                 const float *grcp, float *gs, float *gpprev,
                                 float sscale, int64_t b, int64_t n)
{
    GRID_STRIDE(r, b)
    {
        const int32_t *bp = bpos + r * n;
        const float *sm = save + r * (3 * n + 1), *m = sm + n;
        float *g = save + r * (3 * n + 1) + 2 * n;
        const float raw = sm[3 * n];
        const float S = raw > 1e-12f ? raw : 1e-12f;
        float acc = 0.0f;
        for (int64_t i = n - 1; i >= 0; i--) {
            acc += gcp ? gcp[i * b + r] : 0.0f;
            g[i] = (gp ? gp[r * n + i] : 0.0f) + acc;
        }
        acc = 0.0f;
        for (int64_t i = 0; i < n; i++) {
            acc += grcp ? grcp[i * b + r] : 0.0f;
            g[i] += acc;
        }
        double dot = 0.0;
        for (int64_t i = 0; i < n; i++) {
            dot += (double)g[i] * (sm[i] * m[i]);
        }
        const float gsum = raw > 1e-12f ? -(float)dot / (S * S) : 0.0f;
        double dot2 = 0.0;
        for (int64_t i = 0; i < n; i++) {
            g[i] = g[i] / S + gsum;
            dot2 += (double)sm[i] * (g[i] * m[i]);
        }
        for (int64_t i = 0; i < n; i++) {
            if (bp[i] >= 0) {
                gs[bp[i]] = sscale * sm[i] * (g[i] * m[i] - (float)dot2);
            }
        }
        if (gpprev != NULL) {
            acc = 0.0f;
            for (int64_t j = n - 1; j >= 1; j--) {
                if (bp[j - 1] >= 0) {
                    acc += g[j - 1] * sm[j - 1];
                }
                gpprev[r * n + j] += acc;
            }
            gpprev[r * n] += acc;
        }
    }
}

int cu_om_pointer_bwd(void *st, const int32_t *bpos, float *save,
                      const float *gp, const float *gcp, const float *grcp,
                      float *gs, float *gpprev, float sscale, int64_t b,
                      int64_t n)
{
    (void)st;
    LAUNCH(k_om_pointer_bwd, b, bpos, save, gp, gcp, grcp, gs, gpprev,
           sscale, b, n);
}

__global__ void k_lerp_fwd(const float *a, const float *b, const float *w,
                           const int32_t *idx, float *y, int64_t rows,
                           int64_t d)
{
    GRID_STRIDE(k, rows * d)
    {
        int64_t r = k / d, c = k % d;
        int64_t br = idx != NULL ? (int64_t)idx[r] : r;
        if (br < 0) {
            y[k] = a[k];
        } else {
            float wr = w[r];
            float u = a[k] * (1.0f - wr), v = b[br * d + c] * wr;
            y[k] = u + v;
        }
    }
}

int cu_lerp_fwd(void *st, const float *a, const float *b, const float *w,
                const int32_t *idx, float *y, int64_t rows, int64_t d)
{
    (void)st;
    LAUNCH(k_lerp_fwd, rows * d, a, b, w, idx, y, rows, d);
}

/* one thread per row: the weight's gradient is a sum over the row */
__global__ void k_lerp_bwd(const float *a, const float *b, const float *w,
                           const int32_t *idx, const float *gy, float *ga,
                           float *gb, float *gw, int64_t rows, int64_t d,
                           unsigned acc)
{
    GRID_STRIDE(r, rows)
    {
        int64_t br = idx != NULL ? (int64_t)idx[r] : r;
        float wr = br < 0 ? 0.0f : w[r], om = 1.0f - wr;
        double s = 0.0;
        for (int64_t c = 0; c < d; c++) {
            int64_t k = r * d + c;
            float g = gy[k];
            if (ga != NULL) {
                ga[k] = ((acc & 1u) ? ga[k] : 0.0f) + g * om;
            }
            if (br >= 0) {
                int64_t kb = br * d + c;
                if (gb != NULL) {
                    gb[kb] = ((acc & 2u) ? gb[kb] : 0.0f) + g * wr;
                }
                s += (double)g * ((double)b[kb] - (double)a[k]);
            }
        }
        if (gw != NULL && br >= 0) {
            gw[r] += (float)s;
        }
    }
}

int cu_lerp_bwd(void *st, const float *a, const float *b, const float *w,
                const int32_t *idx, const float *gy, float *ga, float *gb,
                float *gw, int64_t rows, int64_t d, unsigned acc)
{
    (void)st;
    LAUNCH(k_lerp_bwd, rows, a, b, w, idx, gy, ga, gb, gw, rows, d, acc);
}

int cu_lstm_fwd(void *st, const float *gates, const float *c_prev, float *h,
                float *c, float *act, int64_t b, int64_t hd)
{
    (void)st;
    LAUNCH(k_lstm_fwd, b * hd, gates, c_prev, h, c, act, b, hd);
}

__global__ void k_lstm_bwd(const float *act, const float *c_prev,
                           const float *gh, const float *gh_rec,
                           const float *gc, float *ggates,
                           const float *gc_prev_in, float *gc_prev, int64_t b,
                           int64_t hd)
{
    GRID_STRIDE(k, b * hd)
    {
        int64_t r = k / hd, u = k % hd;
        const float *a = act + r * 5 * hd;
        float i = a[u], f = a[hd + u], gg = a[2 * hd + u];
        float o = a[3 * hd + u], tc = a[4 * hd + u];
        float dh = gh ? gh[k] : 0.0f;
        if (gh_rec) {
            dh = gh ? dh + gh_rec[k] : gh_rec[k];
        }
        float dc = (gc ? gc[k] : 0.0f) + dh * o * (1.0f - tc * tc);
        if (ggates) {
            float *dg = ggates + r * 4 * hd;
            dg[u] += dc * gg * i * (1.0f - i);
            dg[hd + u] += dc * c_prev[k] * f * (1.0f - f);
            dg[2 * hd + u] += dc * i * (1.0f - gg * gg);
            dg[3 * hd + u] += dh * tc * o * (1.0f - o);
        }
        if (gc_prev) {
            gc_prev[k] = (gc_prev_in ? gc_prev_in[k] : 0.0f) + dc * f;
        }
    }
}

int cu_lstm_bwd(void *st, const float *act, const float *c_prev,
                const float *gh, const float *gh_rec, const float *gc,
                float *ggates, const float *gc_prev_in, float *gc_prev,
                int64_t b, int64_t hd)
{
    (void)st;
    LAUNCH(k_lstm_bwd, b * hd, act, c_prev, gh, gh_rec, gc, ggates,
           gc_prev_in, gc_prev, b, hd);
}

/* master gates of each row: save [b, 4n] = (ĩ, f̃, p_i, p_f), distances */
__global__ void k_onlstm_master(const float *z, float *df, float *di,
                                float *save, int64_t b, int64_t hd,
                                int64_t chunk)
{
    int64_t n = hd / chunk, w = 2 * n + 4 * hd;
    GRID_STRIDE(r, b)
    {
        const float *zr = z + r * w;
        float *sv = save + r * 4 * n;
        float *mi = sv, *mf = sv + n, *pi = sv + 2 * n, *pf = sv + 3 * n;
        d_cumax_row(zr, pi, mi, n);
        d_cumax_row(zr + n, pf, mf, n);
        float si = 0.0f, sf = 0.0f;
        for (int64_t k = 0; k < n; k++) {
            mi[k] = 1.0f - mi[k];
            si += mi[k];
            sf += mf[k];
        }
        df[r] = 1.0f - sf / (float)n;
        di[r] = si / (float)n;
    }
}

__global__ void k_onlstm_units(const float *z, const float *c_prev,
                               const float *save, float *h, float *c,
                               float *act, int64_t b, int64_t hd,
                               int64_t chunk)
{
    int64_t n = hd / chunk, w = 2 * n + 4 * hd;
    GRID_STRIDE(q, b * hd)
    {
        int64_t r = q / hd, u = q % hd, k = u / chunk;
        const float *zr = z + r * w;
        const float *mi = save + r * 4 * n, *mf = mi + n;
        float *a = act + r * 5 * hd;
        float o = d_sigmoid(zr[2 * n + u]);
        float ch = tanhf(zr[2 * n + hd + u]);
        float ig = d_sigmoid(zr[2 * n + 2 * hd + u]);
        float fg = d_sigmoid(zr[2 * n + 3 * hd + u]);
        float om = mf[k] * mi[k];
        float fh = fg * om + (mf[k] - om);
        float ih = ig * om + (mi[k] - om);
        float cn = fh * c_prev[q] + ih * ch;
        float tc = tanhf(cn);
        c[q] = cn;
        h[q] = o * tc;
        a[u] = o;
        a[hd + u] = ch;
        a[2 * hd + u] = ig;
        a[3 * hd + u] = fg;
        a[4 * hd + u] = tc;
    }
}

int cu_onlstm_fwd(void *st, const float *z, const float *c_prev, float *h,
                  float *c, float *df, float *di, float *save, float *act,
                  int64_t b, int64_t hd, int64_t chunk)
{
    (void)st;
    k_onlstm_master<<<blocks_for(b), kBlock>>>(z, df, di, save, b, hd, chunk);
    int rc = gr_cuda_launched("k_onlstm_master");
    if (rc < 0) {
        return rc;
    }
    LAUNCH(k_onlstm_units, b * hd, z, c_prev, save, h, c, act, b, hd, chunk);
}

/* One thread per (row, chunk): the C units of the chunk in order; writes
 * the per-unit gradients and the chunk's master-gate gradients. */
__global__ void k_onlstm_bwd_units(const float *c_prev, const float *save,
                                   const float *act, const float *gh,
                                   const float *gh_rec, const float *gc,
                                   float *gz, const float *gc_prev_in,
                                   float *gc_prev, float *scratch, int64_t b,
                                   int64_t hd, int64_t chunk)
{
    int64_t n = hd / chunk, w = 2 * n + 4 * hd;
    GRID_STRIDE(rk, b * n)
    {
        int64_t r = rk / n, k = rk % n;
        const float *mi = save + r * 4 * n, *mf = mi + n;
        const float *a = act + r * 5 * hd;
        float *gzr = gz ? gz + r * w : NULL;
        float gmi = 0.0f, gmf = 0.0f;
        float om = mf[k] * mi[k];
        for (int64_t j = 0; j < chunk; j++) {
            int64_t u = k * chunk + j, q = r * hd + u;
            float o = a[u], ch = a[hd + u], ig = a[2 * hd + u];
            float fg = a[3 * hd + u], tc = a[4 * hd + u];
            float fh = fg * om + (mf[k] - om);
            float ih = ig * om + (mi[k] - om);
            float dh = gh ? gh[q] : 0.0f;
            if (gh_rec) {
                dh = gh ? dh + gh_rec[q] : gh_rec[q];
            }
            float dc = (gc ? gc[q] : 0.0f) + dh * o * (1.0f - tc * tc);
            float dih = dc * ch, dfh = dc * c_prev[q];
            float dom = dih * (ig - 1.0f) + dfh * (fg - 1.0f);
            gmi += dih + dom * mf[k];
            gmf += dfh + dom * mi[k];
            if (gzr) {
                gzr[2 * n + u] += dh * tc * o * (1.0f - o);
                gzr[2 * n + hd + u] += dc * ih * (1.0f - ch * ch);
                gzr[2 * n + 2 * hd + u] += dih * om * ig * (1.0f - ig);
                gzr[2 * n + 3 * hd + u] += dfh * om * fg * (1.0f - fg);
            }
            if (gc_prev) {
                gc_prev[q] = (gc_prev_in ? gc_prev_in[q] : 0.0f) + dc * fh;
            }
        }
        scratch[r * 2 * n + k] = gmi;
        scratch[r * 2 * n + n + k] = gmf;
    }
}

__global__ void k_onlstm_bwd_master(const float *save, const float *scratch,
                                    float *gz, int64_t b, int64_t hd,
                                    int64_t chunk)
{
    int64_t n = hd / chunk, w = 2 * n + 4 * hd;
    GRID_STRIDE(r, b)
    {
        const float *pi = save + r * 4 * n + 2 * n, *pf = pi + n;
        const float *gmi = scratch + r * 2 * n, *gmf = gmi + n;
        /* ĩ = 1 - cumax: its cumsum's gradient is -gmi */
        d_cumax_row_bwd(pi, gmi, gz + r * w, n, -1.0f);
        d_cumax_row_bwd(pf, gmf, gz + r * w + n, n, 1.0f);
    }
}

int cu_onlstm_bwd(void *st, const float *c_prev, const float *save,
                  const float *act, const float *gh, const float *gh_rec,
                  const float *gc, float *gz, const float *gc_prev_in,
                  float *gc_prev, float *scratch, int64_t b, int64_t hd,
                  int64_t chunk)
{
    (void)st;
    int64_t n = hd / chunk;
    k_onlstm_bwd_units<<<blocks_for(b * n), kBlock>>>(
        c_prev, save, act, gh, gh_rec, gc, gz, gc_prev_in, gc_prev, scratch,
        b, hd, chunk);
    int rc = gr_cuda_launched("k_onlstm_bwd_units");
    if (rc < 0 || !gz) {
        return rc;
    }
    LAUNCH(k_onlstm_bwd_master, b, save, scratch, gz, b, hd, chunk);
}

/* Faster FastTrees' gates (backend.h, fft_gates_fwd/bwd): the master
 * gates by k_onlstm_master (one thread per row), then one thread per unit
 * for a = f̂, b = î⊙tanh(ĉ), o = σ(z_o). */
__global__ void k_fft_gates_units(const float *z, const float *save,
                                  float *a, float *b, float *o, int64_t rows,
                                  int64_t hd, int64_t chunk)
{
    int64_t n = hd / chunk, w = 2 * n + 4 * hd;
    GRID_STRIDE(q, rows * hd)
    {
        int64_t r = q / hd, u = q % hd, k = u / chunk;
        const float *zr = z + r * w;
        const float *mi = save + r * 4 * n, *mf = mi + n;
        float ch = tanhf(zr[2 * n + hd + u]);
        float ig = d_sigmoid(zr[2 * n + 2 * hd + u]);
        float fg = d_sigmoid(zr[2 * n + 3 * hd + u]);
        float om = mf[k] * mi[k];
        o[q] = d_sigmoid(zr[2 * n + u]);
        a[q] = fg * om + (mf[k] - om);
        b[q] = (ig * om + (mi[k] - om)) * ch;
    }
}

int cu_fft_gates_fwd(void *st, const float *z, float *a, float *b, float *o,
                     float *df, float *di, float *save, int64_t rows,
                     int64_t hd, int64_t chunk)
{
    (void)st;
    if (rows <= 0) {
        return 0;
    }
    k_onlstm_master<<<blocks_for(rows), kBlock>>>(z, df, di, save, rows, hd,
                                                 chunk);
    int rc = gr_cuda_launched("k_onlstm_master (fft gates)");
    if (rc < 0) {
        return rc;
    }
    LAUNCH(k_fft_gates_units, rows * hd, z, save, a, b, o, rows, hd, chunk);
}

/* One thread per (row, chunk), as k_onlstm_bwd_units: the unit gradients
 * and the chunk's master-gate gradients (scratch [rows, 2n], before the
 * sign of ĩ = 1 - cumax, which k_onlstm_bwd_master applies). */
__global__ void k_fft_gates_bwd_units(const float *z, const float *save,
                                      const float *o, const float *ga,
                                      const float *gb, const float *go,
                                      float *gz, float *scratch, int64_t rows,
                                      int64_t hd, int64_t chunk)
{
    int64_t n = hd / chunk, w = 2 * n + 4 * hd;
    GRID_STRIDE(rk, rows * n)
    {
        int64_t r = rk / n, k = rk % n;
        const float *zr = z + r * w;
        const float *mi = save + r * 4 * n, *mf = mi + n;
        float *gzr = gz + r * w;
        float om = mf[k] * mi[k], io = mi[k] - om;
        float gmi = 0.0f, gmf = 0.0f;
        for (int64_t j = 0; j < chunk; j++) {
            int64_t u = k * chunk + j, q = r * hd + u;
            if (go) {
                gzr[2 * n + u] += go[q] * o[q] * (1.0f - o[q]);
            }
            if (!ga && !gb) {
                continue;
            }
            float ch = tanhf(zr[2 * n + hd + u]);
            float ig = d_sigmoid(zr[2 * n + 2 * hd + u]);
            float fg = d_sigmoid(zr[2 * n + 3 * hd + u]);
            float ih = ig * om + io;
            float dfh = ga ? ga[q] : 0.0f;
            float g = gb ? gb[q] : 0.0f;
            float dih = g * ch, dch = g * ih;
            float dom = dih * (ig - 1.0f) + dfh * (fg - 1.0f);
            gmi += dih + dom * mf[k];
            gmf += dfh + dom * mi[k];
            gzr[2 * n + hd + u] += dch * (1.0f - ch * ch);
            gzr[2 * n + 2 * hd + u] += dih * om * ig * (1.0f - ig);
            gzr[2 * n + 3 * hd + u] += dfh * om * fg * (1.0f - fg);
        }
        scratch[r * 2 * n + k] = gmi;
        scratch[r * 2 * n + n + k] = gmf;
    }
}

int cu_fft_gates_bwd(void *st, const float *z, const float *save,
                     const float *o, const float *ga, const float *gb,
                     const float *go, float *gz, float *scratch, int64_t rows,
                     int64_t hd, int64_t chunk)
{
    (void)st;
    int64_t n = hd / chunk;
    if (rows <= 0) {
        return 0;
    }
    k_fft_gates_bwd_units<<<blocks_for(rows * n), kBlock>>>(
        z, save, o, ga, gb, go, gz, scratch, rows, hd, chunk);
    int rc = gr_cuda_launched("k_fft_gates_bwd_units");
    if (rc < 0 || (!ga && !gb)) {
        return rc;
    }
    LAUNCH(k_onlstm_bwd_master, rows, save, scratch, gz, rows, hd, chunk);
}

/* ---- optimizers ---- */

__global__ void k_sgd(float *p, const float *g, float *buf, int64_t n,
                      float lr, float wd, float momentum, float dampening,
                      int nesterov, int first)
{
    GRID_STRIDE(i, n)
    {
        float d = g[i];
        if (wd != 0.0f) {
            d += wd * p[i];
        }
        if (momentum != 0.0f) {
            float bv = first ? d : momentum * buf[i] + (1.0f - dampening) * d;
            buf[i] = bv;
            d = nesterov ? d + momentum * bv : bv;
        }
        p[i] -= lr * d;
    }
}

int cu_sgd(void *st, float *p, const float *g, float *buf, int64_t n,
           float lr, float wd, float momentum, float dampening, int nesterov,
           int first)
{
    (void)st;
    LAUNCH(k_sgd, n, p, g, buf, n, lr, wd, momentum, dampening, nesterov,
           first);
}

__global__ void k_adam(float *p, const float *g, float *m, float *v,
                       int64_t n, float lr, float b1, float b2, float eps,
                       float wd, int decoupled, float step_size, float bc2s)
{
    GRID_STRIDE(i, n)
    {
        float d = g[i];
        if (decoupled) {
            p[i] *= 1.0f - lr * wd;
        } else if (wd != 0.0f) {
            d += wd * p[i];
        }
        m[i] += (1.0f - b1) * (d - m[i]);
        v[i] = b2 * v[i] + (1.0f - b2) * d * d;
        float den = sqrtf(v[i]) / bc2s + eps;
        p[i] -= step_size * (m[i] / den);
    }
}

int cu_adam(void *st, float *p, const float *g, float *m, float *v, int64_t n,
            float lr, float b1, float b2, float eps, float wd, int decoupled,
            float bc1, float bc2)
{
    (void)st;
    LAUNCH(k_adam, n, p, g, m, v, n, lr, b1, b2, eps, wd, decoupled, lr / bc1,
           sqrtf(bc2));
}

__global__ void k_asgd(float *p, const float *g, float *ax, int64_t n,
                       float eta, float lambd, float wd, float mu)
{
    GRID_STRIDE(i, n)
    {
        float d = g[i];
        if (wd != 0.0f) {
            d += wd * p[i];
        }
        float pv = p[i] * (1.0f - lambd * eta);
        pv -= eta * d;
        p[i] = pv;
        ax[i] = mu != 1.0f ? ax[i] + (pv - ax[i]) * mu : pv;
    }
}

int cu_asgd(void *st, float *p, const float *g, float *ax, int64_t n,
            float eta, float lambd, float wd, float mu)
{
    (void)st;
    LAUNCH(k_asgd, n, p, g, ax, n, eta, lambd, wd, mu);
}

__global__ void k_sumsq(const float *x, int64_t n, double *out)
{
    __shared__ double sh[1024];
    double s = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        s += (double)x[i] * (double)x[i];
    }
    s = block_sum_d(s, sh);
    if (threadIdx.x == 0) {
        out[0] = s;
    }
}

int cu_sumsq(void *st, const float *x, int64_t n, double *out)
{
    cuda_state *s = (cuda_state *)st;
    k_sumsq<<<1, 1024>>>(x, n, s->d_scratch);
    int rc = gr_cuda_launched("k_sumsq");
    if (rc < 0) {
        return rc;
    }
    return cu_d2h(st, out, s->d_scratch, sizeof(double));
}

__global__ void k_swap(float *a, float *b, int64_t n)
{
    GRID_STRIDE(i, n)
    {
        float t = a[i];
        a[i] = b[i];
        b[i] = t;
    }
}

int cu_swap(void *st, float *a, float *b, int64_t n)
{
    (void)st;
    LAUNCH(k_swap, n, a, b, n);
}

gr_backend make_table()
{
    gr_backend t;
    memset(&t, 0, sizeof t);
    t.name = "cuda";
    t.alloc = cu_alloc;
    t.free = cu_free;
    t.h2d = cu_h2d;
    t.d2h = cu_d2h;
    t.d2d = cu_d2d;
    t.zero = cu_zero;
    t.sync = cu_sync;
    t.fill = cu_fill;
    t.scale = cu_scale;
    t.gemm = cu_gemm;
    t.rows_set = cu_rows_set;
    t.unary_fwd = cu_unary_fwd;
    t.unary_bwd = cu_unary_bwd;
    t.binary_fwd = cu_binary_fwd;
    t.binary_bwd = cu_binary_bwd;
    t.softmax_fwd = cu_softmax_fwd;
    t.softmax_bwd = cu_softmax_bwd;
    t.cumsum_fwd = cu_cumsum_fwd;
    t.cumsum_bwd = cu_cumsum_bwd;
    t.cumax_fwd = cu_cumax_fwd;
    t.cumax_bwd = cu_cumax_bwd;
    t.layernorm_fwd = cu_layernorm_fwd;
    t.layernorm_bwd = cu_layernorm_bwd;
    t.rows_gather = cu_rows_gather;
    t.rows_scatter_add = cu_rows_scatter_add;
    t.sparse_mm_fwd = cu_sparse_fwd;
    t.sparse_mm_bwd = cu_sparse_bwd;
    t.gather_fwd = cu_gather_fwd;
    t.gather_bwd = cu_gather_bwd;
    t.copy2d = cu_copy2d;
    t.permute = cu_permute;
    t.reduce = cu_reduce;
    t.expand = cu_expand;
    t.dropout = cu_dropout;
    t.xent_fwd = cu_xent_fwd;
    t.xent_bwd = cu_xent_bwd;
    t.om_gate_fwd = cu_om_gate_fwd;
    t.om_gate_bwd = cu_om_gate_bwd;
    t.om_cell_mask = cu_om_cell_mask;
    t.om_pointer_fwd = cu_om_pointer_fwd;
    t.om_pointer_bwd = cu_om_pointer_bwd;
    t.lerp_fwd = cu_lerp_fwd;
    t.lerp_bwd = cu_lerp_bwd;
    t.lstm_fwd = cu_lstm_fwd;
    t.lstm_bwd = cu_lstm_bwd;
    t.onlstm_fwd = cu_onlstm_fwd;
    t.onlstm_bwd = cu_onlstm_bwd;
    t.scan_fwd = gr_cu_scan_fwd;
    t.scan_bwd = gr_cu_scan_bwd;
    t.fft_gates_fwd = cu_fft_gates_fwd;
    t.fft_gates_bwd = cu_fft_gates_bwd;
    t.sgd_step = cu_sgd;
    t.adam_step = cu_adam;
    t.asgd_step = cu_asgd;
    t.sumsq = cu_sumsq;
    t.swap = cu_swap;
    return t;
}

const gr_backend g_cuda_backend = make_table();

} /* namespace */

extern "C" const struct gr_backend *gr_backend_cuda(void)
{
    return &g_cuda_backend;
}

extern "C" int gr_cuda_state_new(void **out, int device)
{
    *out = NULL;
    cuda_state *s = (cuda_state *)calloc(1, sizeof *s);
    if (!s) {
        return gr_error(GR_ENOMEM, "out of memory");
    }
    s->device = device;
    const char *mode = getenv("GROVE_CUDA_GEMM");
    if (!mode || !*mode || strcmp(mode, "auto") == 0) {
        s->gemm_mode = GEMM_AUTO;
    } else if (strcmp(mode, "cublas") == 0) {
        s->gemm_mode = GEMM_CUBLAS;
    } else if (strcmp(mode, "skinny") == 0) {
        s->gemm_mode = GEMM_SKINNY;
    } else {
        free(s);
        return gr_error(GR_EINVAL, "GROVE_CUDA_GEMM=%s: expected auto, "
                        "cublas or skinny", mode);
    }
    int rc = check_rt(cudaSetDevice(device), "selecting the GPU");
    if (rc == 0) {
        cublasStatus_t b = cublasCreate(&s->blas);
        if (b != CUBLAS_STATUS_SUCCESS) {
            rc = gr_error(GR_EDEVICE, "cuBLAS initialisation failed: %s",
                          blas_name(b));
        } else {
            /* plain FP32 products (no TF32), as the CPU */
            cublasSetMathMode(s->blas, CUBLAS_DEFAULT_MATH);
        }
    }
    if (rc == 0) {
        rc = check_rt(cudaMalloc(&s->d_scratch, sizeof(double)),
                      "allocating scratch");
    }
    if (rc < 0) {
        if (s->blas) {
            cublasDestroy(s->blas);
        }
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

extern "C" void gr_cuda_state_free(void *st)
{
    cuda_state *s = (cuda_state *)st;
    if (!s) {
        return;
    }
    cudaDeviceSynchronize();
    if (s->blas) {
        cublasDestroy(s->blas);
    }
    cudaFree(s->d_scratch);
    cudaFree(s->d_dense);
    free(s);
}
