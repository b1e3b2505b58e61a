#pragma once
// Internal to GroupNorm (kernels/cpu/norm.cpp): its two sweeps over the map, compiled once per ISA
// (CMakeLists.txt: GPEN_ISA_SOURCES, isa_ns.h; kernels/cpu/norm_kernel.cpp). Both copies do the
// same arithmetic per element in the same order, only over 8 or 16 lanes, so both give the same
// bits, and the same as exp_simd.h's scalar SiLU.
#include <cstdint>

namespace gpen::cpu::detail {

// A slice of k channels (unit channel stride) at H x W positions of strides hs and ws (floats).
struct GnSlice {
  const float* x = nullptr;
  int64_t H = 0, W = 0, hs = 0, ws = 0, k = 0;
};

// gn_sums: per channel i < k of the slice, over the positions in order, the sums of d and d^2 in
// double, d = x - shift[i], shift[i] the channel's value at the first position (written here).
// gn_apply_row: y = float((x - centre[i]) * scale[i]) * mul[i] + add[i] for the k channels of n
// positions of strides xs and ys, then SiLU when silu (x / (1 + exp_simd(-x))).
#define GPEN_NORM_ISA_DECLS                                                                                  \
  void gn_sums(const GnSlice& s, double* shift, double* s1, double* s2);                                    \
  void gn_apply_row(float* y, int64_t ys, const float* x, int64_t xs, int64_t n, int64_t k, const double* centre, \
                    const double* scale, const float* mul, const float* add, bool silu);
namespace isa_base {
GPEN_NORM_ISA_DECLS
}
namespace isa_avx512 {
GPEN_NORM_ISA_DECLS
}
#undef GPEN_NORM_ISA_DECLS

}  // namespace gpen::cpu::detail
