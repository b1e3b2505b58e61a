// Probe kernels for tests/test_cuda_emu.cpp (see probes.h). Written as plain CUDA: they compile
// with nvcc for a native run and as C++ against the emulator.
#include "tests/cuda_emu/probes.h"

namespace cuda_probes {

namespace {

__global__ void barrier_exchange_kernel(int* out) {
  GPEN_SHARED(int, slot, [1024]);
  const int t = threadIdx.x, n = blockDim.x;
  slot[t] = 1000 * blockIdx.x + t;
  __syncthreads();
  out[blockIdx.x * n + t] = slot[(t + 1) % n];
}

__device__ int warp_sum_int(int v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// Threads is a multiple of 32. Warp sums go to a static __shared__ array, the per-thread terms
// also pass through dynamic shared memory, so both kinds must be private to the block.
__global__ void block_reduce_kernel(long long* out) {
  GPEN_SHARED(int, warp_sums, [32]);
  GPEN_DYNAMIC_SMEM(int, terms);
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  terms[t] = (blockIdx.x + 1) * (t + 1);
  __syncthreads();
  const int v = warp_sum_int(terms[blockDim.x - 1 - t]);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int nwarps = blockDim.x / 32;
    const int s = warp_sum_int(lane < nwarps ? warp_sums[lane] : 0);
    if (lane == 0) out[blockIdx.x] = s;
  }
}

__global__ void shuffles_kernel(int* out) {
  const int lane = threadIdx.x;
  out[lane] = __shfl_sync(0xffffffffu, lane, 5);
  out[32 + lane] = __shfl_up_sync(0xffffffffu, lane, 3, 8);
  out[64 + lane] = __shfl_down_sync(0xffffffffu, lane, 2, 16);
  out[96 + lane] = __shfl_xor_sync(0xffffffffu, lane, 9);
  out[128 + lane] = __shfl_xor_sync(0xffffffffu, lane, 4, 4);
}

__global__ void votes_kernel(unsigned* out) {
  const int t = threadIdx.x, lane = t % 32;
  const bool p = lane % 3 == 0;
  const unsigned ballot = __ballot_sync(0xffffffffu, p);
  const int any = __any_sync(0xffffffffu, p);
  const int all = __all_sync(0xffffffffu, p);
  const int all_true = __all_sync(0xffffffffu, lane < 32);
  const int count = __syncthreads_count(t % 5 == 0);
  if (t == 0) {
    out[0] = ballot;
    out[1] = static_cast<unsigned>(any);
    out[2] = static_cast<unsigned>(all);
    out[3] = static_cast<unsigned>(all_true);
    out[4] = static_cast<unsigned>(count);
  }
}

template <class T>
__global__ void wmma_tile_kernel(const T* a, const T* bt, const float* c, float* d) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, bt, 16);
  wmma::load_matrix_sync(fc, c, 16, wmma::mem_row_major);
  // A uniform element-wise op on the fragment: scale the accumulator input by 2 then halve it.
  for (int i = 0; i < fc.num_elements; ++i) fc.x[i] *= 2.0f;
  for (int i = 0; i < fc.num_elements; ++i) fc.x[i] *= 0.5f;
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(d, fc, 16, wmma::mem_row_major);
}

__global__ void atomics_kernel(int* counter, int* maximum) {
  const int id = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(counter, 1);
  atomicMax(maximum, id);
}

__global__ void divergent_syncthreads_kernel(int* out) {
  if (threadIdx.x >= 40) return;  // the rest of the block never reaches the barrier
  __syncthreads();
  out[threadIdx.x] = 1;
}

__global__ void shuffle_mask_mismatch_kernel(int* out) {
  const unsigned lane = threadIdx.x;
  // Lanes 0-15 name the low half, lanes 16-31 the whole warp: lanes disagree about the mask.
  const unsigned mask = lane < 16 ? 0x0000ffffu : 0xffffffffu;
  out[lane] = __shfl_sync(mask, static_cast<int>(lane), 0);
}

__global__ void wmma_misaligned_kernel(const __half* a, float* d) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::load_matrix_sync(fa, a + 1, 16);  // 2 bytes past an aligned tile
  d[threadIdx.x] = __half2float(fa.x[0]);
}

__global__ void empty_kernel() {}

}  // namespace

cudaError_t barrier_exchange(int blocks, int threads, int* out) {
  GPEN_LAUNCH(blocks, threads, 0, nullptr, barrier_exchange_kernel)(out);
  return cudaGetLastError();
}

cudaError_t block_reduce(int blocks, int threads, long long* out) {
  GPEN_LAUNCH(blocks, threads, threads * sizeof(int), nullptr, block_reduce_kernel)(out);
  return cudaGetLastError();
}

cudaError_t shuffles(int* out) {
  GPEN_LAUNCH(1, 32, 0, nullptr, shuffles_kernel)(out);
  return cudaGetLastError();
}

cudaError_t votes(unsigned* out) {
  GPEN_LAUNCH(1, 96, 0, nullptr, votes_kernel)(out);
  return cudaGetLastError();
}

cudaError_t wmma_tile_half(const __half* a, const __half* bt, const float* c, float* d) {
  GPEN_LAUNCH(1, 32, 0, nullptr, wmma_tile_kernel<__half>)(a, bt, c, d);
  return cudaGetLastError();
}

cudaError_t wmma_tile_bf16(const __nv_bfloat16* a, const __nv_bfloat16* bt, const float* c, float* d) {
  GPEN_LAUNCH(1, 32, 0, nullptr, wmma_tile_kernel<__nv_bfloat16>)(a, bt, c, d);
  return cudaGetLastError();
}

cudaError_t atomics(int blocks, int threads, int* counter, int* maximum) {
  GPEN_LAUNCH(blocks, threads, 0, nullptr, atomics_kernel)(counter, maximum);
  return cudaGetLastError();
}

cudaError_t fault_divergent_syncthreads(int* out) {
  GPEN_LAUNCH(1, 64, 0, nullptr, divergent_syncthreads_kernel)(out);
  return cudaGetLastError();
}

cudaError_t fault_shuffle_mask_mismatch(int* out) {
  GPEN_LAUNCH(1, 32, 0, nullptr, shuffle_mask_mismatch_kernel)(out);
  return cudaGetLastError();
}

cudaError_t fault_wmma_misaligned(const __half* a, float* d) {
  GPEN_LAUNCH(1, 32, 0, nullptr, wmma_misaligned_kernel)(a, d);
  return cudaGetLastError();
}

cudaError_t fault_bad_configuration() {
  GPEN_LAUNCH(1, 2048, 0, nullptr, empty_kernel)();
  return cudaGetLastError();
}

}  // namespace cuda_probes
