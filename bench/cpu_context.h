#pragma once
// The CPU microbenchmarks' context lines (Google Benchmark's header): the ISA path in use, its
// FMA flops per cycle and core, the FMA peak measured on the benchmark's threads (GFLOP/s counters
// divide by it for a fraction of peak: the clock /proc/cpuinfo reports is often the base clock,
// kernels/cpu/fma_peak.h), and the 3x3 conv mode (GPEN_CPU_CONV: the FLOP counters count the
// direct conv's FLOPs, so a Winograd conv shows its effective rate).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

#include "kernels/cpu/fma_peak.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/winograd.h"

namespace gpen::bench {

inline void add_cpu_context() {
  const cpu::Isa isa = cpu::cpu_isa();
  const int threads = cpu::num_threads();
  char peak[64];
  std::snprintf(peak, sizeof peak, "%.0f GFLOP/s on %d threads", cpu::measured_fma_peak_gflops(threads), threads);
  benchmark::AddCustomContext("cpu_isa", cpu::isa_name(isa));
  benchmark::AddCustomContext("peak_flops_per_cycle_per_core", std::to_string(cpu::isa_flops_per_cycle(isa)));
  benchmark::AddCustomContext("measured_fma_peak", peak);
  benchmark::AddCustomContext("cpu_conv", cpu::winograd_detail::conv_mode_name());
}

}  // namespace gpen::bench
