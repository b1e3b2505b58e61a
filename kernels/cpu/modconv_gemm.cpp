// The modconv GEMM core: the 6x16 register-blocked micro-kernel (AVX2/FMA, and a scalar twin) and
// its B operand, the weight packed into 16-column panels or read in place.
#include <cstring>

#include "kernels/cpu/modconv_internal.h"

namespace gpen::cpu::modconv_detail {

#if GPEN_MODCONV_AVX2
template <bool kPrefetch>
inline void micro_kernel_t(const KBlock& kb, const float* band, const int64_t* base, const float* const* bseg,
                           int64_t ldb, int64_t pf_delta, float* c, int64_t ldc, bool accumulate) {
  __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
  if (accumulate) {
    c00 = _mm256_loadu_ps(c + 0 * ldc), c01 = _mm256_loadu_ps(c + 0 * ldc + 8);
    c10 = _mm256_loadu_ps(c + 1 * ldc), c11 = _mm256_loadu_ps(c + 1 * ldc + 8);
    c20 = _mm256_loadu_ps(c + 2 * ldc), c21 = _mm256_loadu_ps(c + 2 * ldc + 8);
    c30 = _mm256_loadu_ps(c + 3 * ldc), c31 = _mm256_loadu_ps(c + 3 * ldc + 8);
    c40 = _mm256_loadu_ps(c + 4 * ldc), c41 = _mm256_loadu_ps(c + 4 * ldc + 8);
    c50 = _mm256_loadu_ps(c + 5 * ldc), c51 = _mm256_loadu_ps(c + 5 * ldc + 8);
  } else {
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
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
      if constexpr (kPrefetch) _mm_prefetch(reinterpret_cast<const char*>(bp + pf_delta), _MM_HINT_T1);
      const __m256 b0 = _mm256_loadu_ps(bp);
      const __m256 b1 = _mm256_loadu_ps(bp + 8);
      bp += ldb;
      __m256 a = _mm256_broadcast_ss(a0 + i);
      c00 = _mm256_fmadd_ps(a, b0, c00), c01 = _mm256_fmadd_ps(a, b1, c01);
      a = _mm256_broadcast_ss(a1 + i);
      c10 = _mm256_fmadd_ps(a, b0, c10), c11 = _mm256_fmadd_ps(a, b1, c11);
      a = _mm256_broadcast_ss(a2 + i);
      c20 = _mm256_fmadd_ps(a, b0, c20), c21 = _mm256_fmadd_ps(a, b1, c21);
      a = _mm256_broadcast_ss(a3 + i);
      c30 = _mm256_fmadd_ps(a, b0, c30), c31 = _mm256_fmadd_ps(a, b1, c31);
      a = _mm256_broadcast_ss(a4 + i);
      c40 = _mm256_fmadd_ps(a, b0, c40), c41 = _mm256_fmadd_ps(a, b1, c41);
      a = _mm256_broadcast_ss(a5 + i);
      c50 = _mm256_fmadd_ps(a, b0, c50), c51 = _mm256_fmadd_ps(a, b1, c51);
    }
  }
  _mm256_storeu_ps(c + 0 * ldc, c00), _mm256_storeu_ps(c + 0 * ldc + 8, c01);
  _mm256_storeu_ps(c + 1 * ldc, c10), _mm256_storeu_ps(c + 1 * ldc + 8, c11);
  _mm256_storeu_ps(c + 2 * ldc, c20), _mm256_storeu_ps(c + 2 * ldc + 8, c21);
  _mm256_storeu_ps(c + 3 * ldc, c30), _mm256_storeu_ps(c + 3 * ldc + 8, c31);
  _mm256_storeu_ps(c + 4 * ldc, c40), _mm256_storeu_ps(c + 4 * ldc + 8, c41);
  _mm256_storeu_ps(c + 5 * ldc, c50), _mm256_storeu_ps(c + 5 * ldc + 8, c51);
}

__attribute__((noinline)) void micro_kernel(const KBlock& kb, const float* band, const int64_t* base,
                                            const float* const* bseg, int64_t ldb, int64_t pf_delta, float* c,
                                            int64_t ldc, bool accumulate) {
  if (pf_delta)
    micro_kernel_t<true>(kb, band, base, bseg, ldb, pf_delta, c, ldc, accumulate);
  else
    micro_kernel_t<false>(kb, band, base, bseg, ldb, 0, c, ldc, accumulate);
}
#else
void micro_kernel(const KBlock& kb, const float* band, const int64_t* base, const float* const* bseg, int64_t ldb,
                  int64_t /*pf_delta*/, float* c, int64_t ldc, bool accumulate) {
  float acc[kMR][kNR];
  for (int r = 0; r < kMR; ++r)
    for (int j = 0; j < kNR; ++j) acc[r][j] = accumulate ? c[r * ldc + j] : 0.0f;
  for (int s = 0; s < kb.nseg; ++s) {
    const int len = kb.seg_len[s];
    const float* bp = bseg[s];
    for (int i = 0; i < len; ++i, bp += ldb)
      for (int r = 0; r < kMR; ++r) {
        const float a = band[base[r] + kb.a_off[s] + i];
        for (int j = 0; j < kNR; ++j) acc[r][j] += a * bp[j];
      }
  }
  for (int r = 0; r < kMR; ++r)
    for (int j = 0; j < kNR; ++j) c[r * ldc + j] = acc[r][j];
}
#endif

void pack_weight(const Plan& pl, const TensorView& w, int64_t j, int t0, int t1, float* packed) {
  const float* wp = w.f32();
  const int64_t s0 = w.stride(0), s1 = w.stride(1), s2 = w.stride(2), s3 = w.stride(3);
  const int64_t o0 = j * kNR;
  const bool full = o0 + kNR <= pl.Co && s3 == 1;
  float* panel = packed + j * pl.kdim * kNR;
  for (int t = t0; t < t1; ++t) {
    const int ky = t / pl.k, kx = t % pl.k;
    const float* src = wp + ky * s0 + kx * s1 + o0 * s3;
    float* dst = panel + int64_t{t} * pl.C * kNR;
    for (int64_t c = 0; c < pl.C; ++c, src += s2, dst += kNR) {
      if (full) {
        std::memcpy(dst, src, sizeof(float) * kNR);
      } else {
        for (int q = 0; q < kNR; ++q) dst[q] = o0 + q < pl.Co ? src[q * s3] : 0.0f;
      }
    }
  }
}

int64_t b_rows(const Plan& pl, const KBlock& kb, const TensorView& w, int64_t o0, const float* packed, float* bpack,
               const float** bseg) {
  if (!pl.direct_b) {
    const float* panel = packed + (o0 / kNR) * pl.kdim * kNR;
    for (int s = 0; s < kb.nseg; ++s) bseg[s] = panel + kb.b_off[s];
    return kNR;
  }
  const int64_t s0 = w.stride(0), s1 = w.stride(1), s2 = w.stride(2), s3 = w.stride(3);
  const bool whole = o0 + kNR <= pl.Co && s3 == 1;
  for (int s = 0; s < kb.nseg; ++s) {
    const float* src = w.f32() + kb.ky[s] * s0 + kb.kx[s] * s1 + kb.c0[s] * s2 + o0 * s3;
    if (whole) {
      bseg[s] = src;
      continue;
    }
    bseg[s] = bpack;
    for (int i = 0; i < kb.seg_len[s]; ++i, src += s2, bpack += kNR)
      for (int q = 0; q < kNR; ++q) bpack[q] = o0 + q < pl.Co ? src[q * s3] : 0.0f;
  }
  return whole ? s2 : kNR;
}

}  // namespace gpen::cpu::modconv_detail
