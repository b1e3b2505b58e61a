#pragma once
// The per-ISA pieces both Winograd kernels share (winograd_kernel.cpp, stride 1;
// winograd_up_kernel.cpp, the polyphase transposed conv): the unrolled transform products and the
// general prologue load. Internal linkage, as isa_vec.h.
#include "kernels/cpu/isa_vec.h"
#include "kernels/cpu/winograd.h"

namespace gpen::cpu::winograd_detail::GPEN_ISA_NS {
namespace {

using namespace gpen::cpu::GPEN_ISA_NS::simd;

// out[r * os] = sum_k mat[r][k] * in[k * is]. Fully unrolled, the coefficients are constants, so
// the zero terms vanish and the +-1 ones are plain adds.
template <int R, int K>
inline void lincomb(const float (&mat)[R][K], const vf* in, int is, vf* out, int os) {
#pragma GCC unroll 9
  for (int r = 0; r < R; ++r) {
    vf acc = {};
    bool first = true;
#pragma GCC unroll 9
    for (int k = 0; k < K; ++k) {
      const float c = mat[r][k];
      if (c == 0.0f) continue;
      const vf t = c == 1.0f ? in[k * is] : c == -1.0f ? -in[k * is] : c * in[k * is];
      acc = first ? t : acc + t;
      first = false;
    }
    out[r * os] = acc;
  }
}

// Channels [c, c + L) of the conv's input at one pixel (xp, x2p: its rows in x and x2) with the
// prologue applied, zero past `cend`: x * s for c < C1, act2(x2 * scale + bias2) * s * gain2
// above. The general case (a vector across the concat boundary, a K-block tail, channel strides);
// the input transforms have the fast paths.
inline vf load_input_any(const WinoPlan& pl, const WinoArgs& a, const float* xp, const float* x2p, int64_t c,
                         int64_t cend, const float* sv, const float* gs2, const float* b2v, float* tmp) {
  for (int q = 0; q < L; ++q) {
    const int64_t ch = c + q;
    if (ch >= cend) {
      tmp[q] = 0.0f;
    } else if (ch < pl.C1) {
      tmp[q] = xp[ch * a.xs3] * sv[ch];
    } else {
      const int64_t c2 = ch - pl.C1;
      const float t = x2p[c2 * a.x2s3] * a.x2_scale + b2v[c2];
      tmp[q] = t * (t < 0.0f ? a.x2_slope : 1.0f) * gs2[c2];
    }
  }
  return vld(tmp);
}

}  // namespace
}  // namespace gpen::cpu::winograd_detail::GPEN_ISA_NS
