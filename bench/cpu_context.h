#pragma once
// The CPU microbenchmarks' context lines (Google Benchmark's header): the ISA path in use, its
// FMA flops per cycle and core, the FMA peak measured on the benchmark's threads (GFLOP/s counters
// divide by it for a fraction of peak: the clock /proc/cpuinfo reports is often the base clock,
// kernels/cpu/fma_peak.h), and the 3x3 conv mode (GPEN_CPU_CONV: the FLOP counters count the
// direct conv's FLOPs, so a Winograd conv shows its effective rate).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

#include "engine/runtime/env_options.h"
#include "kernels/cpu/fma_peak.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"

namespace gpen::bench {

// Also applies the environment's options (engine/runtime/env_options.h: GPEN_CPU_ISA among them);
// the benchmarks pass cpu_options_from_env() to the kernels they run on the rule's path.
inline void add_cpu_context() {
  const cpu::CpuOptions& o = cpu_options_from_env();
  const cpu::Isa isa = cpu::cpu_isa();
  const int threads = cpu::num_threads();
  char peak[64];
  std::snprintf(peak, sizeof peak, "%.0f GFLOP/s on %d threads", cpu::measured_fma_peak_gflops(threads), threads);
  benchmark::AddCustomContext("cpu_isa", cpu::isa_name(isa));
  benchmark::AddCustomContext("peak_flops_per_cycle_per_core", std::to_string(cpu::isa_flops_per_cycle(isa)));
  benchmark::AddCustomContext("measured_fma_peak", peak);
  benchmark::AddCustomContext("cpu_conv", cpu::conv_mode_name(o.conv));
}

// A microbenchmark's main after its registrations: the context lines, then Google Benchmark's
// run over the command line (an unrecognised argument: exit status 1).
inline int run_benchmarks(int argc, char** argv) {
  add_cpu_context();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// The environment's options with the direct paths (GPEN_CPU_CONV=direct): the baseline of the
// benchmarks that call a Winograd form by name.
inline const cpu::CpuOptions& direct_cpu_options() {
  static const cpu::CpuOptions o = [] {
    cpu::CpuOptions d = cpu_options_from_env();
    d.conv = cpu::ConvMode::direct;
    return d;
  }();
  return o;
}

}  // namespace gpen::bench
