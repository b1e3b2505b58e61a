#pragma once
// The per-ISA pieces the Winograd kernels share (winograd_kernel.cpp, stride 1;
// winograd_s2_kernel.cpp, the polyphase stride 2; winograd_up_kernel.cpp, the polyphase transposed
// conv): the unrolled transform products, the weight transform, the prologue load, the output
// epilogue and the point GEMMs. Internal linkage, as isa_vec.h.
#include "engine/core/quant8.h"
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

// Panels `panel` .. `panel` + NP - 1 (output channels o0 .. o0 + 16 NP - 1, zero past Co) of the
// transformed weight G W G^T for input channels [c0, c1), G one form's R x 3 filter transform,
// point xi of channel c of panel panel + j at dst + j * dst_pstride + (xi * xi_rows + c - c_base)
// * 16. The nine taps are read as f32 or dequantised from 8-bit codes (per-channel or per-group
// scales of reduction row (tap, c)). On the f32 fast path the tap loads are unrolled: each is its
// own instruction with a fixed stride (one weight row per channel), which the hardware
// prefetchers learn per instruction, and NP whole lines of each row; the loop that had one load
// instruction for all nine streams stalled on them, even with a software prefetch (1.3-1.44x on
// the fused layers, docs/benchmarks.md). One loop for the stride-1, stride-2 and
// transposed forms. Each tap row also asks for its line kWeightAhead channels on: the rows of
// consecutive channels lie Co floats apart, nine such streams at once, and the fused forms (one
// channel of every panel pair per call) otherwise wait on them: GPEN-256's fused layers 2-14 %
// faster in the graph (docs/benchmarks.md). Each store likewise asks for its point's
// line one channel on: the 36-81 point rows are store streams, more than the hardware tracks, and
// every line otherwise waits for ownership from L2 as the store reaches it (the transform's share
// of the fused layers about 14 % smaller, of the grouped ones 15 %: docs/benchmarks.md).
constexpr int64_t kWeightAhead = 4;
template <int R, int NP = 1>
inline void transform_weight_panel(const WinoPlan& pl, const WinoArgs& a, const float (&G)[R][3], int64_t panel,
                                   int64_t c0, int64_t c1, float* dst, int64_t xi_rows, int64_t c_base,
                                   int64_t dst_pstride = 0) {
  constexpr int VP = 16 / L, V = NP * VP;
  const int64_t o0 = panel * 16;
  const bool fast = !a.w8 && a.ws3 == 1 && o0 + 16 * NP <= pl.Co;
  if constexpr (NP > 1) {
    if (!fast) {
      for (int j = 0; j < NP; ++j)
        transform_weight_panel<R>(pl, a, G, panel + j, c0, c1, dst + j * dst_pstride, xi_rows, c_base);
      return;
    }
  }
  float tmp[16];
  for (int64_t c = c0; c < c1; ++c) {
    vf g[9][V];  // taps
    if (fast) {
#pragma GCC unroll 9
      for (int t = 0; t < 9; ++t) {
        const float* src = a.w + (t / 3) * a.ws0 + (t % 3) * a.ws1 + c * a.ws2 + o0;
        for (int h2 = 0; h2 < V; ++h2) g[t][h2] = vld(src + h2 * L);
        if (c + kWeightAhead < pl.C)
          for (int h = 0; h < NP; ++h) __builtin_prefetch(src + kWeightAhead * a.ws2 + h * 16);
      }
    } else if constexpr (NP == 1) {
      for (int t = 0; t < 9; ++t) {
        const int64_t off = (t / 3) * a.ws0 + (t % 3) * a.ws1 + c * a.ws2;
        if (a.w8) {
          const float* sc = a.wscale + q8_scale_index(t * a.wcin + c, 0, pl.Co, a.wgroup);
          for (int q = 0; q < 16; ++q)
            tmp[q] = o0 + q < pl.Co ? q8_dequant(a.w8[off + (o0 + q) * a.ws3], a.fp8, sc[o0 + q]) : 0.0f;
        } else {
          const float* src = a.w + off;
          for (int q = 0; q < 16; ++q) tmp[q] = o0 + q < pl.Co ? src[(o0 + q) * a.ws3] : 0.0f;
        }
        for (int h2 = 0; h2 < V; ++h2) g[t][h2] = vld(tmp + h2 * L);
      }
    }
    // The store prefetch: once per 16-float row (the AVX2 path stores each in two halves), while
    // the next channel's rows are still in dst.
    const bool ahead = c - c_base + 1 < xi_rows;
    // Transposed in and out, so the sums run along ky first, as they always have (the bits stay).
    for (int h2 = 0; h2 < V; ++h2) {
      float* d = dst + (h2 / VP) * dst_pstride + (c - c_base) * 16 + (h2 % VP) * L;
      const bool pf = ahead && h2 % VP == 0;
      transform2d(G, [&](int kx, int ky) { return g[ky * 3 + kx][h2]; },
                  [&](int q, int p, vf v) {
                    float* dp = d + (p * R + q) * xi_rows * 16;
                    if (pf) __builtin_prefetch(dp + 16, 1, 3);
                    vst(dp, v);
                  });
    }
  }
}

// transform_weight_panel for np (1 or 2) panels from `panel`, the second dst_pstride floats on;
// two per call read whole 128-byte pieces of each weight row. The grouped forms pass their layout
// ([panel][xi][C][16]: pl.C, 0, pl.pstride), the fused form its slice's.
template <int R>
inline void transform_weight_panels(const WinoPlan& pl, const WinoArgs& a, const float (&G)[R][3], int64_t panel,
                                    int np, int64_t c0, int64_t c1, float* dst, int64_t xi_rows, int64_t c_base,
                                    int64_t dst_pstride) {
  if (np == 2)
    transform_weight_panel<R, 2>(pl, a, G, panel, c0, c1, dst, xi_rows, c_base, dst_pstride);
  else
    transform_weight_panel<R>(pl, a, G, panel, c0, c1, dst, xi_rows, c_base);
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

// Channels [o, o + lanes) of one output pixel (yp, rp: its rows in y and the residual, rp null
// for none) from v, the conv's value before the activation: act(v) + residual, act(v) = v * (v <
// 0 ? vn : vp). dense: unit channel strides in y and the residual. The epilogue of the stride-1
// and the stride-2 output transforms.
inline void store_output_pixel(const WinoArgs& a, float* yp, const float* rp, int64_t o, int64_t lanes, bool dense,
                               vf v, vf vp, vf vn, float* tmp) {
  vf out = v * (v < vf{} ? vn : vp);
  yp += o * a.ys3;
  if (rp) rp += o * a.rs3;
  if (lanes == L && dense) {
    if (rp) out += vld(rp);  // read before the store: the residual may be the output
    vst(yp, out);
    return;
  }
  vst(tmp, out);
  for (int64_t q2 = 0; q2 < lanes; ++q2) yp[q2 * a.ys3] = tmp[q2] + (rp ? rp[q2 * a.rs3] : 0.0f);
}

// Calls tile(load) with load(e) giving channels [c, c + L) of tile pixel e (px[e], px2[e]: its
// rows in x and x2, null outside the image: zero) with the prologue applied, as load_input_any,
// by the fast path of the channel range where there is one. nxt, nxt2: the same pixel of the next
// tile in x and x2, prefetched by hand (a tile's pixels are more streams than the hardware
// prefetchers follow). Shared by the stride-1 and the transposed forms' input transforms.
template <class Tile>
inline void with_prologue_load(const WinoPlan& pl, const WinoArgs& a, const float* const* px, const float* const* px2,
                               int64_t c, int64_t k1, int64_t nxt, int64_t nxt2, const float* sv, const float* gs2,
                               const float* b2v, float* tmp, Tile&& tile) {
  if (c + L <= k1 && c + L <= pl.C1 && a.xs3 == 1) {
    const vf sc = vld(sv + c);
    tile([&](int e) {
      if (!px[e]) return vf{};
      __builtin_prefetch(px[e] + nxt + c);
      return vld(px[e] + c) * sc;
    });
  } else if (c + L <= k1 && c >= pl.C1 && a.x2s3 == 1) {
    const int64_t c2 = c - pl.C1;
    const vf gs = vld(gs2 + c2), b2 = vld(b2v + c2), one = splat(1.0f), slope = splat(a.x2_slope);
    tile([&](int e) {
      if (!px2[e]) return vf{};
      __builtin_prefetch(px2[e] + nxt2 + c2);
      const vf tv = vld(px2[e] + c2) * a.x2_scale + b2;
      return tv * (tv < vf{} ? slope : one) * gs;
    });
  } else {
    tile([&](int e) { return px[e] ? load_input_any(pl, a, px[e], px2[e], c, k1, sv, gs2, b2v, tmp) : vf{}; });
  }
}

inline bool evenly_spaced(const int64_t* r, int64_t n) {
  for (int64_t q = 2; q < n; ++q)
    if (r[q] - r[0] != q * (r[1] - r[0])) return false;
  return true;
}

// c[r][j] (+)= sum over kb of A[r][.] * B[.][j] for rows r < nrows, j < nco: A row r at band +
// base[r], B's 16-column panels at b, pstride apart (rows 16 floats apart), c's rows ldc apart.
// Rows run in tiles of 6 (12 where evenly spaced, on AVX-512), so rows up to nrows rounded up to 6
// are computed and base must name them; on AVX-512 a last 1-4 evenly spaced rows run alone
// (micro_kernel_tail), so the fused forms' 16 and 64 tiles compute no padding rows. The inner loop
// of point_gemms and of the transposed form's rim GEMMs, whose rows are gathered from several points.
inline void rows_gemm(const modconv_detail::KBlock& kb, const float* band, const int64_t* base, int64_t nrows,
                      const float* b, int64_t pstride, float* c, int64_t ldc, int64_t nco, bool acc) {
  using modconv_detail::kMR;
#if GPEN_ISA_AVX512
  // The leading rows that run as 12-row tiles (whole blocks of 12 evenly spaced rows), and whether
  // the 1-4 rows past the whole 6-row tiles run alone: the same for every panel pair, so found once.
  int64_t rows12 = 0;
  while (kb.nseg == 1 && rows12 + 2 * kMR <= nrows && evenly_spaced(base + rows12, 2 * kMR)) rows12 += 2 * kMR;
  const int64_t tail0 = rows12 + (nrows - rows12) / kMR * kMR, tail = nrows - tail0;
  const bool alone = tail > 0 && tail <= 4 && kb.nseg == 1 && evenly_spaced(base + tail0, tail);
  const int64_t rows6_end = alone ? tail0 : nrows;
#endif
  for (int64_t j = 0; j < nco;) {
    const float* bseg[1] = {b + (j / 16) * pstride};
#if GPEN_ISA_AVX512
    if (j + 16 < nco) {  // two panels per call at 16 lanes
      int64_t mt = 0;
      for (; mt < rows12; mt += 2 * kMR)
        modconv_detail::isa_avx512::micro_kernel12(band + base[mt] + kb.a_off[0], base[mt + 1] - base[mt],
                                                   kb.seg_len[0], bseg[0], pstride, c + j + mt * ldc, ldc, acc);
      for (; mt < rows6_end; mt += kMR)
        modconv_detail::isa_avx512::micro_kernel(kb, band, base + mt, bseg, 16, pstride, 0, c + j + mt * ldc, ldc,
                                                 acc);
      if (alone)
        modconv_detail::isa_avx512::micro_kernel_tail(static_cast<int>(tail), band + base[tail0] + kb.a_off[0],
                                                      tail > 1 ? base[tail0 + 1] - base[tail0] : 0, kb.seg_len[0],
                                                      bseg[0], pstride, c + j + tail0 * ldc, ldc, acc);
      j += 32;
      continue;
    }
#endif
    for (int64_t mt = 0; mt < nrows; mt += kMR)
      modconv_detail::isa_base::micro_kernel(kb, band, base + mt, bseg, 16, 8, 0, c + j + mt * ldc, ldc, acc);
    j += 16;
  }
}

// The point GEMMs' rows for the block from tile t0: its tiles, not the padding past the last one
// (T rounds a fused form's tiles up to 6; a grouped form's last block may hold a single tile),
// whose rows the input transform zeroes and no output transform reads.
inline int64_t block_rows(const WinoPlan& pl, int64_t t0) { return lmin(pl.T, pl.ntiles - t0); }

// One K block [k0, k1) for the micro-kernel: a single segment, A's columns from the row start.
inline modconv_detail::KBlock one_segment(int64_t k0, int64_t k1) {
  modconv_detail::KBlock kb;
  kb.nseg = 1;
  kb.len = static_cast<int>(k1 - k0);
  kb.a_off[0] = 0;
  kb.seg_len[0] = kb.len;
  return kb;
}

// m[xi][t][j] (+)= sum over the K block [k0, k1) of A[xi][t][.] * B[xi][.][j], j < nco, for the
// tiles of the block from tile t0 (block_rows): A of point xi starts at a + xi * a_xi (rows kcs
// apart), B's 16-column panels of point xi at b + xi * b_xi, pstride apart; m of point xi at mbuf +
// xi * m_xi (rows cc apart). One loop for the grouped and the fused forms' layouts and the
// stride-2 conv's (winograd_s2_kernel.cpp).
inline void point_gemms(const WinoPlan& pl, int64_t t0, float* mbuf, int64_t m_xi, const float* a, int64_t a_xi,
                        const float* b, int64_t b_xi, int64_t pstride, int64_t nco, int64_t k0, int64_t k1) {
  const modconv_detail::KBlock kb = one_segment(k0, k1);
  int64_t base[kFusedMaxTiles];  // at least kMaxTileBlock and kS2MaxTileBlock
  for (int64_t r = 0; r < pl.T; ++r) base[r] = r * pl.kcs;
  const int64_t rows = block_rows(pl, t0);
  for (int xi = 0; xi < pl.nxi; ++xi)
    rows_gemm(kb, a + xi * a_xi, base, rows, b + xi * b_xi, pstride, mbuf + xi * m_xi, pl.cc, nco, k0 > 0);
}

// The transposed form's point GEMMs (winograd_up_kernel.cpp): P x P points of which the last P - D
// per axis (the odd-phase copies) share the weight point D - 1: m[xi][t][j] (+)= sum over the K
// block [k0, k1) of v[xi][t][.] * U[wp(xi)][.][j] for the block's tiles from t0, j < nco, point
// (py, px) taking U's (min(py, D - 1), min(px, D - 1)). v's points vs floats apart (rows kcs apart), m's
// ms apart (rows cc apart), U's point wp at u + wp * u_wp (its 16-column panels pstride apart).
// By weight point, so the points that share one read it from L1. keep(xi): whether to run point
// xi (a thread of the fused transposed form runs its own points only).
template <int D, int P, class Keep>
inline void shared_point_gemms(const WinoPlan& pl, int64_t t0, const float* v, int64_t vs, const float* u, int64_t u_wp,
                               int64_t pstride, float* m, int64_t ms, int64_t nco, int64_t k0, int64_t k1,
                               Keep&& keep) {
  const modconv_detail::KBlock kbl = one_segment(k0, k1);
  int64_t base[kFusedMaxTiles];
  for (int64_t r = 0; r < pl.T; ++r) base[r] = r * pl.kcs;
  const int64_t rows = block_rows(pl, t0);
  for (int qy = 0; qy < D; ++qy)
    for (int qx = 0; qx < D; ++qx)
      for (int py = qy; py < (qy < D - 1 ? qy + 1 : P); ++py)
        for (int px = qx; px < (qx < D - 1 ? qx + 1 : P); ++px)
          if (keep(py * P + px))
            rows_gemm(kbl, v + (py * P + px) * vs, base, rows, u + (qy * D + qx) * u_wp, pstride,
                      m + (py * P + px) * ms, pl.cc, nco, k0 > 0);
}

}  // namespace
}  // namespace gpen::cpu::winograd_detail::GPEN_ISA_NS
