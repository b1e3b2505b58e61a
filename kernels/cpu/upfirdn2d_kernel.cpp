// The per-ISA weighted row sum of upfirdn2d (overview: upfirdn2d_kernel.h). Nothing here calls
// an inline function of another header but the per-ISA ones of isa_vec.h (scripts/check_isa_symbols.py).
#include <cstring>

#include "kernels/cpu/isa_ns.h"
#include "kernels/cpu/isa_vec.h"
#include "kernels/cpu/upfirdn2d_kernel.h"

// The fused blur epilogue (upfirdn2d_act) must give the bits of the separate pass in every build:
// both spell y * scale + bias as a multiply and an add, never contracted into one FMA (whether
// GCC contracts depends on the optimisation level, e.g. the sanitizer build's).
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen::cpu::upfirdn2d_detail::GPEN_ISA_NS {

namespace {

using namespace gpen::cpu::GPEN_ISA_NS::simd;

}  // namespace

void weighted_sum(float* dst, const float* const* src, const float* w, int nt, int64_t len, bool accumulate) {
  int64_t i = 0;
  // Four vectors per step keep four independent FMA chains in flight over the taps.
  for (; i + 4 * L <= len; i += 4 * L) {
    vf a0 = {}, a1 = {}, a2 = {}, a3 = {};
    if (accumulate) a0 = vld(dst + i), a1 = vld(dst + i + L), a2 = vld(dst + i + 2 * L), a3 = vld(dst + i + 3 * L);
    for (int t = 0; t < nt; ++t) {
      const float* s = src[t] + i;
      const float wt = w[t];
      a0 += wt * vld(s);
      a1 += wt * vld(s + L);
      a2 += wt * vld(s + 2 * L);
      a3 += wt * vld(s + 3 * L);
    }
    vst(dst + i, a0);
    vst(dst + i + L, a1);
    vst(dst + i + 2 * L, a2);
    vst(dst + i + 3 * L, a3);
  }
  for (; i + L <= len; i += L) {
    vf a0 = accumulate ? vld(dst + i) : vf{};
    for (int t = 0; t < nt; ++t) a0 += w[t] * vld(src[t] + i);
    vst(dst + i, a0);
  }
  for (; i < len; ++i) {
    float a = accumulate ? dst[i] : 0.0f;
    for (int t = 0; t < nt; ++t) a += w[t] * src[t][i];
    dst[i] = a;
  }
}

void bias_act_rows(float* y, const float* sc, const float* b, int64_t C, int64_t npix, float gpos, float gneg) {
  const vf vp = vf{} + gpos, vn = vf{} + gneg, one = vf{} + 1.0f;
  for (int64_t q = 0; q < npix; ++q) {
    float* row = y + q * C;
    int64_t c = 0;
    for (; c + L <= C; c += L) {
      const vf v = vld(row + c) * (sc ? vld(sc + c) : one) + (b ? vld(b + c) : vf{});
      vst(row + c, v * (v < 0.0f ? vn : vp));
    }
    for (; c < C; ++c) {
      const float v = row[c] * (sc ? sc[c] : 1.0f) + (b ? b[c] : 0.0f);
      row[c] = v * (v < 0.0f ? gneg : gpos);
    }
  }
}

}  // namespace gpen::cpu::upfirdn2d_detail::GPEN_ISA_NS
