#pragma once
// Eight floats as one value (GCC/Clang vector extension): one AVX register where the build has
// AVX (the project builds with -mavx2 -mfma), a pair of SSE registers otherwise, so the same
// source is correct everywhere and fast where it matters. Shared by the CPU kernels that keep
// eight-lane accumulators in registers (the conv2d paths, upfirdn2d).
#include <cstring>

namespace gpen::cpu::detail {

typedef float v8f __attribute__((vector_size(32)));

inline v8f load8(const float* p) {
  v8f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store8(float* p, v8f v) { std::memcpy(p, &v, sizeof v); }
inline v8f splat8(float s) { return v8f{s, s, s, s, s, s, s, s}; }

}  // namespace gpen::cpu::detail
