// The row crop of the same-padded modconv (ModConvParams::pad_top / pad_bottom): a band that reads
// input rows [i0, i1) of the image and pads only where they fall outside it must produce exactly
// the rows of the whole op's output it covers, bit for bit (each output sums the same taps in the
// same order; only the tiling over pixels differs, which the K order does not depend on). Runs on
// both ISA paths (tests/CMakeLists.txt, GPEN_ISA_TESTS).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/ops.h"

using namespace gpen;

namespace {

std::vector<float> random_values(std::mt19937& rng, int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = u(rng);
  return v;
}

// Rows [r0, r0 + rows) of a contiguous NHWC tensor of `full` shape, as a view with its strides.
TensorView rows_view(const std::vector<float>& buf, const Shape& full, int64_t r0, int64_t rows) {
  Shape s = full;
  s.d[1] = rows;
  TensorView v = make_view(const_cast<float*>(buf.data()), DType::f32, s);
  v.strides = make_view(nullptr, DType::f32, full).strides;
  v.data = const_cast<float*>(buf.data()) + r0 * full[2] * full[3];
  return v;
}

struct Case {
  int64_t N, H, W, C1, C2, Co;
  int k;
  bool demod, bias, residual, act;
};

void run_case(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t C = c.C1 + c.C2;
  const Shape xs{c.N, c.H, c.W, c.C1}, x2s{c.N, c.H, c.W, std::max<int64_t>(c.C2, 1)}, ys{c.N, c.H, c.W, c.Co};
  const auto x = random_values(rng, xs.numel(), -1.0f, 1.0f), x2 = random_values(rng, x2s.numel(), -2.0f, 2.0f);
  const auto x2_scale = random_values(rng, 1, 0.5f, 1.0f), x2_bias = random_values(rng, x2s[3], -0.5f, 0.5f);
  const float ws = 1.0f / std::sqrt(float(C * c.k * c.k));
  const auto w = random_values(rng, int64_t{c.k} * c.k * C * c.Co, -ws, ws);
  const auto s = random_values(rng, c.N * C, 0.5f, 1.5f), d = random_values(rng, c.N * c.Co, 0.5f, 2.0f);
  const auto b = random_values(rng, c.Co, -0.5f, 0.5f), r = random_values(rng, ys.numel(), -1.0f, 1.0f);
  const TensorView wv = make_view(const_cast<float*>(w.data()), DType::f32, Shape{c.k, c.k, C, c.Co});
  const TensorView sv = make_view(const_cast<float*>(s.data()), DType::f32, Shape{c.N, C});
  const TensorView dv = make_view(const_cast<float*>(d.data()), DType::f32, Shape{c.N, c.Co});
  const TensorView bv = make_view(const_cast<float*>(b.data()), DType::f32, Shape{c.Co});
  const TensorView x2sv = make_view(const_cast<float*>(x2_scale.data()), DType::f32, Shape{1});
  const TensorView x2bv = make_view(const_cast<float*>(x2_bias.data()), DType::f32, Shape{x2s[3]});

  ModConvParams p;
  p.k = c.k;
  p.has_x2 = c.C2 > 0, p.x2_act = Activation::scaled_leaky();
  p.has_demod = c.demod, p.has_bias = c.bias, p.has_residual = c.residual;
  if (c.act) p.act = Activation::scaled_leaky();
  p.split_rows = static_cast<int>(c.H);  // as the banding transform sets it: the direct path, whole or band

  // One call over output rows [o0, o1) of the whole op, from the input rows it reads.
  auto call = [&](int64_t o0, int64_t o1, std::vector<float>& out) {
    const int64_t half = c.k / 2, lo = o0 - half, hi = o1 + half;
    const int64_t i0 = std::max<int64_t>(0, lo), i1 = std::min(c.H, hi);
    ModConvParams q = p;
    q.pad_top = static_cast<int>(i0 - lo), q.pad_bottom = static_cast<int>(hi - i1);
    const TensorView xv = rows_view(x, xs, i0, i1 - i0), x2v = rows_view(x2, x2s, i0, i1 - i0);
    const TensorView rv = rows_view(r, ys, o0, o1 - o0);
    const Shape band_y{c.N, o1 - o0, c.W, c.Co};
    out.assign(static_cast<size_t>(band_y.numel()), 1e30f);
    const TensorView yv = make_view(out.data(), DType::f32, band_y);
    cpu::ModConvArgs a;
    a.x = &xv, a.w = &wv, a.s = &sv;
    if (c.C2) a.x2 = &x2v, a.x2_scale = &x2sv, a.x2_bias = &x2bv;
    if (c.demod) a.d = &dv;
    if (c.bias) a.bias = &bv;
    if (c.residual) a.residual = &rv;
    Shape xcat{c.N, i1 - i0, c.W, C};
    std::vector<unsigned char> wsp(cpu::modconv_workspace_bytes(q, xcat, band_y, 0));
    cpu::modconv(q, a, yv, wsp.data());
  };
  std::vector<float> full;
  call(0, c.H, full);
  // Bands of every height at every offset: edges inside the image (crop both sides), at the top
  // and bottom (pad there only), and the one-row bands.
  int checked = 0;
  for (int64_t h = 1; h <= c.H; h += (h < 3 ? 1 : 2))
    for (int64_t o0 = 0; o0 + h <= c.H; o0 += std::max<int64_t>(1, h - 1)) {
      std::vector<float> band;
      call(o0, o0 + h, band);
      bool same = true;
      for (int64_t n = 0; n < c.N && same; ++n) {
        const size_t row = static_cast<size_t>(c.W * c.Co), len = row * static_cast<size_t>(h);
        same = std::memcmp(band.data() + n * len, full.data() + (n * c.H + o0) * row, len * sizeof(float)) == 0;
      }
      CAPTURE(o0);
      CAPTURE(h);
      CHECK(same);
      ++checked;
    }
  CHECK(checked > 3);
}

}  // namespace

TEST_CASE("cropped modconv rows equal the whole op's rows bit for bit") {
  const Case cases[] = {
      // A StyledConv with the noise concat, demod, bias, act (vector widths of both ISAs).
      {2, 9, 7, 16, 16, 32, 3, true, true, false, true},
      // Odd channels, residual, many tiles per row (W > the 192-pixel task tile).
      {1, 7, 200, 5, 3, 11, 3, false, true, true, true},
      // k = 5 (two halo rows) and k = 1 (no halo: the crop is the identity).
      {1, 8, 6, 8, 0, 16, 5, true, false, false, false},
      {1, 5, 6, 8, 8, 3, 1, false, true, true, false},
  };
  uint32_t seed = 7;
  for (const Case& c : cases) {
    CAPTURE(c.H);
    CAPTURE(c.k);
    for (int threads : {1, 2}) {
      cpu::set_num_threads(threads);
      run_case(c, seed);
    }
    ++seed;
  }
  cpu::set_num_threads(0);
}

TEST_CASE("cropped modconv rejects bad row padding") {
  std::vector<float> x(1 * 4 * 4 * 8, 0.5f), w(3 * 3 * 8 * 8, 0.1f), s(8, 1.0f), y(1 * 4 * 4 * 8);
  const TensorView xv = make_view(x.data(), DType::f32, Shape{1, 4, 4, 8}),
                   wv = make_view(w.data(), DType::f32, Shape{3, 3, 8, 8}), sv = make_view(s.data(), DType::f32, Shape{1, 8});
  cpu::ModConvArgs a;
  a.x = &xv, a.w = &wv, a.s = &sv;
  std::vector<unsigned char> wsp(1 << 22);
  ModConvParams p;
  {
    // pad 0 / 0 crops a row on each side: the output is 2 rows, not 4.
    ModConvParams q = p;
    q.pad_top = q.pad_bottom = 0;
    const TensorView y4 = make_view(y.data(), DType::f32, Shape{1, 4, 4, 8});
    CHECK_THROWS_AS(cpu::modconv(q, a, y4, wsp.data()), Error);
    const TensorView y2 = make_view(y.data(), DType::f32, Shape{1, 2, 4, 8});
    cpu::modconv(q, a, y2, wsp.data());  // well-formed
  }
  {
    ModConvParams q = p;
    q.pad_top = 3;  // >= k
    const TensorView y6 = make_view(y.data(), DType::f32, Shape{1, 6, 4, 8});
    CHECK_THROWS_AS(cpu::modconv(q, a, y6, wsp.data()), Error);
  }
  {
    ModConvParams q = p;
    q.up = true, q.pad_top = 0;  // the transposed conv takes no row padding
    std::vector<float> yu(9 * 9 * 8);
    const TensorView y9 = make_view(yu.data(), DType::f32, Shape{1, 9, 9, 8});
    CHECK_THROWS_AS(cpu::modconv(q, a, y9, wsp.data()), Error);
  }
}
