// The ISA-independent half of the polyphase Winograd stride-2 conv2d (overview: winograd_s2.h):
// the choice, the plan, the workspace and the parallel loop over transformed-weight groups and
// tasks, which forwards to winograd_s2_kernel.cpp for the ISA in use.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "engine/core/error.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/winograd_s2.h"

#ifndef GPEN_HAVE_AVX512_KERNELS
#define GPEN_HAVE_AVX512_KERNELS 0
#endif

namespace gpen::cpu::winograd_detail {

namespace {

constexpr size_t kAlign = 64;

// The shape rule of "auto" (docs/benchmarks.md, "CPU: Winograd for the stride-2 conv2d", and its
// session-9 revision after the transforms came to keep the tile in registers). Measured with
// bench_cpu_conv2d_s2 on the AMD EPYC (Zen 4) at 2 threads (wall) and at 1 thread (CPU time, both
// ISAs), against the direct path and the other tile:
// - 32..64 input channels from 256x256 outputs: m = 4. GPEN-512's ecd1 (64 -> 128, 256x256) 43.6
//   ms against m = 2's 44.7 (session 10: 42.2-46.3 against 44.5-47.0).
// - 16..64 channels from 64x64 below that: m = 2. Session 9 measured m = 4 ahead on GPEN-256's
//   ecd1 (32 -> 64, 128x128) and ecd2 (64 -> 128, 64x64); session 10, after the weight
//   transform's loads were unrolled, measured m = 2 ahead on both, in the graph (3.25 against
//   3.66 ms, 2.88 against 3.29, alternating binaries) and in bench_cpu_conv2d_s2 on both ISAs
//   (ecd1 1.0-1.2x, ecd2 1.02-1.25x).
// - 65..128 channels from 32x32: m = 2, which beats m = 4 where both were measured. GPEN-256's
//   ecd3 (128 -> 256, 32x32) 2.82 against direct's 3.10 (1 thread 1.09x / 1.01x); GPEN-512's ecd2
//   (128 -> 256, 128x128) 41.2 against m = 4's 42.5 and direct's 50.8; R50's layer2.0 conv2
//   (96x128) 17.4 against m = 4's 19.5 and direct's 20.0 (1 thread 1.12x / 1.07x over m = 4).
// - 129..512 channels from 32x32, and on the AVX-512 path 129..256 from 16x16: m = 2 (session
//   27, in the graph, alternating processes; sessions 9-10 had measured these direct-ahead before
//   the tile blocks were sized to the L2): GPEN-256's ecd4 (256 -> 256, 16x16) 1.51 -> 1.35 ms
//   (AVX2 path 1.55 -> 1.66, so direct there), GPEN-512's ecd3 (256 -> 512, 64x64) 44.9 -> 37.4
//   (AVX2 46.0 -> 40.3) and ecd4 (512 -> 512, 32x32) 27.1 -> 20.8 (AVX2 25.5 -> 22.9), R50's
//   layer3.0 conv2 (256 -> 256, 48x64) 16.8 -> 14.2. Smaller maps stay direct: GPEN-512's ecd5
//   (512, 16x16) 6.7 -> 8.7 and GPEN-256's ecd5 (256, 8x8) 0.47 -> 0.58 with m = 2. Each
//   transformed-weight element serves one tile block per load, where the direct path's GEMM reuses
//   its weight over every pixel, so the fewest tiles lose. Wider inputs (none in GPEN or R50) stay
//   direct.
int auto_tile(int64_t Ho, int64_t Wo, int64_t C, int64_t Co) {
  if (C > 512 || C < 16 || Co < 16) return 0;
  if (C <= 64) return Ho >= 64 && Wo >= 64 ? (C >= 32 && Ho >= 256 && Wo >= 256 ? 4 : 2) : 0;
  const bool wide = GPEN_HAVE_AVX512_KERNELS && cpu_isa() == Isa::avx512;
  const int64_t min_px = wide && C > 128 && C <= 256 ? 16 : 32;
  return Ho >= min_px && Wo >= min_px ? 2 : 0;
}

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

int conv2d_wino_s2_tile(const Conv2dParams& p, const Shape& x, const Shape& y) {
  if (p.kh != 3 || p.kw != 3 || p.stride_h != 2 || p.stride_w != 2 || p.groups != 1 || p.split_rows > 0) return 0;
  // Input row 2 oy - pad .. + 2, zero outside the input: pad 0 (GPEN, on the blurred map) or 1
  // (RetinaFace R50); bottom and right pads only say how many outputs there are.
  const int pad = p.pad_top;
  if (pad > 1 || p.pad_left != pad || x.rank != 4 || y.rank != 4) return 0;
  if (y[0] < 1 || y[1] < 1 || y[2] < 1 || y[3] < 1 || x[3] < 1 || 2 * y[1] - pad > x[1] + 1 || 2 * y[2] - pad > x[2] + 1) return 0;
  const char* mode = conv_mode_name();  // validated there, once per process
  int m = 0;
  if (std::strcmp(mode, "direct") == 0) return 0;
  if (std::strcmp(mode, "winograd4") == 0) m = 4;
  else if (std::strcmp(mode, "winograd2") == 0) m = 2;
  else m = auto_tile(y[1], y[2], x[3], y[3]);
  auto fits = [&](int mm) {
    const WinoPlan pl = make_wino_s2_plan(mm, y[0], y[1], y[2], x[3], y[3], 1);
    return pl.u_floats <= kConvUBudgetFloats && (pl.group_co >= kConvMinGroup || pl.ngroup == 1);
  };
  // The larger tile's weight (81 points) may not fit where the smaller one's (25) does.
  if (m == 4 && !fits(4)) m = 2;
  return m != 0 && fits(m) ? m : 0;
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
  run_groups(pl, a, workspace, {isa_base::s2_transform_weight, isa_base::s2_run_task},
             {isa_avx512::s2_transform_weight, isa_avx512::s2_run_task});
}

}  // namespace gpen::cpu::winograd_detail
