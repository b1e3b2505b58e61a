#pragma once
// Internal to the CPU kernels: single-threaded SGEMM on Eigen's blocked GEBP kernel, on memory
// the caller provides. Eigen's public product API allocates its packing panels on the heap for
// large products and may start threads of its own; these entry points do neither, so kernels can
// run one GEMM per tile and per OpenMP thread on workspace memory.
//
// Two levels:
//  - sgemm_acc: a whole row-major product C += A * B (packs both operands itself);
//  - panel level, for callers that pack A themselves straight from their own layout (conv2d
//    packs output pixels from the NHWC input, which replaces an im2col copy and Eigen's own
//    packing pass by a single gather).
#include <cstddef>
#include <cstdint>

namespace gpen::cpu::detail {

// ---- whole products

// Cache blocking of one C[m x n] += A[m x k] * B[k x n] call, m = rows of A and C.
struct GemmBlocking {
  int64_t mb = 0;  // rows of A (and C) per packed A panel
  int64_t nb = 0;  // columns of B (and C) per packed B panel
  int64_t kb = 0;  // depth per packed panel
};

// Blocking for products of at most m x n x k (it may be reused for smaller ones).
GemmBlocking gemm_blocking(int64_t m, int64_t n, int64_t k);
// Floats of packing memory sgemm_acc needs with this blocking.
size_t gemm_pack_floats(const GemmBlocking& b);

// C += A * B, all row-major with unit inner stride; leading dimensions in elements.
// `pack` must hold gemm_pack_floats(blk) floats and be 64-byte aligned.
void sgemm_acc(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
               float* c, int64_t ldc, const GemmBlocking& blk, float* pack);

// ---- panel level
//
// Packed A ("rows", e.g. output pixels) for a depth-k block: rows go in panels of
// gemm_row_panel() rows; a full panel stores, for each depth index d in turn, its rows' values at
// d (so panel p, depth d, row r sits at p*P*k + d*P + r, P the panel width). Rows left over after
// the last full panel follow one at a time, each as k consecutive values. m x k floats in all.
int gemm_row_panel();
constexpr int kMaxRowPanel = 16;  // gemm_row_panel() never exceeds this
// Packs rows [0, n) x depth [0, k) of the weight B (row-major k x n, leading dimension ldb, so
// B[d][j] = b[d * ldb + j]) into Eigen's packed layout: n x k floats.
void gemm_pack_b(float* dst, const float* b, int64_t ldb, int64_t k, int64_t n);
// C[i][j] += sum_d A[i][d] * B[d][j] for i < m, j < n, with A and B packed as above (same k);
// C row-major with leading dimension ldc.
void gemm_packed_acc(float* c, int64_t ldc, const float* packed_a, const float* packed_b, int64_t m, int64_t n,
                     int64_t k);

// The per-ISA copies of the four entry points above (kernels/cpu/gemm.cpp); the entry points
// forward to the one for kernels/cpu/isa.h's choice. The packed layouts differ between them (the
// panel width is Eigen's for the target), so one product must use one copy throughout.
#define GPEN_GEMM_ISA_DECLS                                                                                       \
  void sgemm_acc(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,     \
                 float* c, int64_t ldc, const GemmBlocking& blk, float* pack);                                    \
  int gemm_row_panel();                                                                                            \
  void gemm_pack_b(float* dst, const float* b, int64_t ldb, int64_t k, int64_t n);                                \
  void gemm_packed_acc(float* c, int64_t ldc, const float* packed_a, const float* packed_b, int64_t m, int64_t n, \
                       int64_t k);
namespace isa_base {
GPEN_GEMM_ISA_DECLS
}
namespace isa_avx512 {
GPEN_GEMM_ISA_DECLS
}
#undef GPEN_GEMM_ISA_DECLS

// ---- scratch carving
constexpr size_t kScratchAlign = 64;
inline size_t round_floats(size_t n) { return (n + 15) / 16 * 16; }  // 64-byte multiples
inline float* align_ptr(void* p) {
  auto v = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<float*>((v + kScratchAlign - 1) / kScratchAlign * kScratchAlign);
}

}  // namespace gpen::cpu::detail
