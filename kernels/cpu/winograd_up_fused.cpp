// The fused form of the polyphase Winograd transposed modconv for small images (overview:
// winograd_up.h), the ISA-independent half: its plan and its parallel loop.
//
// GPEN-256's 16x16 and 32x32 up convs (512 -> 256 and 512 -> 128 channels) ran direct: the
// grouped form (winograd_up.cpp) covers H + 1 positions per axis with tiles of 4, so 25 and 81
// tiles where 16 and 64 would do, and makes the transformed weight (81 / 9 = 9x the weight) in
// groups of the direct path's packed weight, transforming the input again for every group.
// Here the tiles are exact, the rim is six small GEMMs, and every transformed weight element is
// made once per call, in L2, and serves every tile.
#include <omp.h>

#include <algorithm>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/winograd_up.h"

#ifndef GPEN_HAVE_AVX512_KERNELS
#define GPEN_HAVE_AVX512_KERNELS 0
#endif

namespace gpen::cpu::winograd_detail {

WinoPlan make_wino_up_fused_plan(int64_t N, int64_t H, int64_t W, int64_t C, int64_t Co) {
  WinoPlan pl;
  if (N < 1 || H < 4 || W < 4 || H % 4 || W % 4 || C < 1 || Co < 1) return pl;
  pl.m = 4, pl.n = 5, pl.nxi = 81;
  pl.N = N, pl.H = H, pl.W = W, pl.C = C, pl.Co = Co;
  pl.th = H / 4, pl.tw = W / 4, pl.ntiles = N * pl.th * pl.tw;
  if (pl.ntiles > kFusedMaxTiles || !fused_enabled()) return pl;
  pl.fused = true;
  pl.nblock = 1;
  pl.T = round_up(pl.ntiles, 6);
  pl.nkb = cdiv(C, kUpFusedKc);
  pl.kc = round_up(cdiv(C, pl.nkb), 16);
  pl.nkb = cdiv(C, pl.kc);
  pl.kcs = pl.kc % 64 == 0 ? pl.kc + 16 : pl.kc;  // rows at a multiple of 1 KB would share L1 sets
  pl.cc = std::min(round_up(Co, 16), kUpFusedCc);
  pl.group_co = Co, pl.ngroup = 1;
  pl.rw = round_up(N * W, 6), pl.rh = round_up(N * H, 6);
  // Shared: the K block's transformed input, then every chunk's accumulators (81 points, the rims).
  pl.mchunk = round_up(pl.nxi * odd_lines(pl.T * pl.cc) + 3 * (pl.rw + pl.rh) * pl.cc, 16);
  pl.off_mall = round_up(pl.nxi * odd_lines(pl.T * pl.kcs), 16);
  pl.v_floats = pl.off_mall + cdiv(Co, pl.cc) * pl.mchunk;
  int64_t off = 0;
  auto take = [&](int64_t floats) {
    const int64_t o = off;
    off += round_up(floats, 16);
    return o;
  };
  pl.nwp = 36;  // distinct weight points (winograd_up_kernel.cpp)
  pl.ust = pl.nwp * (pl.kc + 1) * 16;
  pl.off_v = take(pl.cc / 16 * pl.ust);  // the weight slice
  pl.off_sv = take(C);
  pl.off_b2v = take(C);
  pl.off_gs2 = take(C);
  pl.off_tmp = take(16);
  pl.per_thread = off;
  return pl;
}

void run_up_fused(const WinoPlan& pl, const WinoArgs& a, float* workspace) {
  const int nt_req = std::max(1, num_threads());
  float* const v = workspace;
  float* const mall = workspace + pl.off_mall;
  float* const thread_base = workspace + pl.v_floats;
  const bool wide = GPEN_HAVE_AVX512_KERNELS && cpu_isa() == Isa::avx512;
  auto input = wide ? isa_avx512::up_fused_input : isa_base::up_fused_input;
  auto task = wide ? isa_avx512::up_fused_task : isa_base::up_fused_task;
  // Two equal pieces of the tiles per thread for the input transform: no thread waits for another's
  // extra piece at the barrier after it.
  const int64_t npiece = std::min<int64_t>(2 * nt_req, pl.T), nchunk = cdiv(pl.Co, pl.cc);
#pragma omp parallel num_threads(nt_req)
  {
    float* ws = thread_base + static_cast<int64_t>(omp_get_thread_num()) * pl.per_thread;
    for (int64_t kb = 0; kb < pl.nkb; ++kb) {
#pragma omp for schedule(static)
      for (int64_t p = 0; p < npiece; ++p) input(pl, a, kb, p * pl.T / npiece, (p + 1) * pl.T / npiece, v, ws);
      // implicit barrier: the K block's transformed input is whole before any task reads it
#pragma omp for schedule(static)
      for (int64_t t = 0; t < nchunk; ++t) {
        const int64_t o0 = t * pl.cc;
        task(pl, a, kb, o0, std::min(pl.cc, pl.Co - o0), v, mall + t * pl.mchunk, ws);
      }  // implicit barrier: no task still reads v when the next K block overwrites it
    }
  }
}

}  // namespace gpen::cpu::winograd_detail
