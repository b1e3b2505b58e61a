// The ISA-independent half of the polyphase Winograd stride-2 conv2d (overview: winograd_s2.h):
// the plan, the workspace and the parallel loop over transformed-weight groups and tasks, which
// forwards to winograd_s2_kernel.cpp for the ISA in use.
#include <omp.h>

#include <algorithm>
#include <string>

#include "engine/core/error.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/winograd_s2.h"

#ifndef GPEN_HAVE_AVX512_KERNELS
#define GPEN_HAVE_AVX512_KERNELS 0
#endif

namespace gpen::cpu::winograd_detail {

namespace {

constexpr size_t kAlign = 64;

}  // namespace

WinoPlan make_wino_s2_plan(int m, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Co, int threads) {
  GPEN_CHECK(m == 2 || m == 4, "winograd s2: tile " + std::to_string(m) + " is not 2 or 4");
  GPEN_CHECK(N >= 1 && H >= 1 && W >= 1 && C >= 1 && Co >= 1, "winograd s2: empty tensor");
  WinoPlan pl;
  pl.m = m, pl.n = 2 * m + 1, pl.nxi = pl.n * pl.n;
  pl.N = N, pl.H = H, pl.W = W, pl.C = C, pl.Co = Co;
  pl.th = cdiv(H, m), pl.tw = cdiv(W, m), pl.ntiles = N * pl.th * pl.tw;
  pl.nblock = cdiv(pl.ntiles, kS2MaxTileBlock);
  pl.T = round_up(cdiv(pl.ntiles, pl.nblock), 6);
  pl.nblock = cdiv(pl.ntiles, pl.T);
  pl.nkb = cdiv(C, kKcMax);
  pl.kc = cdiv(C, pl.nkb);
  pl.kcs = round_up(pl.kc, 16);
  if (pl.kcs % 64 == 0) pl.kcs += 16;  // rows at a multiple of 1 KB would share L1 sets
  // Groups of whole panels within kConvUBudgetFloats (conv2d's direct path keeps no copy of its
  // weight to compare with), balanced; whole pairs where more than one fits (AVX-512 runs the
  // GEMM two panels at a time).
  plan_panel_groups(pl, kConvUBudgetFloats, kS2CoChunkMax, threads);
  int64_t off = 0;
  auto take = [&](int64_t floats) {
    const int64_t o = off;
    off += round_up(floats, 16);
    return o;
  };
  pl.off_v = take(pl.nxi * odd_lines(pl.T * pl.kcs));
  pl.off_m = take(pl.nxi * odd_lines(pl.T * pl.cc));
  pl.off_bv = take(pl.cc + 16);
  pl.off_tmp = take(16);
  pl.per_thread = off;
  pl.in_floats = N * 4 * H * W * C;  // H x W outputs read about 2H x 2W inputs
  return pl;
}

size_t conv2d_wino_s2_workspace_bytes(int m, const Shape& x, const Shape& y, int threads) {
  const int nt = threads > 0 ? threads : std::max(1, num_threads());
  const WinoPlan pl = make_wino_s2_plan(m, y[0], y[1], y[2], x[3], y[3], nt);
  return static_cast<size_t>(pl.u_floats + pl.per_thread * nt) * sizeof(float) + kAlign;
}

void conv2d_wino_s2(int m, const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
                    const TensorView* residual, const TensorView& y, void* workspace) {
  GPEN_CHECK(workspace != nullptr, "conv2d: missing workspace");
  const int nt_req = std::max(1, num_threads());
  WinoPlan pl = make_wino_s2_plan(m, y.dim(0), y.dim(1), y.dim(2), x.dim(3), y.dim(3), nt_req);
  pl.C1 = pl.C;
  const WinoArgs a = conv2d_wino_args(p, x, w, bias, residual, y);
  const WinoGroupFns base{isa_base::s2_transform_weight, isa_base::s2_run_task};
#if GPEN_HAVE_AVX512_KERNELS
  run_groups(pl, a, workspace, base, {isa_avx512::s2_transform_weight, isa_avx512::s2_run_task});
#else
  run_groups(pl, a, workspace, base, base);  // a build without the AVX-512 copies (not x86-64)
#endif
}

}  // namespace gpen::cpu::winograd_detail
