// The fused form's weight transform alone (transform_weight_panels, F(4x4, 3x3), two panels per
// call, one K block of KC channels into a 36 x (KC + 1) x 16 slice per panel), as fused_task_m
// calls it, one thread, best of 15: the weight in HWIO (each tap row Co floats apart per channel) or
// panel-major (the chunk's 32 columns contiguous per tap and channel), and hot (the same slice again,
// in L1/L2), cold (a fresh chunk each call, walking a weight much larger than L3) or L3 (the chunks of
// one weight in turn, as the fused form's tasks take them: each row's other chunks from L3).
// Usage: wt_probe C CO KC. Build against the tree:
// g++ -O3 -std=c++20 -DGPEN_ISA_AVX512=1 -mavx2 -mfma -mavx512f -mavx512bw -mavx512dq -mavx512vl -I. wt_probe.cpp
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/cpu/winograd_isa.h"

using namespace gpen::cpu::winograd_detail;

// winograd_kernel.cpp's F(4x4, 3x3) filter transform.
constexpr float G4[6][3] = {{1.0f / 4, 0, 0},
                            {-1.0f / 6, -1.0f / 6, -1.0f / 6},
                            {-1.0f / 6, 1.0f / 6, -1.0f / 6},
                            {1.0f / 24, 1.0f / 12, 1.0f / 6},
                            {1.0f / 24, -1.0f / 12, 1.0f / 6},
                            {0, 0, 1}};

int main(int argc, char** argv) {
  if (argc < 4) return std::fprintf(stderr, "usage: wt_probe C CO KC\n"), 2;
  const int64_t C = std::atoi(argv[1]), Co = std::atoi(argv[2]), kc = std::atoi(argv[3]);
  const int64_t copies = 256LL * 1024 * 1024 / (9 * C * Co * 4) + 1;  // > 256 MiB of weights: cold
  std::vector<float> W(copies * 9 * C * Co, 0.01f), P(copies * 9 * C * Co, 0.01f);
  const int64_t rows = kc + 1, ust = 36 * rows * 16;
  std::vector<float> dst(2 * ust);
  WinoPlan pl;
  pl.C = C, pl.Co = Co, pl.m = 4, pl.n = 6, pl.nxi = 36;
  for (int l1 = 0; l1 < 3; ++l1)
  for (int layout = 0; layout < 2; ++layout)
    for (int cold = 0; cold < 3; ++cold) {
      double best = 1e30;
      for (int rep = 0; rep < 15; ++rep) {
        const int64_t calls = 64;
        const auto t = std::chrono::steady_clock::now();
        for (int64_t it = 0; it < calls; ++it) {
          const int64_t copy = cold == 1 ? (rep * calls + it) % copies : 0;
          const int64_t chunk = cold ? it % (Co / 32) : 0;
          WinoArgs a;
          if (layout == 0) {
            a.w = W.data() + copy * 9 * C * Co;
            a.ws0 = 3 * C * Co, a.ws1 = C * Co, a.ws2 = Co, a.ws3 = 1;
          } else {
            a.w = P.data() + copy * 9 * C * Co + chunk * 9 * C * 32 - chunk * 32;
            a.ws0 = 3 * C * 32, a.ws1 = C * 32, a.ws2 = 32, a.ws3 = 1;
          }
          for (int64_t c = 0; c < kc; ++c)
            if (l1 == 2)  // channel-major: [c][panel][xi][16], one sequential stream of 72 lines per channel
              isa_avx512::transform_weight_panels(pl, a, G4, chunk * 2, 2, c, c + 1, dst.data() + c * 72 * 16, 1, c, 36 * 16);
            else
              isa_avx512::transform_weight_panels(pl, a, G4, chunk * 2, 2, c, c + 1, dst.data(), rows, l1 ? c : 0, ust);
        }
        const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t).count();
        best = std::min(best, ns / (calls * kc));
      }
      std::printf("dst %s, %s %s: %.1f ns per channel (2 panels: 18 lines read, 72 written)\n",
                  l1 == 2 ? "channel-major slice (L2)" : l1 ? "in L1 (one channel's rows)" : "the K block's slice (L2)", layout ? "panel-major" : "HWIO       ", cold == 2 ? "L3  " : cold ? "cold" : "hot ", best);
    }
}
