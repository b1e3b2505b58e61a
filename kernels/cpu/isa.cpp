#include "kernels/cpu/isa.h"

#include <atomic>
#include <string>

#include "engine/core/error.h"

#ifndef GPEN_HAVE_AVX512_KERNELS
#define GPEN_HAVE_AVX512_KERNELS 0
#endif

namespace gpen::cpu {

bool cpu_has_avx512() {
#if GPEN_HAVE_AVX512_KERNELS && (defined(__x86_64__) || defined(__i386__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

namespace {

// -1: not chosen by use_isa (the widest the CPU has).
std::atomic<int> g_isa{-1};

}  // namespace

Isa cpu_isa() {
  static const Isa widest = cpu_has_avx512() ? Isa::avx512 : Isa::baseline;
  const int chosen = g_isa.load(std::memory_order_relaxed);
  return chosen < 0 ? widest : static_cast<Isa>(chosen);
}

void use_isa(Isa isa) {
  GPEN_CHECK(isa != Isa::avx512 || cpu_has_avx512(),
             "the AVX-512 kernels were asked for, but " +
                 std::string(GPEN_HAVE_AVX512_KERNELS ? "this CPU lacks AVX-512 F/BW/DQ/VL"
                                                      : "this build has no AVX-512 kernels"));
  g_isa.store(static_cast<int>(isa), std::memory_order_relaxed);
}

// The baseline path per target: what it is called and its FMA units' single-precision flops per
// cycle per core (2 FMA pipes x 2 flops x lanes). x86-64: AVX2 + FMA, 8 lanes. aarch64: ASIMD
// (NEON) with its FMA, part of every ARMv8-A core, 4 lanes per 128-bit pipe; the kernels' 8-float
// vectors take two. Any other CPU: the vector extension as GCC lowers it there, counted scalar.
#if defined(__AVX2__)
constexpr const char* kBaselineName = "avx2";
constexpr int kBaselineFlops = 32;
#elif defined(__aarch64__)
constexpr const char* kBaselineName = "neon";
constexpr int kBaselineFlops = 16;
#else
constexpr const char* kBaselineName = "generic";
constexpr int kBaselineFlops = 4;
#endif

const char* isa_name(Isa isa) { return isa == Isa::avx512 ? "avx512" : kBaselineName; }

int isa_flops_per_cycle(Isa isa) { return isa == Isa::avx512 ? 64 : kBaselineFlops; }

}  // namespace gpen::cpu
