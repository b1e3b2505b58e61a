// conv2d as an implicit GEMM on tensor cores (WMMA, 16x16x16 fragments), f16 or bf16 inputs with
// f32 accumulation. See conv2d.cuh for how A (gathered input pixels) and B (HWIO weight) are
// defined.
//
// Tiling: a block of 4 warps computes a 64 x 64 tile of the output (64 pixels x 64 channels of
// one group); warp (wm, wn) owns the 32 x 32 sub-tile at (32 wm, 32 wn), i.e. 2 x 2 accumulator
// fragments. The depth is walked in steps of 32: all 128 threads gather a 64 x 32 slice of A
// (the im2col rows of the tile's pixels, zeros for padding and tails) and a 32 x 64 slice of B
// into shared memory, then each warp runs 2 depth steps x 2 x 2 mma_sync on it.
// Epilogue: the accumulators go through shared memory (a fragment's element -> (row, col)
// mapping is unspecified, so per-channel bias cannot be applied in registers), then every
// thread finishes elements with bias, activation and residual and stores them through the
// output's strides, consecutive threads on consecutive channels.
//
// Rows of the shared tiles are padded by 8 halves (16 bytes) / 4 floats, which keeps every
// fragment pointer 32-byte aligned and ldm a multiple of 16 bytes as WMMA requires, and spreads
// the rows of a fragment over different banks.
#include "kernels/cuda/conv2d.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 128;  // 4 warps, 2 x 2 over the tile
constexpr int kBM = 64;        // output pixels per block
constexpr int kBN = 64;        // output channels per block
constexpr int kBK = 32;        // depth per shared-memory stage
constexpr int kPadAB = 8;      // halves of padding per row of the A and B tiles
constexpr int kPadC = 4;       // floats of padding per row of the C tile

template <class T>
__global__ void __launch_bounds__(kThreads) conv2d_wmma_kernel(const ConvGeometry g, const ConvTensors<T> t) {
  using namespace nvcuda;
  GPEN_SHARED(__align__(32) T, a_tile, [kBM][kBK + kPadAB]);
  GPEN_SHARED(__align__(32) T, b_tile, [kBK][kBN + kPadAB]);
  GPEN_SHARED(__align__(32) float, c_tile, [kBM][kBN + kPadC]);

  const int tid = threadIdx.x, warp = tid / 32;
  const int warp_m = warp / 2, warp_n = warp % 2;
  const int group = blockIdx.z / g.splits, split = blockIdx.z - group * g.splits;
  const int k_begin = split * g.kchunk, k_end = min(g.k, k_begin + g.kchunk);
  const int m0 = blockIdx.x * kBM, n0 = blockIdx.y * kBN;
  const T zero = from_f32<T>(0.0f);

  // This thread gathers A row a_row, depth columns [a_col, a_col + 16): one output pixel, so its
  // position in the input is computed once.
  const int a_row = tid / 2, a_col = (tid % 2) * 16;
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
  // ... and B row b_row, output channels [b_col, b_col + 16).
  const int b_row = tid / 4, b_col = (tid % 4) * 16;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  for (int k0 = k_begin; k0 < k_end; k0 += kBK) {
    // Depth index k = tap * cin_g + ci, walked incrementally to avoid a division per element.
    int k = k0 + a_col;
    int tap = k / g.cin_g, ci = k - tap * g.cin_g;
    for (int j = 0; j < 16; ++j, ++k) {
      T v = zero;
      if (m_valid && k < k_end) {
        const int ky = tap / g.kw, kx = tap - ky * g.kw;
        const int iy = iy0 + ky, ix = ix0 + kx;
        if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) v = x_img[iy * g.xs.h + ix * g.xs.w + ci * g.xs.c];
      }
      a_tile[a_row][a_col + j] = v;
      if (++ci == g.cin_g) {
        ci = 0;
        ++tap;
      }
    }
    const int kb = k0 + b_row;
    for (int j = 0; j < 16; ++j) {
      const int co = n0 + b_col + j, oc = group * g.cout_g + co;
      const int64_t wi = int64_t{kb} * g.cout + oc;
      T v = zero;
      if (kb < k_end && co < g.cout_g) v = t.w8.codes ? from_f32<T>(weight8_at(t.w8, wi, kb, oc)) : t.w[wi];
      b_tile[b_row][b_col + j] = v;
    }
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a_frag[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b_frag[2];
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a_frag[i], &a_tile[warp_m * 32 + i * 16][kk], kBK + kPadAB);
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b_frag[j], &b_tile[kk][warp_n * 32 + j * 16], kBN + kPadAB);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
    }
    __syncthreads();  // the tiles are refilled next step
  }

  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(&c_tile[warp_m * 32 + i * 16][warp_n * 32 + j * 16], acc[i][j], kBN + kPadC,
                              wmma::mem_row_major);
  __syncthreads();
  for (int e = tid; e < kBM * kBN; e += kThreads) {
    const int r = e / kBN, c = e % kBN;
    const int mm = m0 + r, co = n0 + c;
    if (mm < g.m && co < g.cout_g) conv_finish(g, t, split, mm, group * g.cout_g + co, c_tile[r][c]);
  }
}

}  // namespace

template <class T>
void launch_conv2d_wmma(const ConvGeometry& g, const ConvTensors<T>& t, Stream stream) {
  const dim3 grid(static_cast<unsigned>(ceil_div(g.m, kBM)), static_cast<unsigned>(ceil_div(g.cout_g, kBN)),
                  static_cast<unsigned>(g.groups * g.splits));
  GPEN_CHECK(grid.y <= 65535, "conv2d: too many output channels per group (" + std::to_string(g.cout_g) + ")");
  GPEN_LAUNCH(grid, kThreads, 0, stream, conv2d_wmma_kernel<T>)(g, t);
}

template void launch_conv2d_wmma<__half>(const ConvGeometry&, const ConvTensors<__half>&, Stream);
template void launch_conv2d_wmma<__nv_bfloat16>(const ConvGeometry&, const ConvTensors<__nv_bfloat16>&, Stream);

GPEN_CUDA_NAMESPACE_END
