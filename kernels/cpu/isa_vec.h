#pragma once
// The vector type and its loads for the sources compiled once per ISA (CMakeLists.txt:
// GPEN_ISA_SOURCES): L floats wide, 16 in the AVX-512 copy and 8 in the baseline. Everything has
// internal linkage (an unnamed namespace inside the ISA's own one, isa_ns.h), so each copy keeps
// its own and no weak symbol crosses the ISAs (scripts/check_isa_symbols.py).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/isa_ns.h"

namespace gpen::cpu::GPEN_ISA_NS::simd {
namespace {

#if GPEN_ISA_AVX512
constexpr int L = 16;
#else
constexpr int L = 8;
#endif
typedef float vf __attribute__((vector_size(L * sizeof(float))));

// Unaligned: the tensors are views with arbitrary offsets.
inline vf vld(const float* p) {
  vf v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void vst(float* p, vf v) { std::memcpy(p, &v, sizeof v); }
inline vf splat(float s) { return vf{} + s; }
// A streaming (non-temporal) store of one vector: p must be aligned to the vector. The stores are
// weakly ordered: end them with _mm_sfence() before another thread reads what they wrote.
inline void vstream(float* p, vf v) {
#if GPEN_ISA_AVX512
  __m512 r;
  std::memcpy(&r, &v, sizeof r);
  _mm512_stream_ps(p, r);
#else
  __m256 r;
  std::memcpy(&r, &v, sizeof r);
  _mm256_stream_ps(p, r);
#endif
}
inline bool vec_aligned(const float* p) { return reinterpret_cast<uintptr_t>(p) % sizeof(vf) == 0; }
inline int64_t lmin(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t imax(int64_t a, int64_t b) { return a < b ? b : a; }

// Vectors of any width W, for kernels that mix the ISA's width with narrower tails.
template <int W>
struct Vec {
  typedef float type __attribute__((vector_size(W * sizeof(float))));
};
template <int W>
inline typename Vec<W>::type vld(const float* p) {
  typename Vec<W>::type v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <int W>
inline void vst(float* p, typename Vec<W>::type v) {
  std::memcpy(p, &v, sizeof v);
}

}  // namespace
}  // namespace gpen::cpu::GPEN_ISA_NS::simd
