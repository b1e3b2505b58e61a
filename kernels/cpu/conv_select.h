#pragma once
// The CPU conv rule: which kernel runs a conv2d or a modulated conv (modconv), and with which
// Winograd tile. One table (conv_select.cpp), tried top to bottom, the first row that holds wins;
// `gpen --conv-rule` prints it and docs/conv-rule.md holds that print (a test keeps the two equal).
//
// The CPU backend asks once per node when a graph is planned (engine/runtime/backend_cpu.cpp); the
// plan keeps the ConvChoice with the node's workspace, and the executor hands it to the kernel,
// which runs that path. Callers outside a backend (tests, benchmarks) call the kernels' entry
// points without a choice (ops.h): those choose here, under the options they are given (by default
// the documented defaults on this process's ISA).
//
// The rule sees the shapes, the op's attributes, whether the views have unit channel strides (the
// own GEMM, the depthwise 3x3 tiles and the to_rgb dot products need them) and the options.
// A band of a banded graph (split_rows > 0, engine/plan/banding.h) is chosen for by the whole op's
// shape where the path computes every row the same way in a band (the tap GEMM); the Winograd
// forms, whose tiles span rows, leave bands to the direct paths.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "kernels/cpu/cpu_options.h"
#include "kernels/params.h"

namespace gpen::cpu {

enum class ConvPath : uint8_t {
  // conv2d
  winograd,           // stride-1 3x3, Winograd F(m x m, 3x3) in transformed-weight groups (winograd.h)
  winograd_s2,        // stride-2 3x3, polyphase Winograd (winograd_s2.h)
  depthwise,          // one channel per group, 3x3, vectorised over channels (conv2d_depthwise.cpp)
  depthwise_any,      // other depthwise convs (conv2d_depthwise_any.cpp)
  direct,             // few output or input channels: register tiles, no GEMM (conv2d_direct.cpp)
  gemm1x1,            // 1x1: the own GEMM on the NHWC rows as they are (conv2d_1x1.h)
  gemm_taps,          // other kernels on the own GEMM, tap by tap (conv2d_1x1.h)
  gemm,               // the implicit-im2col GEMM on Eigen's GEBP (conv2d_gemm.cpp)
  // modconv
  winograd_fused,     // stride-1 3x3 on a small image, the weight transformed in L2 (winograd_small.cpp)
  winograd_up,        // transposed 3x3, polyphase Winograd in groups (winograd_up.h)
  winograd_up_fused,  // transposed 3x3 on a small image, exact tiles (winograd_up_fused.cpp)
  to_rgb,             // 1x1 to at most 4 channels: dot products over the channels (modconv_rgb.h)
  modconv_direct,     // the implicit GEMM with the modconv micro-kernel (modconv.cpp)
};
const char* conv_path_name(ConvPath p);

// A path and, for the Winograd forms, the tile m (F(m x m, 3 x 3); F(m, 2) per axis for the
// polyphase ones); 0 for the other paths.
struct ConvChoice {
  ConvPath path = ConvPath::gemm;
  int tile = 0;
  // modconv_direct / to_rgb: the weight operand read per tile where the GEMM needs it (8-bit codes
  // dequantised into the thread's scratch), never packed whole into the workspace
  // (CpuOptions::low_memory). The same sums in the same order: the packed path's bits.
  bool weight_tiles = false;
  bool operator==(const ConvChoice&) const = default;
};
// "gemm1x1", "winograd F(4)", "modconv_direct (weight tiles)", ...
std::string conv_choice_label(const ConvChoice& c);

// What the rule looks at: one conv2d or modconv. x: the input (a modconv's with the concat's
// channels, x_cat), y: the output.
struct ConvCase {
  const Conv2dParams* conv = nullptr;   // exactly one of the two
  const ModConvParams* mod = nullptr;
  Shape x, y;
  bool x_unit = true;    // x (and a modconv's x2) have unit channel stride
  bool w_unit = true;    // the weight has unit output-channel stride
  bool out_unit = true;  // y, bias and residual have unit channel stride
};
// From shapes alone (every view dense).
ConvCase conv2d_case(const Conv2dParams& p, const Shape& x, const Shape& y);
ConvCase modconv_case(const ModConvParams& p, const Shape& x_cat, const Shape& y);
// From the views of a call or of a planned node (an axis of one element counts as unit stride).
ConvCase conv2d_case(const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
                     const TensorView* residual, const TensorView& y);
ConvCase modconv_case(const ModConvParams& p, const ModConvArgs& a, const TensorView& y);

ConvChoice choose_conv(const ConvCase& c, const CpuOptions& o);

// The stride-1 modconv's Winograd form for tile m: fused where one image has at most
// kFusedMaxTiles tiles (winograd.h) and the fused forms are on, else grouped. The transposed one:
// fused for m = 4 on a multiple of 4 in both axes with at most kFusedMaxTiles tiles, else grouped.
ConvChoice winograd_form(int m, int64_t H, int64_t W, const CpuOptions& o);
ConvChoice winograd_up_form(int m, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Co, const CpuOptions& o);

// The rule as text, from the table itself: a heading per op, then one line per row in the order
// tried (what `gpen --conv-rule` prints and docs/conv-rule.md shows).
std::string conv_rule_text();

}  // namespace gpen::cpu
