#pragma once
// Small kernels that pin down the semantics the emulator must reproduce (tests/test_cuda_emu.cpp).
// They are ordinary CUDA, so with GPEN_CUDA_TESTS_NATIVE they run on the GPU and check the same
// expectations there. Pointers are device pointers; each call returns cudaGetLastError() after
// the launch (or the first failing launch).
#include "kernels/cuda/compat.h"

namespace cuda_probes {

// out[b * threads + t] = value that thread (t + 1) % threads of block b stored in shared memory
// before a __syncthreads: 1000 * b + ((t + 1) % threads).
cudaError_t barrier_exchange(int blocks, int threads, int* out);

// Per-block __shared__ and dynamic shared memory: out[b] = sum over the block's threads of
// (b + 1) * (t + 1), reduced through shared memory (static tile + dynamic buffer) and shuffles.
cudaError_t block_reduce(int blocks, int threads, long long* out);

// Warp shuffles of lane ids, 32 threads, per lane: out[0..31] __shfl_sync(lane 5 + w*0) with
// width 32, out[32..63] __shfl_up_sync(3, width 8), out[64..95] __shfl_down_sync(2, width 16),
// out[96..127] __shfl_xor_sync(9, width 32), out[128..159] __shfl_xor_sync(4, width 4).
cudaError_t shuffles(int* out);

// Votes over one warp, predicate (lane % 3 == 0): out = {ballot, any, all, all over lanes < 32,
// __syncthreads_count over a 96-thread block of (t % 5 == 0)}.
cudaError_t votes(unsigned* out);

// d = a * b + c on one 16x16x16 tile by one warp (a row-major, b column-major given as bt, c and
// d row-major float). T is __half or __nv_bfloat16.
cudaError_t wmma_tile_half(const __half* a, const __half* bt, const float* c, float* d);
cudaError_t wmma_tile_bf16(const __nv_bfloat16* a, const __nv_bfloat16* bt, const float* c, float* d);

// atomicAdd of 1 by every thread of the grid into *counter, and atomicMax of the global thread id
// into *maximum.
cudaError_t atomics(int blocks, int threads, int* counter, int* maximum);

// Kernels that break the rules; the emulator must fault with a clear message (not run natively).
cudaError_t fault_divergent_syncthreads(int* out);
cudaError_t fault_shuffle_mask_mismatch(int* out);
cudaError_t fault_wmma_misaligned(const __half* a, float* d);
cudaError_t fault_bad_configuration();

}  // namespace cuda_probes
