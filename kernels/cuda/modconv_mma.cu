// The modulated conv as an implicit GEMM on mma.sync m16n8k16 (f16 / bf16 in, f32 accumulate),
// fed by ldmatrix from a 3-stage cp.async pipeline (mma_gemm.cuh). The GEMM, the phases of the up
// conv, split-K and the epilogue are those of modconv.cuh, as for the WMMA kernel; this kernel
// takes the vector-staging shapes only (C1, C2, Cout multiples of 8, unit channel strides,
// 16-byte aligned rows: every GPEN layer) and the dispatcher sends the rest to WMMA.
//
// Prologue: cp.async copies the raw x / x2 chunks (zero-filled outside the image and past the
// depth); when a thread's copies of a step have landed (its own wait_group) and before the
// barrier that publishes the stage, it rewrites its own chunks in place: x * s, or
// act2(x2 * scale + bias) * s for the x2 channels, in f32 and rounded once to T, exactly as the
// WMMA kernel stages them (so the two kernels multiply bit-identical operands). Chunks outside
// the image stay zero (padding after the activation). B (the HWIO weight) is copied as is.
// Epilogue through the f32 C tile in the stages' bytes (mma::epilogue): demod, bias, activation,
// residual and the strided store of modconv_finish, consecutive threads on consecutive channels.
#include "kernels/cuda/modconv.cuh"
#include "kernels/cuda/mma_gemm.cuh"
#include "kernels/cuda/ops_gemm.h"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

template <class T, int BM, int BN>
__global__ void __launch_bounds__(mma::kThreads) modconv_mma_kernel(const ModConvGeometry g, const ModConvTensors<T> t) {
  using Tile = mma::WarpTile<BM, BN>;
  using Smem = mma::SmemC<T, BM, BN>;
  GPEN_SHARED(__align__(128) Smem, smc, );
  mma::Smem<T, BM, BN>& sm = smc.ab;
  const ModConvTile tile = modconv_tile(g, BM, BN);
  if (tile.empty()) return;  // block-uniform
  constexpr int kV = 8, kBK = mma::kBK;
  // A: the staging geometry of modconv.cuh (this thread's depth column, rows, pixel origins).
  ModConvAStage<T, BM, kBK, mma::kThreads, true> as;
  as.init(g, t, tile.ph, tile.n, tile.m0, threadIdx.x);
  using AS = decltype(as);
  // B: kBK rows x BN / 8 chunks.
  constexpr int kBCpr = BN / kV, kBRowStep = mma::kThreads / kBCpr, kBRows = kBK / kBRowStep;
  const int b_col = (threadIdx.x % kBCpr) * kV, b_row = threadIdx.x / kBCpr;
  const int co = tile.n0 + b_col;

  Tile wt;
  wt.zero();
  const int steps = tile.k_end > tile.k_begin ? (tile.k_end - tile.k_begin + kBK - 1) / kBK : 0;

  // The depth column's tap and source; false past the depth (chunk zero-filled).
  struct Col {
    bool live, second;
    int dy, dx, ci;
  };
  auto column = [&](int k0) {
    Col c{};
    const int kc = k0 + as.col;
    c.live = kc < tile.k_end;
    if (!c.live) return c;
    const int tap = kc / g.c;
    c.ci = kc - tap * g.c;
    const int ty = tap / tile.ph.ntx, tx = tap - ty * tile.ph.ntx;
    c.dy = g.dstep * ty, c.dx = g.dstep * tx;
    c.second = c.ci >= g.c1;
    return c;
  };
  auto inside = [&](const Col& c, int i, int& iy, int& ix) {
    iy = as.ia[i] + c.dy, ix = as.ib[i] + c.dx;
    return c.live && iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
  };

  auto issue = [&](int step, int s) {
    const int k0 = tile.k_begin + step * kBK;
    const Col c = column(k0);
    for (int i = 0; i < AS::kRows; ++i) {
      int iy, ix;
      const T* src = t.x;  // any valid address when nothing is read
      int bytes = 0;
      if (inside(c, i, iy, ix)) {
        src = c.second ? as.x2 + (c.ci - g.c1) + iy * g.x2s.h + ix * g.x2s.w : as.x + c.ci + iy * g.xs.h + ix * g.xs.w;
        bytes = 16;
      }
      gpen_ptx::cp_async_16(&sm.a[s][as.row + i * AS::kRowStep][as.col], src, bytes);
    }
    for (int i = 0; i < kBRows; ++i) {
      const int k = k0 + b_row + i * kBRowStep;
      const T* src = t.w;
      int bytes = 0;
      if (k < tile.k_end && co < g.cout) {
        const int tap = k / g.c, ci = k - tap * g.c;
        const int ty = tap / tile.ph.ntx, tx = tap - ty * tile.ph.ntx;
        const int ky = tile.ph.ky0 + g.kstep * ty, kx = tile.ph.kx0 + g.kstep * tx;
        src = t.w + (int64_t{ky * g.k + kx} * g.c + ci) * g.cout + co;
        bytes = 16;
      }
      gpen_ptx::cp_async_16(&sm.b[s][b_row + i * kBRowStep][b_col], src, bytes);
    }
  };

  auto ready = [&](int step, int s) {
    const Col c = column(tile.k_begin + step * kBK);
    if (!c.live) return;
    const Vec16<T> sv = *reinterpret_cast<const Vec16<T>*>(as.s + c.ci);
    Vec16<T> bv = sv;
    if (c.second) bv = *reinterpret_cast<const Vec16<T>*>(t.x2_bias + (c.ci - g.c1));
    for (int i = 0; i < AS::kRows; ++i) {
      int iy, ix;
      if (!inside(c, i, iy, ix)) continue;  // zero-filled: stays zero
      Vec16<T>& v = *reinterpret_cast<Vec16<T>*>(&sm.a[s][as.row + i * AS::kRowStep][as.col]);
      Vec16<T> o;
      for (int j = 0; j < kV; ++j) {
        float x = to_f32(v.v[j]);
        if (c.second) x = activate(g.x2_act, x * as.x2_scale + to_f32(bv.v[j]));
        o.v[j] = from_f32<T>(x * to_f32(sv.v[j]));
      }
      v = o;
    }
  };

  mma::pipeline(sm, wt, steps, issue, ready);

  const int pixels = tile.ph.na * tile.ph.nb;
  mma::epilogue(smc, wt, [&](int r, int cc, float acc) {
    const int m = tile.m0 + r, o = tile.n0 + cc;
    if (m >= pixels || o >= g.cout) return;
    int oy, ox;
    modconv_pixel(g, tile.ph, m, oy, ox);
    modconv_finish(g, t, tile.split, tile.n, oy, ox, o, acc);
  });
}

}  // namespace

template <class T>
void launch_modconv_mma(const ModConvGeometry& g, const ModConvTensors<T>& t, Stream stream) {
  int pixels = 0;
  for (int i = 0; i < g.nphase; ++i) pixels = std::max(pixels, g.ph[i].na * g.ph[i].nb);
  const cuda_tiles::MmaTile tile = mma_tile(pixels, g.cout, int64_t{g.n} * g.nphase);
  if (tile.bm == 64 && tile.bn == 128)
    launch_modconv_tiles<64, 128, mma::kThreads>(modconv_mma_kernel<T, 64, 128>, g, t, stream);
  else if (tile.bm == 64)
    launch_modconv_tiles<64, 64, mma::kThreads>(modconv_mma_kernel<T, 64, 64>, g, t, stream);
  else
    launch_modconv_tiles<128, 64, mma::kThreads>(modconv_mma_kernel<T, 128, 64>, g, t, stream);
}

template void launch_modconv_mma<__half>(const ModConvGeometry&, const ModConvTensors<__half>&, Stream);
template void launch_modconv_mma<__nv_bfloat16>(const ModConvGeometry&, const ModConvTensors<__nv_bfloat16>&,
                                                Stream);

GPEN_CUDA_NAMESPACE_END
