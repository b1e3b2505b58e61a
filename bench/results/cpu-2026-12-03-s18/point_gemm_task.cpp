// One Winograd F(4x4) task's 36 point GEMMs as run_task runs them (T = 30 tiles: two 12-row tiles and
// one 6-row tile per panel pair, output chunk 128), against the engine's AVX-512 micro-kernels;
// best of 25 repetitions, one thread. Args: KC C UGROUPS MODE PAD SAMEA SKIP6 (MODE: unused here; in
// session 18 it switched on a next-panel-pair prefetch that was tried and not kept; SAMEA 1: every
// point reads one A, 2: and writes one C; SKIP6 1: no 6-row tile). Build against build/:
// g++ -O2 -std=c++20 -I. point_gemm_task.cpp build/CMakeFiles/gpen_isa_avx512.dir/kernels/cpu/modconv_kernel.cpp.o
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cstdint>
#include "kernels/cpu/modconv_internal.h"
using namespace gpen::cpu::modconv_detail;
int main(int argc, char** argv) {
  const int64_t T = 30, kc = atoi(argv[1]), kcs = kc + 16, cc = 128, nxi = 36, C = atoi(argv[2]);
  const int64_t ugroups = atoi(argv[3]);  // distinct U copies cycled (1: U hot in L2/L3)
  const int mode = atoi(argv[4]);  // 0 as engine, 1 prefetch next pair
  const int64_t pad = argc > 5 ? atoi(argv[5]) : 0; const int sameA = argc > 6 ? atoi(argv[6]) : 0; const int skip6 = argc > 7 ? atoi(argv[7]) : 0; const int64_t pstride = nxi * C * 16 + pad;
  std::vector<float> V(nxi * T * kcs, 0.5f), M(nxi * T * cc, 0.f), U(ugroups * (cc / 16) * pstride, 0.25f);
  long ntask = 40; double best = 0;
  for (int rep = 0; rep < 25; ++rep) {
  auto t = std::chrono::steady_clock::now();
  for (long it = 0; it < ntask; ++it) {
    const float* u = U.data() + (it % ugroups) * (cc / 16) * pstride;
    for (int xi = 0; xi < nxi; ++xi) {
      const float* b = u + xi * C * 16;
      const float* a = V.data() + (sameA ? 0 : xi * T * kcs);
      float* c = M.data() + (sameA > 1 ? 0 : xi * T * cc);
      for (int64_t j = 0; j < cc; j += 32) {
        const float* bp = b + (j / 16) * pstride;
        isa_avx512::micro_kernel12(a, kcs, kc, bp, pstride, c + j, cc, true);
        isa_avx512::micro_kernel12(a + 12 * kcs, kcs, kc, bp, pstride, c + j + 12 * cc, cc, true);
        KBlock kb; kb.nseg = 1; kb.len = kc; kb.a_off[0] = 0; kb.seg_len[0] = kc;
        int64_t base[6]; for (int r = 0; r < 6; ++r) base[r] = (24 + r) * kcs;
        const float* bs[1] = {bp};
        if (!skip6) isa_avx512::micro_kernel(kb, a, base, bs, 16, pstride, 0, c + j + 24 * cc, cc, true);
      }
    }
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  double g = ntask * nxi * 2.0 * (skip6 ? 24 : T) * kc * cc / s / 1e9; if (g > best) best = g; }
  printf("kc %ld C %ld ugroups %ld mode %d: %.1f GFLOP/s\n", kc, C, ugroups, mode, best);
}
