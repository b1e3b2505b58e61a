// conv2d as an implicit GEMM on mma.sync m16n8k16 (f16 / bf16 in, f32 accumulate), fed by
// ldmatrix from a 3-stage cp.async pipeline (mma_gemm.cuh); the GEMM is conv2d.cuh's. Shapes:
// cin / groups and cout / groups multiples of 8, unit channel stride, pixel strides multiples
// of 8 and 16-byte aligned input and weight (every 16-byte chunk of A lies in one tap, of B in one
// weight row); the dispatcher sends the rest to the WMMA kernel. A chunk of a tap outside the
// image or past the depth is a zero-fill cp.async (nothing read). Epilogue through the C tile
// (mma::epilogue) and conv_finish (bias, activation, residual, strided store, or the split-K slice).
#include "kernels/cuda/conv2d.cuh"
#include "kernels/cuda/mma_gemm.cuh"
#include "kernels/cuda/ops_gemm.h"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

template <class T, int BM, int BN>
__global__ void __launch_bounds__(mma::kThreads) conv2d_mma_kernel(const ConvGeometry g, const ConvTensors<T> t) {
  using Smem = mma::SmemC<T, BM, BN>;
  GPEN_SHARED(__align__(128) Smem, smc, );
  mma::Smem<T, BM, BN>& sm = smc.ab;
  constexpr int kV = 8, kBK = mma::kBK;
  constexpr int kACpr = kBK / kV, kARowStep = mma::kThreads / kACpr, kARows = BM / kARowStep;
  constexpr int kBCpr = BN / kV, kBRowStep = mma::kThreads / kBCpr, kBRows = kBK / kBRowStep;
  const int group = blockIdx.z / g.splits, split = blockIdx.z - group * g.splits;
  const int k_begin = split * g.kchunk, k_end = min(g.k, k_begin + g.kchunk);
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;

  // A: this thread's depth column and rows; each row's input origin and image.
  const int a_col = (threadIdx.x % kACpr) * kV, a_row = threadIdx.x / kACpr;
  int iy0[kARows], ix0[kARows];
  const T* img[kARows];
  for (int i = 0; i < kARows; ++i) {
    const int m = m0 + a_row + i * kARowStep;
    iy0[i] = ix0[i] = -(1 << 29);  // rows past the end: every tap lands outside
    img[i] = t.x;
    if (m < g.m) {
      const int ox = m % g.wo, rest = m / g.wo;
      const int oy = rest % g.ho, n = rest / g.ho;
      iy0[i] = oy * g.stride_h - g.pad_top;
      ix0[i] = ox * g.stride_w - g.pad_left;
      img[i] = t.x + n * g.xs.n + int64_t{group} * g.cin_g;
    }
  }
  const int b_col = (threadIdx.x % kBCpr) * kV, b_row = threadIdx.x / kBCpr;
  const int co = n0 + b_col;
  const T* w_group = t.w + int64_t{group} * g.cout_g;

  auto issue = [&](int step, int s) {
    const int k0 = k_begin + step * kBK;
    const int kc = k0 + a_col;
    int ky = 0, kx = 0, ci = 0;
    const bool live = kc < k_end;
    if (live) {
      const int tap = kc / g.cin_g;
      ci = kc - tap * g.cin_g;
      ky = tap / g.kw, kx = tap - ky * g.kw;
    }
    for (int i = 0; i < kARows; ++i) {
      const int iy = iy0[i] + ky, ix = ix0[i] + kx;
      const bool in = live && iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
      gpen_ptx::cp_async_16(&sm.a[s][a_row + i * kARowStep][a_col], in ? img[i] + iy * g.xs.h + ix * g.xs.w + ci : t.x,
                            in ? 16 : 0);
    }
    for (int i = 0; i < kBRows; ++i) {
      const int k = k0 + b_row + i * kBRowStep;
      const bool in = k < k_end && co < g.cout_g;
      gpen_ptx::cp_async_16(&sm.b[s][b_row + i * kBRowStep][b_col], in ? w_group + int64_t{k} * g.cout + co : t.w,
                            in ? 16 : 0);
    }
  };

  mma::WarpTile<BM, BN> wt;
  wt.zero();
  const int steps = k_end > k_begin ? (k_end - k_begin + kBK - 1) / kBK : 0;
  mma::pipeline(sm, wt, steps, issue, [](int, int) {});

  mma::epilogue(smc, wt, [&](int r, int c, float acc) {
    const int m = m0 + r, o = n0 + c;
    if (m < g.m && o < g.cout_g) conv_finish(g, t, split, m, group * g.cout_g + o, acc);
  });
}

template <class T, int BM, int BN>
void launch(const ConvGeometry& g, const ConvTensors<T>& t, Stream stream) {
  const dim3 grid(static_cast<unsigned>(ceil_div(g.m, BM)), static_cast<unsigned>(ceil_div(g.cout_g, BN)),
                  static_cast<unsigned>(g.groups * g.splits));
  GPEN_CHECK(grid.y <= 65535, "conv2d: too many output channels per group (" + std::to_string(g.cout_g) + ")");
  GPEN_LAUNCH(grid, mma::kThreads, 0, stream, conv2d_mma_kernel<T, BM, BN>)(g, t);
}

}  // namespace

bool conv2d_mma_supported(const ConvGeometry& g, const void* x, const void* w) {
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  if (g.cin_g % 8 != 0 || g.cout_g % 8 != 0 || g.xs.c != 1 || !aligned(x) || !aligned(w)) return false;
  if ((g.n > 1 && g.xs.n % 8 != 0) || (g.h > 1 && g.xs.h % 8 != 0) || (g.w > 1 && g.xs.w % 8 != 0)) return false;
  return true;
}

template <class T>
void launch_conv2d_mma(const ConvGeometry& g, const ConvTensors<T>& t, Stream stream) {
  const cuda_tiles::MmaTile tile = mma_tile(g.m, g.cout_g, g.groups);
  if (tile.bm == 64 && tile.bn == 128)
    launch<T, 64, 128>(g, t, stream);
  else if (tile.bm == 64)
    launch<T, 64, 64>(g, t, stream);
  else
    launch<T, 128, 64>(g, t, stream);
}

template void launch_conv2d_mma<__half>(const ConvGeometry&, const ConvTensors<__half>&, Stream);
template void launch_conv2d_mma<__nv_bfloat16>(const ConvGeometry&, const ConvTensors<__nv_bfloat16>&, Stream);

GPEN_CUDA_NAMESPACE_END
