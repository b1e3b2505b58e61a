// The fused form of the Winograd conv for small images (overview: winograd.h), the ISA-independent
// half: its plan and its parallel loop.
//
// On a 32x32 image F(4x4, 3x3) has 64 tiles. The grouped form (winograd.cpp) writes the whole
// transformed weight G W G^T (36 C Co floats: 19 MB for GPEN-256's 512 -> 256 layer, four times
// the weight) to memory once per call, reads it back once per tile block, and transforms the
// input again for every group: at 1 thread the weight transform, the input transforms and the
// L3-bound GEMMs took 20 %, 17 % and 57 % of the op (perf). Here every tile is one block: the
// input is transformed once into a shared buffer (36 x tiles x C, the size of the direct path's
// packed weight or less), and each task (a chunk of output channels) transforms its slice of the
// weight one K block at a time into its own L2-sized buffer and runs the 36 GEMMs on it at once,
// so no transformed weight ever goes to memory and each is made exactly once per call.
#include <omp.h>

#include <algorithm>

#include "engine/core/error.h"

#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/winograd.h"

#ifndef GPEN_HAVE_AVX512_KERNELS
#define GPEN_HAVE_AVX512_KERNELS 0
#endif

namespace gpen::cpu::winograd_detail {

namespace {
constexpr int64_t kFusedKc = 128;  // input channels per weight slice: 36 x 129 x 32 floats = 0.6 MB
// From kFusedDeepMinTiles tiles, K blocks of kFusedKcDeep (a 1.2 MB slice) where the workspace
// then stays within the direct path's packed weight of the layer (9 C Co floats, the bound the
// fused form keeps): each point GEMM runs twice as deep per pass over the tiles' accumulators.
// On a 2-core Xeon (bench_cpu_gpen256): GPEN-512's 32x32 layer (1024 -> 512) 14.1-14.4
// -> 12.0-12.8 ms. GPEN-256's (512 -> 256) ran 3.19-3.28 -> 3.00-3.21 ms too, but its workspace
// would pass that bound and the graph's (7.1 -> 8.0 MB), so it keeps kFusedKc; the 16x16 layer
// (16 tiles) ran slower (1.07 -> 1.16 ms). 16-column chunks to keep the slice at 0.6 MB: 1.5x slower.
constexpr int64_t kFusedKcDeep = 256;
constexpr int64_t kFusedDeepMinTiles = 64;
constexpr int64_t kFusedCc = 32;   // output channels per task

WinoPlan fused_plan(int m, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Co, int threads, int64_t kc_max) {
  WinoPlan pl;
  if (m != 2 && m != 4) return pl;
  pl.m = m, pl.n = m + 2, pl.nxi = pl.n * pl.n;
  pl.N = N, pl.H = H, pl.W = W, pl.C = C, pl.Co = Co;
  pl.th = cdiv(H, m), pl.tw = cdiv(W, m), pl.ntiles = N * pl.th * pl.tw;
  if (pl.ntiles > kFusedMaxTiles) return pl;
  pl.fused = true;
  pl.nblock = 1;
  pl.T = round_up(pl.ntiles, 6);
  // Rows of the transformed input at a multiple of 1 KB would share L1 sets (see modconv_plan.cpp).
  pl.kcs = round_up(C, 16);
  if (pl.kcs % 64 == 0) pl.kcs += 16;
  pl.nkb = cdiv(C, kc_max);
  pl.kc = round_up(cdiv(C, pl.nkb), 16);
  pl.nkb = cdiv(C, pl.kc);
  // Enough chunks for every thread, in whole 16-column panels.
  pl.cc = std::min(round_up(Co, 16), kFusedCc);
  while (cdiv(Co, pl.cc) < 2 * std::max(1, threads) && pl.cc > 32) pl.cc = round_up(pl.cc / 2, 16);
  pl.group_co = pl.Co, pl.ngroup = 1;
  pl.v_floats = round_up(pl.nxi * pl.T * pl.kcs, 16);
  int64_t off = 0;
  auto take = [&](int64_t floats) {
    const int64_t o = off;
    off += round_up(floats, 16);
    return o;
  };
  pl.ust = pl.nxi * (pl.kc + 1) * 16;  // a spare row per point (winograd_kernel.cpp, fused_gemms)
  pl.off_v = take(pl.cc / 16 * pl.ust);  // the weight slice
  pl.off_m = take(pl.nxi * pl.T * pl.cc);
  pl.off_sv = take(C);
  pl.off_b2v = take(C);
  pl.off_gs2 = take(C);
  pl.off_dv = take(pl.cc + 16);
  pl.off_bv = take(pl.cc + 16);
  pl.off_tmp = take(16);
  pl.per_thread = off;
  return pl;
}
}  // namespace

WinoPlan make_wino_fused_plan(int m, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Co, int threads) {
  const WinoPlan pl = fused_plan(m, N, H, W, C, Co, threads, kFusedKc);
  if (!pl.fused || pl.ntiles < kFusedDeepMinTiles || C <= kFusedKc) return pl;
  const WinoPlan deep = fused_plan(m, N, H, W, C, Co, threads, kFusedKcDeep);
  const int64_t floats = deep.v_floats + std::max(1, threads) * deep.per_thread;
  return floats <= 9 * C * round_up(Co, 16) ? deep : pl;
}

void run_fused(const WinoPlan& pl, const WinoArgs& a, float* workspace) {
  const int nt_req = std::max(1, num_threads());
  float* const v_all = workspace;
  float* const thread_base = workspace + pl.v_floats;
  const bool wide = GPEN_HAVE_AVX512_KERNELS && cpu_isa() == Isa::avx512;
  auto input = wide ? isa_avx512::fused_input : isa_base::fused_input;
  auto task = wide ? isa_avx512::fused_task : isa_base::fused_task;
  constexpr int64_t kTilePiece = 6;  // tiles per input-transform piece
  const int64_t npiece = cdiv(pl.T, kTilePiece), nchunk = cdiv(pl.Co, pl.cc);
#pragma omp parallel num_threads(nt_req)
  {
    float* ws = thread_base + static_cast<int64_t>(omp_get_thread_num()) * pl.per_thread;
#pragma omp for schedule(static)
    for (int64_t p = 0; p < npiece; ++p) input(pl, a, p * kTilePiece, std::min(pl.T, (p + 1) * kTilePiece), v_all, ws);
    // implicit barrier: the transformed input is whole before any task reads it
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < nchunk; ++t) {
      const int64_t o0 = t * pl.cc;
      task(pl, a, o0, std::min(pl.cc, pl.Co - o0), v_all, ws);
    }
  }
}

}  // namespace gpen::cpu::winograd_detail
