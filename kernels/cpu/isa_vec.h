#pragma once
// The vector type and its loads for the sources compiled once per ISA (CMakeLists.txt:
// GPEN_ISA_SOURCES): L floats wide, 16 in the AVX-512 copy and 8 in the baseline (x86-64: AVX2;
// aarch64: two 128-bit NEON registers, which GCC's vector extension pairs for every operation;
// any other CPU: what GCC makes of the vector extension there). Everything has
// internal linkage (an unnamed namespace inside the ISA's own one, isa_ns.h), so each copy keeps
// its own and no weak symbol crosses the ISAs (scripts/check_isa_symbols.py).
#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

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
// weakly ordered: end them with stream_fence() before another thread reads what they wrote.
// Elsewhere than x86-64 an ordinary store (the caller's alignment still holds).
inline void vstream(float* p, vf v) {
#if GPEN_ISA_AVX512
  __m512 r;
  std::memcpy(&r, &v, sizeof r);
  _mm512_stream_ps(p, r);
#elif defined(__AVX__)
  __m256 r;
  std::memcpy(&r, &v, sizeof r);
  _mm256_stream_ps(p, r);
#else
  vst(p, v);
#endif
}
inline void stream_fence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}
// a * b + c rounded once, in every lane: the FMA instruction of the path (x86-64: vfmadd;
// aarch64: fmla on each 128-bit half), else the C library's fmaf lane by lane.
inline vf vfmadd(vf a, vf b, vf c) {
#if GPEN_ISA_AVX512
  return _mm512_fmadd_ps(a, b, c);
#elif defined(__FMA__) && defined(__AVX__)
  return _mm256_fmadd_ps(a, b, c);
#elif defined(__aarch64__)
  float32x4_t a2[L / 4], b2[L / 4], c2[L / 4];
  std::memcpy(a2, &a, sizeof a), std::memcpy(b2, &b, sizeof b), std::memcpy(c2, &c, sizeof c);
  for (int h = 0; h < L / 4; ++h) c2[h] = vfmaq_f32(c2[h], a2[h], b2[h]);
  std::memcpy(&c, c2, sizeof c);
  return c;
#else
  for (int i = 0; i < L; ++i) c[i] = __builtin_fmaf(a[i], b[i], c[i]);
  return c;
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
