// The fused form of the polyphase Winograd transposed modconv for small images (overview:
// winograd_up.h), the ISA-independent half: its plan and its parallel loop.
//
// GPEN-256's 16x16 and 32x32 up convs (512 -> 256 and 512 -> 128 channels) ran direct: the
// grouped form (winograd_up.cpp) covers H + 1 positions per axis with tiles of 4, so 25 and 81
// tiles where 16 and 64 would do, and makes the transformed weight (81 / 9 = 9x the weight) in
// groups of the direct path's packed weight, transforming the input again for every group.
// Here the tiles are exact, the rim is six small GEMMs, and every transformed weight element is
// made in L2 once per call and thread (each thread of the point split makes its chunks' whole
// slices) and serves every tile.
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
  if (pl.ntiles > kFusedMaxTiles) return pl;
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
  const int64_t v_size = round_up(pl.nxi * odd_lines(pl.T * pl.kcs), 16);
  pl.private_v = pl.ntiles < kUpFusedSplitMinTiles;
  pl.off_mall = pl.private_v ? 0 : v_size;
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
  if (pl.private_v) pl.off_vt = take(v_size);
  pl.per_thread = off;
  return pl;
}

namespace {

// Thread tid's points of nth: the 36 weight points' groups of points (one point, four along one axis
// or the sixteen odd-odd ones, the rim with those as it reads their pixels) to the least loaded
// thread, largest first. Each thread then reads only the v and accumulators it wrote: on a 2-core
// Xeon (2 MiB L2, a mesh between cores) the chunk split, where every thread's GEMMs read the whole
// v half of which the other core had written, ran 1.5x from one thread to two.
UpPoints thread_points(const WinoPlan& pl, int nth, int tid) {
  struct Group {
    int qy, qx;
    double cost;
  };
  Group g[36];
  int ng = 0;
  const double rim = 3.0 * static_cast<double>(pl.rw + pl.rh) / static_cast<double>(pl.T);
  for (int qy = 0; qy < 6; ++qy)
    for (int qx = 0; qx < 6; ++qx) g[ng++] = {qy, qx, (qy < 5 ? 1.0 : 4.0) * (qx < 5 ? 1.0 : 4.0) + (qy == 5 && qx == 5 ? rim : 0)};
  std::stable_sort(g, g + ng, [](const Group& x, const Group& y) { return x.cost > y.cost; });
  double load[kUpFusedSplitMax] = {};
  UpPoints own;
  for (int i = 0; i < ng; ++i) {
    const int t = static_cast<int>(std::min_element(load, load + nth) - load);
    load[t] += g[i].cost;
    if (t != tid) continue;
    own.rim |= g[i].qy == 5 && g[i].qx == 5;
    for (int py = g[i].qy; py < (g[i].qy < 5 ? g[i].qy + 1 : 9); ++py)
      for (int px = g[i].qx; px < (g[i].qx < 5 ? g[i].qx + 1 : 9); ++px) {
        const int xi = py * 9 + px;
        own.bits[xi >> 6] |= uint64_t{1} << (xi & 63);
      }
  }
  return own;
}

}  // namespace

void run_up_fused(const WinoPlan& pl, const WinoArgs& a, float* workspace) {
  const int nt_req = std::max(1, num_threads());
  float* const v = workspace;
  float* const mall = workspace + pl.off_mall;
  float* const thread_base = workspace + pl.v_floats;
  const bool wide = GPEN_HAVE_AVX512_KERNELS && cpu_isa() == Isa::avx512;
  auto input = wide ? isa_avx512::up_fused_input : isa_base::up_fused_input;
  auto task = wide ? isa_avx512::up_fused_task : isa_base::up_fused_task;
  auto output = wide ? isa_avx512::up_fused_output : isa_base::up_fused_output;
  const int64_t nchunk = cdiv(pl.Co, pl.cc);
  // Chunk t's output channels and accumulators, in K block kb, for the points own holds, from vb.
  auto chunk = [&](int64_t kb, int64_t t, const UpPoints& own, const float* vb, float* ws) {
    task(pl, a, kb, t * pl.cc, std::min(pl.cc, pl.Co - t * pl.cc), own, vb, mall + t * pl.mchunk, ws);
  };
  UpPoints all;
  all.bits[0] = all.bits[1] = ~uint64_t{0};
  all.rim = true;
#pragma omp parallel num_threads(nt_req)
  {
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
    float* ws = thread_base + static_cast<int64_t>(tid) * pl.per_thread;
    if (pl.private_v) {
      // Few tiles: every thread transforms them all into its own copy, then runs its chunks (the
      // input transform of few tiles costs less than the weight slices the point split repeats).
      float* const vt = ws + pl.off_vt;
      for (int64_t kb = 0; kb < pl.nkb; ++kb) {
        input(pl, a, kb, 0, pl.T, all, vt, ws);
        for (int64_t t = tid; t < nchunk; t += nth) chunk(kb, t, all, vt, ws);
      }
    } else if (nth <= kUpFusedSplitMax) {
      // Each thread its own points over every tile and chunk: no thread reads what another wrote
      // until the outputs, so no barrier per K block (each transforms every tile, storing its points).
      const UpPoints own = thread_points(pl, nth, tid);
      if (own.bits[0] | own.bits[1])
        for (int64_t kb = 0; kb < pl.nkb; ++kb) {
          input(pl, a, kb, 0, pl.T, own, v, ws);
          for (int64_t t = 0; t < nchunk; ++t) chunk(kb, t, own, v, ws);
        }
    } else {
      // Many threads: the tiles' transform in pieces, then the chunks, a barrier after each (the
      // transform once per tile rather than once per thread).
      const int64_t npiece = std::min<int64_t>(2 * nth, pl.T);
      for (int64_t kb = 0; kb < pl.nkb; ++kb) {
#pragma omp for schedule(static)
        for (int64_t p = 0; p < npiece; ++p) input(pl, a, kb, p * pl.T / npiece, (p + 1) * pl.T / npiece, all, v, ws);
#pragma omp for schedule(static)
        for (int64_t t = 0; t < nchunk; ++t) chunk(kb, t, all, v, ws);
      }
    }
#pragma omp barrier
#pragma omp for schedule(static)
    for (int64_t t = 0; t < nchunk; ++t) output(pl, a, t * pl.cc, std::min(pl.cc, pl.Co - t * pl.cc), mall + t * pl.mchunk, ws);
  }
}

}  // namespace gpen::cpu::winograd_detail
