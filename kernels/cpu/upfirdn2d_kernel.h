#pragma once
// The inner loop of upfirdn2d (kernels/cpu/upfirdn2d.cpp), compiled once per ISA
// (upfirdn2d_kernel.cpp, isa_ns.h): a weighted sum of nt unit-stride rows,
//   dst[i] = (accumulate ? dst[i] : 0) + sum_t w[t] * src[t][i]   for i < len,
// the taps summed in order t = 0, 1, ... for every element on both paths (the same bits).
// Both passes of the separable blur and the direct path's pixels end up here; they are
// memory-bound, so the wider vectors mostly buy fewer instructions per byte.
#include <cstdint>

namespace gpen {
struct UpFirDn2dParams;  // kernels/params.h (not included: this header is also compiled per ISA)
}

namespace gpen::cpu::upfirdn2d_detail {

// weighted_sum_stream: the same sum without accumulate, written with streaming (non-temporal)
// stores, for outputs far larger than the caches: a plain store first reads each line from
// memory, which halves the blur's speed when its output is many MiB (docs/benchmarks.md). With
// ep, the row holds pixels of ep->C channels and bias_act_rows's epilogue is applied before the
// store (same bits); that needs dst aligned to the vector and C a multiple of its width: false
// (nothing written) when not.
struct StreamEpilogue {
  const float* scale;  // [C] or null
  const float* bias;   // [C] or null
  int64_t C;
  float gpos, gneg;
};
// bias_act_rows: npix pixels of C channels in place, y = act(y * sc[c] + b[c]) with act(v) =
// v * (v < 0 ? gneg : gpos), sc or b null for 1 or 0: upfirdn2d_epilogue's arithmetic (same bits).
#define GPEN_UPFIRDN_ISA_DECLS                                                                                  \
  void weighted_sum(float* dst, const float* const* src, const float* w, int nt, int64_t len, bool accumulate); \
  bool weighted_sum_stream(float* dst, const float* const* src, const float* w, int nt, int64_t len,             \
                           const StreamEpilogue* ep);                                                           \
  void bias_act_rows(float* y, const float* sc, const float* b, int64_t C, int64_t npix, float gpos, float gneg);
namespace isa_base {
GPEN_UPFIRDN_ISA_DECLS
}
namespace isa_avx512 {
GPEN_UPFIRDN_ISA_DECLS
}
#undef GPEN_UPFIRDN_ISA_DECLS

// The copies above for the ISA in use (upfirdn2d_rows.cpp).
void weighted_sum(float* dst, const float* const* src, const float* w, int nt, int64_t len, bool accumulate);
bool weighted_sum_stream(float* dst, const float* const* src, const float* w, int nt, int64_t len,
                         const StreamEpilogue* ep);
void bias_act_rows(float* y, const float* sc, const float* b, int64_t C, int64_t npix, float gpos, float gneg);

// The horizontal pass of an x-upsampling separable filter (down 1, unit channel stride) over one
// input row of C < kFewChannels channels into h (Wo pixels), with the flipped row factors fx.
constexpr int64_t kFewChannels = 16;
void few_channels_up_row(const UpFirDn2dParams& p, int64_t W, int64_t Wo, int64_t C, const float* fx, const float* xrow,
                         int64_t xs, float* h);

}  // namespace gpen::cpu::upfirdn2d_detail
