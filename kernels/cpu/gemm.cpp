#include "kernels/cpu/gemm.h"

#include <Eigen/Core>
#include <algorithm>

namespace gpen::cpu::detail {

namespace {

using Eigen::Index;

// A level3_blocking whose panels live in memory we own (Eigen's own allocates them).
class BorrowedBlocking : public Eigen::internal::level3_blocking<float, float> {
 public:
  BorrowedBlocking(float* a, float* b, Index mc, Index nc, Index kc) {
    m_blockA = a;
    m_blockB = b;
    m_mc = mc;
    m_nc = nc;
    m_kc = kc;
  }
};

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

void sgemm_acc(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
               float* c, int64_t ldc, const GemmBlocking& blk, float* pack) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  float* block_a = pack;
  float* block_b = pack + round_floats(static_cast<size_t>(blk.nb * blk.kb) + 64);
  // In the transposed problem Eigen's rows (mc, its packed "A") are our n and its columns (nc,
  // its packed "B") our m.
  BorrowedBlocking blocking(block_a, block_b, std::min<Index>(blk.nb, n), std::min<Index>(blk.mb, m),
                            std::min<Index>(blk.kb, k));
  using Gemm = Eigen::internal::general_matrix_matrix_product<Index, float, Eigen::RowMajor, false, float,
                                                              Eigen::RowMajor, false, Eigen::RowMajor, 1>;
  Gemm::run(m, n, k, a, lda, b, ldb, c, 1, ldc, 1.0f, blocking, nullptr);
}

namespace {
using Traits = Eigen::internal::gebp_traits<float, float>;
using ResMapper = Eigen::internal::blas_data_mapper<float, Index, Eigen::ColMajor, Eigen::Unaligned, 1>;
using WeightMapper = Eigen::internal::const_blas_data_mapper<float, Index, Eigen::ColMajor>;
}  // namespace

// In Eigen's terms the product is transposed (C^T = B^T A^T, column-major): B^T is its packed
// "lhs" and our A its packed "rhs", whose panel width is Traits::nr.
static_assert(Traits::nr <= kMaxRowPanel, "Eigen's GEBP panel is wider than callers provide for");
int gemm_row_panel() { return Traits::nr; }

void gemm_pack_b(float* dst, const float* b, int64_t ldb, int64_t k, int64_t n) {
  Eigen::internal::gemm_pack_lhs<float, Index, WeightMapper, Traits::mr, Traits::LhsProgress,
                                 typename Traits::LhsPacket4Packing, Eigen::ColMajor>
      pack;
  pack(dst, WeightMapper(b, ldb), k, n);
}

void gemm_packed_acc(float* c, int64_t ldc, const float* packed_a, const float* packed_b, int64_t m, int64_t n,
                     int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  Eigen::internal::gebp_kernel<float, float, Index, ResMapper, Traits::mr, Traits::nr, false, false> gebp;
  gebp(ResMapper(c, ldc), packed_b, packed_a, n, k, m, 1.0f);
}

}  // namespace gpen::cpu::detail
