// Planted PTX-layer bugs (planted_ptx.h): the lines marked BUG are the ones a report names.
#include "tests/cuda_emu/planted_ptx.h"

#include <vector>

#include "kernels/cuda/ptx.cuh"

namespace cuda_planted_ptx {

namespace {

// Each thread copies 16 bytes (4 ints) of src; out[t] is one int read back from shared memory.
__global__ void __launch_bounds__(64) read_before_wait_kernel(const int* src, int* out) {
  GPEN_SHARED(__align__(16) int, s, [64 * 4]);
  const int t = threadIdx.x;
  gpen_ptx::cp_async_16(&s[4 * t], src + 4 * t, 16);
  gpen_ptx::cp_async_commit();
  const int v = s[4 * t];  // BUG: the copy has not been waited for
  gpen_ptx::cp_async_wait<0>();
  out[t] = v;
}

__global__ void __launch_bounds__(64) wait_too_shallow_kernel(const int* src, int* out) {
  GPEN_SHARED(__align__(16) int, s, [2][64 * 4]);
  const int t = threadIdx.x;
  gpen_ptx::cp_async_16(&s[0][4 * t], src + 4 * t, 16);
  gpen_ptx::cp_async_commit();
  gpen_ptx::cp_async_16(&s[1][4 * t], src + 256 + 4 * t, 16);
  gpen_ptx::cp_async_commit();
  gpen_ptx::cp_async_wait<1>();  // only the older group is complete
  out[t] = s[1][4 * t];          // BUG: reads the newest group's data
  gpen_ptx::cp_async_wait<0>();
}

__global__ void __launch_bounds__(64) no_barrier_kernel(const int* src, int* out) {
  GPEN_SHARED(__align__(16) int, s, [64 * 4]);
  const int t = threadIdx.x;
  gpen_ptx::cp_async_16(&s[4 * t], src + 4 * t, 16);
  gpen_ptx::cp_async_commit();
  gpen_ptx::cp_async_wait<0>();
  out[t] = s[4 * ((t + 1) % 64)];  // BUG: thread t + 1's copy, with no __syncthreads after the waits
}

__global__ void __launch_bounds__(64) stage_reuse_kernel(const int* src, int* out) {
  GPEN_SHARED(__align__(16) int, s, [64 * 4]);
  const int t = threadIdx.x;
  gpen_ptx::cp_async_16(&s[4 * t], src + 4 * t, 16);
  gpen_ptx::cp_async_commit();
  gpen_ptx::cp_async_wait<0>();
  __syncthreads();
  const int v = s[4 * (63 - t)];
  gpen_ptx::cp_async_16(&s[4 * t], src + 256 + 4 * t, 16);  // BUG: thread 63 - t may still read it
  gpen_ptx::cp_async_commit();
  gpen_ptx::cp_async_wait<0>();
  out[t] = v;
}

template <int kMode>
__global__ void __launch_bounds__(32) ldmatrix_kernel(int* out) {
  GPEN_SHARED(__align__(16) __half, tile, [16][16]);
  const int lane = threadIdx.x;
  for (int c = 0; c < 8; ++c) tile[lane / 2][(lane % 2) * 8 + c] = __float2half_rn(static_cast<float>(lane));
  __syncwarp();
  const int i = lane / 8, r = lane % 8;
  uint32_t a[4];
  if (kMode == 0) gpen_ptx::ldmatrix<4>(a, &tile[(i & 1) * 8 + r][(i >> 1) * 8] + 1);  // BUG: misaligned
  // BUG: past the tile (flat arithmetic: indexing tile[16 + ...] would be UB the host compiler sees).
  if (kMode == 1) gpen_ptx::ldmatrix<4>(a, &tile[0][0] + ((i & 1) * 8 + r + 16) * 16 + (i >> 1) * 8);
  if (kMode == 2) {
    if (lane < 16) gpen_ptx::ldmatrix<4>(a, &tile[(i & 1) * 8 + r][(i >> 1) * 8]);  // BUG: half the warp
    else a[0] = 0;
  }
  out[lane] = static_cast<int>(a[0] & 0xffff);
}

// The control: two stages, the loads of step k + 1 in flight while step k is read.
__global__ void __launch_bounds__(64) clean_pipeline_kernel(const int* src, int* out) {
  GPEN_SHARED(__align__(16) int, s, [2][64 * 4]);
  const int t = threadIdx.x;
  int acc = 0;
  gpen_ptx::cp_async_16(&s[0][4 * t], src + 4 * t, 16);
  gpen_ptx::cp_async_commit();
  for (int step = 0; step < 4; ++step) {
    if (step + 1 < 4) gpen_ptx::cp_async_16(&s[(step + 1) & 1][4 * t], src + 256 * ((step + 1) % 2) + 4 * t, 16);
    gpen_ptx::cp_async_commit();  // an empty group on the last step keeps the count uniform
    gpen_ptx::cp_async_wait<1>();
    __syncthreads();
    acc += s[step & 1][4 * (63 - t)];
    __syncthreads();  // the stage is refilled next step
  }
  out[t] = acc;
}

}  // namespace

cudaError_t run(Bug bug, int* out_host) {
  int *src = nullptr, *out = nullptr;
  if (cudaMalloc(&src, 512 * sizeof(int)) != cudaSuccess || cudaMalloc(&out, 64 * sizeof(int)) != cudaSuccess)
    return cudaErrorMemoryAllocation;
  std::vector<int> host(512);
  for (int i = 0; i < 512; ++i) host[i] = i;
  cudaMemcpy(src, host.data(), 512 * sizeof(int), cudaMemcpyHostToDevice);
  cudaMemset(out, 0, 64 * sizeof(int));
  switch (bug) {
    case Bug::read_before_wait: GPEN_LAUNCH(1, 64, 0, nullptr, read_before_wait_kernel)(src, out); break;
    case Bug::wait_too_shallow: GPEN_LAUNCH(1, 64, 0, nullptr, wait_too_shallow_kernel)(src, out); break;
    case Bug::no_barrier_after_wait: GPEN_LAUNCH(1, 64, 0, nullptr, no_barrier_kernel)(src, out); break;
    case Bug::stage_reuse_war: GPEN_LAUNCH(1, 64, 0, nullptr, stage_reuse_kernel)(src, out); break;
    case Bug::ldmatrix_misaligned: GPEN_LAUNCH(1, 32, 0, nullptr, ldmatrix_kernel<0>)(out); break;
    case Bug::ldmatrix_wrong_row: GPEN_LAUNCH(1, 32, 0, nullptr, ldmatrix_kernel<1>)(out); break;
    case Bug::ldmatrix_partial_warp: GPEN_LAUNCH(1, 32, 0, nullptr, ldmatrix_kernel<2>)(out); break;
    case Bug::clean_pipeline: GPEN_LAUNCH(1, 64, 0, nullptr, clean_pipeline_kernel)(src, out); break;
  }
  const cudaError_t e = cudaGetLastError();
  if (out_host && e == cudaSuccess) cudaMemcpy(out_host, out, 64 * sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(src);
  cudaFree(out);
  return e;
}

}  // namespace cuda_planted_ptx
