// Planted bugs for the checker (planted.h): the lines marked BUG are the ones a report names.
#include "tests/cuda_emu/planted.h"

namespace cuda_planted {

namespace {

__global__ void __launch_bounds__(64) missing_barrier_raw_kernel(int* out) {
  GPEN_SHARED(int, s, [64]);
  const int t = threadIdx.x;
  s[t] = t;
  out[t] = s[(t + 1) % 64];  // BUG: no __syncthreads after the store
}

__global__ void __launch_bounds__(64) war_on_reuse_kernel(int* out) {
  GPEN_SHARED(int, tile, [64]);
  const int t = threadIdx.x;
  int acc = 0;
  for (int k = 0; k < 2; ++k) {
    tile[t] = k * 64 + t;  // BUG: the second tile overwrites what other threads still read
    __syncthreads();
    acc += tile[63 - t];
  }
  out[t] = acc;
}

__global__ void __launch_bounds__(64) waw_kernel(int* out) {
  GPEN_SHARED(int, s, [1]);
  s[0] = threadIdx.x;  // BUG: every thread writes the same word
  __syncthreads();
  out[threadIdx.x] = s[0];
}

// The pre-Volta idiom: lanes of a warp assumed to run in lockstep.
__global__ void __launch_bounds__(32) warp_lockstep_kernel(int* out, bool with_syncwarp) {
  GPEN_SHARED(int, s, [64]);
  const int t = threadIdx.x;
  s[t] = t;
  s[t + 32] = 0;
  __syncwarp();
  for (int offset = 16; offset > 0; offset >>= 1) {
    const int v = s[t] + s[t + offset];
    if (with_syncwarp) __syncwarp();
    s[t] = v;  // BUG without __syncwarp: lane t - offset reads s[t] in the same step
    if (with_syncwarp) __syncwarp();
  }
  if (t == 0) out[0] = s[0];
}

__global__ void __launch_bounds__(64) uninit_shared_kernel(int* out) {
  GPEN_SHARED(int, s, [128]);
  const int t = threadIdx.x;
  s[t] = t;
  __syncthreads();
  out[t] = s[t + 64];  // BUG: the upper half was never written
}

__global__ void __launch_bounds__(64) uninit_dynamic_kernel(int* out) {
  GPEN_DYNAMIC_SMEM(int, d);
  out[threadIdx.x] = d[threadIdx.x];  // BUG: read before any write
}

__global__ void __launch_bounds__(64) shared_oob_kernel(int* out) {
  GPEN_SHARED(int, s, [64]);
  const int t = threadIdx.x;
  s[t + 1] = t;  // BUG: thread 63 writes s[64]
  __syncthreads();
  out[t] = s[t];
}

__global__ void __launch_bounds__(32) shuffle_exited_kernel(int* out) {
  const int t = threadIdx.x;
  if (t >= 16) return;
  out[t] = __shfl_sync(0x0000ffffu, t, t + 16);  // BUG: lanes 16..31 have returned
}

__global__ void __launch_bounds__(64) mask_missing_kernel(int* out) {
  const int t = threadIdx.x;
  if (t < 16) __syncwarp(0xffffffffu);  // BUG: lanes 16..31 of warp 0 never call it
  __syncthreads();
  out[t] = t;
}

__global__ void __launch_bounds__(32) mask_exited_kernel(int* out) {
  const int t = threadIdx.x;
  if (t >= 24) return;
  out[t] = __ballot_sync(0xffffffffu, t & 1);  // BUG: lanes 24..31 have returned
}

__global__ void __launch_bounds__(32) syncwarp_self_kernel(int* out) {
  const int t = threadIdx.x;
  __syncwarp(0x0000ffffu);  // BUG: lanes 16..31 are not in the mask
  out[t] = t;
}

__global__ void __launch_bounds__(64) divergent_kernel(int* out) {
  const int t = threadIdx.x;
  if (t < 32) __syncthreads();  // BUG: warp 1 skips the barrier
  out[t] = t;
}

__global__ void __launch_bounds__(64) dynamic_fill_kernel(int* out) {
  GPEN_DYNAMIC_SMEM(int, d);
  d[threadIdx.x] = 1;
  __syncthreads();
  out[threadIdx.x] = d[63 - threadIdx.x];
}

__global__ void __launch_bounds__(64) cross_block_raw_kernel(int* out) {
  const int t = threadIdx.x, b = blockIdx.x;
  out[b * 64 + t] = b * 64 + t;
  out[128 + b * 64 + t] = out[(1 - b) * 64 + t];  // BUG: block 1 reads block 0's output
}

__global__ void __launch_bounds__(64) cross_block_waw_kernel(int* out) {
  if (threadIdx.x == 0) out[0] = blockIdx.x;  // BUG: one word, a writer per block
}

__global__ void __launch_bounds__(64) global_atomics_kernel(int* out) { atomicAdd(&out[0], 1); }

__global__ void __launch_bounds__(128) clean_atomics_kernel(int* out) {
  GPEN_SHARED(int, s, [1]);
  if (threadIdx.x == 0) s[0] = 0;
  __syncthreads();
  atomicAdd(&s[0], 1);
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

__global__ void __launch_bounds__(64) read_upper_kernel(int* out) {
  const int t = threadIdx.x;
  out[t] = out[512 + t];  // BUG (unless the caller wrote out[512..]): never written since cudaMalloc
}

}  // namespace

cudaError_t run(Bug bug) {
  int* out = nullptr;
  if (cudaMalloc(&out, 4096) != cudaSuccess) return cudaErrorMemoryAllocation;
  switch (bug) {
    case Bug::missing_barrier_raw: GPEN_LAUNCH(2, 64, 0, nullptr, missing_barrier_raw_kernel)(out); break;
    case Bug::war_on_reuse: GPEN_LAUNCH(1, 64, 0, nullptr, war_on_reuse_kernel)(out); break;
    case Bug::waw: GPEN_LAUNCH(1, 64, 0, nullptr, waw_kernel)(out); break;
    case Bug::warp_lockstep_reduce: GPEN_LAUNCH(1, 32, 0, nullptr, warp_lockstep_kernel)(out, false); break;
    case Bug::uninit_shared: GPEN_LAUNCH(1, 64, 0, nullptr, uninit_shared_kernel)(out); break;
    case Bug::uninit_dynamic_shared: GPEN_LAUNCH(1, 64, 256, nullptr, uninit_dynamic_kernel)(out); break;
    case Bug::shared_out_of_bounds: GPEN_LAUNCH(1, 64, 0, nullptr, shared_oob_kernel)(out); break;
    case Bug::shuffle_exited_lane: GPEN_LAUNCH(1, 32, 0, nullptr, shuffle_exited_kernel)(out); break;
    case Bug::mask_missing_lane: GPEN_LAUNCH(1, 64, 0, nullptr, mask_missing_kernel)(out); break;
    case Bug::mask_exited_lane: GPEN_LAUNCH(1, 32, 0, nullptr, mask_exited_kernel)(out); break;
    case Bug::syncwarp_excludes_self: GPEN_LAUNCH(1, 32, 0, nullptr, syncwarp_self_kernel)(out); break;
    case Bug::divergent_barrier: GPEN_LAUNCH(1, 64, 0, nullptr, divergent_kernel)(out); break;
    case Bug::cross_block_raw: GPEN_LAUNCH(2, 64, 0, nullptr, cross_block_raw_kernel)(out); break;
    case Bug::cross_block_waw: GPEN_LAUNCH(3, 64, 0, nullptr, cross_block_waw_kernel)(out); break;
    case Bug::clean_global_atomics: GPEN_LAUNCH(4, 64, 0, nullptr, global_atomics_kernel)(out); break;
    case Bug::oversized_launch: GPEN_LAUNCH(1, 64, 64 * 1024, nullptr, dynamic_fill_kernel)(out); break;
    case Bug::too_many_threads: GPEN_LAUNCH(1, 2048, 0, nullptr, dynamic_fill_kernel)(out); break;
    case Bug::clean_atomics: GPEN_LAUNCH(4, 128, 0, nullptr, clean_atomics_kernel)(out); break;
    case Bug::uninit_global: GPEN_LAUNCH(1, 64, 0, nullptr, read_upper_kernel)(out); break;
    case Bug::clean_global_init:
      cudaMemset(out, 0, 4096);
      GPEN_LAUNCH(1, 64, 0, nullptr, read_upper_kernel)(out);
      break;
    case Bug::clean_warp_reduce: GPEN_LAUNCH(1, 32, 0, nullptr, warp_lockstep_kernel)(out, true); break;
  }
  const cudaError_t e = cudaGetLastError();
  cudaFree(out);
  return e;
}

}  // namespace cuda_planted
