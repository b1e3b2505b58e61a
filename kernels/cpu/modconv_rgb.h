#pragma once
// The modconv of GPEN's to_rgb layers: a 1x1 conv to a handful of output channels (3) from many
// input channels. As a GEMM its N axis is 3 of the micro-kernel's 16 (32 on AVX-512) columns, so
// the general path wastes most of every FMA and also copies the input into a band first. Here
// each output pixel is Co dot products over its channels, vectorised across the channels, read
// once straight from x (and the noise input x2), with the style folded into the weight:
//   acc[o] = sum_c x[c] * (s[c] W[c][o]) + sum_c act2(x2[c] scale + b2[c]) * (gain2 s[C1 + c] W[C1 + c][o])
// The dot products are per-ISA (modconv_rgb_kernel.cpp, isa_ns.h); the folded weight lives in
// modconv_rgb.cpp, the choice in conv_select.cpp. The rounding differs from the general path's (the style is
// multiplied into the weight rather than into the input), within fp32 accuracy.
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/ops.h"

namespace gpen::cpu::modconv_rgb {

constexpr int64_t kMaxCo = 4;  // output channels the dot-product path carries in registers

// Raw pointers and strides, so the per-ISA code needs no inline functions of other headers
// (scripts/check_isa_symbols.py). Channel strides of x and x2 are 1 (modconv_rgb.cpp checks).
struct RgbArgs {
  int64_t H = 0, W = 0, C1 = 0, C2 = 0, Co = 0;
  int64_t wstride = 0;  // floats per output channel's folded weight row: C1p + C2p
  int64_t C1p = 0;      // C1 rounded up to 16 (the x2 part starts there)
  const float* x = nullptr;
  int64_t xs0 = 0, xs1 = 0, xs2 = 0;  // xs0 = 0: one x for every sample
  const float* x2 = nullptr;
  int64_t x2s0 = 0, x2s1 = 0, x2s2 = 0;
  float x2_scale = 0.0f, x2_slope = 1.0f;
  const float* b2 = nullptr;  // [C2], contiguous
  const float* wm = nullptr;  // per sample: [kMaxCo][wstride] folded weight, then d[kMaxCo], bias[kMaxCo]
  int64_t wm_per_sample = 0;
  const float* res = nullptr;
  int64_t rs0 = 0, rs1 = 0, rs2 = 0, rs3 = 1;
  float* y = nullptr;
  int64_t ys0 = 0, ys1 = 0, ys2 = 0, ys3 = 1;
  float gpos = 1.0f, gneg = 1.0f;  // act(v) = v * (v < 0 ? gneg : gpos)
};

// Output rows [r0, r1) of sample n.
#define GPEN_RGB_ISA_DECLS void rgb_rows(const RgbArgs& a, int64_t n, int64_t r0, int64_t r1);
namespace isa_base {
GPEN_RGB_ISA_DECLS
}
namespace isa_avx512 {
GPEN_RGB_ISA_DECLS
}
#undef GPEN_RGB_ISA_DECLS

// Where it runs: conv_select.h (1x1, no up, Co <= kMaxCo, x and x2 of unit channel stride).
size_t rgb_workspace_bytes(const Shape& x_cat, const Shape& y);
// Runs the op and returns true, or returns false (nothing written) where the views or a missing
// workspace do not let it. Inputs already validated by modconv.
bool modconv_rgb(const ModConvParams& p, const ModConvArgs& a, const TensorView& y, void* workspace);

}  // namespace gpen::cpu::modconv_rgb
