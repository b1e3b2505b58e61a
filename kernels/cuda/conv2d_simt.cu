// conv2d as an implicit GEMM on the CUDA cores, f32 arithmetic (inputs of any float dtype are
// widened when staged). See conv2d.cuh for the definition of A and B.
//
// Tiling: a block of 256 threads computes a 64 x 64 output tile (64 pixels x 64 channels of one
// group); thread (ty, tx) of the 16 x 16 grid owns a 4 x 4 register tile, rows 4 ty.., columns
// 4 tx... The depth is walked in steps of 16: the threads gather a 64 x 16 slice of A and a
// 16 x 64 slice of B into shared memory, then every thread does 16 rank-1 updates of its
// 4 x 4 tile from 4 A values and 4 B values. A is stored depth-major (a_tile[k][m]) so those
// 4 values are adjacent, like B's. The epilogue runs straight from registers.
#include "kernels/cuda/conv2d.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 256;
constexpr int kBM = 64, kBN = 64, kBK = 16;
constexpr int kTM = 4, kTN = 4;  // register tile per thread
constexpr int kPad = 4;

template <class T>
__global__ void __launch_bounds__(kThreads) conv2d_simt_kernel(const ConvGeometry g, const ConvTensors<T> t) {
  GPEN_SHARED(float, a_tile, [kBK][kBM + kPad]);
  GPEN_SHARED(float, b_tile, [kBK][kBN + kPad]);

  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int group = blockIdx.z / g.splits, split = blockIdx.z - group * g.splits;
  const int k_begin = split * g.kchunk, k_end = min(g.k, k_begin + g.kchunk);
  const int m0 = blockIdx.x * kBM, n0 = blockIdx.y * kBN;

  // Staging: A row a_row (one output pixel), depth columns [a_col, a_col + 4); B row b_row,
  // channels [b_col, b_col + 4).
  const int a_row = tid / 4, a_col = (tid % 4) * 4;
  const int m = m0 + a_row;
  const bool m_valid = m < g.m;
  int iy0 = 0, ix0 = 0;
  const T* x_img = t.x;
  if (m_valid) {
    const int ox = m % g.wo, rest = m / g.wo;
    const int oy = rest % g.ho, n = rest / g.ho;
    iy0 = oy * g.stride_h - g.pad_top;
    ix0 = ox * g.stride_w - g.pad_left;
    x_img = t.x + n * g.xs.n + int64_t{group} * g.cin_g * g.xs.c;
  }
  const int b_row = tid / 16, b_col = (tid % 16) * 4;

  float acc[kTM][kTN] = {};
  for (int k0 = k_begin; k0 < k_end; k0 += kBK) {
    int k = k0 + a_col;
    int tap = k / g.cin_g, ci = k - tap * g.cin_g;
    for (int j = 0; j < 4; ++j, ++k) {
      float v = 0.0f;
      if (m_valid && k < k_end) {
        const int ky = tap / g.kw, kx = tap - ky * g.kw;
        const int iy = iy0 + ky, ix = ix0 + kx;
        if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) v = to_f32(x_img[iy * g.xs.h + ix * g.xs.w + ci * g.xs.c]);
      }
      a_tile[a_col + j][a_row] = v;
      if (++ci == g.cin_g) {
        ci = 0;
        ++tap;
      }
    }
    const int kb = k0 + b_row;
    for (int j = 0; j < 4; ++j) {
      const int co = n0 + b_col + j;
      b_tile[b_row][b_col + j] = kb < k_end && co < g.cout_g ? conv_weight_at(g, t, group, kb, co) : 0.0f;
    }
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float a[kTM], b[kTN];
      for (int i = 0; i < kTM; ++i) a[i] = a_tile[kk][ty * kTM + i];
      for (int j = 0; j < kTN; ++j) b[j] = b_tile[kk][tx * kTN + j];
      for (int i = 0; i < kTM; ++i)
        for (int j = 0; j < kTN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }

  for (int i = 0; i < kTM; ++i) {
    const int mm = m0 + ty * kTM + i;
    if (mm >= g.m) break;
    for (int j = 0; j < kTN; ++j) {
      const int co = n0 + tx * kTN + j;
      if (co < g.cout_g) conv_finish(g, t, split, mm, group * g.cout_g + co, acc[i][j]);
    }
  }
}

}  // namespace

template <class T>
void launch_conv2d_simt(const ConvGeometry& g, const ConvTensors<T>& t, Stream stream) {
  const dim3 grid(static_cast<unsigned>(ceil_div(g.m, kBM)), static_cast<unsigned>(ceil_div(g.cout_g, kBN)),
                  static_cast<unsigned>(g.groups * g.splits));
  GPEN_CHECK(grid.y <= 65535, "conv2d: too many output channels per group (" + std::to_string(g.cout_g) + ")");
  GPEN_LAUNCH(grid, kThreads, 0, stream, conv2d_simt_kernel<T>)(g, t);
}

template void launch_conv2d_simt<float>(const ConvGeometry&, const ConvTensors<float>&, Stream);
template void launch_conv2d_simt<__half>(const ConvGeometry&, const ConvTensors<__half>&, Stream);
template void launch_conv2d_simt<__nv_bfloat16>(const ConvGeometry&, const ConvTensors<__nv_bfloat16>&, Stream);

GPEN_CUDA_NAMESPACE_END
