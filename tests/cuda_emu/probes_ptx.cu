// Probe kernels for the PTX layer (probes_ptx.h). Plain CUDA on kernels/cuda/ptx.cuh: built by
// nvcc for a native run and as C++ against the emulator.
#include "tests/cuda_emu/probes_ptx.h"

#include "kernels/cuda/ptx.cuh"

namespace cuda_probes {

namespace {

template <class T>
__device__ uint32_t pack(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>)
    return gpen_ptx::pack2(__float2half_rn(lo), __float2half_rn(hi));
  else
    return gpen_ptx::pack2(__float2bfloat16_rn(lo), __float2bfloat16_rn(hi));
}

template <class T>
__global__ void __launch_bounds__(32) mma_layout_kernel(const float* a, const float* b, const float* c, float* d) {
  const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  uint32_t fa[4], fb[2];
  float fc[4], fd[4];
  for (int i = 0; i < 4; ++i) {
    const int row = g + (i & 1 ? 8 : 0), k = 2 * t + (i & 2 ? 8 : 0);
    fa[i] = pack<T>(a[row * 16 + k], a[row * 16 + k + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    const int k = 2 * t + 8 * i;
    fb[i] = pack<T>(b[k * 8 + g], b[(k + 1) * 8 + g]);
  }
  for (int i = 0; i < 4; ++i) fc[i] = c[(g + (i >= 2 ? 8 : 0)) * 8 + 2 * t + (i & 1)];
  gpen_ptx::mma_m16n8k16<T>(fd, fa, fb, fc);
  for (int i = 0; i < 4; ++i) d[(g + (i >= 2 ? 8 : 0)) * 8 + 2 * t + (i & 1)] = fd[i];
}

template <int N, bool Trans>
__global__ void __launch_bounds__(32) ldmatrix_kernel(uint32_t* out) {
  GPEN_SHARED(__align__(16) uint16_t, tile, [32][8]);
  const int lane = threadIdx.x;
  for (int c = 0; c < 8; ++c) tile[lane][c] = static_cast<uint16_t>(lane * 8 + c);
  __syncwarp();
  uint32_t r[N];
  gpen_ptx::ldmatrix<N, Trans>(r, &tile[(7 * lane) % 32][0]);
  for (int i = 0; i < 4; ++i) out[lane * 4 + i] = i < N ? r[i] : 0u;
}

__global__ void __launch_bounds__(32) mma_ldmatrix_kernel(const __half* a, const __half* b, float* d) {
  GPEN_SHARED(__align__(16) __half, sa, [16][24]);  // rows padded by 8 halves, as the kernels do
  GPEN_SHARED(__align__(16) __half, sb, [16][24]);
  const int lane = threadIdx.x;
  for (int e = lane; e < 256; e += 32) {
    sa[e / 16][e % 16] = a[e];
    sb[e / 16][e % 16] = b[e];
  }
  __syncwarp();
  uint32_t fa[4], fb[4];
  const int i = lane / 8, r = lane % 8;
  gpen_ptx::ldmatrix<4>(fa, &sa[(i & 1) * 8 + r][(i >> 1) * 8]);
  gpen_ptx::ldmatrix<4, true>(fb, &sb[(i & 1) * 8 + r][(i >> 1) * 8]);
  const int g = lane / 4, t = lane % 4;
  for (int j = 0; j < 2; ++j) {
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const uint32_t bj[2] = {fb[2 * j], fb[2 * j + 1]};
    gpen_ptx::mma_m16n8k16<__half>(acc, fa, bj, acc);
    for (int q = 0; q < 4; ++q) d[(g + (q >= 2 ? 8 : 0)) * 16 + 8 * j + 2 * t + (q & 1)] = acc[q];
  }
}

__global__ void __launch_bounds__(64) cp_async_kernel(const unsigned char* src, unsigned char* out) {
  GPEN_SHARED(__align__(16) unsigned char, first, [64 * 16]);
  GPEN_SHARED(__align__(16) unsigned char, second, [64 * 16]);
  const int t = threadIdx.x;
  gpen_ptx::cp_async_16(&first[16 * t], src + 16 * t, t % 17);
  gpen_ptx::cp_async_commit();
  gpen_ptx::cp_async_16(&second[16 * t], src + 1024 + 16 * t, 16);
  gpen_ptx::cp_async_commit();
  gpen_ptx::cp_async_wait<1>();  // the first group of this thread has landed; the second may not
  for (int j = 0; j < 16; ++j) out[16 * t + j] = first[16 * t + j];
  gpen_ptx::cp_async_wait<0>();
  __syncthreads();  // other threads' copies are visible only after a barrier
  for (int j = 0; j < 16; ++j) out[1024 + 16 * t + j] = second[16 * (63 - t) + j];
}

}  // namespace

cudaError_t mma_layout(bool half, const float* a, const float* b, const float* c, float* d) {
  if (half)
    GPEN_LAUNCH(1, 32, 0, nullptr, mma_layout_kernel<__half>)(a, b, c, d);
  else
    GPEN_LAUNCH(1, 32, 0, nullptr, mma_layout_kernel<__nv_bfloat16>)(a, b, c, d);
  return cudaGetLastError();
}

cudaError_t ldmatrix_rows(int n, bool trans, uint32_t* out) {
  if (n == 1 && !trans) GPEN_LAUNCH(1, 32, 0, nullptr, ldmatrix_kernel<1, false>)(out);
  if (n == 1 && trans) GPEN_LAUNCH(1, 32, 0, nullptr, ldmatrix_kernel<1, true>)(out);
  if (n == 2 && !trans) GPEN_LAUNCH(1, 32, 0, nullptr, ldmatrix_kernel<2, false>)(out);
  if (n == 2 && trans) GPEN_LAUNCH(1, 32, 0, nullptr, ldmatrix_kernel<2, true>)(out);
  if (n == 4 && !trans) GPEN_LAUNCH(1, 32, 0, nullptr, ldmatrix_kernel<4, false>)(out);
  if (n == 4 && trans) GPEN_LAUNCH(1, 32, 0, nullptr, ldmatrix_kernel<4, true>)(out);
  return cudaGetLastError();
}

cudaError_t mma_ldmatrix_gemm(const __half* a, const __half* b, float* d) {
  GPEN_LAUNCH(1, 32, 0, nullptr, mma_ldmatrix_kernel)(a, b, d);
  return cudaGetLastError();
}

cudaError_t cp_async_groups(const unsigned char* src, unsigned char* out) {
  GPEN_LAUNCH(1, 64, 0, nullptr, cp_async_kernel)(src, out);
  return cudaGetLastError();
}

}  // namespace cuda_probes
