// The per-ISA rows of conv2d's GEMM epilogue (overview: conv2d_isa.h). Nothing here calls an
// inline function of another header but the per-ISA ones of isa_vec.h
// (scripts/check_isa_symbols.py): the activation is spelt out locally.
#include <cstring>

#include "kernels/cpu/conv2d_isa.h"
#include "kernels/cpu/isa_ns.h"
#include "kernels/cpu/isa_vec.h"

namespace gpen::cpu::detail::GPEN_ISA_NS {

namespace {

using namespace gpen::cpu::GPEN_ISA_NS::simd;

// act_branchless lane-wise: std::max(v, 0) is (v < 0 ? 0 : v), std::min(v, 0) is (0 < v ? 0 : v).
inline vf vact(vf v, vf slope, vf gain) {
  const vf zero = {};
  const vf pos = v < zero ? zero : v;
  const vf neg = zero < v ? zero : v;
  return gain * (pos + slope * neg);
}
inline float sact(float v, float slope, float gain) {
  const float pos = v < 0.0f ? 0.0f : v;
  const float neg = 0.0f < v ? 0.0f : v;
  return gain * (pos + slope * neg);
}

template <bool kBias, bool kRes>
void row(float* dst, const float* src, const float* bias, const float* res, int64_t nc, float slope, float gain) {
  const vf vs = vf{} + slope, vg = vf{} + gain;
  int64_t c = 0;
  for (; c + L <= nc; c += L) {
    vf v = vld(src + c);
    if constexpr (kBias) v += vld(bias + c);
    v = vact(v, vs, vg);
    if constexpr (kRes) v += vld(res + c);  // loaded before the store: res may be dst
    vst(dst + c, v);
  }
  for (; c < nc; ++c) {
    float v = src[c];
    if constexpr (kBias) v += bias[c];
    v = sact(v, slope, gain);
    if constexpr (kRes) v += res[c];
    dst[c] = v;
  }
}

}  // namespace

void epilogue_row(float* dst, const float* src, const float* bias, const float* res, int64_t nc, float slope,
                  float gain) {
  if (bias) {
    res ? row<true, true>(dst, src, bias, res, nc, slope, gain) : row<true, false>(dst, src, bias, res, nc, slope, gain);
  } else {
    res ? row<false, true>(dst, src, bias, res, nc, slope, gain)
        : row<false, false>(dst, src, bias, res, nc, slope, gain);
  }
}

}  // namespace gpen::cpu::detail::GPEN_ISA_NS
