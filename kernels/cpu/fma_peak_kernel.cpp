// The per-ISA half of the measured FMA peak (fma_peak.h): one thread's chains of independent
// fused multiply-adds on the ISA's vectors, compiled once per ISA (isa_ns.h).
#include <cstdint>
#include <cstring>

#include "kernels/cpu/fma_peak.h"
#include "kernels/cpu/isa_vec.h"

namespace gpen::cpu::GPEN_ISA_NS {

using simd::L;
using simd::splat;
using simd::vf;

#if !defined(__x86_64__)
namespace {
// Keeps a chain in registers, as the x86 asm below: aarch64 names a vector register "w" and holds
// the 8-float vector in two; elsewhere through memory (the scalar count there is rough anyway).
inline void keep(vf& v) {
#if defined(__aarch64__)
  float32x4_t h[2];  // arm_neon.h, through isa_vec.h
  std::memcpy(h, &v, sizeof v);
  __asm__ volatile("" : "+w"(h[0]), "+w"(h[1]));
  std::memcpy(&v, h, sizeof v);
#else
  __asm__ volatile("" : "+m"(v));
#endif
}
}  // namespace
#endif

double fma_chains(int64_t iters) {
  // Twelve independent chains cover the FMA latency (4 cycles) on two ports with room to spare;
  // the empty asm keeps each chain in a register and the loop from being folded.
  const vf b = splat(0.999999f), c = splat(1e-7f);
  vf a0 = splat(0.1f), a1 = splat(0.2f), a2 = splat(0.3f), a3 = splat(0.4f), a4 = splat(0.5f), a5 = splat(0.6f);
  vf a6 = splat(0.7f), a7 = splat(0.8f), a8 = splat(0.9f), a9 = splat(1.0f), a10 = splat(1.1f), a11 = splat(1.2f);
  for (int64_t k = 0; k < iters; ++k) {
    a0 = a0 * b + c, a1 = a1 * b + c, a2 = a2 * b + c, a3 = a3 * b + c, a4 = a4 * b + c, a5 = a5 * b + c;
    a6 = a6 * b + c, a7 = a7 * b + c, a8 = a8 * b + c, a9 = a9 * b + c, a10 = a10 * b + c, a11 = a11 * b + c;
#if defined(__x86_64__)
    __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5));
    __asm__ volatile("" : "+x"(a6), "+x"(a7), "+x"(a8), "+x"(a9), "+x"(a10), "+x"(a11));
#else
    keep(a0), keep(a1), keep(a2), keep(a3), keep(a4), keep(a5);
    keep(a6), keep(a7), keep(a8), keep(a9), keep(a10), keep(a11);
#endif
  }
  const vf s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + ((a8 + a9) + (a10 + a11));
  double sum = 0;
  for (int i = 0; i < L; ++i) sum += s[i];
  return sum;
}

}  // namespace gpen::cpu::GPEN_ISA_NS
