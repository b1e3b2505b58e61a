// The ISA-independent half of the polyphase Winograd transposed modconv (overview:
// winograd_up.h): the plan, the workspace and the parallel loop over transformed-weight groups and
// tasks, which forwards to winograd_up_kernel.cpp for the ISA in use.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "engine/core/error.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/winograd_up.h"

#ifndef GPEN_HAVE_AVX512_KERNELS
#define GPEN_HAVE_AVX512_KERNELS 0
#endif

namespace gpen::cpu::winograd_detail {

namespace {

constexpr size_t kAlign = 64;
std::atomic<int64_t> g_stream_min{0};

}  // namespace

int64_t up_stream_min_bytes() {
  const int64_t v = g_stream_min.load(std::memory_order_relaxed);
  return v > 0 ? v : kUpStreamMinBytes;
}
void set_up_stream_min_bytes(int64_t bytes) { g_stream_min.store(bytes, std::memory_order_relaxed); }

WinoPlan make_wino_up_plan(int m, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Co, int threads) {
  GPEN_CHECK(m == 2 || m == 4, "winograd up: tile " + std::to_string(m) + " is not 2 or 4");
  GPEN_CHECK(N >= 1 && H >= 1 && W >= 1 && C >= 1 && Co >= 1, "winograd up: empty tensor");
  WinoPlan pl;
  pl.m = m, pl.n = m + 1, pl.nxi = (2 * m + 1) * (2 * m + 1);
  pl.N = N, pl.H = H, pl.W = W, pl.C = C, pl.Co = Co;
  // Even outputs exist at H + 1 positions per axis (rows 0, 2, .., 2H), odd ones at H.
  pl.th = cdiv(H + 1, m), pl.tw = cdiv(W + 1, m), pl.ntiles = N * pl.th * pl.tw;
  pl.nblock = cdiv(pl.ntiles, kUpMaxTileBlock);
  pl.T = round_up(cdiv(pl.ntiles, pl.nblock), 6);
  pl.nblock = cdiv(pl.ntiles, pl.T);
  pl.nkb = cdiv(C, kKcMax);
  pl.kc = cdiv(C, pl.nkb);
  pl.kcs = round_up(pl.kc, 16);
  if (pl.kcs % 64 == 0) pl.kcs += 16;  // rows at a multiple of 1 KB would share L1 sets
  // Groups of whole panels within the direct path's packed weight (9 C Co floats) or
  // kUFloorFloats, whichever is more, balanced; one panel at least.
  pl.nwp = (m + 2) * (m + 2);  // the odd-phase points share their weight (winograd_up_kernel.cpp)
  plan_panel_groups(pl, std::max(9 * C * cdiv(Co, 16) * 16, kUFloorFloats), kUpCoChunkMax, threads);
  fit_tile_block(pl, pl.nxi * (pl.kcs + pl.cc), 12);
  int64_t off = 0;
  auto take = [&](int64_t floats) {
    const int64_t o = off;
    off += round_up(floats, 16);
    return o;
  };
  pl.off_v = take(pl.nxi * odd_lines(pl.T * pl.kcs));
  pl.off_m = take(pl.nxi * odd_lines(pl.T * pl.cc));
  pl.off_sv = take(C);
  pl.off_b2v = take(C);
  pl.off_gs2 = take(C);
  pl.off_tmp = take(16);
  pl.per_thread = off;
  pl.in_floats = N * H * W * C;
  return pl;
}

size_t modconv_winograd_up_workspace_bytes(const ConvChoice& c, const Shape& x_cat, const Shape& y, int threads) {
  const int nt = threads > 0 ? threads : std::max(1, num_threads());
  const int m = c.tile;
  if (c.path == ConvPath::winograd_up_fused) {
    const int64_t chunk = fused_images(4, y[0], x_cat[1], x_cat[2]);
    const WinoPlan f = make_wino_up_fused_plan(chunk ? chunk : y[0], x_cat[1], x_cat[2], x_cat[3], y[3]);
    GPEN_CHECK(m == 4 && f.fused, "modconv: the fused transposed Winograd form does not take this shape");
    return static_cast<size_t>(f.v_floats + f.per_thread * nt) * sizeof(float) + kAlign;
  }
  const WinoPlan pl = make_wino_up_plan(m, y[0], x_cat[1], x_cat[2], x_cat[3], y[3], nt);
  return static_cast<size_t>(pl.u_floats + pl.per_thread * nt) * sizeof(float) + kAlign;
}

void modconv_winograd_up(const ConvChoice& c, const ModConvParams& p, const ModConvArgs& args, const TensorView& y,
                         void* workspace) {
  GPEN_CHECK(workspace != nullptr, "modconv: missing workspace");
  const int m = c.tile;
  const TensorView& x = *args.x;
  const TensorView& w = *args.w;
  const int nt_req = std::max(1, num_threads());
  WinoPlan pl = make_wino_up_plan(m, y.dim(0), x.dim(1), x.dim(2), w.dim(2), w.dim(3), nt_req);
  pl.C1 = x.dim(3);
  pl.C2 = pl.C - pl.C1;

  WinoArgs a;
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
  a.y = y.f32(), a.ys0 = y.stride(0), a.ys1 = y.stride(1), a.ys2 = y.stride(2), a.ys3 = y.stride(3);
  a.stream_y = y.numel() * static_cast<int64_t>(sizeof(float)) >= up_stream_min_bytes();
  set_weight(a, w);

  if (c.path == ConvPath::winograd_up_fused) {
    const int64_t chunk = fused_images(4, y.dim(0), x.dim(1), x.dim(2));
    const WinoPlan f = make_wino_up_fused_plan(chunk ? chunk : y.dim(0), x.dim(1), x.dim(2), w.dim(2), w.dim(3));
    GPEN_CHECK(m == 4 && f.fused, "modconv: the fused transposed Winograd form does not take this shape");
    const auto v = reinterpret_cast<uintptr_t>(workspace);
    float* ws = reinterpret_cast<float*>((v + kAlign - 1) / kAlign * kAlign);
    for (int64_t n0 = 0; n0 < y.dim(0); n0 += chunk) {
      // Each chunk of images is a batch of its own: the same per-image arithmetic at any batch.
      const int64_t nc = std::min(chunk, y.dim(0) - n0);
      WinoPlan pc = nc == f.N ? f : make_wino_up_fused_plan(nc, x.dim(1), x.dim(2), w.dim(2), w.dim(3));
      pc.C1 = pl.C1, pc.C2 = pl.C2;
      run_up_fused(pc, images_from(a, n0), ws);
    }
    return;
  }
  const WinoGroupFns base{isa_base::up_transform_weight, isa_base::up_run_task};
#if GPEN_HAVE_AVX512_KERNELS
  run_groups(pl, a, workspace, base, {isa_avx512::up_transform_weight, isa_avx512::up_run_task});
#else
  run_groups(pl, a, workspace, base, base);  // a build without the AVX-512 copies (not x86-64)
#endif
}

}  // namespace gpen::cpu::winograd_detail
