// The per-ISA half of the Winograd modconv (overview: winograd.h), compiled once per ISA
// (isa_ns.h): the transforms run on vectors of the ISA's width across channels (NHWC keeps a
// pixel's channels contiguous, so every transform is a few vector adds per point), the
// (m + 2)^2 GEMMs on the modconv micro-kernel. Nothing here calls an inline function of another
// header but the per-ISA ones of isa_vec.h and winograd_isa.h (scripts/check_isa_symbols.py).
#include <algorithm>
#include <cstring>

#include "kernels/cpu/isa_ns.h"
#include "kernels/cpu/modconv_internal.h"
#include "kernels/cpu/winograd.h"
#include "kernels/cpu/winograd_isa.h"

namespace gpen::cpu::winograd_detail::GPEN_ISA_NS {

namespace {


// The transform matrices (points 0, +-1, +-2, infinity for m = 4; 0, +-1, infinity for m = 2).
// B^T maps an input tile to the transformed points, G a 3-tap filter, A^T the points back to
// the output tile.
template <int M>
struct Tr;
template <>
struct Tr<4> {
  static constexpr int n = 6;
  static constexpr float BT[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                                     {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
  static constexpr float G[6][3] = {{1.0f / 4, 0, 0},
                                    {-1.0f / 6, -1.0f / 6, -1.0f / 6},
                                    {-1.0f / 6, 1.0f / 6, -1.0f / 6},
                                    {1.0f / 24, 1.0f / 12, 1.0f / 6},
                                    {1.0f / 24, -1.0f / 12, 1.0f / 6},
                                    {0, 0, 1}};
  static constexpr float AT[4][6] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};
};
template <>
struct Tr<2> {
  static constexpr int n = 4;
  static constexpr float BT[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
  static constexpr float G[4][3] = {{1, 0, 0}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}};
  static constexpr float AT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
};

// Per-thread scratch of one task (offsets: make_wino_plan).
struct Scratch {
  float *v, *m, *sv, *b2v, *gs2, *dv, *bv, *tmp;
};

// The transformed inputs of the block's tiles t0 + [tb, te) for channels [k0, k1): v[xi][t][c - k0].
template <int M>
void input_transform(const WinoPlan& pl, const WinoArgs& a, int64_t t0, int64_t k0, int64_t k1, const Scratch& s,
                     int64_t& last_n, int64_t tb, int64_t te) {
  constexpr int n = Tr<M>::n, NN = n * n;
  const int64_t per_img = pl.th * pl.tw;
  for (int64_t t = tb; t < te; ++t) {
    const int64_t tile = t0 + t;
    if (tile >= pl.ntiles) {  // rows of the last block past the grid: zeros, their outputs unused
      for (int xi = 0; xi < NN; ++xi) std::memset(s.v + (xi * pl.T + t) * pl.kcs, 0, sizeof(float) * pl.kcs);
      continue;
    }
    const int64_t nn = tile / per_img, r = tile % per_img;
    const int64_t y0 = (r / pl.tw) * M - a.pad, x0 = (r % pl.tw) * M - a.pad;
    if (nn != last_n) {
      for (int64_t c = 0; c < pl.C; ++c) s.sv[c] = a.s ? a.s[nn * a.ss0 + c * a.ss1] : 1.0f;
      for (int64_t c = 0; c < pl.C2; ++c) s.gs2[c] = s.sv[pl.C1 + c] * a.x2_gain;
      last_n = nn;
    }
    // The tile's pixels in x and x2 (null outside the image: zero padding).
    const float* px[NN];
    const float* px2[NN];
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        const int64_t iy = y0 + i, ix = x0 + j;
        const bool in = iy >= 0 && iy < a.hin && ix >= 0 && ix < a.win;
        px[i * n + j] = in ? a.x + nn * a.xs0 + iy * a.xs1 + ix * a.xs2 : nullptr;
        px2[i * n + j] = in && a.x2 ? a.x2 + nn * a.x2s0 + iy * a.x2s1 + ix * a.x2s2 : nullptr;
      }
    const int64_t nxt = M * a.xs2, nxt2 = M * a.x2s2;
    float* const dst0 = s.v + t * pl.kcs;
    const int64_t vs = pl.T * pl.kcs;
    for (int64_t c = k0; c < k1; c += L) {
      float* const dst = dst0 + (c - k0);
      auto tile = [&](auto&& load) {
        transform2d(Tr<M>::BT, [&](int i, int j) { return load(i * n + j); },
                    [&](int q, int p, vf v) { vst(dst + (q * n + p) * vs, v); });
      };
      with_prologue_load(pl, a, px, px2, c, k1, nxt, nxt2, s.sv, s.gs2, s.b2v, s.tmp, tile);
    }
  }
}

// m[xi][t][j] (+)= sum_c v[xi][t][c] * U[xi][k0 + c][o0 + j] for the block's tiles, j < nco.
void gemms(const WinoPlan& pl, int64_t t0, const Scratch& s, const float* u, int64_t jp0, int64_t nco, int64_t k0,
           int64_t k1) {
  point_gemms(pl, t0, s.m, pl.T * pl.cc, s.v, pl.T * pl.kcs, u + jp0 * pl.pstride + k0 * 16, pl.C * 16, pl.pstride, nco, k0, k1);
}

// y = act(A^T m A * d + bias) + residual for the block's tiles, channels [o0, o0 + nco).
template <int M>
void output_transform(const WinoPlan& pl, const WinoArgs& a, int64_t t0, int64_t o0, int64_t nco, const Scratch& s) {
  constexpr int n = Tr<M>::n;
  const int64_t per_img = pl.th * pl.tw;
  const vf vp = splat(a.gpos), vn = splat(a.gneg);
  int64_t last_n = -1;
  for (int64_t t = 0; t < pl.T && t0 + t < pl.ntiles; ++t) {
    const int64_t tile = t0 + t, nn = tile / per_img, r = tile % per_img;
    const int64_t oy0 = (r / pl.tw) * M, ox0 = (r % pl.tw) * M;
    if (nn != last_n) {
      for (int64_t o = 0; o < pl.cc + L; ++o) {
        const bool in = o < nco;
        s.dv[o] = in && a.d ? a.d[nn * a.ds0 + (o0 + o) * a.ds1] : (in ? 1.0f : 0.0f);
        s.bv[o] = in && a.bias ? a.bias[(o0 + o) * a.bs] : 0.0f;
      }
      last_n = nn;
    }
    // The tile's output pixels (null outside the image) and their residual.
    float* py[M * M];
    const float* pr[M * M];
    for (int p = 0; p < M; ++p)
      for (int q = 0; q < M; ++q) {
        const int64_t oy = oy0 + p, ox = ox0 + q;
        const bool in = oy < pl.H && ox < pl.W;
        py[p * M + q] = in ? a.y + nn * a.ys0 + oy * a.ys1 + ox * a.ys2 + o0 * a.ys3 : nullptr;
        pr[p * M + q] = in && a.res ? a.res + nn * a.rs0 + oy * a.rs1 + ox * a.rs2 + o0 * a.rs3 : nullptr;
      }
    const bool dense = a.ys3 == 1 && (!a.res || a.rs3 == 1);
    const float* const m0 = s.m + t * pl.cc;
    const int64_t ms = pl.T * pl.cc;
    for (int64_t o = 0; o < nco; o += L) {
      const vf dv = vld(s.dv + o), bv = vld(s.bv + o);
      const int64_t lanes = lmin(L, nco - o);
      transform2d(Tr<M>::AT, [&](int i, int j) { return vld(m0 + (i * n + j) * ms + o); }, [&](int p, int q, vf yv) {
        const int e = p * M + q;  // output pixel (p, q) of the tile
        if (py[e]) store_output_pixel(a, py[e], pr[e], o, lanes, dense, yv * dv + bv, vp, vn, s.tmp);
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
    input_transform<M>(pl, a, t0, k0, k1, s, last_n, 0, pl.T);
    gemms(pl, t0, s, u, (o0 - group_o0) / 16, nco, k0, k1);
  }
  output_transform<M>(pl, a, t0, o0, nco, s);
}

// The fused form (winograd_small.cpp): m[xi][t][j] (+)= sum over c in [k0, k1) of
// v_all[xi][t][c] * U[xi][c][o0 + j], U the task's slice ([panel][xi][k1 - k0 + 1][16], made just
// before; the spare row keeps the 36 rows a transform writes at once off a single L1 set).
void fused_gemms(const WinoPlan& pl, const Scratch& s, const float* v_all, const float* us, int64_t nco, int64_t k0,
                 int64_t k1) {
  const int64_t rows = k1 - k0 + 1;
  point_gemms(pl, 0, s.m, pl.T * pl.cc, v_all + k0, pl.T * pl.kcs, us, rows * 16, pl.nxi * rows * 16, nco, k0, k1);
}

template <int M>
void fused_task_m(const WinoPlan& pl, const WinoArgs& a, int64_t o0, int64_t nco, const float* v_all,
                  const Scratch& s) {
  for (int64_t kb = 0; kb < pl.nkb; ++kb) {
    const int64_t k0 = kb * pl.kc, k1 = lmin(pl.C, k0 + pl.kc), rows = k1 - k0 + 1, ust = pl.nxi * rows * 16;
    // Channel by channel across the chunk's panels, two per call where the chunk has them: each
    // tap's weight row is then read as whole consecutive cache lines, which the prefetchers follow.
    for (int64_t c = k0; c < k1; ++c)
      for (int64_t jp = 0; jp * 16 < nco; jp += 2)
        transform_weight_panels(pl, a, Tr<M>::G, o0 / 16 + jp, jp * 16 + 16 < nco ? 2 : 1, c, c + 1, s.v + jp * ust,
                                rows, k0, ust);
    fused_gemms(pl, s, v_all, s.v, nco, k0, k1);
  }
  output_transform<M>(pl, a, 0, o0, nco, s);
}

Scratch scratch(const WinoPlan& pl, float* ws) {
  return Scratch{ws + pl.off_v,   ws + pl.off_m,  ws + pl.off_sv, ws + pl.off_b2v,
                 ws + pl.off_gs2, ws + pl.off_dv, ws + pl.off_bv, ws + pl.off_tmp};
}

}  // namespace

void fused_input(const WinoPlan& pl, const WinoArgs& a, int64_t t0, int64_t t1, float* v_all, float* ws) {
  Scratch s = scratch(pl, ws);
  s.v = v_all;
  for (int64_t c = 0; c < pl.C2; ++c) s.b2v[c] = a.x2_bias[c * a.x2bs];
  int64_t last_n = -1;
  if (pl.m == 4)
    input_transform<4>(pl, a, 0, 0, pl.C, s, last_n, t0, t1);
  else
    input_transform<2>(pl, a, 0, 0, pl.C, s, last_n, t0, t1);
}

void fused_task(const WinoPlan& pl, const WinoArgs& a, int64_t o0, int64_t nco, const float* v_all, float* ws) {
  if (pl.m == 4)
    fused_task_m<4>(pl, a, o0, nco, v_all, scratch(pl, ws));
  else
    fused_task_m<2>(pl, a, o0, nco, v_all, scratch(pl, ws));
}

void transform_weight(const WinoPlan& pl, const WinoArgs& a, int64_t panel, int np, int64_t c0, int64_t c1,
                      float* dst) {
  if (pl.m == 4)
    transform_weight_panels(pl, a, Tr<4>::G, panel, np, c0, c1, dst, pl.C, 0, pl.pstride);
  else
    transform_weight_panels(pl, a, Tr<2>::G, panel, np, c0, c1, dst, pl.C, 0, pl.pstride);
}

void run_task(const WinoPlan& pl, const WinoArgs& a, int64_t block, int64_t o0, int64_t nco, const float* u,
              int64_t group_o0, float* ws) {
  const Scratch s{ws + pl.off_v,  ws + pl.off_m,  ws + pl.off_sv, ws + pl.off_b2v,
                  ws + pl.off_gs2, ws + pl.off_dv, ws + pl.off_bv, ws + pl.off_tmp};
  if (pl.m == 4)
    run_task_m<4>(pl, a, block, o0, nco, u, group_o0, s);
  else
    run_task_m<2>(pl, a, block, o0, nco, u, group_o0, s);
}

}  // namespace gpen::cpu::winograd_detail::GPEN_ISA_NS
