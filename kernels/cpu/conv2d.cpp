// NHWC conv2d on the CPU: the main cost of every model this engine runs.
//
// Paths, chosen from the shapes:
//  - depthwise 3x3 (MobileNet): kernels/cpu/conv2d_depthwise.cpp;
//  - other depthwise (one input and one output channel per group), or a depthwise 3x3 whose
//    input is not channel-contiguous: direct accumulation here, vectorised over channels;
//  - few output channels (<= 32) or few input channels (stems, <= 4): a direct conv with
//    register tiles over pixels and output channels, kernels/cpu/conv2d_direct.cpp;
//  - everything else: an implicit-im2col GEMM. The HWIO weight already is a row-major
//    [kh*kw*cin/groups][cout] matrix. For a tile of output pixels and a block of that depth, the
//    rows of the (never materialised) im2col matrix are gathered from the NHWC input straight into
//    the packed panel layout of Eigen's GEBP kernel (one pass, padding read as zeros), then
//    multiplied against packed weight blocks. A 1x1 conv is the same with one tap.
// Weight blocks are packed once per call into a shared cache when they fit (and are reused by
// every tile), else per use. GEMM results land in a per-thread accumulator tile; one epilogue pass
// adds bias, applies the activation and the residual, and writes through the output's strides
// (channel slices). Work items are (pixel tile, group, output-channel blocks) over OpenMP threads;
// each thread owns one slice of the workspace, so nothing is allocated here.
//
// Contract: the workspace must be sized by conv2d_workspace_bytes with `threads` at least the
// num_threads() in effect when conv2d runs (threads <= 0 means num_threads()). The output must not
// overlap the input; the residual may be the output itself (y += conv(x)).
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/conv2d_paths.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"

namespace gpen::cpu {

namespace {

using detail::act_branchless;
using detail::round_floats;

constexpr int64_t kMaxTilePixels = 256;          // output pixels per GEMM tile
constexpr int64_t kTileFloats = 1 << 17;         // bound on tile pixels x output channels (512 KiB)
constexpr int64_t kMaxDepthBlock = 576;          // GEMM depth per packed block (3x3x64)
constexpr int64_t kMaxChannelBlock = 256;        // output channels per packed weight block
constexpr int64_t kMaxItemChannels = 512;        // output channels per work item (accumulator width)
constexpr int64_t kWeightCacheFloats = 1 << 19;  // packed weights kept for the whole call (2 MiB)
constexpr int64_t kDepthwiseAccFloats = 1 << 12; // 16 KiB: stays in L1 until the epilogue

struct Geom {
  int64_t N = 0, H = 0, W = 0, C = 0, Ho = 0, Wo = 0, Co = 0;
  int64_t G = 1, cin_g = 0, cout_g = 0, K = 0;
};

struct Plan {
  bool depthwise = false;
  bool direct = false;  // kernels/cpu/conv2d_direct.cpp
  int64_t dw_seg = 0;  // depthwise: output pixels per item
  // GEMM path
  int64_t tile_m = 0;                    // pixels per tile
  int64_t kb = 0, nkb = 0;               // depth block, number of depth blocks
  int64_t nb = 0, nib = 0;               // channel block, blocks per group
  int64_t item_blocks = 0;               // channel blocks per work item (by default)
  size_t slot_floats = 0;                // one packed weight block, rounded
  size_t cache_floats = 0;               // shared packed-weight cache (0: pack per use)
  size_t pix_floats = 0, acc_floats = 0, wblk_floats = 0;
  size_t per_thread_floats = 0;
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t v, int64_t m) { return ceil_div(v, m) * m; }
// Equal blocks of at most cap, multiples of mult where possible, so the last is not a sliver.
int64_t balanced_block(int64_t total, int64_t cap, int64_t mult) {
  total = std::max<int64_t>(total, 1);
  if (total <= cap) return total;
  return std::min(cap, round_up(ceil_div(total, ceil_div(total, cap)), mult));
}

Geom make_geom(const Conv2dParams& p, const Shape& x, const Shape& y) {
  GPEN_CHECK(x.rank == 4, "conv2d: input must be NHWC (rank 4), got " + x.str());
  GPEN_CHECK(y.rank == 4, "conv2d: output must be NHWC (rank 4), got " + y.str());
  GPEN_CHECK(p.kh >= 1 && p.kw >= 1, "conv2d: kernel size must be positive");
  GPEN_CHECK(p.stride_h >= 1 && p.stride_w >= 1, "conv2d: strides must be positive");
  GPEN_CHECK(p.pad_top >= 0 && p.pad_left >= 0 && p.pad_bottom >= 0 && p.pad_right >= 0,
             "conv2d: paddings must be non-negative");
  GPEN_CHECK(p.groups >= 1, "conv2d: groups must be positive, got " + std::to_string(p.groups));
  Geom g;
  g.N = x[0], g.H = x[1], g.W = x[2], g.C = x[3];
  g.Ho = y[1], g.Wo = y[2], g.Co = y[3];
  g.G = p.groups;
  GPEN_CHECK(g.C % g.G == 0 && g.Co % g.G == 0, "conv2d: channels " + std::to_string(g.C) + " -> " +
                                                      std::to_string(g.Co) + " not divisible by groups " +
                                                      std::to_string(g.G));
  g.cin_g = g.C / g.G;
  g.cout_g = g.Co / g.G;
  g.K = int64_t{p.kh} * p.kw * g.cin_g;
  const int64_t hp = g.H + p.pad_top + p.pad_bottom, wp = g.W + p.pad_left + p.pad_right;
  GPEN_CHECK(hp >= p.kh && wp >= p.kw, "conv2d: kernel larger than padded input " + x.str());
  const int64_t ho = (hp - p.kh) / p.stride_h + 1, wo = (wp - p.kw) / p.stride_w + 1;
  GPEN_CHECK(y[0] == g.N && g.Ho == ho && g.Wo == wo,
             "conv2d: output shape " + y.str() + " does not match input " + x.str() + " (expected [" +
                 std::to_string(g.N) + ", " + std::to_string(ho) + ", " + std::to_string(wo) + ", C])");
  return g;
}

Plan make_plan(const Geom& g) {
  Plan pl;
  if (g.cin_g == 1 && g.cout_g == 1) {
    pl.depthwise = true;
    pl.dw_seg = std::clamp<int64_t>(kDepthwiseAccFloats / std::max<int64_t>(g.C, 1), 1, std::max<int64_t>(g.Wo, 1));
    pl.per_thread_floats = round_floats(static_cast<size_t>(pl.dw_seg * g.C));
    return pl;
  }
  if (detail::direct_conv_suits(g.G, g.cin_g, g.Co, g.K)) {
    pl.direct = true;
    pl.cache_floats = round_floats(detail::direct_conv_workspace_floats(g.K, g.Co));
    return pl;
  }
  pl.kb = balanced_block(g.K, kMaxDepthBlock, 8);
  pl.nkb = ceil_div(std::max<int64_t>(g.K, 1), pl.kb);
  pl.nb = balanced_block(g.cout_g, kMaxChannelBlock, 8);
  pl.nib = ceil_div(std::max<int64_t>(g.cout_g, 1), pl.nb);
  pl.item_blocks = std::max<int64_t>(1, std::min(pl.nib, kMaxItemChannels / pl.nb));
  const int64_t item_channels = std::min(std::max<int64_t>(g.cout_g, 1), pl.item_blocks * pl.nb);
  pl.tile_m = std::clamp<int64_t>(kTileFloats / item_channels / 8 * 8, 32, kMaxTilePixels);
  pl.tile_m = std::max<int64_t>(1, std::min(pl.tile_m, g.N * g.Ho * g.Wo));
  pl.slot_floats = round_floats(static_cast<size_t>(pl.nb * pl.kb));
  const size_t slots = static_cast<size_t>(g.G * pl.nkb * pl.nib);
  // Caching pays when more than one tile reuses the weights.
  if (g.N * g.Ho * g.Wo > pl.tile_m && slots * pl.slot_floats <= static_cast<size_t>(kWeightCacheFloats))
    pl.cache_floats = slots * pl.slot_floats;
  pl.pix_floats = round_floats(static_cast<size_t>(pl.tile_m * pl.kb));
  pl.acc_floats = round_floats(static_cast<size_t>(pl.tile_m * item_channels));
  pl.wblk_floats = pl.cache_floats ? 0 : pl.slot_floats;
  pl.per_thread_floats = pl.pix_floats + pl.acc_floats + pl.wblk_floats;
  return pl;
}

struct Args {
  const Conv2dParams* p;
  Geom g;
  Plan pl;
  const TensorView* x;
  const TensorView* w;
  int64_t wld;  // element distance between rows of the weight seen as [K][cout]
  const TensorView* bias;
  const TensorView* res;
  const TensorView* y;
};

// Decomposes a flat output pixel index into (n, oy, ox) and steps through consecutive pixels.
struct PixelCursor {
  int64_t n, oy, ox, Ho, Wo;
  PixelCursor(int64_t pix, int64_t ho, int64_t wo) : Ho(ho), Wo(wo) {
    n = pix / (ho * wo);
    const int64_t r = pix % (ho * wo);
    oy = r / wo;
    ox = r % wo;
  }
  void next() {
    if (++ox == Wo) {
      ox = 0;
      if (++oy == Ho) {
        oy = 0;
        ++n;
      }
    }
  }
};

template <bool kBias, bool kRes>
void epilogue_row(float* __restrict dst, const float* __restrict src, const float* __restrict bias,
                  const float* __restrict res, int64_t nc, float slope, float gain) {
  for (int64_t c = 0; c < nc; ++c) {
    float v = src[c];
    if constexpr (kBias) v += bias[c];
    v = act_branchless(v, slope, gain);
    if constexpr (kRes) v += res[c];
    dst[c] = v;
  }
}

// y[pixels p0.., channels co0..co0+nc) = act(acc + bias) + residual, acc being m x nc row-major.
void epilogue(const Args& a, int64_t p0, int64_t m, int64_t co0, int64_t nc, const float* acc) {
  const Activation act = a.p->act;
  const TensorView& y = *a.y;
  const float* bias = a.bias ? a.bias->f32() + co0 * a.bias->stride(0) : nullptr;
  const int64_t bs = a.bias ? a.bias->stride(0) : 0;
  const bool unit = y.stride(3) == 1 && (!a.bias || bs == 1) && (!a.res || a.res->stride(3) == 1);
  PixelCursor cur(p0, a.g.Ho, a.g.Wo);
  for (int64_t i = 0; i < m; ++i, cur.next()) {
    const float* src = acc + i * nc;
    float* dst = y.f32() + cur.n * y.stride(0) + cur.oy * y.stride(1) + cur.ox * y.stride(2) + co0 * y.stride(3);
    const float* r = a.res ? a.res->f32() + cur.n * a.res->stride(0) + cur.oy * a.res->stride(1) +
                                 cur.ox * a.res->stride(2) + co0 * a.res->stride(3)
                           : nullptr;
    if (unit) {
      // The residual may be the output itself (y += conv(x)): element c is read before written,
      // but then the two must not be declared __restrict; route that case to the strided loop.
      if (r == dst) {
        for (int64_t c = 0; c < nc; ++c) dst[c] = act_branchless(src[c] + (bias ? bias[c] : 0.0f), act.slope, act.gain) + r[c];
      } else if (bias) {
        r ? epilogue_row<true, true>(dst, src, bias, r, nc, act.slope, act.gain)
          : epilogue_row<true, false>(dst, src, bias, r, nc, act.slope, act.gain);
      } else {
        r ? epilogue_row<false, true>(dst, src, bias, r, nc, act.slope, act.gain)
          : epilogue_row<false, false>(dst, src, bias, r, nc, act.slope, act.gain);
      }
    } else {
      const int64_t ys = y.stride(3), rs = a.res ? a.res->stride(3) : 0;
      for (int64_t c = 0; c < nc; ++c) {
        float v = src[c] + (bias ? bias[c * bs] : 0.0f);
        v = act(v);
        dst[c * ys] = r ? v + r[c * rs] : v;
      }
    }
  }
}

// Eight floats as one value (kernels/cpu/conv2d_paths.h): used where auto-vectorisation does not
// find the register blocking or the shuffles by itself.
using detail::load8;
using detail::store8;
using detail::v8f;

// dst[c * 4 + j] = src[j][c] for c < len: four pixel rows interleaved channel by channel (the
// packed panel layout for a panel width of 4), 4x8 transposes in registers.
void interleave4(float* dst, const float* const* src, int64_t len) {
  int64_t c = 0;
  for (; c + 8 <= len; c += 8, dst += 32) {
    const v8f r0 = load8(src[0] + c), r1 = load8(src[1] + c), r2 = load8(src[2] + c), r3 = load8(src[3] + c);
    const v8f t0 = __builtin_shufflevector(r0, r1, 0, 8, 1, 9, 4, 12, 5, 13);
    const v8f t1 = __builtin_shufflevector(r0, r1, 2, 10, 3, 11, 6, 14, 7, 15);
    const v8f t2 = __builtin_shufflevector(r2, r3, 0, 8, 1, 9, 4, 12, 5, 13);
    const v8f t3 = __builtin_shufflevector(r2, r3, 2, 10, 3, 11, 6, 14, 7, 15);
    store8(dst, __builtin_shufflevector(t0, t2, 0, 1, 8, 9, 2, 3, 10, 11));
    store8(dst + 8, __builtin_shufflevector(t1, t3, 0, 1, 8, 9, 2, 3, 10, 11));
    store8(dst + 16, __builtin_shufflevector(t0, t2, 4, 5, 12, 13, 6, 7, 14, 15));
    store8(dst + 24, __builtin_shufflevector(t1, t3, 4, 5, 12, 13, 6, 7, 14, 15));
  }
  for (; c < len; ++c, dst += 4)
    for (int j = 0; j < 4; ++j) dst[j] = src[j][c];
}

// Packs rows [p0, p0+m) x depth [k0, k1) of group grp's im2col matrix (depth index k is tap
// k / cin_g, channel k % cin_g) into the GEBP row-panel layout (see kernels/cpu/gemm.h), reading
// the input directly; taps that fall into the padding read as zeros.
void pack_pixels(const Args& a, int64_t grp, int64_t p0, int64_t m, int64_t k0, int64_t k1, float* dst) {
  const Geom& g = a.g;
  const Conv2dParams& p = *a.p;
  const TensorView& x = *a.x;
  const int64_t kd = k1 - k0, xcs = x.stride(3);
  const int P = detail::gemm_row_panel();  // <= detail::kMaxRowPanel
  const float* xg = x.f32() + grp * g.cin_g * xcs;
  PixelCursor cur(p0, g.Ho, g.Wo);
  const float* src[detail::kMaxRowPanel];
  int64_t iy0[detail::kMaxRowPanel], ix0[detail::kMaxRowPanel], nofs[detail::kMaxRowPanel];
  for (int64_t i = 0; i < m;) {
    // A full panel of P pixels, or a single leftover pixel.
    const int rows = m - i >= P ? P : 1;
    for (int j = 0; j < rows; ++j, cur.next()) {
      iy0[j] = cur.oy * p.stride_h - p.pad_top;
      ix0[j] = cur.ox * p.stride_w - p.pad_left;
      nofs[j] = cur.n * x.stride(0);
    }
    float* out = dst + i * kd;
    int64_t k = k0, tap = k0 / g.cin_g, ci = k0 % g.cin_g;
    while (k < k1) {
      const int64_t len = std::min(g.cin_g - ci, k1 - k);
      const int64_t ky = tap / p.kw, kx = tap % p.kw;
      bool all = true;
      for (int j = 0; j < rows; ++j) {
        const int64_t iy = iy0[j] + ky, ix = ix0[j] + kx;
        const bool in = iy >= 0 && iy < g.H && ix >= 0 && ix < g.W;
        src[j] = in ? xg + nofs[j] + iy * x.stride(1) + ix * x.stride(2) + ci * xcs : nullptr;
        all = all && in;
      }
      if (rows == 4 && all && xcs == 1) {
        interleave4(out, src, len);
      } else {
        for (int64_t c = 0; c < len; ++c)
          for (int j = 0; j < rows; ++j) out[c * rows + j] = src[j] ? src[j][c * xcs] : 0.0f;
      }
      out += len * rows;
      k += len;
      ++tap;
      ci = 0;
    }
    i += rows;
  }
}

// Weight block (group grp, depth block kk, channel block ib) packed for GEBP.
void pack_weight_block(const Args& a, int64_t grp, int64_t kk, int64_t ib, float* dst) {
  const Geom& g = a.g;
  const Plan& pl = a.pl;
  const TensorView& w = *a.w;
  const int64_t k0 = kk * pl.kb, kd = std::min(pl.kb, g.K - k0);
  const int64_t c0 = ib * pl.nb, nc = std::min(pl.nb, g.cout_g - c0);
  const float* src = w.f32() + k0 * a.wld + (grp * g.cout_g + c0) * w.stride(3);
  detail::gemm_pack_b(dst, src, std::max<int64_t>(a.wld, 1), kd, nc);
}

// One work item: output pixels [p0, p0+m) x channel blocks [ib0, ib1) of group grp.
void gemm_item(const Args& a, int64_t grp, int64_t p0, int64_t m, int64_t ib0, int64_t ib1, const float* wcache,
               float* scratch) {
  const Geom& g = a.g;
  const Plan& pl = a.pl;
  float* pix = scratch;
  float* acc = pix + pl.pix_floats;
  float* wblk = acc + pl.acc_floats;
  const int64_t co0 = ib0 * pl.nb, nc = std::min(ib1 * pl.nb, g.cout_g) - co0;
  std::memset(acc, 0, static_cast<size_t>(m * nc) * sizeof(float));
  for (int64_t kk = 0; kk < pl.nkb; ++kk) {
    const int64_t k0 = kk * pl.kb, kd = std::min(pl.kb, g.K - k0);
    pack_pixels(a, grp, p0, m, k0, k0 + kd, pix);
    for (int64_t ib = ib0; ib < ib1; ++ib) {
      const float* wb;
      if (wcache) {
        wb = wcache + static_cast<size_t>((grp * pl.nkb + kk) * pl.nib + ib) * pl.slot_floats;
      } else {
        pack_weight_block(a, grp, kk, ib, wblk);
        wb = wblk;
      }
      const int64_t c0 = ib * pl.nb, bc = std::min(pl.nb, g.cout_g - c0);
      detail::gemm_packed_acc(acc + (c0 - co0), nc, pix, wb, m, bc, kd);
    }
  }
  epilogue(a, p0, m, grp * g.cout_g + co0, nc, acc);
}

// acc[c] += sum over the taps t of xs[t][c] * ws[t][c], for one output pixel: channels in blocks
// of 32 and 8 held in registers across all taps.
void depthwise_pixel_unit(float* acc, const float* const* xs, const float* const* ws, int ntaps, int64_t C) {
  int64_t c0 = 0;
  for (; c0 + 32 <= C; c0 += 32) {
    v8f a0 = load8(acc + c0), a1 = load8(acc + c0 + 8), a2 = load8(acc + c0 + 16), a3 = load8(acc + c0 + 24);
    for (int t = 0; t < ntaps; ++t) {
      const float* xp = xs[t] + c0;
      const float* wp = ws[t] + c0;
      a0 += load8(xp) * load8(wp);
      a1 += load8(xp + 8) * load8(wp + 8);
      a2 += load8(xp + 16) * load8(wp + 16);
      a3 += load8(xp + 24) * load8(wp + 24);
    }
    store8(acc + c0, a0);
    store8(acc + c0 + 8, a1);
    store8(acc + c0 + 16, a2);
    store8(acc + c0 + 24, a3);
  }
  for (; c0 + 8 <= C; c0 += 8) {
    v8f a0 = load8(acc + c0);
    for (int t = 0; t < ntaps; ++t) a0 += load8(xs[t] + c0) * load8(ws[t] + c0);
    store8(acc + c0, a0);
  }
  for (int t = 0; t < ntaps; ++t)
    for (int64_t c = c0; c < C; ++c) acc[c] += xs[t][c] * ws[t][c];
}

void depthwise_pixel_strided(float* acc, const float* const* xs, const float* const* ws, int ntaps, int64_t C,
                             int64_t xcs, int64_t wcs) {
  for (int t = 0; t < ntaps; ++t)
    for (int64_t c = 0; c < C; ++c) acc[c] += xs[t][c * xcs] * ws[t][c * wcs];
}

// Output row (n, oy), pixels [ox0, ox0+len), all channels.
void depthwise_item(const Args& a, int64_t n, int64_t oy, int64_t ox0, int64_t len, float* acc) {
  const Geom& g = a.g;
  const Conv2dParams& p = *a.p;
  const TensorView& x = *a.x;
  const TensorView& w = *a.w;
  const int64_t C = g.C, xcs = x.stride(3), wcs = w.stride(3);
  const bool unit = xcs == 1 && wcs == 1;
  std::memset(acc, 0, static_cast<size_t>(len * C) * sizeof(float));
  // Taps go in batches small enough for pointer tables on the stack, whatever the kernel size.
  constexpr int kBatch = 32;
  const float* xs[kBatch];
  const float* ws[kBatch];
  for (int64_t ox = ox0; ox < ox0 + len; ++ox) {
    float* ap = acc + (ox - ox0) * C;
    int nt = 0;
    auto flush = [&]() {
      if (unit) {
        depthwise_pixel_unit(ap, xs, ws, nt, C);
      } else {
        depthwise_pixel_strided(ap, xs, ws, nt, C, xcs, wcs);
      }
      nt = 0;
    };
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = oy * p.stride_h + ky - p.pad_top;
      if (iy < 0 || iy >= g.H) continue;
      const float* xrow = x.f32() + n * x.stride(0) + iy * x.stride(1);
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        const int64_t ix = ox * p.stride_w + kx - p.pad_left;
        if (ix < 0 || ix >= g.W) continue;
        xs[nt] = xrow + ix * x.stride(2);
        ws[nt] = w.f32() + ky * w.stride(0) + kx * w.stride(1);
        if (++nt == kBatch) flush();
      }
    }
    if (nt) flush();
  }
  epilogue(a, (n * g.Ho + oy) * g.Wo + ox0, len, 0, C, acc);
}

int resolve_threads(int threads) { return threads > 0 ? threads : num_threads(); }

}  // namespace

size_t conv2d_workspace_bytes(const Conv2dParams& p, const Shape& x, const Shape& y, int threads) {
  const Geom g = make_geom(p, x, y);
  const Plan pl = make_plan(g);
  return (pl.cache_floats + pl.per_thread_floats * static_cast<size_t>(resolve_threads(threads))) * sizeof(float) +
         detail::kScratchAlign;
}

void conv2d(const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
            const TensorView* residual, const TensorView& y, void* workspace) {
  detail::check_f32(x, "conv2d", "input");
  detail::check_f32(w, "conv2d", "weight");
  detail::check_f32(y, "conv2d", "output");
  const Geom g = make_geom(p, x.shape, y.shape);
  detail::check_rank(w, 4, "conv2d", "weight");
  GPEN_CHECK(w.dim(0) == p.kh && w.dim(1) == p.kw && w.dim(2) == g.cin_g && w.dim(3) == g.Co,
             "conv2d: weight shape " + w.shape.str() + " is not HWIO [" + std::to_string(p.kh) + ", " +
                 std::to_string(p.kw) + ", " + std::to_string(g.cin_g) + ", " + std::to_string(g.Co) + "]");
  GPEN_CHECK(p.has_bias == (bias != nullptr), "conv2d: has_bias does not match the bias argument");
  GPEN_CHECK(p.has_residual == (residual != nullptr), "conv2d: has_residual does not match the residual argument");
  if (bias) {
    detail::check_f32(*bias, "conv2d", "bias");
    GPEN_CHECK(bias->rank() == 1 && bias->dim(0) == g.Co,
               "conv2d: bias shape " + bias->shape.str() + " must be [" + std::to_string(g.Co) + "]");
  }
  if (residual) {
    detail::check_f32(*residual, "conv2d", "residual");
    detail::check_same_shape(*residual, y, "conv2d", "residual", "output");
  }
  const Plan pl = make_plan(g);
  int64_t wld = 0;
  if (!pl.depthwise) {
    // The GEMM reads the weight as a [K][cout] matrix: unit stride along cout and the kh, kw, cin
    // axes nested, so that row k = (ky * kw + kx) * cin_g + ci sits at k * wld.
    wld = g.cin_g > 1 ? w.stride(2) : p.kw > 1 ? w.stride(1) : w.stride(0);
    const bool nested = (g.cin_g == 1 || w.stride(2) == wld) && (p.kw == 1 || w.stride(1) == g.cin_g * wld) &&
                        (p.kh == 1 || w.stride(0) == p.kw * g.cin_g * wld);
    GPEN_CHECK((g.Co == 1 || w.stride(3) == 1) && nested && (g.K == 1 || wld > 0),
               "conv2d: weight strides must describe a [kh*kw*cin][cout] row-major matrix");
  }
  if (g.N * g.Ho * g.Wo * g.Co == 0) return;
  GPEN_CHECK(workspace != nullptr, "conv2d: workspace is required (see conv2d_workspace_bytes)");
  float* base = detail::align_ptr(workspace);

  if (pl.direct) {
    detail::direct_conv(p, x, w, bias, residual, y, base);
    return;
  }
  if (pl.depthwise && detail::depthwise3x3(p, x, w, bias, residual, y)) return;

  Args a{&p, g, pl, &x, &w, wld, bias, residual, &y};
  const int max_threads = num_threads();

  if (pl.depthwise) {
    const int64_t segs = ceil_div(g.Wo, pl.dw_seg);
    const int64_t items = g.N * g.Ho * segs;
    const int T = static_cast<int>(std::min<int64_t>(max_threads, items));
#pragma omp parallel num_threads(T) if (T > 1)
    {
      float* acc = base + static_cast<size_t>(omp_get_thread_num()) * pl.per_thread_floats;
#pragma omp for schedule(static)
      for (int64_t it = 0; it < items; ++it) {
        const int64_t row = it / segs, seg = it % segs;
        const int64_t ox0 = seg * pl.dw_seg;
        depthwise_item(a, row / g.Ho, row % g.Ho, ox0, std::min(pl.dw_seg, g.Wo - ox0), acc);
      }
    }
    return;
  }

  const int64_t P = g.N * g.Ho * g.Wo;
  const int64_t tiles = ceil_div(P, pl.tile_m);
  // Few tiles (small feature maps): give items fewer channel blocks so every thread gets work.
  int64_t per_item = pl.item_blocks;
  while (per_item > 1 && tiles * g.G * ceil_div(pl.nib, per_item) < 2 * max_threads) --per_item;
  const int64_t ichunks = ceil_div(pl.nib, per_item);
  const int64_t items = tiles * g.G * ichunks;
  const int64_t slots = pl.cache_floats ? g.G * pl.nkb * pl.nib : 0;
  float* wcache = pl.cache_floats ? base : nullptr;
  float* slices = base + pl.cache_floats;
  const int T = static_cast<int>(std::min<int64_t>(max_threads, std::max(items, slots)));
#pragma omp parallel num_threads(T) if (T > 1)
  {
    float* scratch = slices + static_cast<size_t>(omp_get_thread_num()) * pl.per_thread_floats;
    if (slots) {
#pragma omp for schedule(static)
      for (int64_t sl = 0; sl < slots; ++sl)
        pack_weight_block(a, sl / (pl.nkb * pl.nib), (sl / pl.nib) % pl.nkb, sl % pl.nib,
                          wcache + static_cast<size_t>(sl) * pl.slot_floats);
    }  // implicit barrier: the cache is complete before any tile uses it
#pragma omp for schedule(dynamic, 1)
    for (int64_t it = 0; it < items; ++it) {
      // Consecutive items share their weight blocks (same group and channels, next tile).
      const int64_t tile = it % tiles, rest = it / tiles;
      const int64_t grp = rest / ichunks, ic = rest % ichunks;
      const int64_t p0 = tile * pl.tile_m, m = std::min(pl.tile_m, P - p0);
      const int64_t ib0 = ic * per_item, ib1 = std::min(pl.nib, ib0 + per_item);
      gemm_item(a, grp, p0, m, ib0, ib1, wcache, scratch);
    }
  }
}

}  // namespace gpen::cpu
