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
// taps (W0, W1, W2): the even phase correlates (x[a - 1], x[a]) with (W2, W0). The m odd-phase
// points all take the tap W1, so G has D = m + 2 distinct rows (GD: F(m, 2)'s m + 1, then W1):
// the transformed weight holds D^2 points (36 for m = 4, 16 for m = 2, not 81 and 25), point
// (py, px) using (min(py, D - 1), min(px, D - 1)), and the points that share one run their GEMMs
// one after the other (shared_point_gemms, winograd_isa.h).
template <int M>
struct TrUp;
template <>
struct TrUp<4> {
  static constexpr int NI = 5, P = 9, MO = 8;
  static constexpr float BT[9][5] = {{2, -1, -2, 1, 0}, {0, -2, -1, 1, 0}, {0, 2, -3, 1, 0},
                                     {0, -1, 0, 1, 0},  {0, 2, -1, -2, 1}, {0, 1, 0, 0, 0},
                                     {0, 0, 1, 0, 0},   {0, 0, 0, 1, 0},   {0, 0, 0, 0, 1}};
  static constexpr int D = 6;
  static constexpr float GD[6][3] = {{0, 0, 0.5f}, {-0.5f, 0, -0.5f}, {1.0f / 6, 0, -1.0f / 6},
                                     {1.0f / 3, 0, 1.0f / 6}, {1, 0, 0}, {0, 1, 0}};
  static constexpr float AT[8][9] = {{1, 1, 1, 1, 0, 0, 0, 0, 0},  {0, 0, 0, 0, 0, 1, 0, 0, 0},
                                     {0, 1, -1, 2, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 1, 0, 0},
                                     {0, 1, 1, 4, 0, 0, 0, 0, 0},  {0, 0, 0, 0, 0, 0, 0, 1, 0},
                                     {0, 1, -1, 8, 1, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0, 0, 1}};
};
template <>
struct TrUp<2> {  // F(2, 2) on the points 0, 1, infinity
  static constexpr int NI = 3, P = 5, MO = 4;
  static constexpr float BT[5][3] = {{-1, 1, 0}, {0, 1, 0}, {0, -1, 1}, {0, 1, 0}, {0, 0, 1}};
  static constexpr int D = 4;
  static constexpr float GD[4][3] = {{0, 0, -1}, {1, 0, 1}, {1, 0, 0}, {0, 1, 0}};
  static constexpr float AT[4][5] = {{1, 1, 0, 0, 0}, {0, 0, 0, 1, 0}, {0, 1, 1, 0, 0}, {0, 0, 0, 0, 1}};
};

struct Scratch {
  float *v, *m, *sv, *b2v, *gs2, *tmp;
};

inline bool owns(const UpPoints* own, int xi) { return !own || (own->bits[xi >> 6] >> (xi & 63) & 1); }

// The transformed inputs of the block's tiles t0 + [tb, te) for channels [k0, k1): v[xi][t][c - k0],
// only the points own holds (all where own is null).
template <int M>
void input_transform(const WinoPlan& pl, const WinoArgs& a, int64_t t0, int64_t k0, int64_t k1, const Scratch& s,
                     int64_t& last_n, int64_t tb, int64_t te, const UpPoints* own = nullptr) {
  constexpr int NI = TrUp<M>::NI, P = TrUp<M>::P, NN = NI * NI, PP = P * P;
  const int64_t per_img = pl.th * pl.tw;
  for (int64_t t = tb; t < te; ++t) {
    const int64_t tile = t0 + t;
    if (tile >= pl.ntiles) {  // rows of the last block past the grid: zeros, their outputs unused
      for (int xi = 0; xi < PP; ++xi)
        if (owns(own, xi)) std::memset(s.v + xi * vstride(pl) + t * pl.kcs, 0, sizeof(float) * pl.kcs);
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
                    [&](int q, int p, vf v) {
                      if (owns(own, q * P + p)) vst(dst + (q * P + p) * vs, v);
                    });
      };
      with_prologue_load(pl, a, px, px2, c, k1, nxt, nxt2, s.sv, s.gs2, s.b2v, s.tmp, tile);
    }
  }
}

// The grouped form's GEMMs for the block's tiles: U of the group in [panel][wp][C][16].
template <int M>
void gemms(const WinoPlan& pl, int64_t t0, const Scratch& s, const float* u, int64_t jp0, int64_t nco, int64_t k0,
           int64_t k1) {
  shared_point_gemms<TrUp<M>::D, TrUp<M>::P>(pl, t0, s.v, vstride(pl), u + jp0 * pl.pstride + k0 * 16, pl.C * 16,
                                             pl.pstride, s.m, mstride(pl), nco, k0, k1, [](int) { return true; });
}

// Lanes [0, lanes) of v to the output at yp (channel stride ys3): the up conv has no epilogue.
// Whole aligned vectors by streaming stores where the plan says so (a.stream_y, winograd_up.h).
inline void store_raw(const WinoArgs& a, float* yp, int64_t lanes, vf v, float* tmp) {
  if (lanes == L && a.ys3 == 1) {
    if (a.stream_y && vec_aligned(yp))
      vstream(yp, v);
    else
      vst(yp, v);
    return;
  }
  vst(tmp, v);
  for (int64_t q = 0; q < lanes; ++q) yp[q * a.ys3] = tmp[q];
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
        if (py[e]) store_raw(a, py[e] + o * a.ys3, lanes, yv, s.tmp);
      });
    }
  }
  if (a.stream_y) stream_fence();  // the streaming stores done before the task ends (store_raw)
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
    gemms<M>(pl, t0, s, u, (o0 - group_o0) / 16, nco, k0, k1);
  }
  output_transform<M>(pl, a, t0, o0, nco, s);
}

// The fused form (winograd_up_fused.cpp): m = 4 on exact tiles, so the th x tw tiles give output
// rows 0 .. 2H - 1 and columns 0 .. 2W - 1, and the last even row 2H and column 2W come from six
// GEMMs on points the transforms already hold. Row 2H is x[H - 1] against the taps ky = 2 alone,
// y[2H, 2b] = x[H - 1, b] W20 + x[H - 1, b - 1] W22 and y[2H, 2b + 1] = x[H - 1, b] W21; column 2W
// the same along x with the taps kx = 2. B^T's rows 5-8 are the identity, so a tile's odd-phase
// points are its raw pixels (prologue applied): point (8, 5 + j) of a last-row tile is
// x[H - 1, b0 + j], point (5 + i, 8) of a last-column tile x[a0 + i, W - 1]. G's rows 0, 4, 5 take
// W2 / 2, W0, W1, so the weight points (0, 4), (0, 5), (0, 0) are W20 / 2, W21 / 2, W22 / 4 and
// (4, 0), (5, 0) W02 / 2, W12 / 2, exactly: the rim sums are scaled back by 2 or 4 (exact too).
// (Weight points of the 6 x 6 the transform keeps: TrUp's GD.)
constexpr int kRimPoint[6] = {0 * 6 + 4, 0 * 6 + 5, 0, 4 * 6 + 0, 5 * 6 + 0, 0};
constexpr int64_t kRimMaxRows = 4 * kFusedMaxTiles + 6;  // one tile row of the last-row rim: W / 4 tiles

// The offset of rim GEMM g's accumulators (0-2: row 2H's r0, r1, r2; 3-5: column 2W's c0, c1, c2) in
// a chunk's, after the nxi points'.
inline int64_t rim_off(const WinoPlan& pl, int g) {
  const int64_t base = pl.nxi * mstride(pl);
  return g < 3 ? base + g * pl.rw * pl.cc : base + (3 * pl.rw + (g - 3) * pl.rh) * pl.cc;
}

// The A rows of rim GEMM g in v (offsets from v): pixel i of image n's last row (g < 3) or last
// column; rows past the N W (N H) pixels read row 0, their sums never stored. Returns the rows.
int64_t rim_rows(const WinoPlan& pl, int g, int64_t* base) {
  const bool row = g < 3;
  const int64_t nrows = row ? pl.rw : pl.rh, len = row ? pl.W : pl.H, per_img = pl.th * pl.tw, vs = vstride(pl);
  for (int64_t r = 0; r < nrows; ++r) {
    if (r >= pl.N * len) {
      base[r] = 0;
      continue;
    }
    const int64_t n = r / len, i = r % len;
    const int64_t t = n * per_img + (row ? (pl.th - 1) * pl.tw + i / 4 : (i / 4) * pl.tw + pl.tw - 1);
    const int64_t xi = row ? 8 * 9 + 5 + i % 4 : (5 + i % 4) * 9 + 8;
    base[r] = xi * vs + t * pl.kcs;
  }
  return nrows;
}

// Row 2H and column 2W of the chunk's channels [o0, o0 + nco) from the rim sums.
void rim_output(const WinoPlan& pl, const WinoArgs& a, int64_t o0, int64_t nco, const float* mc, float* tmp) {
  const float *r0 = mc + rim_off(pl, 0), *r1 = mc + rim_off(pl, 1), *r2 = mc + rim_off(pl, 2);
  const float *c0 = mc + rim_off(pl, 3), *c1 = mc + rim_off(pl, 4), *c2 = mc + rim_off(pl, 5);
  const vf two = splat(2.0f), four = splat(4.0f);
  const int64_t cc = pl.cc;
  for (int64_t n = 0; n < pl.N; ++n)
    for (int64_t o = 0; o < nco; o += L) {
      const int64_t lanes = lmin(L, nco - o);
      auto put = [&](int64_t oy, int64_t ox, vf v) {
        store_raw(a, a.y + n * a.ys0 + oy * a.ys1 + ox * a.ys2 + (o0 + o) * a.ys3, lanes, v, tmp);
      };
      for (int64_t b = 0; b < pl.W; ++b) {
        const int64_t e = (n * pl.W + b) * cc + o;
        put(2 * pl.H, 2 * b, b > 0 ? two * vld(r0 + e) + four * vld(r2 + e - cc) : two * vld(r0 + e));
        put(2 * pl.H, 2 * b + 1, two * vld(r1 + e));
      }
      put(2 * pl.H, 2 * pl.W, four * vld(r2 + (n * pl.W + pl.W - 1) * cc + o));
      for (int64_t i = 0; i < pl.H; ++i) {
        const int64_t e = (n * pl.H + i) * cc + o;
        put(2 * i, 2 * pl.W, i > 0 ? two * vld(c0 + e) + four * vld(c2 + e - cc) : two * vld(c0 + e));
        put(2 * i + 1, 2 * pl.W, two * vld(c1 + e));
      }
    }
  if (a.stream_y) stream_fence();
}

// K block kb of one chunk (output channels [o0, o0 + nco)): its slice of the transformed weight
// ([panel][wp][rows][16], the 36 distinct points, a spare row per point as the stride-1 fused
// form), the GEMMs of own's points and (own.rim) the six rim GEMMs into the chunk's accumulators mc.
void fused_up_task(const WinoPlan& pl, const WinoArgs& a, int64_t kb, int64_t o0, int64_t nco, const UpPoints& own,
                   const float* v, float* mc, const Scratch& s) {
  constexpr int D = TrUp<4>::D;
  const int64_t k0 = kb * pl.kc, k1 = lmin(pl.C, k0 + pl.kc), rows = k1 - k0 + 1, ust = D * D * rows * 16;
  for (int64_t c = k0; c < k1; ++c)
    for (int64_t jp = 0; jp * 16 < nco; jp += 2)
      transform_weight_panels(pl, a, TrUp<4>::GD, o0 / 16 + jp, jp * 16 + 16 < nco ? 2 : 1, c, c + 1, s.v + jp * ust,
                              rows, k0, ust);
  shared_point_gemms<D, TrUp<4>::P>(pl, 0, v, vstride(pl), s.v, rows * 16, ust, mc, mstride(pl), nco, k0, k1,
                                    [&](int xi) { return owns(&own, xi); });
  if (!own.rim) return;
  const modconv_detail::KBlock kbl = one_segment(k0, k1);
  int64_t base[kRimMaxRows];
  for (int g = 0; g < 6; ++g) {
    const int64_t nrows = rim_rows(pl, g, base);
    rows_gemm(kbl, v, base, nrows, s.v + kRimPoint[g] * rows * 16, ust, mc + rim_off(pl, g), pl.cc, nco, k0 > 0);
  }
}

Scratch scratch(const WinoPlan& pl, float* ws) {
  return Scratch{ws + pl.off_v, ws + pl.off_m, ws + pl.off_sv, ws + pl.off_b2v, ws + pl.off_gs2, ws + pl.off_tmp};
}

}  // namespace

void up_transform_weight(const WinoPlan& pl, const WinoArgs& a, int64_t panel, int np, int64_t c0, int64_t c1,
                         float* dst) {
  if (pl.m == 4)
    transform_weight_panels(pl, a, TrUp<4>::GD, panel, np, c0, c1, dst, pl.C, 0, pl.pstride);
  else
    transform_weight_panels(pl, a, TrUp<2>::GD, panel, np, c0, c1, dst, pl.C, 0, pl.pstride);
}

void up_run_task(const WinoPlan& pl, const WinoArgs& a, int64_t block, int64_t o0, int64_t nco, const float* u,
                 int64_t group_o0, float* ws) {
  const Scratch s = scratch(pl, ws);
  if (pl.m == 4)
    run_task_m<4>(pl, a, block, o0, nco, u, group_o0, s);
  else
    run_task_m<2>(pl, a, block, o0, nco, u, group_o0, s);
}

void up_fused_input(const WinoPlan& pl, const WinoArgs& a, int64_t kb, int64_t t0, int64_t t1, const UpPoints& own,
                    float* v, float* ws) {
  Scratch s = scratch(pl, ws);
  s.v = v;
  for (int64_t c = 0; c < pl.C2; ++c) s.b2v[c] = a.x2_bias[c * a.x2bs];
  int64_t last_n = -1;
  const int64_t k0 = kb * pl.kc;
  // The rows past the tiles are zeroed once per call: no K block writes them after the first.
  input_transform<4>(pl, a, 0, k0, lmin(pl.C, k0 + pl.kc), s, last_n, t0, kb == 0 ? t1 : lmin(t1, pl.ntiles), &own);
}

void up_fused_task(const WinoPlan& pl, const WinoArgs& a, int64_t kb, int64_t o0, int64_t nco, const UpPoints& own,
                   const float* v, float* mc, float* ws) {
  fused_up_task(pl, a, kb, o0, nco, own, v, mc, scratch(pl, ws));
}

void up_fused_output(const WinoPlan& pl, const WinoArgs& a, int64_t o0, int64_t nco, float* mc, float* ws) {
  Scratch s = scratch(pl, ws);
  s.m = mc;
  output_transform<4>(pl, a, 0, o0, nco, s);
  rim_output(pl, a, o0, nco, mc, s.tmp);
}

}  // namespace gpen::cpu::winograd_detail::GPEN_ISA_NS
