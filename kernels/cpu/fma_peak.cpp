// The measured FMA peak (fma_peak.h): the ISA-independent half, the timing.
#include "kernels/cpu/fma_peak.h"

#include <omp.h>

#include <algorithm>
#include <chrono>

#include "kernels/cpu/isa.h"

#ifndef GPEN_HAVE_AVX512_KERNELS
#define GPEN_HAVE_AVX512_KERNELS 0
#endif

namespace gpen::cpu {

double measured_fma_peak_gflops(int threads) {
  if (threads < 1) return 0;
  const bool wide = GPEN_HAVE_AVX512_KERNELS && cpu_isa() == Isa::avx512;
  auto chains = wide ? isa_avx512::fma_chains : isa_base::fma_chains;
  const int lanes = wide ? 16 : 8;
  // 2M rounds of 12 FMAs: about 4 ms a pass at 3 GHz and two ports (3.3 ms on the KVM Xeon), long
  // enough for the clock to settle and short beside a profile. The first pass warms the cores up
  // (and lifts AVX-512 licences) and is not counted.
  constexpr int64_t kIters = int64_t{2} << 20;
  double best = 0, sink = 0;
  for (int pass = 0; pass < 4; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += chains(kIters);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (pass > 0 && s > 0) best = std::max(best, static_cast<double>(threads) * kIters * 12 * lanes * 2 / s * 1e-9);
  }
  return sink == 1.2345 ? 0 : best;  // sink read so the loops are not dropped
}

}  // namespace gpen::cpu
