// The ISA-independent half of the Winograd modconv (overview: winograd.h): the plan, the workspace, and the parallel loop over transformed-weight groups and tasks, which forwards to
// the copy of winograd_kernel.cpp for the ISA in use.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "engine/core/error.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/range_steal.h"
#include "kernels/cpu/winograd.h"

#ifndef GPEN_HAVE_AVX512_KERNELS
#define GPEN_HAVE_AVX512_KERNELS 0
#endif

namespace gpen::cpu::winograd_detail {

// f32 weights, or 8-bit codes with their per-output-channel scales (dequantised in the transform).
void set_weight(WinoArgs& a, const TensorView& w) {
  a.ws0 = w.stride(0), a.ws1 = w.stride(1), a.ws2 = w.stride(2), a.ws3 = w.stride(3);
  if (dtype_is_8bit_weight(w.dtype)) {
    a.w8 = w.as<const uint8_t>();
    a.wscale = w.qscale;
    a.wcin = w.dim(2);
    a.wgroup = w.qgroup;
    a.fp8 = w.dtype == DType::f8e4m3;
  } else {
    a.w = w.f32();
  }
}

WinoArgs conv2d_wino_args(const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
                          const TensorView* residual, const TensorView& y) {
  WinoArgs a;
  a.pad = p.pad_top, a.hin = x.dim(1), a.win = x.dim(2);
  a.x = x.f32();
  a.xs0 = x.stride(0), a.xs1 = x.stride(1), a.xs2 = x.stride(2), a.xs3 = x.stride(3);
  if (bias) a.bias = bias->f32(), a.bs = bias->stride(0);
  if (residual) {
    a.res = residual->f32(), a.rs0 = residual->stride(0), a.rs1 = residual->stride(1);
    a.rs2 = residual->stride(2), a.rs3 = residual->stride(3);
  }
  a.y = y.f32(), a.ys0 = y.stride(0), a.ys1 = y.stride(1), a.ys2 = y.stride(2), a.ys3 = y.stride(3);
  // conv2d's activation is gain * (max(v, 0) + slope * min(v, 0)): the same as the modconv's.
  a.gpos = p.act.gain, a.gneg = p.act.gain * p.act.slope;
  set_weight(a, w);
  return a;
}

namespace {

constexpr size_t kAlign = 64;

}  // namespace

WinoPlan make_wino_plan(int m, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Co, int threads,
                        int64_t u_budget) {
  GPEN_CHECK(m == 2 || m == 4, "winograd: tile " + std::to_string(m) + " is not 2 or 4");
  WinoPlan pl;
  pl.m = m, pl.n = m + 2, pl.nxi = pl.n * pl.n;
  pl.N = N, pl.H = H, pl.W = W, pl.C = C, pl.Co = Co;
  pl.th = cdiv(H, m), pl.tw = cdiv(W, m), pl.ntiles = N * pl.th * pl.tw;
  // Tile blocks of at most kMaxTileBlock, balanced, in whole micro-tiles of 6.
  pl.nblock = cdiv(pl.ntiles, kMaxTileBlock);
  pl.T = round_up(cdiv(pl.ntiles, pl.nblock), 6);
  pl.nblock = cdiv(pl.ntiles, pl.T);
  pl.nkb = cdiv(C, kKcMax);
  pl.kc = cdiv(C, pl.nkb);
  // Rows of the transformed input at a multiple of 1 KB would share L1 sets (see modconv_plan.cpp).
  pl.kcs = round_up(pl.kc, 16);
  if (pl.kcs % 64 == 0) pl.kcs += 16;
  // Transformed-weight groups of at most the direct path's packed weight of this layer (9 C Co
  // floats) or kUFloorFloats, whichever is more, balanced; a task covers a whole group where it
  // can (each chunk of a group transforms the inputs again).
  // Below 48 px (conv_select.cpp's 32 px row) no floor: the groups stay within the direct path's
  // packed weight, so choosing Winograd there never grows the workspace (peak RSS).
  const bool small = H < 48 || W < 48;
  const int64_t budget =
      u_budget > 0 ? u_budget : small ? 9 * C * round_up(Co, 16) : std::max(9 * C * round_up(Co, 16), kUFloorFloats);
  pl.ngroup = std::max<int64_t>(1, cdiv(pl.nxi * C * round_up(Co, 16), budget));
  pl.group_co = round_up(cdiv(Co, pl.ngroup), 16);
  pl.ngroup = cdiv(Co, pl.group_co);
  pl.cc = round_up(cdiv(pl.group_co, cdiv(pl.group_co, kCoChunkMax)), 16);
  const int64_t want = 2 * std::max(1, threads);
  while (pl.nblock * cdiv(pl.group_co, pl.cc) < want && pl.cc > 32) pl.cc = round_up(pl.cc / 2, 16);
  fit_tile_block(pl, pl.nxi * (pl.kcs + pl.cc));
  pl.pstride = pl.nxi * C * 16;
  pl.u_floats = round_up(pl.group_co / 16 * pl.pstride, 16);
  int64_t off = 0;
  auto take = [&](int64_t floats) {
    const int64_t o = off;
    off += round_up(floats, 16);
    return o;
  };
  pl.off_v = take(pl.nxi * pl.T * pl.kcs);
  pl.off_m = take(pl.nxi * pl.T * pl.cc);
  pl.off_sv = take(C);
  pl.off_b2v = take(C);
  pl.off_gs2 = take(C);
  pl.off_dv = take(pl.cc + 16);
  pl.off_bv = take(pl.cc + 16);
  pl.off_tmp = take(16);
  pl.per_thread = off;
  pl.in_floats = N * H * W * C;
  return pl;
}

namespace {
std::atomic<int64_t> g_l2_override{0};
}

int64_t tile_scratch_budget_bytes() {
  static const int64_t l2 = [] {
    const long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return v > 0 ? int64_t{v} : int64_t{2} << 20;
  }();
  const int64_t o = g_l2_override.load(std::memory_order_relaxed);
  return (o > 0 ? o : l2) / 8 * 5;
}

void set_tile_scratch_l2_bytes(int64_t l2_bytes) { g_l2_override.store(l2_bytes, std::memory_order_relaxed); }

void fit_tile_block(WinoPlan& pl, int64_t per_tile_floats, int64_t min_T) {
  const int64_t budget = tile_scratch_budget_bytes();
  while (pl.T - 6 >= min_T && pl.T * per_tile_floats * static_cast<int64_t>(sizeof(float)) > budget) {
    pl.nblock = cdiv(pl.ntiles, pl.T - 6);
    pl.T = round_up(cdiv(pl.ntiles, pl.nblock), 6);
    pl.nblock = cdiv(pl.ntiles, pl.T);
  }
}

void plan_panel_groups(WinoPlan& pl, int64_t budget_floats, int64_t co_chunk_max, int threads) {
  pl.pstride = (pl.nwp ? pl.nwp : pl.nxi) * pl.C * 16;
  const int64_t npanel = cdiv(pl.Co, 16);
  // Whole pairs of panels where more than one fits: AVX-512 runs the GEMM two panels at a time.
  int64_t per_group = std::max<int64_t>(1, budget_floats / pl.pstride);
  if (per_group > 1) per_group &= ~int64_t{1};
  pl.ngroup = cdiv(npanel, per_group);
  int64_t pp = cdiv(npanel, pl.ngroup);
  if (pp % 2 == 1 && pp < per_group) ++pp;
  pl.group_co = pp * 16;
  pl.ngroup = cdiv(pl.Co, pl.group_co);
  pl.cc = round_up(cdiv(pl.group_co, cdiv(pl.group_co, co_chunk_max)), 16);
  const int64_t want = 2 * std::max(1, threads);
  while (pl.nblock * cdiv(pl.group_co, pl.cc) < want && pl.cc > 32) pl.cc = round_up(pl.cc / 2, 16);
  pl.u_floats = pl.group_co / 16 * pl.pstride;
}

// The transformed-weight groups one after the other, each: its transform split between the
// threads, then its tasks (tile block x output-channel chunk). Shared by the stride-1, the
// transposed (winograd_up.cpp) and the stride-2 (winograd_s2.cpp) forms, which differ only in
// their per-ISA transform and task.
void run_groups(const WinoPlan& pl, const WinoArgs& a, void* workspace, const WinoGroupFns& base,
                const WinoGroupFns& wide_fns) {
  const int nt_req = std::max(1, num_threads());
  const auto v = reinterpret_cast<uintptr_t>(workspace);
  float* const u = reinterpret_cast<float*>((v + kAlign - 1) / kAlign * kAlign);
  float* const thread_base = u + pl.u_floats;
  const bool wide = GPEN_HAVE_AVX512_KERNELS && cpu_isa() == Isa::avx512;
  const WinoGroupFns& f = wide ? wide_fns : base;
  constexpr int64_t kCPiece = 64;  // input channels per weight-transform piece
  const int64_t npiece_c = cdiv(pl.C, kCPiece);
  RangeSteal tasks;

#pragma omp parallel num_threads(nt_req)
  {
    float* ws = thread_base + static_cast<int64_t>(omp_get_thread_num()) * pl.per_thread;
    for (int64_t g = 0; g < pl.ngroup; ++g) {
      const int64_t g0 = g * pl.group_co, g1 = std::min(pl.Co, g0 + pl.group_co);
      const int64_t npanel = cdiv(g1 - g0, 16), npair = cdiv(npanel, 2);
#pragma omp for schedule(static)
      for (int64_t piece = 0; piece < npair * npiece_c; ++piece) {  // pairs of panels
        const int64_t jp = piece / npiece_c * 2, c0 = piece % npiece_c * kCPiece;
        f.transform(pl, a, g0 / 16 + jp, static_cast<int>(std::min<int64_t>(2, npanel - jp)), c0,
                    std::min(pl.C, c0 + kCPiece), u + jp * pl.pstride);
      }  // implicit barrier: the group's transformed weight is whole before any task reads it
      // Each thread from its own share of the tasks (range_steal.h): of the tile blocks in raster
      // order, so that it reads and writes the same rows as in the ops before and after; or, where
      // the group's transformed weight outweighs the input, of the output-channel chunks, so that
      // it reads its chunks' part of the weight alone (RetinaFace R50's 24x32 layer4 convs, 12.5
      // MB of weight a group against 1.5 MB of input, ran 9.8 -> 16.2 ms with shares of blocks).
      const int64_t nchunk = cdiv(g1 - g0, pl.cc);
      const bool by_chunk = nchunk > 1 && pl.u_floats > pl.in_floats;
#pragma omp single
      tasks.reset(pl.nblock * nchunk, nt_req);
      // implicit barrier: the tasks are dealt before any thread takes one
      const int me = omp_get_thread_num();
      for (int64_t t; (t = tasks.next(me)) >= 0;) {
        const int64_t block = by_chunk ? t % pl.nblock : t / nchunk;
        const int64_t o0 = g0 + (by_chunk ? t / pl.nblock : t % nchunk) * pl.cc;
        f.task(pl, a, block, o0, std::min(pl.cc, g1 - o0), u, g0, ws);
      }
#pragma omp barrier
      // no task still reads the group when the next overwrites it
    }
  }
}

namespace {
void run(const WinoPlan& pl, const WinoArgs& a, void* workspace) {
  run_groups(pl, a, workspace, {isa_base::transform_weight, isa_base::run_task},
             {isa_avx512::transform_weight, isa_avx512::run_task});
}
}  // namespace

WinoArgs images_from(const WinoArgs& a, int64_t n0) {
  WinoArgs b = a;
  b.x += n0 * a.xs0;
  if (b.x2) b.x2 += n0 * a.x2s0;
  if (b.s) b.s += n0 * a.ss0;
  if (b.d) b.d += n0 * a.ds0;
  if (b.res) b.res += n0 * a.rs0;
  b.y += n0 * a.ys0;
  return b;
}

int64_t fused_images(int m, int64_t N, int64_t H, int64_t W) {
  const int64_t per_image = ((H + m - 1) / m) * ((W + m - 1) / m);
  return per_image > kFusedMaxTiles ? 0 : std::min(N, kFusedMaxTiles / per_image);
}

size_t modconv_winograd_workspace_bytes(const ConvChoice& c, const Shape& x_cat, const Shape& y, int threads) {
  const int nt = threads > 0 ? threads : std::max(1, num_threads());
  const int m = c.tile;
  if (c.path == ConvPath::winograd_fused) {
    const int64_t chunk = fused_images(m, y[0], x_cat[1], x_cat[2]);
    const WinoPlan f = make_wino_fused_plan(m, chunk ? chunk : y[0], x_cat[1], x_cat[2], x_cat[3], y[3], nt);
    GPEN_CHECK(f.fused, "modconv: the fused Winograd form takes at most " + std::to_string(kFusedMaxTiles) + " tiles");
    return static_cast<size_t>(f.v_floats + f.per_thread * nt) * sizeof(float) + kAlign;
  }
  const WinoPlan pl = make_wino_plan(m, y[0], x_cat[1], x_cat[2], x_cat[3], y[3], nt);
  return static_cast<size_t>(pl.u_floats + pl.per_thread * nt) * sizeof(float) + kAlign;
}

void modconv_winograd(const ConvChoice& c, const ModConvParams& p, const ModConvArgs& args, const TensorView& y,
                      void* workspace) {
  GPEN_CHECK(workspace != nullptr, "modconv: missing workspace");
  const TensorView& x = *args.x;
  const TensorView& w = *args.w;
  const int m = c.tile;
  const int nt_req = std::max(1, num_threads());
  const int64_t chunk = fused_images(m, y.dim(0), x.dim(1), x.dim(2));
  WinoPlan pl = c.path == ConvPath::winograd_fused
                    ? make_wino_fused_plan(m, chunk ? chunk : y.dim(0), x.dim(1), x.dim(2), w.dim(2), w.dim(3), nt_req)
                    : make_wino_plan(m, y.dim(0), x.dim(1), x.dim(2), w.dim(2), w.dim(3), nt_req);
  GPEN_CHECK(pl.fused == (c.path == ConvPath::winograd_fused),
             "modconv: the fused Winograd form takes at most " + std::to_string(kFusedMaxTiles) + " tiles");
  pl.C1 = x.dim(3);
  pl.C2 = pl.C - pl.C1;

  WinoArgs a;
  a.hin = x.dim(1), a.win = x.dim(2);
  a.x = x.f32();
  a.xs0 = x.dim(0) == 1 ? 0 : x.stride(0), a.xs1 = x.stride(1), a.xs2 = x.stride(2), a.xs3 = x.stride(3);
  if (args.x2) {
    const TensorView& x2 = *args.x2;
    a.x2 = x2.f32();
    a.x2s0 = x2.stride(0), a.x2s1 = x2.stride(1), a.x2s2 = x2.stride(2), a.x2s3 = x2.stride(3);
    a.x2_scale = args.x2_scale->f32()[0];
    a.x2_bias = args.x2_bias->f32();
    a.x2bs = args.x2_bias->stride(args.x2_bias->rank() - 1);
    a.x2_slope = p.x2_act.slope, a.x2_gain = p.x2_act.gain;
  }
  a.s = args.s->f32(), a.ss0 = args.s->stride(0), a.ss1 = args.s->stride(1);
  if (args.d) a.d = args.d->f32(), a.ds0 = args.d->stride(0), a.ds1 = args.d->stride(1);
  if (args.bias) a.bias = args.bias->f32(), a.bs = args.bias->stride(args.bias->rank() - 1);
  if (args.residual) {
    const TensorView& r = *args.residual;
    a.res = r.f32(), a.rs0 = r.stride(0), a.rs1 = r.stride(1), a.rs2 = r.stride(2), a.rs3 = r.stride(3);
  }
  a.y = y.f32(), a.ys0 = y.stride(0), a.ys1 = y.stride(1), a.ys2 = y.stride(2), a.ys3 = y.stride(3);
  a.gpos = p.act.gain, a.gneg = p.act.gain * p.act.slope;
  set_weight(a, w);

  if (pl.fused) {
    const auto v = reinterpret_cast<uintptr_t>(workspace);
    float* ws = reinterpret_cast<float*>((v + kAlign - 1) / kAlign * kAlign);
    const int64_t N = y.dim(0);
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
      // Each chunk of images is a batch of its own: the same per-image arithmetic at any batch.
      const int64_t nc = std::min(chunk, N - n0);
      WinoPlan pc = nc == pl.N ? pl : make_wino_fused_plan(m, nc, x.dim(1), x.dim(2), w.dim(2), w.dim(3), nt_req);
      pc.C1 = pl.C1, pc.C2 = pl.C2;
      run_fused(pc, images_from(a, n0), ws);
    }
    return;
  }
  run(pl, a, workspace);
}

size_t conv2d_winograd_workspace_bytes(int m, const Shape& x, const Shape& y, int threads) {
  const int nt = threads > 0 ? threads : std::max(1, num_threads());
  const WinoPlan pl = make_wino_plan(m, y[0], y[1], y[2], x[3], y[3], nt, kConvUBudgetFloats);
  return static_cast<size_t>(pl.u_floats + pl.per_thread * nt) * sizeof(float) + kAlign;
}

void conv2d_winograd(int m, const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
                     const TensorView* residual, const TensorView& y, void* workspace) {
  GPEN_CHECK(workspace != nullptr, "conv2d: missing workspace");
  WinoPlan pl = make_wino_plan(m, y.dim(0), y.dim(1), y.dim(2), x.dim(3), y.dim(3), std::max(1, num_threads()),
                               kConvUBudgetFloats);
  pl.C1 = pl.C;
  run(pl, conv2d_wino_args(p, x, w, bias, residual, y), workspace);
}

}  // namespace gpen::cpu::winograd_detail
