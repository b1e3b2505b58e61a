#pragma once
// Internal to conv2d: the parts of its paths compiled once per ISA (CMakeLists.txt:
// GPEN_ISA_SOURCES, isa_ns.h) — the GEMM path's epilogue rows (conv2d_epilogue_kernel.cpp) and
// the direct conv's register tiles (conv2d_direct_kernel.cpp), the depthwise 3x3 tiles
// (conv2d_depthwise_kernel.cpp). Each copy does the same
// arithmetic per output element in the same order (one FMA for one FMA, bias, activation,
// residual), only over 8 or 16 lanes, so both paths give the same bits.
#include <cstdint>

#include "kernels/cpu/conv2d_paths.h"

namespace gpen::cpu::detail {

// The direct conv's operands (kernels/cpu/conv2d_direct.cpp packs them).
struct Dc {
  const float* x = nullptr;
  int64_t xs0 = 0, xs1 = 0, xs2 = 0, xcs = 1;
  const float* wp = nullptr;  // packed [K][Cp]
  const float* bp = nullptr;  // packed bias [Cp], or nullptr
  ConvOut o;
  int64_t H = 0, W = 0, Cin = 0, Ho = 0, Wo = 0, Co = 0, Cp = 0;  // Cp: Co rounded up to 8
  int kh = 1, kw = 1, sh = 1, sw = 1, pt = 0, pl = 0;
};

// The depthwise 3x3 path's operands (kernels/cpu/conv2d_depthwise.cpp).
struct Dw {
  const float* x = nullptr;
  int64_t xs0 = 0, xs1 = 0, xs2 = 0;
  const float* w = nullptr;
  int64_t ws0 = 0, ws1 = 0;
  const float* bias = nullptr;
  int64_t bs = 0;
  ConvOut o;
  int64_t H = 0, W = 0, C = 0, Ho = 0, Wo = 0;
  int sh = 1, sw = 1, pt = 0, pl = 0;
};

// epilogue_row: dst[c] = act(src[c] + bias[c]) + res[c] for c < nc, unit strides, bias or res
// null when absent; res may be dst itself (each element is read before it is written).
// act(v) = gain * (max(v, 0) + slope * min(v, 0)), act_branchless's form (strided.h).
// direct_row: output row (n, oy) of the direct conv, all channels; contig when the input's
// pixels are contiguous (channel stride 1, pixel stride Cin).
// depthwise3x3_row: output row (n, oy) of the depthwise 3x3 path, all channels; wide picks the
// tile of one pixel x 4 vectors (else 4 pixels x 2 vectors).
#define GPEN_CONV2D_ISA_DECLS                                                                          \
  void epilogue_row(float* dst, const float* src, const float* bias, const float* res, int64_t nc, \
                    float slope, float gain);                                                          \
  void direct_row(const Dc& d, bool contig, int64_t n, int64_t oy);                                    \
  void depthwise3x3_row(const Dw& d, bool wide, int64_t n, int64_t oy);
namespace isa_base {
GPEN_CONV2D_ISA_DECLS
}
namespace isa_avx512 {
GPEN_CONV2D_ISA_DECLS
}
#undef GPEN_CONV2D_ISA_DECLS

// The ISA in use has the AVX-512 copies (decided once, isa.h).
bool conv2d_wide();

}  // namespace gpen::cpu::detail
