// GFPGAN's CPU ops against references written here from their definitions: bilinear resize
// (PyTorch's align_corners=False interpolation as a weight matrix per axis, in double; and the
// closed forms of the 1/2 and x2 cases GFPGAN uses), the clean StyleConv's noise epilogue and
// the SFT affine (loops in double over NCHW-style indices), with strided views in and out, in
// place, and the refusals; bands of rows (the banding transform's) equal the whole ops' rows.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/core/error.h"
#include "kernels/cpu/ops.h"

using namespace gpen;

namespace {

std::vector<float> randn(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

// Row o of the interpolation matrix of one axis: F.interpolate's align_corners=False source
// x = (o + 0.5) in / out - 0.5, below 0 taken as 0, split between floor(x) and floor(x) + 1,
// the latter clamped to the last index.
std::vector<double> interp_row(int64_t o, int64_t in, int64_t out) {
  std::vector<double> r(static_cast<size_t>(in), 0.0);
  const double x = std::max((static_cast<double>(o) + 0.5) * static_cast<double>(in) / static_cast<double>(out) - 0.5, 0.0);
  const int64_t i0 = static_cast<int64_t>(std::floor(x));
  const double l = x - static_cast<double>(i0);
  r[static_cast<size_t>(i0)] += 1.0 - l;
  r[static_cast<size_t>(std::min(i0 + 1, in - 1))] += l;
  return r;
}

// y[n, oy, ox, c] = sum_{iy, ix} A_h[oy][iy] A_w[ox][ix] x[n, iy, ix, c].
std::vector<double> bilinear_ref(const std::vector<float>& x, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Ho,
                                 int64_t Wo) {
  std::vector<double> y(static_cast<size_t>(N * Ho * Wo * C), 0.0);
  for (int64_t oy = 0; oy < Ho; ++oy) {
    const auto ry = interp_row(oy, H, Ho);
    for (int64_t ox = 0; ox < Wo; ++ox) {
      const auto rx = interp_row(ox, W, Wo);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t iy = 0; iy < H; ++iy)
          for (int64_t ix = 0; ix < W; ++ix) {
            const double wgt = ry[static_cast<size_t>(iy)] * rx[static_cast<size_t>(ix)];
            if (wgt == 0.0) continue;
            for (int64_t c = 0; c < C; ++c)
              y[static_cast<size_t>(((n * Ho + oy) * Wo + ox) * C + c)] +=
                  wgt * x[static_cast<size_t>(((n * H + iy) * W + ix) * C + c)];
          }
    }
  }
  return y;
}

}  // namespace

TEST_CASE("resize_bilinear is F.interpolate(bilinear, align_corners=False) at x2, 1/2 and other sizes") {
  struct Case {
    int64_t H, W, Ho, Wo;
  };
  for (Case k : {Case{4, 4, 8, 8}, Case{8, 6, 4, 3}, Case{1, 5, 2, 10}, Case{5, 7, 3, 11}, Case{2, 2, 1, 1}}) {
    CAPTURE(k.H);
    CAPTURE(k.Ho);
    CAPTURE(k.Wo);
    const int64_t N = 2, C = 5, Cp = C + 3;
    const auto x = randn(static_cast<size_t>(N * k.H * k.W * C), 3);
    // Output as channels [2, 2 + C) of a wider buffer; the rest must stay untouched.
    std::vector<float> buf(static_cast<size_t>(N * k.Ho * k.Wo * Cp), 999.0f);
    TensorView xv = make_view(const_cast<float*>(x.data()), DType::f32, Shape{N, k.H, k.W, C});
    TensorView yv = make_view(buf.data(), DType::f32, Shape{N, k.Ho, k.Wo, Cp});
    yv.shape = Shape{N, k.Ho, k.Wo, C};
    yv.data = buf.data() + 2;
    cpu::resize_bilinear(ResizeBilinearParams{static_cast<int>(k.Ho), static_cast<int>(k.Wo)}, xv, yv);
    const auto ref = bilinear_ref(x, N, k.H, k.W, C, k.Ho, k.Wo);
    double worst = 0;
    int64_t touched = 0;
    for (int64_t i = 0; i < N * k.Ho * k.Wo; ++i)
      for (int64_t c = 0; c < Cp; ++c) {
        const float v = buf[static_cast<size_t>(i * Cp + c)];
        if (c < 2 || c >= 2 + C) touched += v != 999.0f;
        else worst = std::max(worst, std::abs(v - ref[static_cast<size_t>(i * C + c - 2)]));
      }
    CHECK(touched == 0);
    // At ratios other than powers of two PyTorch's float scale in / out is itself rounded.
    const bool dyadic = (k.H * 2 == k.Ho || k.H == 2 * k.Ho) && (k.W * 2 == k.Wo || k.W == 2 * k.Wo);
    CHECK(worst <= (dyadic ? 1e-6 : 1e-5));
  }
}

TEST_CASE("resize_bilinear by 1/2 averages 2x2 blocks and by 2 blends 3:1 inside, copies at the edges") {
  const int64_t H = 4, W = 4;
  std::vector<float> x(static_cast<size_t>(H * W));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i * i % 7);
  std::vector<float> d(4), u(64);
  TensorView xv = make_view(x.data(), DType::f32, Shape{1, H, W, 1});
  cpu::resize_bilinear(ResizeBilinearParams{2, 2}, xv, make_view(d.data(), DType::f32, Shape{1, 2, 2, 1}));
  auto at = [&](int64_t y, int64_t xx) { return x[static_cast<size_t>(y * W + xx)]; };
  for (int64_t y = 0; y < 2; ++y)
    for (int64_t xx = 0; xx < 2; ++xx)
      CHECK(d[static_cast<size_t>(y * 2 + xx)] ==
            doctest::Approx((at(2 * y, 2 * xx) + at(2 * y, 2 * xx + 1) + at(2 * y + 1, 2 * xx) + at(2 * y + 1, 2 * xx + 1)) / 4.0));
  cpu::resize_bilinear(ResizeBilinearParams{8, 8}, xv, make_view(u.data(), DType::f32, Shape{1, 8, 8, 1}));
  CHECK(u[0] == at(0, 0));    // the corner: both sources clamp
  CHECK(u[63] == at(3, 3));
  // Row 0 (source row 0 only), column 1: source 0.25 -> 0.75 x[0] + 0.25 x[1].
  CHECK(u[1] == doctest::Approx(0.75 * at(0, 0) + 0.25 * at(0, 1)));
  CHECK(u[2] == doctest::Approx(0.25 * at(0, 0) + 0.75 * at(0, 1)));
}

TEST_CASE("noise_bias_act is act(x * gain + w * noise[h, w] + bias[c]), in place too") {
  const int64_t N = 2, H = 3, W = 5, C = 6;
  const auto x = randn(static_cast<size_t>(N * H * W * C), 5);
  const auto noise = randn(static_cast<size_t>(H * W), 6);
  const auto bias = randn(static_cast<size_t>(C), 7);
  const float nw = 0.37f;
  for (bool with_bias : {true, false})
    for (bool inplace : {false, true}) {
      CAPTURE(with_bias);
      CAPTURE(inplace);
      NoiseBiasActParams p;
      p.gain = static_cast<float>(M_SQRT2);
      p.has_bias = with_bias;
      p.act = Activation::leaky(0.2f);
      std::vector<float> xs = x, ys(x.size(), 999.0f);
      TensorView xv = make_view(xs.data(), DType::f32, Shape{N, H, W, C});
      TensorView yv = make_view(inplace ? xs.data() : ys.data(), DType::f32, Shape{N, H, W, C});
      TensorView bv = make_view(const_cast<float*>(bias.data()), DType::f32, Shape{C});
      float w1 = nw;
      cpu::noise_bias_act(p, xv, make_view(const_cast<float*>(noise.data()), DType::f32, Shape{H, W}),
                          make_view(&w1, DType::f32, Shape{1}), with_bias ? &bv : nullptr, yv);
      const std::vector<float>& got = inplace ? xs : ys;
      double worst = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < W; ++w)
            for (int64_t c = 0; c < C; ++c) {
              const size_t i = static_cast<size_t>(((n * H + h) * W + w) * C + c);
              double v = static_cast<double>(x[i]) * M_SQRT2 + double{nw} * noise[static_cast<size_t>(h * W + w)] +
                         (with_bias ? bias[static_cast<size_t>(c)] : 0.0);
              v = v >= 0 ? v : 0.2 * v;
              worst = std::max(worst, std::abs(got[i] - v));
            }
      CHECK(worst <= 1e-5);
    }
}

TEST_CASE("sft modulates channels from c0 and copies the rest, from channel slices and in place") {
  const int64_t N = 2, H = 4, W = 3, C = 8;
  for (int64_t c0 : {int64_t{0}, int64_t{4}})
    for (bool inplace : {false, true}) {
      CAPTURE(c0);
      CAPTURE(inplace);
      const int64_t Cs = C - c0;
      auto x = randn(static_cast<size_t>(N * H * W * C), 11);
      const auto x0 = x;
      // scale and shift as the two halves of one [N, H, W, 2 Cs] buffer (channel slices).
      const auto ss = randn(static_cast<size_t>(N * H * W * 2 * Cs), 12);
      TensorView sv = make_view(const_cast<float*>(ss.data()), DType::f32, Shape{N, H, W, 2 * Cs});
      TensorView scale = sv, shift = sv;
      scale.shape = shift.shape = Shape{N, H, W, Cs};
      shift.data = const_cast<float*>(ss.data()) + Cs;
      std::vector<float> y(x.size(), 999.0f);
      TensorView xv = make_view(x.data(), DType::f32, Shape{N, H, W, C});
      TensorView yv = make_view(inplace ? x.data() : y.data(), DType::f32, Shape{N, H, W, C});
      cpu::sft(SftParams{c0}, xv, scale, shift, yv);
      const std::vector<float>& got = inplace ? x : y;
      int64_t bad = 0;
      double worst = 0;
      for (int64_t i = 0; i < N * H * W; ++i)
        for (int64_t c = 0; c < C; ++c) {
          const size_t k = static_cast<size_t>(i * C + c);
          if (c < c0) {
            bad += got[k] != x0[k];
          } else {
            const double s = ss[static_cast<size_t>(i * 2 * Cs + c - c0)], t = ss[static_cast<size_t>(i * 2 * Cs + Cs + c - c0)];
            worst = std::max(worst, std::abs(got[k] - (static_cast<double>(x0[k]) * s + t)));
          }
        }
      CHECK(bad == 0);
      CHECK(worst <= 1e-5);
    }
}

// A band's input rows: from a row at or above the first one its first output row reads to a row
// at or below the last one its last output row reads (a row of margin against the float source).
std::pair<int64_t, int64_t> band_input_rows(int64_t a, int64_t b, int64_t H, int64_t Ho) {
  auto src = [&](int64_t o) { return std::max((static_cast<double>(o) + 0.5) * double(H) / double(Ho) - 0.5, 0.0); };
  return {std::max<int64_t>(0, static_cast<int64_t>(std::floor(src(a))) - 1),
          std::min<int64_t>(H, static_cast<int64_t>(std::floor(src(b - 1))) + 3)};
}

TEST_CASE("resize_bilinear: every band of rows from its input rows equals the whole op's rows, bit for bit") {
  struct Case {
    int64_t H, W, Ho, Wo;
  };
  for (Case k : {Case{8, 6, 16, 12}, Case{16, 8, 8, 4}, Case{5, 7, 11, 3}, Case{7, 4, 3, 8}}) {
    CAPTURE(k.H);
    CAPTURE(k.Ho);
    const int64_t N = 2, C = 3;
    auto x = randn(static_cast<size_t>(N * k.H * k.W * C), 21);
    std::vector<float> whole(static_cast<size_t>(N * k.Ho * k.Wo * C));
    TensorView xv = make_view(x.data(), DType::f32, Shape{N, k.H, k.W, C});
    const ResizeBilinearParams p{static_cast<int>(k.Ho), static_cast<int>(k.Wo)};
    cpu::resize_bilinear(p, xv, make_view(whole.data(), DType::f32, Shape{N, k.Ho, k.Wo, C}));
    int64_t bad = 0;
    for (int64_t a = 0; a < k.Ho; ++a)
      for (int64_t b = a + 1; b <= k.Ho; ++b) {
        const auto [lo, hi] = band_input_rows(a, b, k.H, k.Ho);
        TensorView xb = xv;  // rows [lo, hi) of x, a strided view
        xb.shape = Shape{N, hi - lo, k.W, C};
        xb.data = x.data() + lo * k.W * C;
        std::vector<float> band(static_cast<size_t>(N * (b - a) * k.Wo * C), 999.0f);
        ResizeBilinearParams q = p;
        q.in_h = static_cast<int>(k.H);
        q.in_row0 = static_cast<int>(lo);
        q.out_row0 = static_cast<int>(a);
        cpu::resize_bilinear(q, xb, make_view(band.data(), DType::f32, Shape{N, b - a, k.Wo, C}));
        const int64_t row = k.Wo * C;
        for (int64_t n = 0; n < N; ++n)
          bad += std::memcmp(band.data() + n * (b - a) * row, whole.data() + (n * k.Ho + a) * row,
                             static_cast<size_t>((b - a) * row) * sizeof(float)) != 0;
      }
    CHECK(bad == 0);
    // A band whose input rows miss one its first output row reads is refused.
    if (k.Ho > 2) {
      const int64_t a = k.Ho - 1;
      const auto [lo, hi] = band_input_rows(a, k.Ho, k.H, k.Ho);
      (void)lo;
      TensorView xb = xv;
      xb.shape = Shape{N, 1, k.W, C};
      xb.data = x.data() + (hi - 1) * k.W * C;
      std::vector<float> band(static_cast<size_t>(N * k.Wo * C));
      ResizeBilinearParams q = p;
      q.in_h = static_cast<int>(k.H);
      q.in_row0 = static_cast<int>(hi - 1);
      q.out_row0 = 0;
      CHECK_THROWS_AS(cpu::resize_bilinear(q, xb, make_view(band.data(), DType::f32, Shape{N, 1, k.Wo, C})), Error);
    }
  }
}

TEST_CASE("noise_bias_act: a band of rows reading the noise from its first row equals the whole op's rows") {
  const int64_t N = 2, H = 7, W = 5, C = 4;
  const auto x = randn(static_cast<size_t>(N * H * W * C), 31);
  const auto noise = randn(static_cast<size_t>(H * W), 32);
  const auto bias = randn(static_cast<size_t>(C), 33);
  float nw = 0.61f;
  NoiseBiasActParams p;
  p.gain = static_cast<float>(M_SQRT2);
  p.has_bias = true;
  p.act = Activation::leaky(0.2f);
  TensorView bv = make_view(const_cast<float*>(bias.data()), DType::f32, Shape{C});
  TensorView nv = make_view(const_cast<float*>(noise.data()), DType::f32, Shape{H, W});
  std::vector<float> whole(x.size());
  TensorView xv = make_view(const_cast<float*>(x.data()), DType::f32, Shape{N, H, W, C});
  cpu::noise_bias_act(p, xv, nv, make_view(&nw, DType::f32, Shape{1}), &bv, make_view(whole.data(), DType::f32, Shape{N, H, W, C}));
  for (int64_t a = 0; a < H; ++a)
    for (int64_t b = a + 1; b <= H; ++b) {
      CAPTURE(a);
      CAPTURE(b);
      TensorView xb = xv;
      xb.shape = Shape{N, b - a, W, C};
      xb.data = const_cast<float*>(x.data()) + a * W * C;
      std::vector<float> band(static_cast<size_t>(N * (b - a) * W * C));
      NoiseBiasActParams q = p;
      q.noise_row0 = static_cast<int>(a);
      cpu::noise_bias_act(q, xb, nv, make_view(&nw, DType::f32, Shape{1}), &bv,
                          make_view(band.data(), DType::f32, Shape{N, b - a, W, C}));
      int64_t bad = 0;
      for (int64_t n = 0; n < N; ++n)
        bad += std::memcmp(band.data() + n * (b - a) * W * C, whole.data() + (n * H + a) * W * C,
                           static_cast<size_t>((b - a) * W * C) * sizeof(float)) != 0;
      CHECK(bad == 0);
    }
  // Noise rows past the map's end are refused.
  NoiseBiasActParams q = p;
  q.noise_row0 = 1;
  std::vector<float> out(x.size());
  CHECK_THROWS_AS(cpu::noise_bias_act(q, xv, nv, make_view(&nw, DType::f32, Shape{1}), &bv,
                                      make_view(out.data(), DType::f32, Shape{N, H, W, C})),
                  Error);
}

TEST_CASE("the GFPGAN ops refuse mismatched shapes") {
  std::vector<float> a(2 * 4 * 4 * 4), b(2 * 4 * 4 * 4), n(16);
  TensorView x = make_view(a.data(), DType::f32, Shape{2, 4, 4, 4});
  CHECK_THROWS_AS(cpu::resize_bilinear(ResizeBilinearParams{2, 2}, x, make_view(b.data(), DType::f32, Shape{2, 2, 3, 4})),
                  Error);
  float w = 1;
  NoiseBiasActParams p;
  CHECK_THROWS_AS(cpu::noise_bias_act(p, x, make_view(n.data(), DType::f32, Shape{2, 8}), make_view(&w, DType::f32, Shape{1}),
                                      nullptr, make_view(b.data(), DType::f32, Shape{2, 4, 4, 4})),
                  Error);
  CHECK_THROWS_AS(cpu::sft(SftParams{4}, x, x, x, make_view(b.data(), DType::f32, Shape{2, 4, 4, 4})), Error);
  CHECK_THROWS_AS(cpu::sft(SftParams{2}, x, x, x, make_view(b.data(), DType::f32, Shape{2, 4, 4, 4})), Error);
}
