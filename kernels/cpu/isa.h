#pragma once
// The instruction set the hot CPU kernels run with, chosen once per process. The kernels that
// profit from wider vectors (the GEMM micro-kernels of modconv and conv2d) are compiled once per
// ISA from the same source, each copy in its own namespace (GPEN_ISA_NS, see isa_ns.h), and
// called through the entry points here; the rest of the library is built for the baseline
// (x86-64: AVX2 + FMA, so one binary runs on every x86-64 machine the project targets; aarch64:
// ARMv8-A's NEON and FMA, no flags; any other 64-bit CPU: portable C++, docs/cpus.md).
//
// Choice: the widest the CPU has (x86-64: cpuid via __builtin_cpu_supports: AVX-512 needs F, BW, DQ and
// VL), unless use_isa picked one (engine/runtime/env_options.cpp does for GPEN_CPU_ISA=avx2|avx512:
// tests run both paths on one machine; asking for avx512 on a CPU without it is an error, not a
// silent fallback).
namespace gpen::cpu {

enum class Isa { baseline, avx512 };

// The ISA in use.
Isa cpu_isa();
// Runs the kernels on `isa` from now on, for the whole process; throws gpen::Error where this
// CPU or build lacks it.
void use_isa(Isa isa);
// "avx512" or the baseline's name: "avx2" (x86-64), "neon" (aarch64), "generic" (any other CPU).
const char* isa_name(Isa isa);
// True when this build holds the AVX-512 kernels and the CPU runs them.
bool cpu_has_avx512();
// Single-precision flops per cycle per core of the path's FMA units (two FMA ports: 2 x 2 x
// lanes), for the profile's fraction of peak.
int isa_flops_per_cycle(Isa isa);

}  // namespace gpen::cpu
