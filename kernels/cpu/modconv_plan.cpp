// The modconv task plan: output phases and their taps (one for the plain conv, four for the
// transposed one), task tiling, and the workspace layout, all from shapes alone.
#include <algorithm>
#include <string>

#include "kernels/cpu/modconv_internal.h"

namespace gpen::cpu::modconv_detail {

Plan make_plan(const ModConvParams& p, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Co, int threads,
               bool weight_tiles) {
  GPEN_CHECK(p.k >= 1 && p.k <= kMaxK, "modconv: kernel size " + std::to_string(p.k) + " outside [1, 7]");
  GPEN_CHECK(N >= 1 && H >= 1 && W >= 1 && C >= 1 && Co >= 1,
             "modconv: empty tensor (N=" + std::to_string(N) + ", H=" + std::to_string(H) + ", W=" + std::to_string(W) +
                 ", C=" + std::to_string(C) + ", Cout=" + std::to_string(Co) + ")");
  GPEN_CHECK(H <= (int64_t{1} << 20) && W <= (int64_t{1} << 20) && C <= (int64_t{1} << 20) && Co <= (int64_t{1} << 20),
             "modconv: implausible dimensions");
  Plan pl;
  pl.N = N, pl.H = H, pl.W = W, pl.C = C, pl.Co = Co, pl.k = p.k;
  const int k = p.k;
  if (!p.up) {
    pl.stride = 1;
    // Row padding may crop (ModConvParams::pad_top): output row a reads input rows a - top + ky.
    const int top = p.top(), pad = k / 2;
    GPEN_CHECK(top >= 0 && top < k && p.bottom() >= 0 && p.bottom() < k && H + top + p.bottom() - k + 1 >= 1,
               "modconv: row padding " + std::to_string(p.pad_top) + " / " + std::to_string(p.pad_bottom) +
                   " invalid for k=" + std::to_string(k) + " and " + std::to_string(H) + " rows");
    pl.Ho = H + top + p.bottom() - k + 1, pl.Wo = W;
    pl.nphase = 1;
    Phase& ph = pl.phases[0];
    ph.na = pl.Ho, ph.nb = W;
    for (int ky = 0; ky < k; ++ky)
      for (int kx = 0; kx < k; ++kx) ph.taps[ph.ntap++] = Tap{ky, kx, ky - top, kx - pad};
  } else {
    pl.stride = 2;
    // A row crop (ModConvParams::crop_top) drops the whole output's first rows: output row
    // 2a + py is the whole op's row 2a + py + crop_top, of parity fy, on its grid row
    // a + (py + crop_top) / 2; its taps are those of that parity, from the same input rows.
    const int ct = p.crop_top;
    GPEN_CHECK(ct >= 0 && p.crop_bottom >= 0 && p.out_rows(H) >= 1,
               "modconv: row crop " + std::to_string(ct) + " / " + std::to_string(p.crop_bottom) + " invalid for k=" +
                   std::to_string(k) + " and " + std::to_string(H) + " rows");
    pl.Ho = p.out_rows(H), pl.Wo = 2 * (W - 1) + k;
    pl.nphase = 4;
    for (int py = 0; py < 2; ++py)
      for (int px = 0; px < 2; ++px) {
        Phase& ph = pl.phases[py * 2 + px];
        ph.py = py, ph.px = px;
        ph.na = (pl.Ho - py + 1) / 2, ph.nb = (pl.Wo - px + 1) / 2;
        const int fy = (py + ct) % 2, ay = (py + ct) / 2;
        for (int ky = fy; ky < k; ky += 2)
          for (int kx = px; kx < k; kx += 2) ph.taps[ph.ntap++] = Tap{ky, kx, ay - (ky - fy) / 2, -(kx - px) / 2};
      }
  }
  for (int i = 0; i < pl.nphase; ++i) {
    const Phase& ph = pl.phases[i];
    pl.ga = std::max(pl.ga, ph.na);
    pl.gb = std::max(pl.gb, ph.nb);
    for (int t = 0; t < ph.ntap; ++t) {
      pl.mindy = std::min(pl.mindy, ph.taps[t].dy), pl.maxdy = std::max(pl.maxdy, ph.taps[t].dy);
      pl.mindx = std::min(pl.mindx, ph.taps[t].dx), pl.maxdx = std::max(pl.maxdx, ph.taps[t].dx);
    }
  }
  // Tiles of about kTilePixels, balanced so the last one in a row is not a sliver.
  const int64_t tile_px = weight_tiles ? kTilePixelsWeightTiles : kTilePixels, co_cap = kCoChunkMax;
  {
    const int64_t ntb = (pl.gb + tile_px - 1) / tile_px;
    pl.tb = (pl.gb + ntb - 1) / ntb;
  }
  pl.ta = std::max<int64_t>(1, std::min(pl.ga, tile_px / pl.tb));
  if (pl.ta > 1) {
    const int64_t nta = (pl.ga + pl.ta - 1) / pl.ta;
    pl.ta = (pl.ga + nta - 1) / nta;
  }
  pl.ntask_a = (pl.ga + pl.ta - 1) / pl.ta;
  pl.ntask_b = (pl.gb + pl.tb - 1) / pl.tb;
  // Packing the weight costs about two passes over it; it pays when each weight is used by many
  // output pixels. For the small early layers (4x4 .. 8x8) the GEMM is bound by reading the
  // weight once, so they read B in place instead.
  const bool small = N * pl.ga * pl.gb <= kDirectPixels;
  // Weight tiles (the low-memory mode) take the same road on every output: no packed weight, each
  // task's K blocks read (8-bit: dequantise) their rows of B into the thread's scratch.
  pl.weight_tiles = weight_tiles;
  pl.direct_b = small || weight_tiles;
  // Small images give few pixel tiles: split the output channels too so every thread has work.
  // Where B is read in place, one chunk per thread: each then reads longer runs of every weight
  // row, which the prefetchers follow (GPEN-256's and -512's convs.0 up conv 1.11x / 1.22x against
  // four chunks per thread).
  const int64_t spatial_tasks = N * pl.ntask_a * pl.ntask_b;
  pl.co_chunk = std::min(round_up(Co, kNR), co_cap);
  const int64_t want = (small ? 1 : 4) * std::max(1, threads);
  while (spatial_tasks * ((Co + pl.co_chunk - 1) / pl.co_chunk) < want && pl.co_chunk > 4 * kNR)
    pl.co_chunk = round_up(pl.co_chunk / 2, kNR);
  pl.ntask_co = (Co + pl.co_chunk - 1) / pl.co_chunk;
  pl.ntask = spatial_tasks * pl.ntask_co;

  pl.band_h = pl.ta + pl.maxdy - pl.mindy;
  pl.band_w = pl.tb + pl.maxdx - pl.mindx;
  const int64_t mrows = round_up(pl.ta * pl.tb, kMR);
  // Offsets rounded to 16 floats keep every block 64-byte aligned for the vector loads.
  int64_t off = 0;
  auto take = [&](int64_t floats) {
    const int64_t o = off;
    off += round_up(floats, 16);
    return o;
  };
  // The micro-kernel reads 6 band pixels at once; with C a multiple of 1 KB (256, 512, 1024
  // channels) those rows would share L1 sets and evict the B panel, so the pixel stride is
  // padded off such multiples.
  pl.cs = round_up(C, 16);
  if (pl.cs % 64 == 0) pl.cs += 16;
  pl.off_band = take(pl.band_h * pl.band_w * pl.cs);
  // Sized for the widest chunk so the layout does not depend on the thread count.
  pl.off_ctile = take(mrows * std::min(round_up(Co, kNR), co_cap));
  // Weight tiles: room for two panels' rows of a K block (the AVX-512 micro-kernel's pair).
  pl.off_bpack = take(int64_t{kKcMax} * kNR * (weight_tiles ? 2 : 1));
  pl.off_svec = take(C);
  pl.off_b2vec = take(2 * C);
  pl.off_row = take(C);
  pl.off_dvec = take(round_up(Co, kNR));
  pl.off_bvec = take(round_up(Co, kNR));
  pl.per_thread = off;
  pl.kdim = int64_t{k} * k * C;
  pl.npanel = (Co + kNR - 1) / kNR;
  pl.shared = pl.direct_b ? 0 : round_up(pl.npanel * pl.kdim * kNR, 16);
  return pl;
}

}  // namespace gpen::cpu::modconv_detail
