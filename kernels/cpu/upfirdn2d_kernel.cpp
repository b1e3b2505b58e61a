// The per-ISA weighted row sum of upfirdn2d (overview: upfirdn2d_kernel.h). Nothing here calls
// an inline function of another header but the per-ISA ones of isa_vec.h (scripts/check_isa_symbols.py).
#include <cstdint>
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

// Four vectors of the tap sum at element i: four independent multiply-add chains over the taps.
inline void tap_sum4(const float* const* src, const float* w, int nt, int64_t i, vf& a0, vf& a1, vf& a2, vf& a3) {
  for (int t = 0; t < nt; ++t) {
    const float* s = src[t] + i;
    const float wt = w[t];
    a0 += wt * vld(s);
    a1 += wt * vld(s + L);
    a2 += wt * vld(s + 2 * L);
    a3 += wt * vld(s + 3 * L);
  }
}

}  // namespace

void weighted_sum(float* dst, const float* const* src, const float* w, int nt, int64_t len, bool accumulate) {
  int64_t i = 0;
  for (; i + 4 * L <= len; i += 4 * L) {
    vf a0 = {}, a1 = {}, a2 = {}, a3 = {};
    if (accumulate) a0 = vld(dst + i), a1 = vld(dst + i + L), a2 = vld(dst + i + 2 * L), a3 = vld(dst + i + 3 * L);
    tap_sum4(src, w, nt, i, a0, a1, a2, a3);
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

bool weighted_sum_stream(float* dst, const float* const* src, const float* w, int nt, int64_t len, const StreamEpilogue* ep) {
  const auto mis = reinterpret_cast<uintptr_t>(dst) % sizeof(vf);
  // With the epilogue, the vectors must hold whole runs of channels: an aligned row, C % L == 0.
  if (ep && (mis != 0 || ep->C % L != 0)) return false;
  // Scalar up to the first vector-aligned element: the streaming store needs an aligned address.
  int64_t i = 0;
  const int64_t head = lmin(len, static_cast<int64_t>((sizeof(vf) - mis) % sizeof(vf) / sizeof(float)));
  auto scalar = [&](int64_t e) {
    float a = 0.0f;
    for (int t = 0; t < nt; ++t) a += w[t] * src[t][e];
    dst[e] = a;
  };
  for (; i < head; ++i) scalar(i);
  const vf one = vf{} + 1.0f;
  // bias_act_rows's arithmetic on the sums still in registers: the bits of the two passes.
  auto finish = [&](vf v, int64_t e) {
    if (!ep) return v;
    const int64_t c = e % ep->C;
    v = v * (ep->scale ? vld(ep->scale + c) : one) + (ep->bias ? vld(ep->bias + c) : vf{});
    return v * (v < 0.0f ? vf{} + ep->gneg : vf{} + ep->gpos);
  };
  for (; i + 4 * L <= len; i += 4 * L) {
    vf a0 = {}, a1 = {}, a2 = {}, a3 = {};
    tap_sum4(src, w, nt, i, a0, a1, a2, a3);
    vstream(dst + i, finish(a0, i));
    vstream(dst + i + L, finish(a1, i + L));
    vstream(dst + i + 2 * L, finish(a2, i + 2 * L));
    vstream(dst + i + 3 * L, finish(a3, i + 3 * L));
  }
  for (; i + L <= len; i += L) {
    vf a0 = {};
    for (int t = 0; t < nt; ++t) a0 += w[t] * vld(src[t] + i);
    vstream(dst + i, finish(a0, i));
  }
  for (; i < len; ++i) scalar(i);  // without the epilogue only (with it, len is a multiple of L)
  // Streaming stores are weakly ordered: complete them before anyone (another thread) reads.
  stream_fence();
  return true;
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
