#pragma once
// Internal to conv2d: the 1x1 path (kernels/cpu/conv2d_1x1.cpp), a GEMM of our own for 1x1
// convs without padding and one group, the bulk of ResNet bottlenecks (RetinaFace R50: ~56 % of
// its time ran on Eigen's GEBP at 43-76 % of a thread's peak), and for the other ungrouped convs
// that Winograd and the direct conv leave (R50's stride-2 3x3s), tap by tap.
//
// The input needs no packing: with unit channel stride each output pixel's input is a
// contiguous row of Cin floats (any pixel strides, any conv stride), which the micro-kernel
// broadcasts from directly. The weight ([Cin][Cout], HWIO with kh = kw = 1) is packed per call
// into column panels of nr() columns, each [Cin][nr] (zeros past Cout), in chunks of at most
// kPackFloats so the workspace stays bounded. The register tile is mr() pixels x nr() channels
// (AVX-512: 12 x 32, 24 accumulators; AVX2: 6 x 16, 12), and the bias, activation and residual
// are applied as the tile leaves the registers, straight into the output.
//
// Every output element is one chain of FMAs over k = 0 .. Cin-1 in order (a depth block stores
// its partial sums and the next one reloads and continues them), then the epilogue of
// conv2d_epilogue_kernel.cpp's form: so both ISA copies give the same bits whatever their tile.
#include <cstddef>
#include <cstdint>

#include "engine/core/tensor.h"
#include "kernels/params.h"

namespace gpen::cpu::detail {

// One register tile: rows (<= mr) output pixels x one nr-column weight panel over depth [k0, k0 + kd).
struct G1Tile {
  int rows = 0;
  const float* const* a = nullptr;  // per row: its input at depth k0 (unit stride along depth)
  int64_t lda = 0;                  // > 0: row r's input is a[0] + r * lda (equally spaced rows)
  int64_t kd = 0;
  const float* b = nullptr;  // the packed panel at k0: b[k * nr + j]
  float* c = nullptr;        // partial sums, rows x nr at leading dimension ldc (when !final or load)
  int64_t ldc = 0;
  bool load = false;   // continue the sums held in c
  bool final = false;  // last depth block: epilogue into y, else store the sums to c
  float* const* y = nullptr;          // final: per row, the output at the panel's first column
  const float* const* res = nullptr;  // final: per row, the residual there (may alias y), or null
  const float* bias = nullptr;        // final: bias at the panel's first column, or null
  int cols = 0;                       // columns of the panel inside Cout (<= nr)
  float slope = 1.0f, gain = 1.0f;
  bool act_last = false;  // act(sum + bias + res) rather than act(sum + bias) + res
};

#define GPEN_CONV1X1_ISA_DECLS \
  int conv1x1_mr();            \
  int conv1x1_nr();            \
  void conv1x1_tile(const G1Tile& t);
namespace isa_base {
GPEN_CONV1X1_ISA_DECLS
}
namespace isa_avx512 {
GPEN_CONV1X1_ISA_DECLS
}
#undef GPEN_CONV1X1_ISA_DECLS

// Floats of workspace (before alignment) for `threads` threads.
size_t conv1x1_workspace_floats(const Conv2dParams& p, const Shape& x, const Shape& y, int threads);
// Runs the conv (the rule's gemm1x1 or gemm_taps, conv_select.h: one group, unit channel strides
// in x, w, y, bias and residual; f32 or 8-bit weights), p.act_after_residual included. `ws` 64-byte aligned,
// conv1x1_workspace_floats floats.
void conv1x1(const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
             const TensorView* residual, const TensorView& y, float* ws);

}  // namespace gpen::cpu::detail
