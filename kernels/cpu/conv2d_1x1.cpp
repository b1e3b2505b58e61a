// conv2d's 1x1 path (overview and the arithmetic contract: conv2d_1x1.h), which also runs the
// other ungrouped convs tap by tap: the blocking, the weight packing and the work split over
// OpenMP threads; the register tile is per ISA (conv2d_1x1_kernel.cpp).
//
// Blocking (L1 48 KiB, L2 2 MiB per core on the Xeon this was tuned on): a work item is a tile of
// kTileM output pixels x as many output channels as keep its packed weight block within 1 MiB. Within it, for each depth block of
// at most kMaxDepth: each group of mr pixels runs through all the item's weight panels, so the
// pixels' input rows (mr x depth, <= 24 KiB) stay in L1 while the item's packed weight block
// (depth x columns, <= 1 MiB) stays in L2 for the whole tile. Sums cross depth blocks through a
// per-thread tile in the workspace; with a single depth block (Cin <= kMaxDepth) they go from the
// registers straight into the output.
#include "kernels/cpu/conv2d_1x1.h"

#include <omp.h>

#include <algorithm>

#include "engine/core/error.h"
#include "kernels/cpu/conv2d_isa.h"
#include "kernels/cpu/conv2d_paths.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/weights8.h"

#ifndef GPEN_HAVE_AVX512_KERNELS
#define GPEN_HAVE_AVX512_KERNELS 0
#endif

namespace gpen::cpu::detail {

namespace {

constexpr int kMaxMR = 12;                 // the widest ISA's tile rows (conv1x1_mr())
constexpr int kPanelRound = 32;            // the widest ISA's panel (conv1x1_nr()); 16 divides it
constexpr int64_t kTileM = 96;             // pixels per item: a multiple of both ISAs' mr (12, 6)
constexpr int64_t kItemCols = 256;         // output channels per item at least: a multiple of both nr
constexpr int64_t kMaxDepth = 512;         // depth per block
constexpr int64_t kPackFloats = 1 << 20;   // packed weight chunk bound (4 MiB)
constexpr int64_t kL2BlockFloats = 1 << 18;  // an item's packed weight block (depth x columns): 1 MiB of L2

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t v, int64_t m) { return ceil_div(v, m) * m; }

struct Blocking {
  int64_t P = 0, C = 0, K = 0, Co = 0;
  int64_t taps = 1;         // kh * kw: the depth is taps x C, each tap's C channels contiguous in x
  int64_t kc = 0, cblk = 0;  // channels per depth block (within one tap), blocks per tap
  int64_t nkb = 0;          // depth blocks in all (taps x cblk)
  int64_t pcols = 0;        // output channels per packed chunk (a multiple of icols or all)
  int64_t icols = 0;        // output channels per item (a multiple of kPanelRound)
  size_t pack_floats = 0, acc_floats = 0, zero_floats = 0;
};

Blocking blocking(const Conv2dParams& p, const Shape& x, const Shape& y) {
  Blocking b;
  b.P = y[0] * y[1] * y[2];
  b.C = std::max<int64_t>(x[3], 1);
  b.taps = int64_t{p.kh} * p.kw;
  b.K = b.taps * b.C;
  b.Co = y[3];
  const int64_t parts = ceil_div(b.C, kMaxDepth);
  b.kc = parts == 1 ? b.C : round_up(ceil_div(b.C, parts), 8);
  b.cblk = ceil_div(b.C, b.kc);
  b.nkb = b.taps * b.cblk;
  const int64_t all = round_up(std::max<int64_t>(b.Co, 1), kPanelRound);
  // Items as wide as the L2 holds their weight block: a shallow conv (memory-bound, large
  // tensors) then sweeps its output and residual once, whole rows at a time; the packed chunk
  // (all depth x its columns) within kPackFloats.
  const int64_t cap = std::max<int64_t>(kPanelRound, kPackFloats / b.K / kPanelRound * kPanelRound);
  b.icols = std::min(cap, std::max<int64_t>(kItemCols, kL2BlockFloats / b.kc / kPanelRound * kPanelRound));
  b.pcols = std::min(all, std::max(b.icols, cap / b.icols * b.icols));
  b.icols = std::min(b.icols, b.pcols);
  b.pack_floats = round_floats(static_cast<size_t>(b.K * b.pcols));
  b.acc_floats = b.nkb > 1 ? round_floats(static_cast<size_t>(kTileM * b.icols)) : 0;
  const bool padded = p.pad_top || p.pad_left || p.pad_bottom || p.pad_right;
  b.zero_floats = padded ? round_floats(static_cast<size_t>(b.kc)) : 0;  // what padding taps read
  return b;
}

}  // namespace

size_t conv1x1_workspace_floats(const Conv2dParams& p, const Shape& x, const Shape& y, int threads) {
  const Blocking b = blocking(p, x, y);
  return b.pack_floats + b.zero_floats + b.acc_floats * static_cast<size_t>(std::max(threads, 1));
}

void conv1x1(const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
             const TensorView* residual, const TensorView& y, float* ws) {
  const int64_t Co = y.dim(3);
  const Blocking b = blocking(p, x.shape, y.shape);
  if (b.P * Co == 0) return;
#if GPEN_HAVE_AVX512_KERNELS
  const bool wide = conv2d_wide();
  auto tile_fn = wide ? isa_avx512::conv1x1_tile : isa_base::conv1x1_tile;
  const int mr = wide ? isa_avx512::conv1x1_mr() : isa_base::conv1x1_mr();
  const int nr = wide ? isa_avx512::conv1x1_nr() : isa_base::conv1x1_nr();
#else
  auto tile_fn = isa_base::conv1x1_tile;
  const int mr = isa_base::conv1x1_mr();
  const int nr = isa_base::conv1x1_nr();
#endif
  // Row k of the [K][Co] weight sits at k * wld (conv2d checked that the HWIO axes nest so).
  const int64_t K = b.K, C = b.C, wld = C > 1 ? w.stride(2) : p.kw > 1 ? w.stride(1) : w.stride(0);
  const int64_t H = x.dim(1), W = x.dim(2);
  const float* xf = x.f32();
  float* yf = y.f32();
  const float* rf = residual ? residual->f32() : nullptr;
  const float* bf = bias ? bias->f32() : nullptr;
  const int64_t Ho = y.dim(1), Wo = y.dim(2), sh = p.stride_h, sw = p.stride_w;
  const Activation act = p.act;
  float* pack = ws;
  const float* zero = ws + b.pack_floats;
  float* accs = ws + b.pack_floats + b.zero_floats;
  std::fill(ws + b.pack_floats, accs, 0.0f);

  const int64_t tiles = ceil_div(b.P, kTileM);
  const int64_t chunks = ceil_div(Co, b.pcols);
  const int64_t max_items = tiles * ceil_div(b.pcols, b.icols);
  const int T = static_cast<int>(std::min<int64_t>(num_threads(), std::max<int64_t>(max_items, 1)));
#pragma omp parallel num_threads(T) if (T > 1)
  {
    float* acc = accs + static_cast<size_t>(omp_get_thread_num()) * b.acc_floats;
    int64_t arow[kTileM];  // element offset of the input pixel at tap (0, 0) (may be outside)
    int64_t iy0[kTileM], ix0[kTileM];
    float* yrow[kTileM];
    const float* rrow[kTileM];
    for (int64_t ch = 0; ch < chunks; ++ch) {
      const int64_t cc0 = ch * b.pcols, ccols = std::min(b.pcols, Co - cc0);
      const int64_t panels = ceil_div(ccols, nr);
#pragma omp for schedule(static)
      for (int64_t pn = 0; pn < panels; ++pn) {
        float* dst = pack + pn * K * nr;
        const int64_t col0 = cc0 + pn * nr;
        // 8-bit weights are dequantised here, once per call, into the same panels.
        for (int64_t k = 0; k < K; ++k, dst += nr) load_weight_row(dst, w, k * wld + col0, 1, col0, nr, Co, k);
      }  // implicit barrier: the chunk is packed before any tile reads it
      const int64_t cblocks = ceil_div(ccols, b.icols);
      const int64_t items = tiles * cblocks;
#pragma omp for schedule(dynamic, 1)
      for (int64_t it = 0; it < items; ++it) {
        // Consecutive items share their weight block (same channels, next pixel tile).
        const int64_t tile = it % tiles, cb = it / tiles;
        const int64_t p0 = tile * kTileM, m = std::min(kTileM, b.P - p0);
        const int64_t c0 = cb * b.icols, c1 = std::min(ccols, c0 + b.icols);  // within the chunk
        PixelCursor cur(p0, Ho, Wo);
        for (int64_t i = 0; i < m; ++i, cur.next()) {
          iy0[i] = cur.oy * sh - p.pad_top;
          ix0[i] = cur.ox * sw - p.pad_left;
          arow[i] = cur.n * x.stride(0) + iy0[i] * x.stride(1) + ix0[i] * x.stride(2);
          const int64_t yo = cur.n * y.stride(0) + cur.oy * y.stride(1) + cur.ox * y.stride(2);
          yrow[i] = yf + yo + cc0;
          if (rf)
            rrow[i] = rf + cur.n * residual->stride(0) + cur.oy * residual->stride(1) +
                      cur.ox * residual->stride(2) + cc0;
        }
        const int64_t ldc = round_up(c1 - c0, nr);
        for (int64_t kb = 0; kb < b.nkb; ++kb) {
          const int64_t tap = kb / b.cblk, ci = (kb % b.cblk) * b.kc, kd = std::min(b.kc, C - ci);
          const int64_t ky = tap / p.kw, kx = tap % p.kw, k0 = tap * C + ci;
          const int64_t tap_ofs = ky * x.stride(1) + kx * x.stride(2) + ci;
          G1Tile t;
          t.kd = kd;
          t.ldc = ldc;
          t.load = kb > 0;
          t.final = kb == b.nkb - 1;
          t.slope = act.slope;
          t.gain = act.gain;
          t.act_last = p.act_after_residual && rf;
          const float* ak[kMaxMR];
          float* yk[kMaxMR];
          const float* rk[kMaxMR];
          t.a = ak;
          t.y = yk;
          t.res = rf ? rk : nullptr;
          for (int64_t i0 = 0; i0 < m; i0 += mr) {
            t.rows = static_cast<int>(std::min<int64_t>(mr, m - i0));
            // Equally spaced rows (consecutive pixels of one image row, or any when dense and
            // unpadded) take the tile's faster addressing; a padding tap reads zeros.
            bool inside = true;
            int64_t prev = 0;
            t.lda = 0;
            for (int r = 0; r < t.rows; ++r) {
              const int64_t iy = iy0[i0 + r] + ky, ix = ix0[i0 + r] + kx;
              const bool in = iy >= 0 && iy < H && ix >= 0 && ix < W;
              const int64_t off = arow[i0 + r] + tap_ofs;
              ak[r] = in ? xf + off : zero;
              if (r == 1) t.lda = off - prev;
              if (r > 1 && off - prev != t.lda) t.lda = 0;
              inside = inside && in;
              prev = off;
            }
            if (!inside || t.lda <= 0) t.lda = 0;
            for (int64_t pc = c0; pc < c1; pc += nr) {
              t.b = pack + (pc / nr) * K * nr + k0 * nr;
              t.c = acc + i0 * ldc + (pc - c0);
              if (t.final) {
                for (int r = 0; r < t.rows; ++r) yk[r] = yrow[i0 + r] + pc;
                if (rf)
                  for (int r = 0; r < t.rows; ++r) rk[r] = rrow[i0 + r] + pc;
                t.bias = bf ? bf + cc0 + pc : nullptr;
                t.cols = static_cast<int>(std::min<int64_t>(nr, c1 - pc));
              }
              tile_fn(t);
            }
          }
        }
      }  // implicit barrier: every tile is done before the next chunk is packed over this one
    }
  }
}

}  // namespace gpen::cpu::detail
