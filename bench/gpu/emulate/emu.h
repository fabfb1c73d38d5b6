// bench/gpu/emulate/emu.h — host emulation of the CUDA features that
// kernels/attention_fused_cuda.cu uses: one block at a time, its threads as
// std::threads, __syncthreads a barrier of the block, __shfl_xor_sync a
// slot array between two barriers (so every thread of the block must call
// it, which the kernels do), __shared__ arrays static (one block at a time).
#pragma once
#include <pthread.h>
#include <math.h>
#include <stdint.h>
#include <thread>
#include <vector>
#include <functional>
struct dim3 { unsigned x, y, z; dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {} };
typedef int cudaError_t;
const int cudaSuccess = 0;
inline cudaError_t cudaGetLastError() { return 0; }
inline const char *cudaGetErrorString(cudaError_t) { return "emu"; }
struct emu_idx { unsigned x, y, z; };
extern thread_local emu_idx threadIdx, blockIdx;
extern emu_idx gridDim_, blockDim_;
#define gridDim gridDim_
#define blockDim blockDim_
extern pthread_barrier_t emu_bar;
extern float emu_slots[1024];
inline void __syncthreads() { pthread_barrier_wait(&emu_bar); }
inline float __shfl_xor_sync(unsigned, float v, int off) {
    emu_slots[threadIdx.x] = v;
    pthread_barrier_wait(&emu_bar);
    float r = emu_slots[threadIdx.x ^ off];
    pthread_barrier_wait(&emu_bar);
    return r;
}
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __shared__ static
void emu_launch(dim3 grid, int block, std::function<void()> body);
#define EMU_LAUNCH(k, grid, block, ...) emu_launch(grid, block, [=]() { k(__VA_ARGS__); })
