#pragma once
// The FMA peak of the CPU path in use, measured: the profile's fraction of peak
// (apps/bench_profile.cpp) divides by what the cores actually sustain. The clock /proc/cpuinfo
// reports is often the base clock, well below what the cores run at (a KVM Xeon reported 2600 MHz
// and sustained 3.85 GHz of FMAs on both cores), so a peak computed from it overstates every
// op's share of the machine.
#include <cstdint>

namespace gpen::cpu {

// GFLOP/s of `threads` threads each running independent FMA chains on the ISA's vectors (a
// multiply-add counted as 2), the best of three passes of about 4 ms after one to warm up; 0
// where it cannot tell.
double measured_fma_peak_gflops(int threads);

// The per-ISA halves: `iters` rounds of 12 vector FMAs on one thread; returns a value to keep.
namespace isa_base {
double fma_chains(int64_t iters);
}
namespace isa_avx512 {
double fma_chains(int64_t iters);
}

}  // namespace gpen::cpu
