// The per-ISA half of the polyphase Winograd stride-2 conv2d (overview: winograd_s2.h), compiled
// once per ISA (isa_ns.h) like winograd_up_kernel.cpp, whose layout it follows: the transforms on
// vectors across channels, the (2m + 1)^2 GEMMs on point_gemms (winograd_isa.h). Nothing here
// calls an inline function of another header but the per-ISA ones of isa_vec.h and
// winograd_isa.h (scripts/check_isa_symbols.py).
#include <cstring>

#include "kernels/cpu/isa_ns.h"
#include "kernels/cpu/winograd_isa.h"
#include "kernels/cpu/winograd_s2.h"

namespace gpen::cpu::winograd_detail::GPEN_ISA_NS {

namespace {

// Floats from one point's slice of the transformed inputs (or accumulators) to the next: an odd
// number of cache lines, so the (2m + 1)^2 slices a tile writes do not fall in a few L1 sets
// (make_wino_s2_plan sizes the scratch with the same rule).
inline int64_t vstride(const WinoPlan& pl) { const int64_t f = pl.T * pl.kcs; return f / 16 % 2 ? f : f + 16; }
inline int64_t mstride(const WinoPlan& pl) { const int64_t f = pl.T * pl.cc; return f / 16 % 2 ? f : f + 16; }

// One axis for m outputs per tile: N = 2m + 1 inputs x[2 o0 - pad ..], P = 2m + 1 points (F(m, 2)
// over the even inputs, then the odd inputs copied). G takes the taps (w0, w1, w2): the even
// phase correlates (x[2o], x[2o + 2]) with (w0, w2). Checked in float64 by the tests' reference.
template <int M>
struct TrS2;
template <>
struct TrS2<4> {
  static constexpr int N = 9;
  static constexpr float BT[9][9] = {{2, 0, -1, 0, -2, 0, 1, 0, 0}, {0, 0, -2, 0, -1, 0, 1, 0, 0},
                                     {0, 0, 2, 0, -3, 0, 1, 0, 0},  {0, 0, -1, 0, 0, 0, 1, 0, 0},
                                     {0, 0, 2, 0, -1, 0, -2, 0, 1}, {0, 1, 0, 0, 0, 0, 0, 0, 0},
                                     {0, 0, 0, 1, 0, 0, 0, 0, 0},   {0, 0, 0, 0, 0, 1, 0, 0, 0},
                                     {0, 0, 0, 0, 0, 0, 0, 1, 0}};
  static constexpr float G[9][3] = {{0.5f, 0, 0},         {-0.5f, 0, -0.5f}, {-1.0f / 6, 0, 1.0f / 6},
                                    {1.0f / 6, 0, 1.0f / 3}, {0, 0, 1},         {0, 1, 0},
                                    {0, 1, 0},            {0, 1, 0},         {0, 1, 0}};
  static constexpr float AT[4][9] = {{1, 1, 1, 1, 0, 1, 0, 0, 0},
                                     {0, 1, -1, 2, 0, 0, 1, 0, 0},
                                     {0, 1, 1, 4, 0, 0, 0, 1, 0},
                                     {0, 1, -1, 8, 1, 0, 0, 0, 1}};
};
template <>
struct TrS2<2> {  // F(2, 2) on the points 0, 1, infinity
  static constexpr int N = 5;
  static constexpr float BT[5][5] = {
      {-1, 0, 1, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, -1, 0, 1}, {0, 1, 0, 0, 0}, {0, 0, 0, 1, 0}};
  static constexpr float G[5][3] = {{-1, 0, 0}, {1, 0, 1}, {0, 0, 1}, {0, 1, 0}, {0, 1, 0}};
  static constexpr float AT[2][5] = {{1, 1, 0, 1, 0}, {0, 1, 1, 0, 1}};
};

struct Scratch {
  float *v, *m, *bv, *tmp;
};

// The transformed inputs of the block's tiles for channels [k0, k1): v[xi][t][c - k0].
template <int M>
void input_transform(const WinoPlan& pl, const WinoArgs& a, int64_t t0, int64_t k0, int64_t k1, const Scratch& s) {
  constexpr int N = TrS2<M>::N, NN = N * N;
  const int64_t per_img = pl.th * pl.tw, vs = vstride(pl);
  for (int64_t t = 0; t < pl.T; ++t) {
    const int64_t tile = t0 + t;
    if (tile >= pl.ntiles) {  // rows of the last block past the grid: zeros, their outputs unused
      for (int xi = 0; xi < NN; ++xi) std::memset(s.v + xi * vs + t * pl.kcs, 0, sizeof(float) * pl.kcs);
      continue;
    }
    const int64_t nn = tile / per_img, r = tile % per_img;
    const int64_t y0 = (r / pl.tw) * 2 * M - a.pad, x0 = (r % pl.tw) * 2 * M - a.pad;
    const float* px[NN];
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) {
        const int64_t iy = y0 + i, ix = x0 + j;
        const bool in = iy >= 0 && iy < a.hin && ix >= 0 && ix < a.win;
        px[i * N + j] = in ? a.x + nn * a.xs0 + iy * a.xs1 + ix * a.xs2 : nullptr;
      }
    const int64_t nxt = 2 * M * a.xs2;
    for (int64_t c = k0; c < k1; c += L) {
      float* dst = s.v + t * pl.kcs + (c - k0);
      auto store = [&](int q, int p, vf v) { vst(dst + (q * N + p) * vs, v); };
      if (c + L <= k1 && a.xs3 == 1) {
        transform2d(TrS2<M>::BT, [&](int i, int j) {
          const float* pe = px[i * N + j];
          if (!pe) return vf{};
          __builtin_prefetch(pe + nxt + c);  // the same channels of the next tile
          return vld(pe + c);
        }, store);
      } else {
        transform2d(TrS2<M>::BT, [&](int i, int j) {
          const float* pe = px[i * N + j];
          for (int q = 0; q < L; ++q) s.tmp[q] = pe && c + q < k1 ? pe[(c + q) * a.xs3] : 0.0f;
          return vld(s.tmp);
        }, store);
      }
    }
  }
}

// y = act(A^T m A + bias) + residual for the block's tiles, channels [o0, o0 + nco).
template <int M>
void output_transform(const WinoPlan& pl, const WinoArgs& a, int64_t t0, int64_t o0, int64_t nco, const Scratch& s) {
  constexpr int N = TrS2<M>::N;
  const int64_t per_img = pl.th * pl.tw;
  const vf vp = splat(a.gpos), vn = splat(a.gneg);
  for (int64_t o = 0; o < pl.cc + L; ++o) s.bv[o] = o < nco && a.bias ? a.bias[(o0 + o) * a.bs] : 0.0f;
  const bool dense = a.ys3 == 1 && (!a.res || a.rs3 == 1);
  for (int64_t t = 0; t < pl.T && t0 + t < pl.ntiles; ++t) {
    const int64_t tile = t0 + t, nn = tile / per_img, r = tile % per_img;
    const int64_t oy0 = (r / pl.tw) * M, ox0 = (r % pl.tw) * M;
    float* py[M * M];
    const float* pr[M * M];
    for (int p = 0; p < M; ++p)
      for (int q = 0; q < M; ++q) {
        const int64_t oy = oy0 + p, ox = ox0 + q;
        const bool in = oy < pl.H && ox < pl.W;
        py[p * M + q] = in ? a.y + nn * a.ys0 + oy * a.ys1 + ox * a.ys2 + o0 * a.ys3 : nullptr;
        pr[p * M + q] = in && a.res ? a.res + nn * a.rs0 + oy * a.rs1 + ox * a.rs2 + o0 * a.rs3 : nullptr;
      }
    for (int64_t o = 0; o < nco; o += L) {
      const vf bv = vld(s.bv + o);
      const int64_t lanes = lmin(L, nco - o);
      const float* m0 = s.m + t * pl.cc + o;
      transform2d(TrS2<M>::AT, [&](int i, int j) { return vld(m0 + (i * N + j) * mstride(pl)); }, [&](int p, int q, vf yv) {
        const int e = p * M + q;  // output pixel (p, q) of the tile
        if (py[e]) store_output_pixel(a, py[e], pr[e], o, lanes, dense, yv + bv, vp, vn, s.tmp);
      });
    }
  }
}

template <int M>
void run_task_m(const WinoPlan& pl, const WinoArgs& a, int64_t block, int64_t o0, int64_t nco, const float* u,
                int64_t group_o0, const Scratch& s) {
  const int64_t t0 = block * pl.T, jp0 = (o0 - group_o0) / 16;
  for (int64_t kb = 0; kb < pl.nkb; ++kb) {
    const int64_t k0 = kb * pl.kc, k1 = lmin(pl.C, k0 + pl.kc);
    input_transform<M>(pl, a, t0, k0, k1, s);
    point_gemms(pl, t0, s.m, mstride(pl), s.v, vstride(pl), u + jp0 * pl.pstride + k0 * 16, pl.C * 16, pl.pstride, nco,
                k0, k1);
  }
  output_transform<M>(pl, a, t0, o0, nco, s);
}

}  // namespace

void s2_transform_weight(const WinoPlan& pl, const WinoArgs& a, int64_t panel, int np, int64_t c0, int64_t c1,
                         float* dst) {
  if (pl.m == 4)
    transform_weight_panels(pl, a, TrS2<4>::G, panel, np, c0, c1, dst, pl.C, 0, pl.pstride);
  else
    transform_weight_panels(pl, a, TrS2<2>::G, panel, np, c0, c1, dst, pl.C, 0, pl.pstride);
}

void s2_run_task(const WinoPlan& pl, const WinoArgs& a, int64_t block, int64_t o0, int64_t nco, const float* u,
                 int64_t group_o0, float* ws) {
  const Scratch s{ws + pl.off_v, ws + pl.off_m, ws + pl.off_bv, ws + pl.off_tmp};
  if (pl.m == 4)
    run_task_m<4>(pl, a, block, o0, nco, u, group_o0, s);
  else
    run_task_m<2>(pl, a, block, o0, nco, u, group_o0, s);
}

}  // namespace gpen::cpu::winograd_detail::GPEN_ISA_NS
