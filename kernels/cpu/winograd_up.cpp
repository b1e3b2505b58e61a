// The ISA-independent half of the polyphase Winograd transposed modconv (overview:
// winograd_up.h): the choice, the plan, the workspace and the parallel loop over
// transformed-weight groups and tasks, which forwards to winograd_up_kernel.cpp for the ISA in use.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

#include "engine/core/error.h"
#include "kernels/cpu/isa.h"
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

int winograd_up_tile(const ModConvParams& p, int64_t /*N*/, int64_t H, int64_t W, int64_t C, int64_t Co) {
  if (!p.up || p.k != 3 || p.split_rows > 0 || p.cropped()) return 0;  // banded ops stay direct (winograd.cpp says why)
  const char* mode = conv_mode_name();  // validated there, once per process
  if (std::strcmp(mode, "direct") == 0) return 0;
  if (std::strcmp(mode, "winograd4") == 0) return 4;
  if (std::strcmp(mode, "winograd2") == 0) return 2;
  // "auto": the grouped form on large inputs with at most 256 channels (GPEN-512's last up conv,
  // GPEN-256's last two), where it measured faster than the direct path (docs/benchmarks.md,
  // "Winograd for the transposed convs"; above 256 channels the transformed weight, streamed from
  // L3 once per tile block, costs more than the multiplies it saves). m = 2 (25 points, 1.44x
  // fewer multiplies) ruled there until session 22 measured m = 4 (81 points, 1.78x) with tile
  // blocks of 12 (fit_tile_block) ahead on an AMD EPYC (Zen 4), per node in the graph:
  // GPEN-256's 64 -> 129 (128 -> 64 channels) 4.75 -> 4.61 and 128 -> 257 (64 -> 32) 4.80 -> 4.66
  // ms, GPEN-512's 256 -> 513 (256 -> 64) 71.6 -> 66.5 ms; the AVX2 path 1.00x and 1.03x on
  // GPEN-256's. (On session 19's Xeon, with tile blocks of 12-18, m = 4 ran the 128 -> 257 layer
  // 5-10 % ahead of m = 2 and the 64 -> 129 one at about parity.)
  if (H >= 64 && W >= 64 && C >= 32 && C <= 256 && Co >= 16) return 4;
  // The fused form (winograd_up_fused.cpp: exact tiles, 36 weight points transformed in L2 and
  // never written out) pays where the grouped one did not, from 16x16 at C >= 256, Co >= 128:
  // GPEN-256's 16x16 and 32x32 up convs (512 -> 256, 512 -> 128) 1.13-1.18x and 1.25-1.32x faster
  // than the direct path in the graph, GPEN-512's (1024 -> 512) 1.06x and 1.22-1.25x; AVX2 path
  // 1.05-1.25x (bench_cpu_winograd_up, 2026-12-02 session 11). Not at 8x8 (4 tiles: 0.72x). Its
  // workspace (the K block's transformed input, every chunk's accumulators) stays below the direct
  // path's packed weight at GPEN-512's and below the graph's largest op at GPEN-256's. Per image,
  // as the stride-1 fused form, so the choice and the workspace never shrink with the batch.
  const bool fused = H % 4 == 0 && W % 4 == 0 && (H / 4) * (W / 4) <= kFusedMaxTiles && fused_enabled();
  return fused && H >= 16 && W >= 16 && C >= 256 && Co >= 128 ? 4 : 0;
}

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

size_t modconv_winograd_up_workspace_bytes(int m, const Shape& x_cat, const Shape& y, int threads) {
  const int nt = threads > 0 ? threads : std::max(1, num_threads());
  if (m == 4) {
    const int64_t chunk = fused_images(4, y[0], x_cat[1], x_cat[2]);
    const WinoPlan f = make_wino_up_fused_plan(chunk ? chunk : y[0], x_cat[1], x_cat[2], x_cat[3], y[3]);
    if (f.fused) return static_cast<size_t>(f.v_floats + f.per_thread * nt) * sizeof(float) + kAlign;
  }
  const WinoPlan pl = make_wino_up_plan(m, y[0], x_cat[1], x_cat[2], x_cat[3], y[3], nt);
  return static_cast<size_t>(pl.u_floats + pl.per_thread * nt) * sizeof(float) + kAlign;
}

void modconv_winograd_up(int m, const ModConvParams& p, const ModConvArgs& args, const TensorView& y, void* workspace) {
  GPEN_CHECK(workspace != nullptr, "modconv: missing workspace");
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

  if (m == 4) {
    const int64_t chunk = fused_images(4, y.dim(0), x.dim(1), x.dim(2));
    const WinoPlan f = make_wino_up_fused_plan(chunk ? chunk : y.dim(0), x.dim(1), x.dim(2), w.dim(2), w.dim(3));
    if (f.fused) {
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
  }
  run_groups(pl, a, workspace, {isa_base::up_transform_weight, isa_base::up_run_task},
             {isa_avx512::up_transform_weight, isa_avx512::up_run_task});
}

}  // namespace gpen::cpu::winograd_detail
