// The modconv GEMM micro-kernel, compiled once per ISA (isa_ns.h): a 6-pixel x 2-vector
// register tile, C[6 x 2L] (+)= A[6 x len] * B[len x 2L], L the vector's lanes. The baseline copy
// (AVX2, L = 8) covers one 16-column weight panel with its two halves; the AVX-512 copy (L = 16)
// covers two neighbouring panels at once, the same 12 accumulators and 8 loads per 12 FMAs at
// twice the width. Each output column sums its products in the same order on both paths, so
// the two give the same bits. The AVX-512 copy also has the Winograd point GEMMs' 12-row tile and
// their 1-4 row tail, in the same order again.
#include "kernels/cpu/isa_ns.h"
#include "kernels/cpu/modconv_internal.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define GPEN_MODCONV_SIMD 1
#elif defined(__aarch64__)
// NEON: the baseline's tile on the vector extension's 8 floats (two 128-bit registers each), so
// the panels, the blocking and the order of every sum are the AVX2 path's.
#include "kernels/cpu/isa_vec.h"
#define GPEN_MODCONV_SIMD 1
#endif

namespace gpen::cpu::modconv_detail::GPEN_ISA_NS {

namespace {

#if GPEN_ISA_AVX512
using V = __m512;
inline V vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, V v) { _mm512_storeu_ps(p, v); }
inline V vbcast(const float* p) { return _mm512_set1_ps(*p); }
inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
inline V vzero() { return _mm512_setzero_ps(); }
#elif GPEN_MODCONV_SIMD && defined(__AVX2__)
using V = __m256;
inline V vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, V v) { _mm256_storeu_ps(p, v); }
inline V vbcast(const float* p) { return _mm256_broadcast_ss(p); }
inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline V vzero() { return _mm256_setzero_ps(); }
#elif GPEN_MODCONV_SIMD
namespace simd = gpen::cpu::GPEN_ISA_NS::simd;
using V = simd::vf;
inline V vload(const float* p) { return simd::vld(p); }
inline void vstore(float* p, V v) { simd::vst(p, v); }
inline V vbcast(const float* p) { return simd::splat(*p); }
inline V vfma(V a, V b, V c) { return simd::vfmadd(a, b, c); }
inline V vzero() { return V{}; }
#endif
// Into L2 (x86's T1 hint).
inline void prefetch_l2(const float* p) {
#if defined(__x86_64__)
  _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T1);
#else
  __builtin_prefetch(p, 0, 2);
#endif
}

#if GPEN_ISA_AVX512 || GPEN_MODCONV_SIMD
template <bool kPrefetch>
inline void tile(const KBlock& kb, const float* band, const int64_t* base, const float* const* bseg, int64_t ldb,
                 int64_t b2, int64_t pf_delta, float* c, int64_t ldc, bool accumulate) {
  constexpr int L = sizeof(V) / sizeof(float);
  V c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
  if (accumulate) {
    c00 = vload(c + 0 * ldc), c01 = vload(c + 0 * ldc + L);
    c10 = vload(c + 1 * ldc), c11 = vload(c + 1 * ldc + L);
    c20 = vload(c + 2 * ldc), c21 = vload(c + 2 * ldc + L);
    c30 = vload(c + 3 * ldc), c31 = vload(c + 3 * ldc + L);
    c40 = vload(c + 4 * ldc), c41 = vload(c + 4 * ldc + L);
    c50 = vload(c + 5 * ldc), c51 = vload(c + 5 * ldc + L);
  } else {
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = vzero();
  }
  for (int s = 0; s < kb.nseg; ++s) {
    const int64_t off = kb.a_off[s];
    const float* a0 = band + base[0] + off;
    const float* a1 = band + base[1] + off;
    const float* a2 = band + base[2] + off;
    const float* a3 = band + base[3] + off;
    const float* a4 = band + base[4] + off;
    const float* a5 = band + base[5] + off;
    const int len = kb.seg_len[s];
    const float* bp = bseg[s];
#pragma GCC unroll 2
    for (int i = 0; i < len; ++i) {
      if constexpr (kPrefetch) {
        prefetch_l2(bp + pf_delta);
        if constexpr (L == 16) prefetch_l2(bp + b2 + pf_delta);
      }
      const V b0 = vload(bp);
      const V b1 = vload(bp + b2);
      bp += ldb;
      V a = vbcast(a0 + i);
      c00 = vfma(a, b0, c00), c01 = vfma(a, b1, c01);
      a = vbcast(a1 + i);
      c10 = vfma(a, b0, c10), c11 = vfma(a, b1, c11);
      a = vbcast(a2 + i);
      c20 = vfma(a, b0, c20), c21 = vfma(a, b1, c21);
      a = vbcast(a3 + i);
      c30 = vfma(a, b0, c30), c31 = vfma(a, b1, c31);
      a = vbcast(a4 + i);
      c40 = vfma(a, b0, c40), c41 = vfma(a, b1, c41);
      a = vbcast(a5 + i);
      c50 = vfma(a, b0, c50), c51 = vfma(a, b1, c51);
    }
  }
  vstore(c + 0 * ldc, c00), vstore(c + 0 * ldc + L, c01);
  vstore(c + 1 * ldc, c10), vstore(c + 1 * ldc + L, c11);
  vstore(c + 2 * ldc, c20), vstore(c + 2 * ldc + L, c21);
  vstore(c + 3 * ldc, c30), vstore(c + 3 * ldc + L, c31);
  vstore(c + 4 * ldc, c40), vstore(c + 4 * ldc + L, c41);
  vstore(c + 5 * ldc, c50), vstore(c + 5 * ldc + L, c51);
}
#endif

}  // namespace

#if GPEN_ISA_AVX512 || GPEN_MODCONV_SIMD
__attribute__((noinline)) void micro_kernel(const KBlock& kb, const float* band, const int64_t* base,
                                            const float* const* bseg, int64_t ldb, int64_t b2, int64_t pf_delta,
                                            float* c, int64_t ldc, bool accumulate) {
  if (pf_delta)
    tile<true>(kb, band, base, bseg, ldb, b2, pf_delta, c, ldc, accumulate);
  else
    tile<false>(kb, band, base, bseg, ldb, b2, 0, c, ldc, accumulate);
}
#if GPEN_ISA_AVX512
// 12 rows x 2 panels, 24 accumulators: 14 loads per 24 FMAs where the 6-row tile has 8 per 12,
// for A rows lda floats apart in one segment (the Winograd point GEMMs). Four row pointers with
// lda in a register address the 12 rows ([p], [p + lda], [p + 2 lda]); more would spill. Each
// column sums in the 6-row tile's order: the same bits.
__attribute__((noinline)) void micro_kernel12(const float* a, int64_t lda, int64_t len, const float* b, int64_t b2,
                                              float* c, int64_t ldc, bool accumulate) {
  V acc[24];
#pragma GCC unroll 12
  for (int r = 0; r < 12; ++r) {
    acc[2 * r] = accumulate ? vload(c + r * ldc) : vzero();
    acc[2 * r + 1] = accumulate ? vload(c + r * ldc + 16) : vzero();
  }
  const float* p0 = a;
  const float* p1 = a + 3 * lda;
  const float* p2 = a + 6 * lda;
  const float* p3 = a + 9 * lda;
  for (int64_t i = 0; i < len; ++i) {
    const V b0 = vload(b), b1 = vload(b + b2);
    b += 16;
    const float* p[4] = {p0, p1, p2, p3};
#pragma GCC unroll 12
    for (int r = 0; r < 12; ++r) {
      const V av = vbcast(p[r / 3] + (r % 3) * lda);
      acc[2 * r] = vfma(av, b0, acc[2 * r]);
      acc[2 * r + 1] = vfma(av, b1, acc[2 * r + 1]);
    }
    ++p0, ++p1, ++p2, ++p3;
  }
#pragma GCC unroll 12
  for (int r = 0; r < 12; ++r) vstore(c + r * ldc, acc[2 * r]), vstore(c + r * ldc + 16, acc[2 * r + 1]);
}
// Each column sums as in the 6-row tile (the same bits); R rows, 2R accumulators.
template <int R>
inline void tail_tile(const float* a, int64_t lda, int64_t len, const float* b, int64_t b2, float* c, int64_t ldc,
                      bool accumulate) {
  V acc[2 * R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    acc[2 * r] = accumulate ? vload(c + r * ldc) : vzero();
    acc[2 * r + 1] = accumulate ? vload(c + r * ldc + 16) : vzero();
  }
  for (int64_t i = 0; i < len; ++i) {
    const V b0 = vload(b), b1 = vload(b + b2);
    b += 16;
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const V av = vbcast(a + r * lda + i);
      acc[2 * r] = vfma(av, b0, acc[2 * r]);
      acc[2 * r + 1] = vfma(av, b1, acc[2 * r + 1]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) vstore(c + r * ldc, acc[2 * r]), vstore(c + r * ldc + 16, acc[2 * r + 1]);
}
__attribute__((noinline)) void micro_kernel_tail(int rows, const float* a, int64_t lda, int64_t len, const float* b,
                                                 int64_t b2, float* c, int64_t ldc, bool accumulate) {
  switch (rows) {
    case 1:
      return tail_tile<1>(a, lda, len, b, b2, c, ldc, accumulate);
    case 2:
      return tail_tile<2>(a, lda, len, b, b2, c, ldc, accumulate);
    case 3:
      return tail_tile<3>(a, lda, len, b, b2, c, ldc, accumulate);
    default:
      return tail_tile<4>(a, lda, len, b, b2, c, ldc, accumulate);
  }
}
#endif
#else
// Without AVX2 (other architectures): the same sums in scalar code, 8 + 8 columns.
void micro_kernel(const KBlock& kb, const float* band, const int64_t* base, const float* const* bseg, int64_t ldb,
                  int64_t b2, int64_t /*pf_delta*/, float* c, int64_t ldc, bool accumulate) {
  float acc[kMR][16];
  for (int r = 0; r < kMR; ++r)
    for (int j = 0; j < 16; ++j) acc[r][j] = accumulate ? c[r * ldc + j] : 0.0f;
  for (int s = 0; s < kb.nseg; ++s) {
    const float* bp = bseg[s];
    for (int i = 0; i < kb.seg_len[s]; ++i, bp += ldb)
      for (int r = 0; r < kMR; ++r) {
        const float a = band[base[r] + kb.a_off[s] + i];
        for (int j = 0; j < 16; ++j) acc[r][j] += a * bp[j < 8 ? j : b2 + j - 8];
      }
  }
  for (int r = 0; r < kMR; ++r)
    for (int j = 0; j < 16; ++j) c[r * ldc + j] = acc[r][j];
}
#endif

}  // namespace gpen::cpu::modconv_detail::GPEN_ISA_NS
