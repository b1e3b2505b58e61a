#pragma once
// Winograd for the 3x3 stride-2 conv2d (GPEN's encoder ecd1-4, on the blurred map) by polyphase
// decomposition: the transpose of winograd_up.h's scheme (kernels/cpu/winograd_s2*.cpp).
//
// Along one axis y[o] = x[2o] w0 + x[2o + 1] w1 + x[2o + 2] w2: the even phase x_e[i] = x[2i]
// correlated with (w0, w2), a 2-tap F(m, 2), plus the odd phase x_o[i] = x[2i + 1] times w1. A
// tile of m outputs reads 2m + 1 inputs; its 1-D transform stacks F(m, 2)'s m + 1 points over the
// even inputs and m copies of the odd ones (2m + 1 points), and the output transform sums the
// phases. In 2-D, (2m + 1)^2 products per m x m outputs: 81 per 16 for m = 4 (144 direct, 1.78x
// fewer), 25 per 4 for m = 2 (1.44x). The F(m, 2) matrices are winograd_up.h's (points 0, 1, -1,
// 2, infinity for m = 4; 0, 1, infinity for m = 2) with the two taps swapped.
//
// As the stride-1 conv2d Winograd (winograd.h): the (2m + 1)^2 GEMMs [tiles x C] x [C x Cout] on
// the modconv micro-kernel (point_gemms), the transformed weight made per call into the workspace
// in groups of output channels of at most kConvUBudgetFloats, the epilogue (bias, activation,
// residual) in the output transform. Where it runs, with which tile: the rule of conv_select.h.
#include <cstddef>

#include "kernels/cpu/winograd.h"

namespace gpen::cpu::winograd_detail {

// Tiles per task (a multiple of 6) and output channels per task; K block kKcMax.
constexpr int64_t kS2MaxTileBlock = 30;
constexpr int64_t kS2CoChunkMax = 128;

// WinoPlan's fields: m, n = 2m + 1 (input tile), nxi = (2m + 1)^2; H, W the output's size.
WinoPlan make_wino_s2_plan(int m, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Co, int threads);

#define GPEN_WINO_S2_ISA_DECLS                                                                               \
  void s2_transform_weight(const WinoPlan& pl, const WinoArgs& a, int64_t panel, int np, int64_t c0,  \
                           int64_t c1, float* dst);                                                          \
  void s2_run_task(const WinoPlan& pl, const WinoArgs& a, int64_t block, int64_t o0, int64_t nco, const float* u, \
                   int64_t group_o0, float* ws);
namespace isa_base {
GPEN_WINO_S2_ISA_DECLS
}
namespace isa_avx512 {
GPEN_WINO_S2_ISA_DECLS
}
#undef GPEN_WINO_S2_ISA_DECLS

size_t conv2d_wino_s2_workspace_bytes(int m, const Shape& x, const Shape& y, int threads);
// Inputs already validated by conv2d (f32 or 8-bit weights, shapes).
void conv2d_wino_s2(int m, const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
                    const TensorView* residual, const TensorView& y, void* workspace);

}  // namespace gpen::cpu::winograd_detail
