#pragma once
// The inner loop of upfirdn2d (kernels/cpu/upfirdn2d.cpp), compiled once per ISA
// (upfirdn2d_kernel.cpp, isa_ns.h): a weighted sum of nt unit-stride rows,
//   dst[i] = (accumulate ? dst[i] : 0) + sum_t w[t] * src[t][i]   for i < len,
// the taps summed in order t = 0, 1, ... for every element on both paths (the same bits).
// Both passes of the separable blur and the direct path's pixels end up here; they are
// memory-bound, so the wider vectors mostly buy fewer instructions per byte.
#include <cstdint>

namespace gpen::cpu::upfirdn2d_detail {

// bias_act_rows: npix pixels of C channels in place, y = act(y * sc[c] + b[c]) with act(v) =
// v * (v < 0 ? gneg : gpos), sc or b null for 1 or 0: upfirdn2d_epilogue's arithmetic (same bits).
#define GPEN_UPFIRDN_ISA_DECLS                                                                                  \
  void weighted_sum(float* dst, const float* const* src, const float* w, int nt, int64_t len, bool accumulate); \
  void bias_act_rows(float* y, const float* sc, const float* b, int64_t C, int64_t npix, float gpos, float gneg);
namespace isa_base {
GPEN_UPFIRDN_ISA_DECLS
}
namespace isa_avx512 {
GPEN_UPFIRDN_ISA_DECLS
}
#undef GPEN_UPFIRDN_ISA_DECLS

}  // namespace gpen::cpu::upfirdn2d_detail
