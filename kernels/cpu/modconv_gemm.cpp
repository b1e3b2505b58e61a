// The modconv GEMM's B operand: the weight packed into 16-column panels or read in place (the
// micro-kernel that reads it: modconv_kernel.cpp, one copy per ISA).
#include <cstring>

#include "kernels/cpu/modconv_internal.h"
#include "kernels/cpu/weights8.h"

namespace gpen::cpu::modconv_detail {

void pack_weight(const Plan& pl, const TensorView& w, int64_t j, int t0, int t1, float* packed) {
  const int64_t s0 = w.stride(0), s1 = w.stride(1), s2 = w.stride(2), s3 = w.stride(3);
  const int64_t o0 = j * kNR;
  float* panel = packed + j * pl.kdim * kNR;
  if (dtype_is_8bit_weight(w.dtype)) {
    // 8-bit weights are dequantised here, into this call's panel (workspace): no f32 copy of
    // the weight outlives the call.
    for (int t = t0; t < t1; ++t) {
      const int ky = t / pl.k, kx = t % pl.k;
      float* dst = panel + int64_t{t} * pl.C * kNR;
      for (int64_t c = 0; c < pl.C; ++c, dst += kNR)
        detail::load_weight_row(dst, w, ky * s0 + kx * s1 + c * s2 + o0 * s3, s3, o0, kNR, pl.Co,
                                (ky * w.dim(1) + kx) * w.dim(2) + c);
    }
    return;
  }
  const float* wp = w.f32();
  const bool full = o0 + kNR <= pl.Co && s3 == 1;
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
  if (dtype_is_8bit_weight(w.dtype)) {
    // Direct mode on 8-bit weights: the block's rows dequantised into bpack.
    for (int s = 0; s < kb.nseg; ++s) {
      bseg[s] = bpack;
      const int64_t base = kb.ky[s] * s0 + kb.kx[s] * s1 + kb.c0[s] * s2 + o0 * s3;
      const int64_t k0 = (int64_t{kb.ky[s]} * w.dim(1) + kb.kx[s]) * w.dim(2) + kb.c0[s];
      for (int i = 0; i < kb.seg_len[s]; ++i, bpack += kNR)
        detail::load_weight_row(bpack, w, base + i * s2, s3, o0, kNR, pl.Co, k0 + i);
    }
    return kNR;
  }
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
