// NHWC upfirdn2d: upsample by zero insertion, pad (negative pads crop), convolve with an FIR
// kernel (true convolution, so the kernel is applied flipped), keep every down-th sample.
// Nothing is materialised: output (oy, ox) reads the input sample behind each kernel tap directly,
// skipping taps that land on inserted zeros or padding (polyphase). Output sample oy, tap ky
// reads upsampled position u = oy*down + ky - pad0, which is input row u/up when u is a multiple
// of up inside [0, in*up), and zero otherwise; its weight is kernel[kh-1-ky].
//
// Every kernel GPEN uses is an outer product (k = [1,3,3,1]^T [1,3,3,1] / 64), so a rank-1
// kernel runs separably: each needed input row is filtered horizontally once into a per-thread
// ring of rows, and output rows combine ring rows vertically (kh + kw instead of kh * kw
// multiply-adds per sample). Other kernels take the direct 2-D path.
//
// Contract: the workspace must be sized by upfirdn2d_workspace_bytes with `threads` at least the
// num_threads() in effect when upfirdn2d runs (threads <= 0 means num_threads()); the output must
// not overlap the input. The optional epilogue fields of UpFirDn2dParams are not applied here
// (upfirdn2d_epilogue does that).
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "kernels/cpu/core_distance.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/strided.h"
#include "kernels/cpu/upfirdn2d_act.h"
#include "kernels/cpu/upfirdn2d_kernel.h"

#ifndef GPEN_HAVE_AVX512_KERNELS
#define GPEN_HAVE_AVX512_KERNELS 0
#endif

namespace gpen::cpu {

namespace {

using detail::round_floats;
using upfirdn2d_detail::bias_act_rows;
using upfirdn2d_detail::few_channels_up_row;
using upfirdn2d_detail::kFewChannels;
using upfirdn2d_detail::weighted_sum;
using upfirdn2d_detail::weighted_sum_stream;

// Outputs from this size bypass the caches (streaming stores). GPEN's blurs in the graph
// (docs/benchmarks.md): at 4-8 MiB (GPEN-256's full- and half-resolution blurs) plain stores pay
// on both vendors, since the consumer then finds the output in L3: on an Intel Xeon the blurs ran
// twice as fast, on an AMD EPYC (Zen 4) the blurs ran 1.2x slower
// but their consumers 0.1-0.3 ms each faster (GPEN-256 0.8 ms in all); GPEN-512's outputs of 16
// MiB and more still run 1.2-1.5x faster streamed on the Xeon and no slower on the EPYC.
constexpr int64_t kStreamMinBytes = int64_t{16} << 20;
// ... and from this size when the two threads run far apart (core_distance.h): there a plain store
// to a line the other core wrote in an earlier op waits for that core. On a Zen 4 VM, far apart,
// GPEN-256's blurs from 0.26 to 8.4 MB ran 1.5-3.6x faster streamed (the last one 1.48 -> 0.59
// ms) and their consumers up to 0.25 ms slower each: 60.0 -> 58.2 ms in all. Near, the same rule
// cost 1.1 ms, so it waits for the probe to say far.
constexpr int64_t kFarStreamMinBytes = int64_t{1} << 18;
constexpr int64_t kMaxRingFloats = int64_t{1} << 20;  // separable path: ring rows per thread (4 MiB)

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Geom {
  int64_t N = 0, H = 0, W = 0, C = 0, Ho = 0, Wo = 0;
};

// Rank-1 factorisation K[i][j] = col[i] * row[j], row normalised at the largest tap (r0, c0).
struct Separable {
  bool ok = false;
  int r0 = 0, c0 = 0;
};

struct Plan {
  bool separable = false;
  Separable sep;
  int64_t ring = 0;        // rows in the separable ring
  size_t taps_floats = 0;  // shared header: the flipped taps (direct) or factors (separable)
  size_t tag_floats = 0, row_floats = 0;
  size_t per_thread_floats = 0;
};

Geom make_geom(const UpFirDn2dParams& p, const Shape& x, const Shape& y) {
  GPEN_CHECK(x.rank == 4, "upfirdn2d: input must be NHWC (rank 4), got " + x.str());
  GPEN_CHECK(y.rank == 4, "upfirdn2d: output must be NHWC (rank 4), got " + y.str());
  GPEN_CHECK(p.up_x >= 1 && p.up_y >= 1 && p.down_x >= 1 && p.down_y >= 1,
             "upfirdn2d: up and down factors must be positive");
  GPEN_CHECK(p.kh >= 1 && p.kw >= 1, "upfirdn2d: kernel size must be positive");
  GPEN_CHECK(p.kernel.size() == static_cast<size_t>(p.kh) * static_cast<size_t>(p.kw),
             "upfirdn2d: kernel has " + std::to_string(p.kernel.size()) + " taps, expected " +
                 std::to_string(p.kh) + "x" + std::to_string(p.kw));
  Geom g;
  g.N = x[0], g.H = x[1], g.W = x[2], g.C = x[3];
  const int64_t span_y = g.H * p.up_y + p.pad_y0 + p.pad_y1 - p.kh;
  const int64_t span_x = g.W * p.up_x + p.pad_x0 + p.pad_x1 - p.kw;
  GPEN_CHECK(span_y >= 0 && span_x >= 0, "upfirdn2d: kernel larger than the padded input " + x.str());
  g.Ho = span_y / p.down_y + 1;
  g.Wo = span_x / p.down_x + 1;
  GPEN_CHECK(y[0] == g.N && y[1] == g.Ho && y[2] == g.Wo && y[3] == g.C,
             "upfirdn2d: output shape " + y.str() + " must be [" + std::to_string(g.N) + ", " + std::to_string(g.Ho) +
                 ", " + std::to_string(g.Wo) + ", " + std::to_string(g.C) + "]");
  return g;
}

// Rank-1 test: K[i][j] == K[i][c0] * K[r0][j] / K[r0][c0] to float precision, (r0, c0) the
// largest tap.
Separable factor(const UpFirDn2dParams& p) {
  Separable s;
  const auto& k = p.kernel;
  size_t arg = 0;
  for (size_t i = 1; i < k.size(); ++i)
    if (std::fabs(k[i]) > std::fabs(k[arg])) arg = i;
  const double peak = k[arg];
  if (peak == 0.0 || !std::isfinite(peak)) return s;
  s.r0 = static_cast<int>(arg) / p.kw;
  s.c0 = static_cast<int>(arg) % p.kw;
  const double tol = 1e-6 * std::fabs(peak);
  for (int i = 0; i < p.kh; ++i) {
    const double col = k[static_cast<size_t>(i) * p.kw + s.c0];
    for (int j = 0; j < p.kw; ++j) {
      const double row = k[static_cast<size_t>(s.r0) * p.kw + j] / peak;
      if (!(std::fabs(k[static_cast<size_t>(i) * p.kw + j] - col * row) <= tol)) return s;
    }
  }
  s.ok = true;
  return s;
}

Plan make_plan(const UpFirDn2dParams& p, const Geom& g) {
  Plan pl;
  if (p.kernel.size() > 1) pl.sep = factor(p);
  pl.ring = ceil_div(p.kh, p.up_y);  // input rows one output row can touch
  pl.row_floats = round_floats(static_cast<size_t>(std::max<int64_t>(g.Wo * g.C, 1)));
  pl.tag_floats = round_floats(static_cast<size_t>(pl.ring) * 2);  // one int64 tag per ring row
  if (pl.sep.ok && pl.ring * static_cast<int64_t>(pl.row_floats) <= kMaxRingFloats) {
    pl.separable = true;
    pl.taps_floats = round_floats(static_cast<size_t>(p.kh) + static_cast<size_t>(p.kw));
    pl.per_thread_floats = pl.tag_floats + static_cast<size_t>(pl.ring) * pl.row_floats;
  } else {
    pl.taps_floats = round_floats(static_cast<size_t>(p.kh) * static_cast<size_t>(p.kw));
  }
  return pl;
}

// Input index behind output index o and tap t along one axis, or -1 for an inserted zero or pad.
inline int64_t source_index(int64_t o, int64_t t, int down, int up, int pad0, int64_t in) {
  const int64_t u = o * down + t - pad0;
  if (u < 0 || u % up != 0) return -1;
  const int64_t i = u / up;
  return i < in ? i : -1;
}

// Taps are gathered into tables of this many (source, weight) pairs; more are summed in batches.
constexpr int kTapBatch = 32;

// The same with element strides (channel slices whose channels are not unit-strided).
void weighted_sum_strided(float* dst, int64_t ds, const float* const* src, int64_t ss, const float* w, int nt,
                          int64_t len, bool accumulate) {
  for (int64_t i = 0; i < len; ++i) {
    float a = accumulate ? dst[i * ds] : 0.0f;
    for (int t = 0; t < nt; ++t) a += w[t] * src[t][i * ss];
    dst[i * ds] = a;
  }
}

// Collects (source, weight) pairs and sums them into one destination of len elements.
struct TapSum {
  float* dst;
  int64_t ds, ss, len;
  const float* src[kTapBatch];
  float w[kTapBatch];
  int nt = 0;
  bool started = false;

  TapSum(float* d, int64_t dst_stride, int64_t src_stride, int64_t n) : dst(d), ds(dst_stride), ss(src_stride), len(n) {}
  void add(const float* s, float weight) {
    src[nt] = s;
    w[nt] = weight;
    if (++nt == kTapBatch) flush();
  }
  void flush() {
    if (ds == 1 && ss == 1) {
      weighted_sum(dst, src, w, nt, len, started);
    } else {
      weighted_sum_strided(dst, ds, src, ss, w, nt, len, started);
    }
    started = true;
    nt = 0;
  }
  void finish() {
    if (nt > 0 || !started) flush();  // no tap at all still writes zeros
  }
};

void run_direct(const UpFirDn2dParams& p, const Geom& g, const Plan& pl, const TensorView& x, const TensorView& y,
                float* base) {
  (void)pl;
  const int64_t rows = g.N * g.Ho;
  const int T = static_cast<int>(std::min<int64_t>(num_threads(), rows));
  // Flipped taps, row by row: weight of tap (ky, kx) is kernel[kh-1-ky][kw-1-kx].
  float* flipped = base;
  std::reverse_copy(p.kernel.begin(), p.kernel.end(), flipped);
#pragma omp parallel for num_threads(T) if (T > 1) schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t n = row / g.Ho, oy = row % g.Ho;
    const float* xn = x.f32() + n * x.stride(0);
    for (int64_t ox = 0; ox < g.Wo; ++ox) {
      TapSum sum(y.f32() + n * y.stride(0) + oy * y.stride(1) + ox * y.stride(2), y.stride(3), x.stride(3), g.C);
      for (int64_t ky = 0; ky < p.kh; ++ky) {
        const int64_t iy = source_index(oy, ky, p.down_y, p.up_y, p.pad_y0, g.H);
        if (iy < 0) continue;
        for (int64_t kx = 0; kx < p.kw; ++kx) {
          const int64_t ix = source_index(ox, kx, p.down_x, p.up_x, p.pad_x0, g.W);
          if (ix >= 0) sum.add(xn + iy * x.stride(1) + ix * x.stride(2), flipped[ky * p.kw + kx]);
        }
      }
      sum.finish();
    }
  }
}

// The epilogue act(y * scale[n, c] + bias[c]) applied to each output row while it is still in
// cache (scale, bias unit-strided or null), instead of a second pass over the whole output.
struct RowEpilogue {
  bool on = false;
  const float* scale = nullptr;  // [N, C] with row stride scale_n
  int64_t scale_n = 0;
  const float* bias = nullptr;
  float gpos = 1.0f, gneg = 1.0f;
};

void run_separable(const UpFirDn2dParams& p, const Geom& g, const Plan& pl, const TensorView& x, const TensorView& y,
                   float* base, const RowEpilogue& ep) {
  const int64_t rows = g.N * g.Ho;
  const int T = static_cast<int>(std::min<int64_t>(num_threads(), rows));
  const int64_t C = g.C, RC = g.Wo * g.C;
  // Flipped factors: vertical tap ky weighs K[kh-1-ky][c0], horizontal tap kx K[r0][kw-1-kx] / peak.
  float* fy = base;
  float* fx = base + p.kh;
  const double peak = p.kernel[static_cast<size_t>(pl.sep.r0) * p.kw + pl.sep.c0];
  for (int ky = 0; ky < p.kh; ++ky) fy[ky] = p.kernel[static_cast<size_t>(p.kh - 1 - ky) * p.kw + pl.sep.c0];
  for (int kx = 0; kx < p.kw; ++kx)
    fx[kx] = static_cast<float>(p.kernel[static_cast<size_t>(pl.sep.r0) * p.kw + (p.kw - 1 - kx)] / peak);
  float* slices = base + pl.taps_floats;
  const bool y_rows_dense = y.stride(3) == 1 && y.stride(2) == C;
  const bool flat_x = p.up_x == 1 && p.down_x == 1 && x.stride(3) == 1 && x.stride(2) == C;
  // Outputs of many MiB (GPEN's full-resolution blurs) are written with streaming stores, the
  // fused epilogue applied before the store; and outputs from kFarStreamMinBytes when the threads
  // run far apart (core_distance.h).
  const int64_t y_bytes = y.numel() * static_cast<int64_t>(sizeof(float));
  const bool stream = y_rows_dense && p.kh <= kTapBatch &&
                      (y_bytes >= kStreamMinBytes || (y_bytes >= kFarStreamMinBytes && T > 1 && cores_far()));
  const bool few_up_x = !flat_x && p.up_x > 1 && p.down_x == 1 && C < kFewChannels && x.stride(3) == 1;
  // Static scheduling hands each thread one contiguous band of output rows, so consecutive rows
  // find most of their horizontally filtered input rows already in the ring.
#pragma omp parallel num_threads(T) if (T > 1)
  {
    float* slice = slices + static_cast<size_t>(omp_get_thread_num()) * pl.per_thread_floats;
    auto* tags = reinterpret_cast<int64_t*>(slice);
    float* ring = slice + pl.tag_floats;
    for (int64_t r = 0; r < pl.ring; ++r) tags[r] = -1;
    // The horizontally filtered row of input row (n, iy), from the ring or computed into it.
    auto hrow = [&](int64_t n, int64_t iy) -> const float* {
      const int64_t slot = iy % pl.ring, tag = n * g.H + iy;
      float* h = ring + static_cast<size_t>(slot) * pl.row_floats;
      if (tags[slot] != tag) {
        const float* xrow = x.f32() + n * x.stride(0) + iy * x.stride(1);
        // Without up- or downsampling along x, the outputs whose taps all land inside the row
        // [ox0, ox1) are one flat weighted sum of kw shifted copies of the row (dense pixels);
        // only the edges go pixel by pixel.
        int64_t ox0 = g.Wo, ox1 = g.Wo;
        if (flat_x) {
          ox0 = std::clamp<int64_t>(p.pad_x0, 0, g.Wo);
          ox1 = std::max<int64_t>(ox0, std::min<int64_t>(g.Wo, g.W + p.pad_x0 - p.kw + 1));
          if (ox1 > ox0) {
            TapSum flat(h + ox0 * C, 1, 1, (ox1 - ox0) * C);
            for (int64_t kx = 0; kx < p.kw; ++kx) flat.add(xrow + (ox0 + kx - p.pad_x0) * C, fx[kx]);
            flat.finish();
          }
        }
        if (few_up_x) {
          few_channels_up_row(p, g.W, g.Wo, C, fx, xrow, x.stride(2), h);
          ox0 = 0, ox1 = g.Wo;  // the loop below has nothing left to do
        }
        for (int64_t ox = 0; ox < g.Wo; ++ox) {
          if (ox == ox0 && ox1 > ox0) ox = ox1;
          if (ox >= g.Wo) break;
          TapSum sum(h + ox * C, 1, x.stride(3), C);
          for (int64_t kx = 0; kx < p.kw; ++kx) {
            const int64_t ix = source_index(ox, kx, p.down_x, p.up_x, p.pad_x0, g.W);
            if (ix >= 0) sum.add(xrow + ix * x.stride(2), fx[kx]);
          }
          sum.finish();
        }
        tags[slot] = tag;
      }
      return h;
    };
#pragma omp for schedule(static)
    for (int64_t row = 0; row < rows; ++row) {
      const int64_t n = row / g.Ho, oy = row % g.Ho;
      float* dst = y.f32() + n * y.stride(0) + oy * y.stride(1);
      const float* src[kTapBatch];
      float w[kTapBatch];
      int nt = 0;
      if (stream)
        for (int64_t ky = 0; ky < p.kh; ++ky) {
          const int64_t iy = source_index(oy, ky, p.down_y, p.up_y, p.pad_y0, g.H);
          if (iy >= 0) src[nt] = hrow(n, iy), w[nt++] = fy[ky];
        }
      upfirdn2d_detail::StreamEpilogue se{ep.scale ? ep.scale + n * ep.scale_n : nullptr, ep.bias, C, ep.gpos, ep.gneg};
      if (stream && weighted_sum_stream(dst, src, w, nt, RC, ep.on ? &se : nullptr)) {
        // written, epilogue included
      } else if (y_rows_dense) {
        // The whole output row is one flat weighted sum of ring rows.
        TapSum sum(dst, 1, 1, RC);
        for (int64_t ky = 0; ky < p.kh; ++ky) {
          const int64_t iy = source_index(oy, ky, p.down_y, p.up_y, p.pad_y0, g.H);
          if (iy >= 0) sum.add(hrow(n, iy), fy[ky]);
        }
        sum.finish();
        if (ep.on) bias_act_rows(dst, ep.scale ? ep.scale + n * ep.scale_n : nullptr, ep.bias, C, g.Wo, ep.gpos, ep.gneg);
      } else {
        // Fill the ring first (at most `ring` distinct rows, so none is evicted below).
        for (int64_t ky = 0; ky < p.kh; ++ky) {
          const int64_t iy = source_index(oy, ky, p.down_y, p.up_y, p.pad_y0, g.H);
          if (iy >= 0) hrow(n, iy);
        }
        for (int64_t ox = 0; ox < g.Wo; ++ox) {
          TapSum sum(dst + ox * y.stride(2), y.stride(3), 1, C);
          for (int64_t ky = 0; ky < p.kh; ++ky) {
            const int64_t iy = source_index(oy, ky, p.down_y, p.up_y, p.pad_y0, g.H);
            if (iy >= 0) sum.add(hrow(n, iy) + ox * C, fy[ky]);
          }
          sum.finish();
        }
      }
    }
  }
}

}  // namespace

size_t upfirdn2d_workspace_bytes(const UpFirDn2dParams& p, const Shape& x, const Shape& y, int threads) {
  const Geom g = make_geom(p, x, y);
  const Plan pl = make_plan(p, g);
  const int T = threads > 0 ? threads : num_threads();
  return (pl.taps_floats + pl.per_thread_floats * static_cast<size_t>(T)) * sizeof(float) + detail::kScratchAlign;
}

void upfirdn2d(const UpFirDn2dParams& p, const TensorView& x, const TensorView& y, void* workspace) {
  detail::check_f32(x, "upfirdn2d", "input");
  detail::check_f32(y, "upfirdn2d", "output");
  const Geom g = make_geom(p, x.shape, y.shape);
  if (y.numel() == 0) return;
  GPEN_CHECK(workspace != nullptr, "upfirdn2d: workspace is required (see upfirdn2d_workspace_bytes)");
  const Plan pl = make_plan(p, g);
  float* base = detail::align_ptr(workspace);
  if (pl.separable) {
    run_separable(p, g, pl, x, y, base, RowEpilogue{});
  } else {
    run_direct(p, g, pl, x, y, base);
  }
}

void upfirdn2d_act(const UpFirDn2dParams& p, const TensorView& x, const TensorView* out_scale, const TensorView* bias,
                   const TensorView& y, void* workspace) {
  const bool any = p.has_out_scale || p.has_bias || !p.act.is_identity();
  bool fuse = any && x.dtype == DType::f32 && y.dtype == DType::f32 && x.rank() == 4 && y.rank() == 4 &&
              y.stride(3) == 1 && y.stride(2) == y.dim(3) && p.has_out_scale == (out_scale != nullptr) &&
              p.has_bias == (bias != nullptr) && workspace != nullptr;
  const int64_t N = y.rank() == 4 ? y.dim(0) : 0, C = y.rank() == 4 ? y.dim(3) : 0;
  if (fuse && out_scale)
    fuse = out_scale->dtype == DType::f32 && out_scale->rank() == 2 && out_scale->dim(0) == N &&
           out_scale->dim(1) == C && out_scale->stride(1) == 1;
  if (fuse && bias) fuse = bias->dtype == DType::f32 && bias->numel() == C && bias->stride(bias->rank() - 1) == 1;
  if (fuse) {
    const Geom g = make_geom(p, x.shape, y.shape);
    const Plan pl = make_plan(p, g);
    fuse = pl.separable && y.numel() > 0;
    if (fuse) {
      RowEpilogue ep;
      ep.on = true;
      ep.scale = out_scale ? out_scale->f32() : nullptr;
      ep.scale_n = out_scale ? out_scale->stride(0) : 0;
      ep.bias = bias ? bias->f32() : nullptr;
      ep.gpos = p.act.gain, ep.gneg = p.act.gain * p.act.slope;
      run_separable(p, g, pl, x, y, detail::align_ptr(workspace), ep);
      return;
    }
  }
  // Anything else (and every bad input, for its message): the two passes.
  upfirdn2d(p, x, y, workspace);
  if (any) upfirdn2d_epilogue(p, out_scale, bias, y);
}

}  // namespace gpen::cpu
