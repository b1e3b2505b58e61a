// Session 24: the fused form's weight transform alone (transform_weight_panels, 2 panels a call, one
// channel a call as fused_task_m makes it), best of 15 timings. Usage: ./a.out C Co [l1]; with l1
// every call writes the same 36 x 2 lines, so the destination stays in L1. Built by hand:
//   g++ -std=c++20 -O3 -mavx2 -mfma -mavx512f -mavx512bw -mavx512dq -mavx512vl -DGPEN_ISA_AVX512=1 -I. weight_transform_bench.cpp
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>
#include "kernels/cpu/isa_ns.h"
#include "kernels/cpu/winograd_isa.h"
using namespace gpen::cpu::winograd_detail;
namespace W = gpen::cpu::winograd_detail::isa_avx512;
static constexpr float G[6][3] = {{1.0f / 4, 0, 0}, {-1.0f / 6, -1.0f / 6, -1.0f / 6}, {-1.0f / 6, 1.0f / 6, -1.0f / 6},
                                  {1.0f / 24, 1.0f / 12, 1.0f / 6}, {1.0f / 24, -1.0f / 12, 1.0f / 6}, {0, 0, 1}};
int main(int argc, char** argv) {
  int64_t C = atoi(argv[1]), Co = atoi(argv[2]);
  const bool l1 = argc > 3 && std::string(argv[3]) == "l1";
  WinoPlan pl; pl.C = C; pl.Co = Co;
  std::vector<float> w(9 * C * Co, 0.5f);
  WinoArgs a; a.w = w.data(); a.ws0 = 3 * C * Co; a.ws1 = C * Co; a.ws2 = Co; a.ws3 = 1;
  const int64_t kc = 64, rows = kc + 1, ust = 36 * rows * 16;
  std::vector<float> dst(2 * ust + 64);
  double best = 1e9;
  const int IT = C * Co < 100000 ? 400 : 4;
  for (int rep = 0; rep < 15; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    for (int it = 0; it < IT; ++it)
    for (int64_t o0 = 0; o0 < Co; o0 += 32)
      for (int64_t k0 = 0; k0 < C; k0 += kc)
        for (int64_t c = k0; c < k0 + kc; ++c)
          if (l1)
            W::transform_weight_panels(pl, a, G, o0 / 16, 2, c, c + 1, dst.data(), 1, c, 36 * 16);
          else
            W::transform_weight_panels(pl, a, G, o0 / 16, 2, c, c + 1, dst.data(), rows, k0, ust);
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / IT;
    best = std::min(best, dt);
  }
  double n = double(C) * Co / 32;  // (c, panel pair) calls
  printf("C %ld Co %ld: %.3f ms, %.1f ns per (c, panel pair) = %.2f ns per zmm out\n", C, Co, best * 1e3, best * 1e9 / n, best * 1e9 / n / 72);
  return dst[5] == 1234.f;
}
