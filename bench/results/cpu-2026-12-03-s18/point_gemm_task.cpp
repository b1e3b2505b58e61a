// One Winograd F(4x4) task's 36 point GEMMs as run_task runs them (T = 30 tiles: two 12-row tiles and
// one 6-row tile per panel pair, output chunk 128, the transformed weight's panels pstride apart), on
// the engine's AVX-512 micro-kernels; best of 25 repetitions, one thread.
// Usage: point_gemm_task KC C [FIXED [SKIP6]]: K block KC of C input channels; FIXED 1: every point
// reads one A, 2: and accumulates into one C; SKIP6 1: no 6-row tile. Build against build/:
// g++ -O2 -std=c++20 -I. point_gemm_task.cpp build/CMakeFiles/gpen_isa_avx512.dir/kernels/cpu/modconv_kernel.cpp.o
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/cpu/modconv_internal.h"

using namespace gpen::cpu::modconv_detail;

int main(int argc, char** argv) {
  if (argc < 3) return std::fprintf(stderr, "usage: point_gemm_task KC C [FIXED [SKIP6]]\n"), 2;
  const int64_t T = 30, cc = 128, nxi = 36, kc = std::atoi(argv[1]), C = std::atoi(argv[2]), kcs = kc + 16;
  const int fixed = argc > 3 ? std::atoi(argv[3]) : 0, skip6 = argc > 4 ? std::atoi(argv[4]) : 0;
  const int64_t pstride = nxi * C * 16;
  std::vector<float> V(nxi * T * kcs, 0.5f), M(nxi * T * cc, 0.0f), U(cc / 16 * pstride, 0.25f);
  KBlock kb;
  kb.nseg = 1, kb.len = static_cast<int>(kc), kb.a_off[0] = 0, kb.seg_len[0] = kb.len;
  int64_t base6[6];
  for (int r = 0; r < 6; ++r) base6[r] = (24 + r) * kcs;
  const int64_t rows = skip6 ? 24 : T, ntask = 40;
  double best = 0;
  for (int rep = 0; rep < 25; ++rep) {
    const auto t = std::chrono::steady_clock::now();
    for (int64_t it = 0; it < ntask; ++it)
      for (int64_t xi = 0; xi < nxi; ++xi) {
        const float* a = V.data() + (fixed ? 0 : xi * T * kcs);
        float* c = M.data() + (fixed > 1 ? 0 : xi * T * cc);
        for (int64_t j = 0; j < cc; j += 32) {
          const float* bp = U.data() + xi * C * 16 + j / 16 * pstride;
          isa_avx512::micro_kernel12(a, kcs, kc, bp, pstride, c + j, cc, true);
          isa_avx512::micro_kernel12(a + 12 * kcs, kcs, kc, bp, pstride, c + j + 12 * cc, cc, true);
          const float* bs[1] = {bp};
          if (!skip6) isa_avx512::micro_kernel(kb, a, base6, bs, 16, pstride, 0, c + j + 24 * cc, cc, true);
        }
      }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    const double g = ntask * nxi * 2.0 * rows * kc * cc / s / 1e9;
    if (g > best) best = g;
  }
  std::printf("kc %ld C %ld fixed %d skip6 %d: %.1f GFLOP/s\n", static_cast<long>(kc), static_cast<long>(C), fixed,
              skip6, best);
}
