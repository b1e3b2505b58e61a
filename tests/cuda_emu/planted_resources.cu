// Planted resource bugs for scripts/cuda_resources.py (ctest cuda_resources_planted, needs nvcc):
// each kernel must be reported. Not part of any library.
#include "kernels/cuda/compat.h"

// BUG: a large per-thread array indexed at run time, under a register budget that cannot hold
// it: ptxas spills (local memory traffic).
__global__ void __launch_bounds__(1024, 2) planted_spill_kernel(const float* x, float* y, int k) {
  float acc[96];
#pragma unroll
  for (int i = 0; i < 96; ++i) acc[i] = x[threadIdx.x * 96 + i] * x[i];
  float s = 0.0f;
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int i = 0; i < 96; ++i) s += acc[(i * 7 + r * k) % 96] * acc[i];
  y[threadIdx.x] = s;
}

// BUG: no __launch_bounds__, so no launch configuration can be checked.
__global__ void planted_unbounded_kernel(float* y) { y[threadIdx.x] = 1.0f; }

// BUG: 40 KiB of static shared memory per block, and it asks for 6 blocks per SM,
// which neither sm_80 (164 KiB) nor sm_90 (228 KiB) can hold.
__global__ void __launch_bounds__(256, 6) planted_smem_kernel(float* y) {
  __shared__ float tile[10240];
  tile[threadIdx.x] = y[threadIdx.x];
  __syncthreads();
  y[threadIdx.x] = tile[(threadIdx.x + 1) % 256];
}
