// The Eigen-backed GEMM entry points of gemm.h, compiled once per ISA (isa_ns.h; the dispatch
// and the blocking: gemm_blocking.cpp). Eigen's GEBP kernel picks its register blocking from the
// compiler's target, so the AVX-512 copy packs and multiplies with 16-lane panels. Its copy of
// Eigen is renamed so that none of its inline templates can stand in for the baseline's at link
// time (the linker keeps one of two same-named inline functions, and an AVX-512 body would
// fault on an AVX2-only machine).
#include "kernels/cpu/isa_ns.h"
#if GPEN_ISA_AVX512
#define Eigen gpen_eigen_avx512
#endif
#include <Eigen/Core>
#include <algorithm>

#include "kernels/cpu/gemm.h"

namespace gpen::cpu::detail::GPEN_ISA_NS {

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

}  // namespace

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

}  // namespace gpen::cpu::detail::GPEN_ISA_NS
