// The modconv GEMM's B operand: the weight packed into 16-column panels or read in place (the
// micro-kernel that reads it: modconv_kernel.cpp, one copy per ISA).
#include <cstring>

#include "kernels/cpu/modconv_internal.h"

namespace gpen::cpu::modconv_detail {

void pack_weight(const Plan& pl, const TensorView& w, int64_t j, int t0, int t1, float* packed) {
  const float* wp = w.f32();
  const int64_t s0 = w.stride(0), s1 = w.stride(1), s2 = w.stride(2), s3 = w.stride(3);
  const int64_t o0 = j * kNR;
  const bool full = o0 + kNR <= pl.Co && s3 == 1;
  float* panel = packed + j * pl.kdim * kNR;
  for (int t = t0; t < t1; ++t) {
    const int ky = t / pl.k, kx = t % pl.k;
    const float* src = wp + ky * s0 + kx * s1 + o0 * s3;
    float* dst = panel + int64_t{t} * pl.C * kNR;
    for (int64_t c = 0; c < pl.C; ++c, src += s2, dst += kNR) {
      if (full) {
        std::memcpy(dst, src, sizeof(float) * kNR);
      } else {
        for (int q = 0; q < kNR; ++q) dst[q] = o0 + q < pl.Co ? src[q * s3] : 0.0f;
      }
    }
  }
}

int64_t b_rows(const Plan& pl, const KBlock& kb, const TensorView& w, int64_t o0, const float* packed, float* bpack,
               const float** bseg) {
  if (!pl.direct_b) {
    const float* panel = packed + (o0 / kNR) * pl.kdim * kNR;
    for (int s = 0; s < kb.nseg; ++s) bseg[s] = panel + kb.b_off[s];
    return kNR;
  }
  const int64_t s0 = w.stride(0), s1 = w.stride(1), s2 = w.stride(2), s3 = w.stride(3);
  const bool whole = o0 + kNR <= pl.Co && s3 == 1;
  for (int s = 0; s < kb.nseg; ++s) {
    const float* src = w.f32() + kb.ky[s] * s0 + kb.kx[s] * s1 + kb.c0[s] * s2 + o0 * s3;
    if (whole) {
      bseg[s] = src;
      continue;
    }
    bseg[s] = bpack;
    for (int i = 0; i < kb.seg_len[s]; ++i, src += s2, bpack += kNR)
      for (int q = 0; q < kNR; ++q) bpack[q] = o0 + q < pl.Co ? src[q * s3] : 0.0f;
  }
  return whole ? s2 : kNR;
}

}  // namespace gpen::cpu::modconv_detail
