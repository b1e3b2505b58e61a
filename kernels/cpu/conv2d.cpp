// NHWC conv2d on the CPU: the main cost of every model this engine runs.
//
// Paths (the rule that picks one: conv_select.h):
//  - Winograd for 3x3 convs of stride 1 and 2: kernels/cpu/winograd.h, winograd_s2.h;
//  - depthwise 3x3 (MobileNet): kernels/cpu/conv2d_depthwise.cpp;
//  - other depthwise (one input and one output channel per group): direct accumulation,
//    vectorised over channels, kernels/cpu/conv2d_depthwise_any.cpp;
//  - few output channels or few input channels (stems): a direct conv with register tiles over
//    pixels and output channels, kernels/cpu/conv2d_direct.cpp;
//  - 1x1 convs without padding (one group), and the other ungrouped convs on many channels tap
//    by tap: a GEMM of our own with the epilogue in its register tile, kernels/cpu/conv2d_1x1.cpp;
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
// Contract: the workspace must be sized by conv2d_workspace_bytes for the same choice with
// `threads` at least the num_threads() in effect when conv2d runs (threads <= 0 means num_threads()). The output must not
// overlap the input; the residual may be the output itself (y += conv(x)).
//
// This file: the geometry, the plan and the dispatch; the GEMM path is kernels/cpu/conv2d_gemm.cpp,
// its epilogue kernels/cpu/conv2d_epilogue.cpp (shared declarations: kernels/cpu/conv2d_paths.h).
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/conv2d_1x1.h"
#include "kernels/cpu/conv2d_paths.h"
#include "kernels/cpu/weights8.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/range_steal.h"
#include "kernels/cpu/strided.h"
#include "kernels/cpu/winograd.h"
#include "kernels/cpu/winograd_s2.h"

namespace gpen::cpu {

using detail::Args;
using detail::depthwise_item;
using detail::gemm_item;
using detail::Geom;
using detail::pack_weight_block;
using detail::Plan;

namespace {

using detail::round_floats;

constexpr int64_t kMaxTilePixels = 256;          // output pixels per GEMM tile
constexpr int64_t kTileFloats = 1 << 17;         // bound on tile pixels x output channels (512 KiB)
constexpr int64_t kMaxDepthBlock = detail::kMaxDepthBlock;  // GEMM depth per packed block (3x3x64)
constexpr int64_t kMaxChannelBlock = 256;        // output channels per packed weight block
constexpr int64_t kMaxItemChannels = 512;        // output channels per work item (accumulator width)
constexpr int64_t kWeightCacheFloats = 1 << 19;  // packed weights kept for the whole call (2 MiB)
constexpr int64_t kDepthwiseAccFloats = 1 << 12; // 16 KiB: stays in L1 until the epilogue

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

Plan make_plan(const Geom& g, ConvPath path) {
  Plan pl;
  if (path == ConvPath::depthwise || path == ConvPath::depthwise_any) {
    pl.depthwise = true;
    pl.dw_seg = std::clamp<int64_t>(kDepthwiseAccFloats / std::max<int64_t>(g.C, 1), 1, std::max<int64_t>(g.Wo, 1));
    pl.per_thread_floats = round_floats(static_cast<size_t>(pl.dw_seg * g.C));
    return pl;
  }
  if (path == ConvPath::direct) {
    pl.direct = true;
    pl.cache_floats = round_floats(detail::direct_conv_workspace_floats(g.K, g.Co));
    return pl;
  }
  pl.kb = balanced_block(g.K, kMaxDepthBlock, 8);
  pl.nkb = ceil_div(std::max<int64_t>(g.K, 1), pl.kb);
  // A single-tile output (<= kMaxTilePixels pixels: GPEN's 16x16 and smaller encoder convs) would
  // be one work item, so one thread would run it alone: two channel blocks give two threads work.
  // The sums run over the same K blocks either way, so the bits do not change.
  const int64_t cap = g.N * g.Ho * g.Wo <= kMaxTilePixels && g.cout_g >= 128 ? ceil_div(g.cout_g, 2) : kMaxChannelBlock;
  pl.nb = balanced_block(g.cout_g, std::min(cap, kMaxChannelBlock), 8);
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

int resolve_threads(int threads) { return threads > 0 ? threads : num_threads(); }

}  // namespace

size_t conv2d_workspace_bytes(const ConvChoice& c, const Conv2dParams& p, const Shape& x, const Shape& y,
                              int threads) {
  const int nt = resolve_threads(threads);
  if (c.path == ConvPath::winograd) return winograd_detail::conv2d_winograd_workspace_bytes(c.tile, x, y, nt);
  if (c.path == ConvPath::winograd_s2) return winograd_detail::conv2d_wino_s2_workspace_bytes(c.tile, x, y, nt);
  const Geom g = make_geom(p, x, y);
  const Plan pl = make_plan(g, c.path);
  size_t floats = pl.cache_floats + pl.per_thread_floats * static_cast<size_t>(nt);
  // The own GEMM's paths carry the implicit GEMM's figure too: the workspace of a 1x1 conv is the
  // same whichever of the two GEMMs runs it.
  if (c.path == ConvPath::gemm1x1 || c.path == ConvPath::gemm_taps)
    floats = std::max(floats, detail::conv1x1_workspace_floats(p, x, y, nt));
  return floats * sizeof(float) + detail::kScratchAlign;
}

size_t conv2d_workspace_bytes(const Conv2dParams& p, const Shape& x, const Shape& y, int threads, const CpuOptions& o) {
  return conv2d_workspace_bytes(choose_conv(conv2d_case(p, x, y), o), p, x, y, threads);
}

void conv2d(const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
            const TensorView* residual, const TensorView& y, void* workspace, const CpuOptions& o) {
  conv2d(choose_conv(conv2d_case(p, x, w, bias, residual, y), o), p, x, w, bias, residual, y, workspace);
}

void conv2d(const ConvChoice& c, const Conv2dParams& p, const TensorView& x, const TensorView& w,
            const TensorView* bias, const TensorView* residual, const TensorView& y, void* workspace) {
  detail::check_f32(x, "conv2d", "input");
  detail::check_weight_f32_or_8bit(w, "conv2d");
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
  const bool one_by_one = c.path == ConvPath::gemm1x1 || c.path == ConvPath::gemm_taps;
  if (p.act_after_residual && residual && !p.act.is_identity() && !one_by_one) {
    // Only the 1x1 path has act(acc + bias + residual) in its epilogue: the others add the
    // residual, then the activation runs as a pass of its own.
    Conv2dParams q = p;
    q.act = Activation::none();
    q.act_after_residual = false;
    conv2d(c, q, x, w, bias, residual, y, workspace);
    bias_act(BiasActParams{false, p.act}, y, nullptr, y);
    return;
  }
  if (c.path == ConvPath::winograd) {
    winograd_detail::conv2d_winograd(c.tile, p, x, w, bias, residual, y, workspace);
    return;
  }
  if (c.path == ConvPath::winograd_s2) {
    winograd_detail::conv2d_wino_s2(c.tile, p, x, w, bias, residual, y, workspace);
    return;
  }
  const Plan pl = make_plan(g, c.path);
  GPEN_CHECK(!pl.depthwise || !dtype_is_8bit_weight(w.dtype),
             "conv2d: 8-bit weights are not supported by depthwise convs");
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
  if (one_by_one) {
    detail::conv1x1(p, x, w, bias, residual, y, base);
    return;
  }
  if (c.path == ConvPath::depthwise) {
    GPEN_CHECK(detail::depthwise3x3(p, x, w, bias, residual, y), "conv2d: the depthwise 3x3 path got other views");
    return;
  }

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
  RangeSteal tasks;
  tasks.reset(items, T);
#pragma omp parallel num_threads(T) if (T > 1)
  {
    float* scratch = slices + static_cast<size_t>(omp_get_thread_num()) * pl.per_thread_floats;
    if (slots) {
#pragma omp for schedule(static)
      for (int64_t sl = 0; sl < slots; ++sl)
        pack_weight_block(a, sl / (pl.nkb * pl.nib), (sl / pl.nib) % pl.nkb, sl % pl.nib,
                          wcache + static_cast<size_t>(sl) * pl.slot_floats);
    }  // implicit barrier: the cache is complete before any tile uses it
    // Consecutive items share their weight blocks (same group and channels, next tile); each
    // thread from its own share of the image (range_steal.h).
    const int me = omp_get_thread_num();
    for (int64_t it; (it = tasks.next(me)) >= 0;) {
      const int64_t tile = it % tiles, rest = it / tiles;
      const int64_t grp = rest / ichunks, ic = rest % ichunks;
      const int64_t p0 = tile * pl.tile_m, m = std::min(pl.tile_m, P - p0);
      const int64_t ib0 = ic * per_item, ib1 = std::min(pl.nib, ib0 + per_item);
      gemm_item(a, grp, p0, m, ib0, ib1, wcache, scratch);
    }
  }
}

}  // namespace gpen::cpu
