// The per-ISA half of the polyphase Winograd transposed modconv (overview: winograd_up.h),
// compiled once per ISA (isa_ns.h) like winograd_kernel.cpp, whose layout it follows: the
// transforms on vectors across channels, the (2m + 1)^2 GEMMs on the modconv micro-kernel.
// Nothing here calls an inline function of another header but the per-ISA ones of isa_vec.h and
// winograd_isa.h (scripts/check_isa_symbols.py).
#include <cstring>

#include "kernels/cpu/isa_ns.h"
#include "kernels/cpu/modconv_internal.h"
#include "kernels/cpu/winograd_up.h"
#include "kernels/cpu/winograd_isa.h"

namespace gpen::cpu::winograd_detail::GPEN_ISA_NS {

namespace {

// Floats from one point's slice of the transformed inputs (or accumulators) to the next: an odd
// number of cache lines, or the (2m + 1)^2 slices a tile's transform writes would fall in a few
// L1 sets (T kcs floats is often 2^k lines apart) and evict each other. make_wino_up_plan sizes
// the scratch with the same rule.
inline int64_t vstride(const WinoPlan& pl) { const int64_t f = pl.T * pl.kcs; return f / 16 % 2 ? f : f + 16; }
inline int64_t mstride(const WinoPlan& pl) { const int64_t f = pl.T * pl.cc; return f / 16 % 2 ? f : f + 16; }

// One axis of the transposed conv for m input positions per tile: NI = m + 1 inputs
// (x[a0 - 1 .. a0 + m - 1]), P = 2m + 1 points (F(m, 2)'s m + 1, then the m odd-phase copies),
// MO = 2m outputs (rows 2 a0 .. 2 a0 + 2m - 1, even and odd interleaved). G takes the three
// taps (W0, W1, W2): the even phase correlates (x[a - 1], x[a]) with (W2, W0).
template <int M>
struct TrUp;
template <>
struct TrUp<4> {
  static constexpr int NI = 5, P = 9, MO = 8;
  static constexpr float BT[9][5] = {{2, -1, -2, 1, 0}, {0, -2, -1, 1, 0}, {0, 2, -3, 1, 0},
                                     {0, -1, 0, 1, 0},  {0, 2, -1, -2, 1}, {0, 1, 0, 0, 0},
                                     {0, 0, 1, 0, 0},   {0, 0, 0, 1, 0},   {0, 0, 0, 0, 1}};
  static constexpr float G[9][3] = {{0, 0, 0.5f},         {-0.5f, 0, -0.5f}, {1.0f / 6, 0, -1.0f / 6},
                                    {1.0f / 3, 0, 1.0f / 6}, {1, 0, 0},         {0, 1, 0},
                                    {0, 1, 0},            {0, 1, 0},         {0, 1, 0}};
  static constexpr float AT[8][9] = {{1, 1, 1, 1, 0, 0, 0, 0, 0},  {0, 0, 0, 0, 0, 1, 0, 0, 0},
                                     {0, 1, -1, 2, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 1, 0, 0},
                                     {0, 1, 1, 4, 0, 0, 0, 0, 0},  {0, 0, 0, 0, 0, 0, 0, 1, 0},
                                     {0, 1, -1, 8, 1, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0, 0, 1}};
};
template <>
struct TrUp<2> {  // F(2, 2) on the points 0, 1, infinity
  static constexpr int NI = 3, P = 5, MO = 4;
  static constexpr float BT[5][3] = {{-1, 1, 0}, {0, 1, 0}, {0, -1, 1}, {0, 1, 0}, {0, 0, 1}};
  static constexpr float G[5][3] = {{0, 0, -1}, {1, 0, 1}, {1, 0, 0}, {0, 1, 0}, {0, 1, 0}};
  static constexpr float AT[4][5] = {{1, 1, 0, 0, 0}, {0, 0, 0, 1, 0}, {0, 1, 1, 0, 0}, {0, 0, 0, 0, 1}};
};

struct Scratch {
  float *v, *m, *sv, *b2v, *gs2, *tmp;
};

// The transformed inputs of the block's tiles for channels [k0, k1): v[xi][t][c - k0].
template <int M>
void input_transform(const WinoPlan& pl, const WinoArgs& a, int64_t t0, int64_t k0, int64_t k1, const Scratch& s,
                     int64_t& last_n) {
  constexpr int NI = TrUp<M>::NI, P = TrUp<M>::P, NN = NI * NI, PP = P * P;
  const int64_t per_img = pl.th * pl.tw;
  for (int64_t t = 0; t < pl.T; ++t) {
    const int64_t tile = t0 + t;
    if (tile >= pl.ntiles) {  // rows of the last block past the grid: zeros, their outputs unused
      for (int xi = 0; xi < PP; ++xi) std::memset(s.v + xi * vstride(pl) + t * pl.kcs, 0, sizeof(float) * pl.kcs);
      continue;
    }
    const int64_t nn = tile / per_img, r = tile % per_img;
    const int64_t y0 = (r / pl.tw) * M - 1, x0 = (r % pl.tw) * M - 1;
    if (nn != last_n) {
      for (int64_t c = 0; c < pl.C; ++c) s.sv[c] = a.s[nn * a.ss0 + c * a.ss1];
      for (int64_t c = 0; c < pl.C2; ++c) s.gs2[c] = s.sv[pl.C1 + c] * a.x2_gain;
      last_n = nn;
    }
    const float* px[NN];
    const float* px2[NN];
    for (int i = 0; i < NI; ++i)
      for (int j = 0; j < NI; ++j) {
        const int64_t iy = y0 + i, ix = x0 + j;
        const bool in = iy >= 0 && iy < pl.H && ix >= 0 && ix < pl.W;
        px[i * NI + j] = in ? a.x + nn * a.xs0 + iy * a.xs1 + ix * a.xs2 : nullptr;
        px2[i * NI + j] = in && a.x2 ? a.x2 + nn * a.x2s0 + iy * a.x2s1 + ix * a.x2s2 : nullptr;
      }
    const int64_t nxt = M * a.xs2, nxt2 = M * a.x2s2;
    const int64_t vs = vstride(pl);
    for (int64_t c = k0; c < k1; c += L) {
      float* dst = s.v + t * pl.kcs + (c - k0);
      auto tile = [&](auto&& load) {
        transform2d(TrUp<M>::BT, [&](int i, int j) { return load(i * NI + j); },
                    [&](int q, int p, vf v) { vst(dst + (q * P + p) * vs, v); });
      };
      with_prologue_load(pl, a, px, px2, c, k1, nxt, nxt2, s.sv, s.gs2, s.b2v, s.tmp, tile);
    }
  }
}

// m[xi][t][j] (+)= sum_c v[xi][t][c] * U[xi][k0 + c][o0 + j] for the block's tiles, j < nco.
void gemms(const WinoPlan& pl, const Scratch& s, const float* u, int64_t jp0, int64_t nco, int64_t k0, int64_t k1) {
  using modconv_detail::KBlock;
  using modconv_detail::kMR;
  KBlock kb;
  kb.nseg = 1;
  kb.len = static_cast<int>(k1 - k0);
  kb.a_off[0] = 0;
  kb.seg_len[0] = kb.len;
  int64_t base[kUpMaxTileBlock];
  for (int64_t r = 0; r < pl.T; ++r) base[r] = r * pl.kcs;
  const bool acc = k0 > 0;
  const int64_t ldc = pl.cc;
  for (int xi = 0; xi < pl.nxi; ++xi) {
    const float* band = s.v + xi * vstride(pl);
    for (int64_t j = 0; j < nco;) {
      const float* bseg[1] = {u + (jp0 + j / 16) * pl.pstride + (xi * pl.C + k0) * 16};
      float* c = s.m + xi * mstride(pl) + j;
#if GPEN_ISA_AVX512
      if (j + 16 < nco) {  // two panels per call at 16 lanes
        for (int64_t mt = 0; mt < pl.T; mt += kMR)
          modconv_detail::isa_avx512::micro_kernel(kb, band, base + mt, bseg, 16, pl.pstride, 0, c + mt * ldc, ldc,
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

// y = A^T m A for the block's tiles, channels [o0, o0 + nco): the raw transposed conv.
template <int M>
void output_transform(const WinoPlan& pl, const WinoArgs& a, int64_t t0, int64_t o0, int64_t nco, const Scratch& s) {
  constexpr int P = TrUp<M>::P, MO = TrUp<M>::MO;
  const int64_t per_img = pl.th * pl.tw, Ho = 2 * pl.H + 1, Wo = 2 * pl.W + 1;
  for (int64_t t = 0; t < pl.T && t0 + t < pl.ntiles; ++t) {
    const int64_t tile = t0 + t, nn = tile / per_img, r = tile % per_img;
    const int64_t oy0 = (r / pl.tw) * 2 * M, ox0 = (r % pl.tw) * 2 * M;
    float* py[MO * MO];
    for (int p = 0; p < MO; ++p)
      for (int q = 0; q < MO; ++q) {
        const int64_t oy = oy0 + p, ox = ox0 + q;
        py[p * MO + q] = oy < Ho && ox < Wo ? a.y + nn * a.ys0 + oy * a.ys1 + ox * a.ys2 + o0 * a.ys3 : nullptr;
      }
    for (int64_t o = 0; o < nco; o += L) {
      const int64_t lanes = lmin(L, nco - o);
      const float* m0 = s.m + t * pl.cc + o;
      transform2d(TrUp<M>::AT, [&](int i, int j) { return vld(m0 + (i * P + j) * mstride(pl)); }, [&](int p, int q, vf yv) {
        const int e = p * MO + q;  // output pixel (p, q) of the tile
        if (!py[e]) return;
        float* yp = py[e] + o * a.ys3;
        if (lanes == L && a.ys3 == 1) {
          vst(yp, yv);
          return;
        }
        vst(s.tmp, yv);
        for (int64_t q2 = 0; q2 < lanes; ++q2) yp[q2 * a.ys3] = s.tmp[q2];
      });
    }
  }
}

template <int M>
void run_task_m(const WinoPlan& pl, const WinoArgs& a, int64_t block, int64_t o0, int64_t nco, const float* u,
                int64_t group_o0, const Scratch& s) {
  const int64_t t0 = block * pl.T;
  for (int64_t c = 0; c < pl.C2; ++c) s.b2v[c] = a.x2_bias[c * a.x2bs];
  int64_t last_n = -1;
  for (int64_t kb = 0; kb < pl.nkb; ++kb) {
    const int64_t k0 = kb * pl.kc, k1 = lmin(pl.C, k0 + pl.kc);
    input_transform<M>(pl, a, t0, k0, k1, s, last_n);
    gemms(pl, s, u, (o0 - group_o0) / 16, nco, k0, k1);
  }
  output_transform<M>(pl, a, t0, o0, nco, s);
}

}  // namespace

void up_transform_weight(const WinoPlan& pl, const WinoArgs& a, int64_t panel, int np, int64_t c0, int64_t c1,
                         float* dst) {
  if (pl.m == 4)
    transform_weight_panels(pl, a, TrUp<4>::G, panel, np, c0, c1, dst, pl.C, 0, pl.pstride);
  else
    transform_weight_panels(pl, a, TrUp<2>::G, panel, np, c0, c1, dst, pl.C, 0, pl.pstride);
}

void up_run_task(const WinoPlan& pl, const WinoArgs& a, int64_t block, int64_t o0, int64_t nco, const float* u,
                 int64_t group_o0, float* ws) {
  const Scratch s{ws + pl.off_v, ws + pl.off_m, ws + pl.off_sv, ws + pl.off_b2v, ws + pl.off_gs2, ws + pl.off_tmp};
  if (pl.m == 4)
    run_task_m<4>(pl, a, block, o0, nco, u, group_o0, s);
  else
    run_task_m<2>(pl, a, block, o0, nco, u, group_o0, s);
}

}  // namespace gpen::cpu::winograd_detail::GPEN_ISA_NS
