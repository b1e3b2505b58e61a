#pragma once
// Internal to the dense layer (kernels/cpu/dense.cpp) and attention's projections
// (kernels/cpu/attention.cpp): y = x w^T over many rows, compiled once per ISA (CMakeLists.txt:
// GPEN_ISA_SOURCES, isa_ns.h; kernels/cpu/dense_kernel.cpp). Each output is summed over the
// inputs in order, one FMA per term, in one lane: both copies give the same bits.
#include <cstdint>

namespace gpen::cpu::detail {

// dense_block: y[n][j] = sum_i x[n][i] w[j][i] (i < I in order, from 0) for n < N and the nw <= width
// outputs of one block, j < nw; x, w and y row-major with unit inner stride, leading dimensions
// ldx, ldw, ldy. The block's weight is packed on the stack, kDenseDepth inputs at a time.
// dense_block_width: the outputs of a block (two vectors).
constexpr int64_t kDenseDepth = 256;
#define GPEN_DENSE_ISA_DECLS                                                                              \
  void dense_block(const float* x, int64_t ldx, const float* w, int64_t ldw, float* y, int64_t ldy, int64_t N, \
                   int64_t I, int64_t nw);                                                                \
  int64_t dense_block_width();
namespace isa_base {
GPEN_DENSE_ISA_DECLS
}
namespace isa_avx512 {
GPEN_DENSE_ISA_DECLS
}
#undef GPEN_DENSE_ISA_DECLS

// The ISA's dense_block and its width.
using DenseBlockFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, int64_t, int64_t, int64_t);
DenseBlockFn dense_block_fn();
int64_t dense_width();

}  // namespace gpen::cpu::detail
