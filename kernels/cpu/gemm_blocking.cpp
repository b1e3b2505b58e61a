// The ISA-independent half of gemm.h: the cache blocking and the entry points, which forward to
// the copy of gemm.cpp built for the ISA in use (kernels/cpu/isa.h).
#include <algorithm>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/isa.h"

#ifndef GPEN_HAVE_AVX512_KERNELS
#define GPEN_HAVE_AVX512_KERNELS 0
#endif

namespace gpen::cpu::detail {

namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Split `total` into equal blocks of at most `cap`, rounded to a multiple of `mult`, so that the
// last block is not a sliver (a 600-deep product runs as 2 x 304, not 512 + 88).
int64_t balanced_block(int64_t total, int64_t cap, int64_t mult) {
  if (total <= cap) return total;
  int64_t parts = (total + cap - 1) / cap;
  return std::min(cap, round_up((total + parts - 1) / parts, mult));
}

}  // namespace

GemmBlocking gemm_blocking(int64_t m, int64_t n, int64_t k) {
  // Eigen solves a row-major product as its transpose, C^T = B^T A^T: blocks of nb rows of B^T
  // (our columns, e.g. output channels) by kb of depth are packed and stay cache-resident while
  // all m columns of A^T (our rows, e.g. pixels) stream past them. Measured on Zen 3 (512 KiB L2):
  // depth blocks of ~500-600 and <= 256 columns reach 60-70 GFLOP/s per core at GPEN's shapes.
  GemmBlocking b;
  b.kb = balanced_block(std::max<int64_t>(k, 1), 576, 8);
  b.nb = balanced_block(std::max<int64_t>(n, 1), 256, 8);
  b.mb = std::max<int64_t>(m, 1);
  return b;
}

size_t gemm_pack_floats(const GemmBlocking& b) {
  // Exactly Eigen's own panel sizes (mc x kc and kc x nc), plus a little slack.
  return round_floats(static_cast<size_t>(b.nb * b.kb) + 64) + round_floats(static_cast<size_t>(b.kb * b.mb) + 64);
}

namespace {
bool avx512() { return GPEN_HAVE_AVX512_KERNELS && cpu_isa() == Isa::avx512; }
}  // namespace

#if GPEN_HAVE_AVX512_KERNELS
#define GPEN_GEMM_DISPATCH(call) (avx512() ? isa_avx512::call : isa_base::call)
#else
#define GPEN_GEMM_DISPATCH(call) (isa_base::call)
#endif

void sgemm_acc(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
               float* c, int64_t ldc, const GemmBlocking& blk, float* pack) {
  GPEN_GEMM_DISPATCH(sgemm_acc(m, n, k, a, lda, b, ldb, c, ldc, blk, pack));
}
int gemm_row_panel() { return GPEN_GEMM_DISPATCH(gemm_row_panel()); }
void gemm_pack_b(float* dst, const float* b, int64_t ldb, int64_t k, int64_t n) {
  GPEN_GEMM_DISPATCH(gemm_pack_b(dst, b, ldb, k, n));
}
void gemm_packed_acc(float* c, int64_t ldc, const float* packed_a, const float* packed_b, int64_t m, int64_t n,
                     int64_t k) {
  GPEN_GEMM_DISPATCH(gemm_packed_acc(c, ldc, packed_a, packed_b, m, n, k));
}

}  // namespace gpen::cpu::detail
