// The per-ISA copies of the hot CPU kernels (kernels/cpu/isa.h), called directly so that both
// are checked on a machine with AVX-512 whatever GPEN_CPU_ISA says (the whole CPU suite also
// runs once per path: tests/CMakeLists.txt). The GEMM copies (Eigen's GEBP built for each
// target) must match a double-precision product to fp32 rounding; the two modconv micro-kernels
// sum each output column in the same order, so they must agree to the bit.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/fma_peak.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/modconv_internal.h"

using namespace gpen;

namespace {

std::vector<float> random_vec(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Packs A (m x k, row-major) into the row-panel layout of gemm.h for a panel width P.
std::vector<float> pack_rows(const std::vector<float>& a, int64_t m, int64_t k, int P) {
  std::vector<float> out(static_cast<size_t>(m * k));
  int64_t i = 0;
  float* dst = out.data();
  for (; i + P <= m; i += P)
    for (int64_t d = 0; d < k; ++d)
      for (int r = 0; r < P; ++r) *dst++ = a[(i + r) * k + d];
  for (; i < m; ++i)
    for (int64_t d = 0; d < k; ++d) *dst++ = a[i * k + d];
  return out;
}

// C = A * B through one copy's panel-level entry points; returns max |C - ref| / max(1, |ref|).
template <class PackB, class Acc>
double panel_product_error(int P, PackB pack_b, Acc acc, int64_t m, int64_t n, int64_t k, std::mt19937& rng) {
  const auto A = random_vec(static_cast<size_t>(m * k), rng), B = random_vec(static_cast<size_t>(k * n), rng);
  // Packed operands 64-byte aligned, as the callers' workspaces are (Eigen loads them aligned).
  std::vector<float> pb(static_cast<size_t>(n * k) + 64), pa(static_cast<size_t>(m * k) + 16);
  std::vector<float> C(static_cast<size_t>(m * n), 0.0f);
  float* pbp = cpu::detail::align_ptr(pb.data());
  float* pap = cpu::detail::align_ptr(pa.data());
  pack_b(pbp, B.data(), n, k, n);
  const auto rows = pack_rows(A, m, k, P);
  std::copy(rows.begin(), rows.end(), pap);
  acc(C.data(), n, pap, pbp, m, n, k);
  double err = 0, mag = 1;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0;
      for (int64_t d = 0; d < k; ++d) ref += double(A[i * k + d]) * B[d * n + j];
      err = std::max(err, std::fabs(C[i * n + j] - ref));
      mag = std::max(mag, std::fabs(ref));
    }
  return err / mag;
}

}  // namespace

TEST_CASE("the CPU path is named and GPEN_CPU_ISA is honoured") {
  const cpu::Isa isa = cpu::cpu_isa();
  const std::string name = cpu::isa_name(isa);
  CHECK((name == "avx2" || name == "avx512" || name == "neon" || name == "generic"));
  if (const char* env = std::getenv("GPEN_CPU_ISA")) CHECK(name == std::string(env));
  if (isa == cpu::Isa::avx512) CHECK(cpu::cpu_has_avx512());
  // Two FMA pipes x 2 flops x lanes: 16, 8, 4 (NEON's 128 bits); the generic path counts scalar.
  const int flops = name == "avx512" ? 64 : name == "avx2" ? 32 : name == "neon" ? 16 : 4;
  CHECK(cpu::isa_flops_per_cycle(isa) == flops);
}

TEST_CASE("the measured FMA peak of the path in use is a rate, and none without threads") {
  // Not a timing assertion: only that the loop ran on the path's vectors and gave a finite,
  // positive rate (the profile divides by it).
  const double one = cpu::measured_fma_peak_gflops(1);
  CHECK(std::isfinite(one));
  CHECK(one > 0.0);
  CHECK(cpu::measured_fma_peak_gflops(0) == 0.0);
}

TEST_CASE("each ISA copy of the panel GEMM computes the product") {
  std::mt19937 rng(11);
  const std::vector<std::array<int64_t, 3>> shapes{{1, 1, 1}, {13, 7, 5}, {40, 72, 300}, {9, 260, 33}};
  for (const auto& [m, n, k] : shapes) {
    CAPTURE(m);
    CAPTURE(n);
    CAPTURE(k);
    CHECK(panel_product_error(cpu::detail::isa_base::gemm_row_panel(), cpu::detail::isa_base::gemm_pack_b,
                              cpu::detail::isa_base::gemm_packed_acc, m, n, k, rng) <= 1e-5);
#if GPEN_HAVE_AVX512_KERNELS
    if (cpu::cpu_has_avx512()) {
      CHECK(cpu::detail::isa_avx512::gemm_row_panel() <= cpu::detail::kMaxRowPanel);
      CHECK(panel_product_error(cpu::detail::isa_avx512::gemm_row_panel(), cpu::detail::isa_avx512::gemm_pack_b,
                                cpu::detail::isa_avx512::gemm_packed_acc, m, n, k, rng) <= 1e-5);
    }
#endif
  }
}

TEST_CASE("the AVX-512 modconv micro-kernel gives the AVX2 kernel's bits over two panels") {
#if GPEN_HAVE_AVX512_KERNELS
  if (!cpu::cpu_has_avx512()) return;
  using namespace cpu::modconv_detail;
  std::mt19937 rng(3);
  // Three segments of different lengths, rows of A scattered through a band, two 16-column
  // panels kdim floats apart.
  const int64_t kdim = 97, lda_band = 4096;
  const auto band = random_vec(static_cast<size_t>(lda_band), rng);
  const auto panels = random_vec(static_cast<size_t>(2 * kdim * kNR), rng);
  KBlock kb;
  const int lens[3] = {40, 1, 56};
  int64_t row = 0;
  for (int s = 0; s < 3; ++s) {
    kb.a_off[s] = 300 * s + 7;
    kb.b_off[s] = row * kNR;
    kb.seg_len[s] = lens[s];
    row += lens[s];
    ++kb.nseg;
  }
  const int64_t base[kMR] = {0, 101, 205, 1030, 2051, 3001};
  const float* bseg[kMaxSeg];
  for (int s = 0; s < kb.nseg; ++s) bseg[s] = panels.data() + kb.b_off[s];
  for (bool acc : {false, true}) {
    CAPTURE(acc);
    const int64_t ldc = 48;
    auto c0 = random_vec(static_cast<size_t>(kMR * ldc), rng);
    auto c1 = c0;
    // Baseline: each panel on its own (two 8-wide halves); AVX-512: both panels in one call.
    isa_base::micro_kernel(kb, band.data(), base, bseg, kNR, 8, 0, c0.data(), ldc, acc);
    const float* bseg2[kMaxSeg];
    for (int s = 0; s < kb.nseg; ++s) bseg2[s] = bseg[s] + kdim * kNR;
    isa_base::micro_kernel(kb, band.data(), base, bseg2, kNR, 8, 0, c0.data() + kNR, ldc, acc);
    isa_avx512::micro_kernel(kb, band.data(), base, bseg, kNR, kdim * kNR, kdim * kNR * 2, c1.data(), ldc, acc);
    CHECK(std::memcmp(c0.data(), c1.data(), c0.size() * sizeof(float)) == 0);
  }
#endif
}

TEST_CASE("the AVX-512 tail micro-kernel gives the 6-row kernel's bits on its 1-4 rows") {
#if GPEN_HAVE_AVX512_KERNELS
  if (!cpu::cpu_has_avx512()) return;
  using namespace cpu::modconv_detail;
  std::mt19937 rng(5);
  // One segment, rows lda floats apart (a Winograd point GEMM's A), two panels kdim rows apart.
  const int64_t len = 53, lda = 71, kdim = 64;
  const auto a = random_vec(static_cast<size_t>(kMR * lda), rng);
  const auto panels = random_vec(static_cast<size_t>(2 * kdim * kNR), rng);
  KBlock kb;
  kb.nseg = 1;
  kb.len = kb.seg_len[0] = static_cast<int>(len);
  kb.a_off[0] = kb.b_off[0] = 0;
  const int64_t base[kMR] = {0, lda, 2 * lda, 3 * lda, 4 * lda, 5 * lda};
  const float* bseg[kMaxSeg] = {panels.data()};
  for (bool acc : {false, true})
    for (int rows = 1; rows <= 4; ++rows) {
      CAPTURE(acc);
      CAPTURE(rows);
      const int64_t ldc = 40;
      const auto start = random_vec(static_cast<size_t>(kMR * ldc), rng);
      auto six = start, tail = start;
      isa_avx512::micro_kernel(kb, a.data(), base, bseg, kNR, kdim * kNR, 0, six.data(), ldc, acc);
      isa_avx512::micro_kernel_tail(rows, a.data(), lda, len, panels.data(), kdim * kNR, tail.data(), ldc, acc);
      // The tail's rows are the 6-row tile's; it leaves the rows past them alone.
      CHECK(std::memcmp(six.data(), tail.data(), static_cast<size_t>(rows * ldc) * sizeof(float)) == 0);
      CHECK(std::memcmp(start.data() + rows * ldc, tail.data() + rows * ldc,
                        static_cast<size_t>((kMR - rows) * ldc) * sizeof(float)) == 0);
    }
#endif
}
