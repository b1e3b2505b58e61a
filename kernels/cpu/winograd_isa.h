#pragma once
// The per-ISA pieces both Winograd kernels share (winograd_kernel.cpp, stride 1;
// winograd_up_kernel.cpp, the polyphase transposed conv): the unrolled transform products and the
// general prologue load. Internal linkage, as isa_vec.h.
#include "kernels/cpu/isa_vec.h"
#include "kernels/cpu/modconv_internal.h"
#include "kernels/cpu/winograd.h"

namespace gpen::cpu::winograd_detail::GPEN_ISA_NS {
namespace {

using namespace gpen::cpu::GPEN_ISA_NS::simd;

// out[r * os] = sum_k mat[r][k] * in[k * is]. Fully unrolled, the coefficients are constants, so
// the zero terms vanish and the +-1 ones are plain adds.
template <int R, int K>
inline void lincomb(const float (&mat)[R][K], const vf* in, int is, vf* out, int os) {
#pragma GCC unroll 9
  for (int r = 0; r < R; ++r) {
    vf acc = {};
    bool first = true;
#pragma GCC unroll 9
    for (int k = 0; k < K; ++k) {
      const float c = mat[r][k];
      if (c == 0.0f) continue;
      const vf t = c == 1.0f ? in[k * is] : c == -1.0f ? -in[k * is] : c * in[k * is];
      acc = first ? t : acc + t;
      first = false;
    }
    out[r * os] = acc;
  }
}

// The 2-D transform mat . X . mat^T of one K x K tile of vectors: load(i, j) gives X[i][j],
// store(q, p, v) takes the result's point (q, p), q, p < R. Each row is transformed along x as
// soon as it is loaded and each column along y straight into store, so only the K x R
// intermediate passes through memory (the whole tile in and out would spill 3 K^2 vectors).
template <int R, int K, class Load, class Store>
inline void transform2d(const float (&mat)[R][K], Load&& load, Store&& store) {
  vf u[K * R];
#pragma GCC unroll 9
  for (int i = 0; i < K; ++i) {
    vf d[K];
#pragma GCC unroll 9
    for (int j = 0; j < K; ++j) d[j] = load(i, j);
    lincomb(mat, d, 1, u + i * R, 1);  // along x: u[i][p]
  }
#pragma GCC unroll 9
  for (int p = 0; p < R; ++p) {
    vf col[R];
    lincomb(mat, u + p, R, col, 1);  // along y
#pragma GCC unroll 9
    for (int q = 0; q < R; ++q) store(q, p, col[q]);
  }
}

// Channels [c, c + L) of the conv's input at one pixel (xp, x2p: its rows in x and x2) with the
// prologue applied, zero past `cend`: x * s for c < C1, act2(x2 * scale + bias2) * s * gain2
// above. The general case (a vector across the concat boundary, a K-block tail, channel strides);
// the input transforms have the fast paths.
inline vf load_input_any(const WinoPlan& pl, const WinoArgs& a, const float* xp, const float* x2p, int64_t c,
                         int64_t cend, const float* sv, const float* gs2, const float* b2v, float* tmp) {
  for (int q = 0; q < L; ++q) {
    const int64_t ch = c + q;
    if (ch >= cend) {
      tmp[q] = 0.0f;
    } else if (ch < pl.C1) {
      tmp[q] = xp[ch * a.xs3] * sv[ch];
    } else {
      const int64_t c2 = ch - pl.C1;
      const float t = x2p[c2 * a.x2s3] * a.x2_scale + b2v[c2];
      tmp[q] = t * (t < 0.0f ? a.x2_slope : 1.0f) * gs2[c2];
    }
  }
  return vld(tmp);
}

// m[xi][t][j] (+)= sum over the K block [k0, k1) of A[xi][t][.] * B[xi][.][j], j < nco, for the
// T tiles: A of point xi starts at a + xi * a_xi (rows kcs apart), B's 16-column panels of point xi
// at b + xi * b_xi, pstride apart; m of point xi at mbuf + xi * m_xi (rows cc apart). One loop for
// the grouped and the fused forms' layouts and the stride-2 conv's (winograd_s2_kernel.cpp).
inline void point_gemms(const WinoPlan& pl, float* mbuf, int64_t m_xi, const float* a, int64_t a_xi, const float* b,
                        int64_t b_xi, int64_t pstride, int64_t nco, int64_t k0, int64_t k1) {
  using modconv_detail::KBlock;
  using modconv_detail::kMR;
  KBlock kb;
  kb.nseg = 1;
  kb.len = static_cast<int>(k1 - k0);
  kb.a_off[0] = 0;
  kb.seg_len[0] = kb.len;
  int64_t base[kFusedMaxTiles];  // at least kMaxTileBlock and kS2MaxTileBlock
  for (int64_t r = 0; r < pl.T; ++r) base[r] = r * pl.kcs;
  const bool acc = k0 > 0;
  const int64_t ldc = pl.cc;
  for (int xi = 0; xi < pl.nxi; ++xi) {
    const float* band = a + xi * a_xi;
    for (int64_t j = 0; j < nco;) {
      const float* bseg[1] = {b + xi * b_xi + (j / 16) * pstride};
      float* c = mbuf + xi * m_xi + j;
#if GPEN_ISA_AVX512
      if (j + 16 < nco) {  // two panels per call at 16 lanes
        for (int64_t mt = 0; mt < pl.T; mt += kMR)
          modconv_detail::isa_avx512::micro_kernel(kb, band, base + mt, bseg, 16, pstride, 0, c + mt * ldc, ldc,
                                                   acc);
        j += 32;
        continue;
      }
#endif
      for (int64_t mt = 0; mt < pl.T; mt += kMR)
        modconv_detail::isa_base::micro_kernel(kb, band, base + mt, bseg, 16, 8, 0, c + mt * ldc, ldc, acc);
      j += 16;
    }
  }
}

}  // namespace
}  // namespace gpen::cpu::winograd_detail::GPEN_ISA_NS
