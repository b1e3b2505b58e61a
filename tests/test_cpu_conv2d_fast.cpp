// conv2d's specialised paths against a naive double-precision conv written here from the op
// definition (kernels/params.h): the depthwise 3x3 kernel (kernels/cpu/conv2d_depthwise.cpp) and
// the direct conv for few output or few input channels (kernels/cpu/conv2d_direct.cpp). Sizes
// are odd and small so that every border case (padding on each side, rows with one or two
// valid kernel rows, rows narrower than a register tile, channel counts that are not multiples
// of 8) is hit; layouts cover dense views, channel slices of wider buffers (fast paths) and a
// channel stride of 2 (depthwise: the generic fallback; direct: strided loads and stores).
//
// Tolerance as in test_cpu_ops.cpp: the kernels sum fp32 products in some order, the reference
// in double, so max |got - ref| <= 1e-4 * max(1, max |ref|) is far above rounding (K <= 600
// terms here) and far below any indexing or padding mistake.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/ops.h"

using namespace gpen;

namespace {

constexpr float kSentinel = 4321.0f;

std::vector<float> random_vec(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

struct Spec {
  int64_t N, H, W, C, Co;
  int kh, kw, sh, sw, pt, pl, pb, pr, groups;
  bool bias, residual;
  Activation act;
};

Shape out_shape(const Spec& s) {
  return Shape{s.N, (s.H + s.pt + s.pb - s.kh) / s.sh + 1, (s.W + s.pl + s.pr - s.kw) / s.sw + 1, s.Co};
}

Conv2dParams params_of(const Spec& s) {
  Conv2dParams p;
  p.kh = s.kh, p.kw = s.kw;
  p.stride_h = s.sh, p.stride_w = s.sw;
  p.pad_top = s.pt, p.pad_left = s.pl, p.pad_bottom = s.pb, p.pad_right = s.pr;
  p.groups = s.groups;
  p.has_bias = s.bias;
  p.has_residual = s.residual;
  p.act = s.act;
  return p;
}

// Dense NHWC x, HWIO w; y = act(conv + bias) + r.
std::vector<float> conv_naive(const Spec& s, const std::vector<float>& x, const std::vector<float>& w,
                              const std::vector<float>& b, const std::vector<float>& r) {
  const Shape ys = out_shape(s);
  const int64_t Ho = ys[1], Wo = ys[2], cig = s.C / s.groups, cog = s.Co / s.groups;
  std::vector<float> y(static_cast<size_t>(ys.numel()));
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t oy = 0; oy < Ho; ++oy)
      for (int64_t ox = 0; ox < Wo; ++ox)
        for (int64_t o = 0; o < s.Co; ++o) {
          const int64_t g = o / cog;
          double acc = s.bias ? b[static_cast<size_t>(o)] : 0.0;
          for (int64_t ky = 0; ky < s.kh; ++ky)
            for (int64_t kx = 0; kx < s.kw; ++kx) {
              const int64_t iy = oy * s.sh + ky - s.pt, ix = ox * s.sw + kx - s.pl;
              if (iy < 0 || iy >= s.H || ix < 0 || ix >= s.W) continue;
              for (int64_t i = 0; i < cig; ++i)
                acc += static_cast<double>(x[static_cast<size_t>(((n * s.H + iy) * s.W + ix) * s.C + g * cig + i)]) *
                       w[static_cast<size_t>(((ky * s.kw + kx) * cig + i) * s.Co + o)];
            }
          const size_t yi = static_cast<size_t>(((n * Ho + oy) * Wo + ox) * s.Co + o);
          const float v = s.act(static_cast<float>(acc));
          y[yi] = s.residual ? v + r[yi] : v;
        }
  return y;
}

// An NHWC tensor inside a wider parent buffer: channel c at c0 + c * cstride of each parent row,
// every other parent element holding kSentinel.
struct Buf {
  std::vector<float> mem;
  TensorView v;
  Buf(const Shape& s, int64_t extra, int64_t cstride) {
    Shape parent = s;
    parent[3] = s[3] * cstride + extra;
    mem.assign(static_cast<size_t>(parent.numel()), kSentinel);
    v = make_view(mem.data(), DType::f32, parent);
    v.shape = s;
    v.strides[3] = cstride;
    v.data = mem.data() + extra / 2;
  }
  float& at(int64_t i) {  // dense index i of the logical tensor
    const int64_t C = v.dim(3), pix = i / C, c = i % C;
    return v.f32()[pix * v.stride(2) + c * v.stride(3)];  // N, H, W nest densely in the parent
  }
  void set(const std::vector<float>& d) {
    for (size_t i = 0; i < d.size(); ++i) at(static_cast<int64_t>(i)) = d[i];
  }
  std::vector<float> get() {
    std::vector<float> d(static_cast<size_t>(v.numel()));
    for (size_t i = 0; i < d.size(); ++i) d[i] = at(static_cast<int64_t>(i));
    return d;
  }
  size_t sentinels() const { return static_cast<size_t>(std::count(mem.begin(), mem.end(), kSentinel)); }
};

double rel_err(const std::vector<float>& got, const std::vector<float>& ref) {
  if (got.size() != ref.size()) return INFINITY;
  double e = 0, m = 1;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    e = std::max(e, std::fabs(static_cast<double>(got[i]) - ref[i]));
    m = std::max(m, std::fabs(static_cast<double>(ref[i])));
  }
  return e / m;
}

struct Layout {
  int threads;
  int64_t extra, cstride;
  bool in_place_residual;  // residual passed as the output view itself (y += conv(x))
  const char* name;
};
constexpr Layout kLayouts[] = {
    {1, 0, 1, false, "dense, 1 thread"},
    {2, 5, 1, false, "channel slices, 2 threads"},
    {2, 0, 1, true, "dense, residual is the output, 2 threads"},
    {2, 1, 2, false, "every other channel, 2 threads"},
};

void check_spec(const Spec& s, std::mt19937& rng) {
  const Shape xs{s.N, s.H, s.W, s.C}, ys = out_shape(s), wsh{s.kh, s.kw, s.C / s.groups, s.Co};
  const auto x = random_vec(static_cast<size_t>(xs.numel()), rng);
  auto w = random_vec(static_cast<size_t>(wsh.numel()), rng, 1.0f / std::sqrt(float(wsh[0] * wsh[1] * wsh[2])));
  auto b = random_vec(static_cast<size_t>(s.Co), rng);
  const auto r = random_vec(static_cast<size_t>(ys.numel()), rng);
  const auto ref = conv_naive(s, x, w, b, r);
  const Conv2dParams p = params_of(s);
  const TensorView wv = make_view(w.data(), DType::f32, wsh), bv = make_view(b.data(), DType::f32, {s.Co});
  for (const Layout& L : kLayouts) {
    if (L.in_place_residual && !s.residual) continue;
    CAPTURE(L.name);
    Buf xb(xs, L.extra, L.cstride), yb(ys, L.extra, L.cstride), rb(ys, L.extra, L.cstride);
    xb.set(x);
    if (L.in_place_residual) {
      yb.set(r);
    } else {
      yb.set(std::vector<float>(static_cast<size_t>(ys.numel()), NAN));  // every output must be written
      rb.set(r);
    }
    const size_t y_sentinels = yb.sentinels();
    cpu::set_num_threads(L.threads);
    // Exactly the reported workspace, deliberately misaligned (ASan catches any overrun).
    std::vector<unsigned char> ws(cpu::conv2d_workspace_bytes(p, xs, ys, L.threads) + 4);
    const TensorView* res = s.residual ? (L.in_place_residual ? &yb.v : &rb.v) : nullptr;
    cpu::conv2d(p, xb.v, wv, s.bias ? &bv : nullptr, res, yb.v, ws.data() + 4);
    CHECK(rel_err(yb.get(), ref) <= 1e-4);
    CHECK(yb.sentinels() == y_sentinels);  // nothing written outside the output's channels
  }
}

std::string describe(const Spec& s) {
  return std::to_string(s.N) + "x" + std::to_string(s.H) + "x" + std::to_string(s.W) + "x" + std::to_string(s.C) +
         " -> " + std::to_string(s.Co) + ", k " + std::to_string(s.kh) + "x" + std::to_string(s.kw) + ", s " +
         std::to_string(s.sh) + "x" + std::to_string(s.sw) + ", pad " + std::to_string(s.pt) + "," +
         std::to_string(s.pl) + "," + std::to_string(s.pb) + "," + std::to_string(s.pr) + ", groups " +
         std::to_string(s.groups) + (s.bias ? ", bias" : "") + (s.residual ? ", residual" : "");
}

}  // namespace

TEST_CASE("depthwise 3x3 agrees with a naive conv (strides, pads, odd sizes, channel tails)") {
  std::mt19937 rng(3);
  const Activation leaky = Activation::leaky(0.1f);
  int cases = 0;
  for (int stride : {1, 2})
    for (int pad : {1, 0, 2})
      for (auto [H, W] : {std::pair{1, 1}, std::pair{2, 3}, std::pair{7, 5}, std::pair{6, 17}, std::pair{13, 11}})
        for (int64_t C : {8, 16, 13, 40}) {
          if (H + 2 * pad < 3 || W + 2 * pad < 3) continue;
          const bool bias = (cases % 3) != 1, residual = (cases % 2) == 0;
          const Activation act = cases % 4 == 3 ? Activation::none() : cases % 4 == 2 ? Activation::scaled_leaky() : leaky;
          const Spec s{1, H, W, C, C, 3, 3, stride, stride, pad, pad, pad, pad, static_cast<int>(C), bias, residual, act};
          CAPTURE(describe(s));
          check_spec(s, rng);
          ++cases;
        }
  // Asymmetric pads and strides, a batch, MobileNet-like channel counts (both tile shapes: 4
  // pixels x 16 channels below 128 channels at stride 1, else 1 pixel x 32 channels).
  const Spec extra[] = {
      {2, 9, 10, 24, 24, 3, 3, 2, 1, 0, 1, 2, 1, 24, true, true, leaky},
      {1, 8, 9, 64, 64, 3, 3, 1, 2, 2, 0, 0, 2, 64, false, true, Activation::relu()},
      {1, 5, 33, 256, 256, 3, 3, 2, 2, 1, 1, 1, 1, 256, true, false, leaky},
      {1, 7, 9, 136, 136, 3, 3, 1, 1, 1, 1, 1, 1, 136, true, true, leaky},  // one-pixel tiles at stride 1
      {1, 4, 4, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 3, true, true, leaky},  // only tail channels
  };
  for (const Spec& s : extra) {
    CAPTURE(describe(s));
    check_spec(s, rng);
  }
}

TEST_CASE("direct conv for few channels agrees with a naive conv") {
  std::mt19937 rng(5);
  const Activation leaky = Activation::leaky(0.1f);
  const Spec specs[] = {
      // RetinaFace mobilenet0.25 stem and its 1x1 / SSH / head shapes, at odd sizes.
      {1, 15, 19, 3, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, true, false, leaky},
      {1, 16, 18, 3, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, true, true, leaky},
      {1, 11, 13, 8, 16, 1, 1, 1, 1, 0, 0, 0, 0, 1, true, false, leaky},
      {2, 7, 9, 16, 32, 1, 1, 1, 1, 0, 0, 0, 0, 1, true, true, leaky},
      {1, 9, 14, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, true, false, Activation::relu()},
      {1, 6, 7, 64, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, true, true, Activation::relu()},
      {1, 5, 11, 64, 4, 1, 1, 1, 1, 0, 0, 0, 0, 1, true, false, Activation::none()},
      {1, 5, 11, 64, 20, 1, 1, 1, 1, 0, 0, 0, 0, 1, true, false, Activation::none()},
      // ResNet stem (7x7 s2, 3 -> 64) and other thin inputs.
      {1, 17, 23, 3, 64, 7, 7, 2, 2, 3, 3, 3, 3, 1, true, false, Activation::relu()},
      {1, 5, 6, 1, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, true, Activation::scaled_leaky()},
      // Tails, one output channel, asymmetric pads and strides, kernels wider than the input.
      {1, 8, 10, 12, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, true, false, leaky},
      {1, 8, 10, 12, 3, 4, 4, 2, 2, 1, 1, 1, 1, 1, true, true, Activation::scaled_leaky()},
      {2, 9, 7, 5, 27, 3, 5, 2, 1, 0, 2, 1, 2, 1, true, true, leaky},
      {1, 2, 3, 6, 10, 5, 5, 1, 1, 2, 2, 2, 2, 1, true, false, leaky},
      {1, 1, 1, 4, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, false, Activation::none()},
      {1, 10, 9, 32, 24, 3, 3, 3, 2, 0, 0, 2, 1, 1, false, true, leaky},
  };
  for (const Spec& s : specs) {
    CAPTURE(describe(s));
    check_spec(s, rng);
  }
}

TEST_CASE("fast paths keep the padding semantics for non-finite inputs far from the window") {
  // A padding tap must be skipped, not read as 0 * x: an infinity in the input contributes only
  // to the outputs whose window covers it.
  std::mt19937 rng(9);
  for (int64_t C : {8, 3}) {  // C = 8: depthwise 3x3 / direct stem shapes; C = 3 also thin input
    for (bool dw : {true, false}) {
      const int64_t Co = dw ? C : 16;
      const Spec s{1, 6, 6, C, Co, 3, 3, 1, 1, 1, 1, 1, 1, dw ? static_cast<int>(C) : 1, true, false,
                   Activation::leaky(0.1f)};
      const Shape xs{1, 6, 6, C}, ys = out_shape(s), wsh{3, 3, dw ? 1 : C, Co};
      auto x = random_vec(static_cast<size_t>(xs.numel()), rng);
      x[static_cast<size_t>(((0 * 6 + 0) * 6 + 0) * C)] = INFINITY;  // corner pixel, channel 0
      auto w = random_vec(static_cast<size_t>(wsh.numel()), rng);
      auto b = random_vec(static_cast<size_t>(Co), rng);
      const Conv2dParams p = params_of(s);
      std::vector<float> y(static_cast<size_t>(ys.numel()), NAN);
      std::vector<unsigned char> ws(cpu::conv2d_workspace_bytes(p, xs, ys, 1));
      cpu::set_num_threads(1);
      const TensorView bv = make_view(b.data(), DType::f32, {Co});
      cpu::conv2d(p, make_view(x.data(), DType::f32, xs), make_view(w.data(), DType::f32, wsh), &bv, nullptr,
                  make_view(y.data(), DType::f32, ys), ws.data());
      for (int64_t oy = 0; oy < 6; ++oy)
        for (int64_t ox = 0; ox < 6; ++ox)
          for (int64_t o = 0; o < Co; ++o) {
            const float v = y[static_cast<size_t>((oy * 6 + ox) * Co + o)];
            const bool covers = oy <= 1 && ox <= 1 && (!dw || o == 0);
            CAPTURE(oy);
            CAPTURE(ox);
            CAPTURE(o);
            CHECK(std::isfinite(v) != covers);
          }
    }
  }
}
