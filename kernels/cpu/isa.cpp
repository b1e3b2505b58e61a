#include "kernels/cpu/isa.h"

#include <cstdlib>
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

Isa choose() {
  const char* env = std::getenv("GPEN_CPU_ISA");
  const std::string want = env ? env : "";
  if (want.empty()) return cpu_has_avx512() ? Isa::avx512 : Isa::baseline;
  if (want == "avx2" || want == "baseline") return Isa::baseline;
  if (want == "avx512") {
    GPEN_CHECK(cpu_has_avx512(), "GPEN_CPU_ISA=avx512, but " +
                                     std::string(GPEN_HAVE_AVX512_KERNELS ? "this CPU lacks AVX-512 F/BW/DQ/VL"
                                                                          : "this build has no AVX-512 kernels"));
    return Isa::avx512;
  }
  throw Error("GPEN_CPU_ISA='" + want + "' is not a CPU path: use avx2 or avx512");
}

}  // namespace

Isa cpu_isa() {
  static const Isa isa = choose();
  return isa;
}

const char* isa_name(Isa isa) {
  if (isa == Isa::avx512) return "avx512";
#if defined(__AVX2__)
  return "avx2";
#else
  return "generic";
#endif
}

int isa_flops_per_cycle(Isa isa) { return isa == Isa::avx512 ? 64 : 32; }

}  // namespace gpen::cpu
