// The row crop of the transposed modconv (ModConvParams::up with crop_top / crop_bottom): a call
// that reads input rows [i0, i1) of the image and crops its own whole output (rows 2 i0 + [0,
// 2 (i1 - i0 - 1) + k)) to rows [o0, o1) of the whole op's output must produce exactly those rows,
// bit for bit, whenever [i0, i1) holds every input row they gather from: each output sums the
// same taps of the same phase in the same order (only the pixel tiling differs, which the K
// order does not depend on). Random geometries (offsets, heights, extra input rows, odd crops
// that swap the phases' parities); both ISA paths (tests/CMakeLists.txt, GPEN_ISA_TESTS).
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

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

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
  int bands;  // random bands to check
};

void run_case(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t C = c.C1 + c.C2, Hf = 2 * (c.H - 1) + c.k, Wf = 2 * (c.W - 1) + c.k;
  const Shape xs{c.N, c.H, c.W, c.C1}, x2s{c.N, c.H, c.W, std::max<int64_t>(c.C2, 1)};
  const auto x = random_values(rng, xs.numel(), -1.0f, 1.0f), x2 = random_values(rng, x2s.numel(), -2.0f, 2.0f);
  const auto x2_scale = random_values(rng, 1, 0.5f, 1.0f), x2_bias = random_values(rng, x2s[3], -0.5f, 0.5f);
  const float ws = 1.0f / std::sqrt(float(C * c.k * c.k));
  const auto w = random_values(rng, int64_t{c.k} * c.k * C * c.Co, -ws, ws);
  const auto s = random_values(rng, c.N * C, 0.5f, 1.5f);
  const TensorView wv = make_view(const_cast<float*>(w.data()), DType::f32, Shape{c.k, c.k, C, c.Co});
  const TensorView sv = make_view(const_cast<float*>(s.data()), DType::f32, Shape{c.N, C});
  const TensorView x2sv = make_view(const_cast<float*>(x2_scale.data()), DType::f32, Shape{1});
  const TensorView x2bv = make_view(const_cast<float*>(x2_bias.data()), DType::f32, Shape{x2s[3]});

  ModConvParams p;
  p.k = c.k, p.up = true;
  p.has_x2 = c.C2 > 0, p.x2_act = Activation::scaled_leaky();
  p.split_rows = static_cast<int>(Hf);  // as the banding transform sets it: the direct path, whole or band

  // One call over input rows [i0, i1) giving output rows [o0, o1) of the whole op.
  auto call = [&](int64_t i0, int64_t i1, int64_t o0, int64_t o1, std::vector<float>& out) {
    ModConvParams q = p;
    q.crop_top = static_cast<int>(o0 - 2 * i0), q.crop_bottom = static_cast<int>(2 * (i1 - 1) + c.k - o1);
    REQUIRE(q.crop_top >= 0);
    REQUIRE(q.crop_bottom >= 0);
    const TensorView xv = rows_view(x, xs, i0, i1 - i0), x2v = rows_view(x2, x2s, i0, i1 - i0);
    const Shape band_y{c.N, o1 - o0, Wf, c.Co};
    out.assign(static_cast<size_t>(band_y.numel()), 1e30f);
    const TensorView yv = make_view(out.data(), DType::f32, band_y);
    cpu::ModConvArgs a;
    a.x = &xv, a.w = &wv, a.s = &sv;
    if (c.C2) a.x2 = &x2v, a.x2_scale = &x2sv, a.x2_bias = &x2bv;
    Shape xcat{c.N, i1 - i0, c.W, C};
    std::vector<unsigned char> wsp(cpu::modconv_workspace_bytes(q, xcat, band_y, 0));
    cpu::modconv(q, a, yv, wsp.data());
  };
  std::vector<float> full;
  call(0, c.H, 0, Hf, full);
  auto check = [&](int64_t i0, int64_t i1, int64_t o0, int64_t o1) {
    std::vector<float> band;
    call(i0, i1, o0, o1, band);
    const size_t row = static_cast<size_t>(Wf * c.Co), h = static_cast<size_t>(o1 - o0);
    size_t bad = 0;
    for (int64_t n = 0; n < c.N; ++n)
      for (size_t e = 0; e < row * h; ++e)
        bad += !(band[n * row * h + e] == full[(n * Hf + o0) * row + e]);
    INFO("input rows [" << i0 << ", " << i1 << "), output rows [" << o0 << ", " << o1 << "): " << bad
                        << " differing outputs");
    CHECK(bad == 0);
  };
  // Every one-row band, from the fewest input rows it gathers from (the banding transform's
  // choice, engine/plan/banding_rows.cpp).
  auto fewest = [&](int64_t o0, int64_t o1, int64_t& i0, int64_t& i1) {
    i0 = std::max<int64_t>(0, std::min(ceil_div(o0 - (c.k - 1), 2), floor_div(o0, 2)));
    i1 = std::min(c.H, std::max(floor_div(o1 - 1, 2), ceil_div(o1 - c.k, 2)) + 1);
  };
  for (int64_t o0 = 0; o0 < Hf; ++o0) {
    int64_t i0, i1;
    fewest(o0, o0 + 1, i0, i1);
    check(i0, i1, o0, o0 + 1);
  }
  // Random bands, some with extra input rows above or below.
  for (int b = 0; b < c.bands; ++b) {
    const int64_t o0 = std::uniform_int_distribution<int64_t>(0, Hf - 1)(rng);
    const int64_t o1 = std::uniform_int_distribution<int64_t>(o0 + 1, Hf)(rng);
    int64_t i0, i1;
    fewest(o0, o1, i0, i1);
    i0 = std::uniform_int_distribution<int64_t>(0, 1)(rng) ? std::uniform_int_distribution<int64_t>(0, i0)(rng) : i0;
    i1 = std::uniform_int_distribution<int64_t>(0, 1)(rng) ? std::uniform_int_distribution<int64_t>(i1, c.H)(rng) : i1;
    check(i0, i1, o0, o1);
  }
}

}  // namespace

TEST_CASE("cropped transposed modconv rows equal the whole op's rows bit for bit") {
  const Case cases[] = {
      // GPEN's up conv with the noise concat (vector widths of both ISAs), two samples.
      {2, 6, 5, 16, 16, 32, 3, 12},
      // Odd channels, many pixel tiles per phase row (Wo 401: phases of 200 columns > the
      // 192-pixel task tile).
      {1, 4, 200, 5, 3, 11, 3, 6},
      // k = 5 (three taps per phase row) and k = 1 (a tapless odd phase: zeros), k = 4 (even).
      {1, 5, 4, 8, 0, 16, 5, 10},
      {1, 5, 6, 8, 8, 3, 1, 10},
      {1, 4, 3, 8, 0, 17, 4, 10},
  };
  uint32_t seed = 11;
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

TEST_CASE("cropped transposed modconv rejects bad crops") {
  std::vector<float> x(1 * 4 * 4 * 8, 0.5f), w(3 * 3 * 8 * 8, 0.1f), s(8, 1.0f), y(9 * 9 * 8);
  const TensorView xv = make_view(x.data(), DType::f32, Shape{1, 4, 4, 8}),
                   wv = make_view(w.data(), DType::f32, Shape{3, 3, 8, 8}), sv = make_view(s.data(), DType::f32, Shape{1, 8});
  cpu::ModConvArgs a;
  a.x = &xv, a.w = &wv, a.s = &sv;
  std::vector<unsigned char> wsp(1 << 22);
  ModConvParams p;
  p.up = true;
  auto run = [&](const ModConvParams& q, int64_t rows) {
    const TensorView yv = make_view(y.data(), DType::f32, Shape{1, rows, 9, 8});
    cpu::modconv(q, a, yv, wsp.data());
  };
  ModConvParams q = p;
  q.crop_top = 2, q.crop_bottom = 3;
  run(q, 4);  // well-formed: 9 - 5 rows
  CHECK_THROWS_AS(run(q, 9), Error);  // the output must have the cropped height
  q.crop_top = -1, q.crop_bottom = 0;
  CHECK_THROWS_AS(run(q, 10), Error);
  q.crop_top = 5, q.crop_bottom = 4;  // nothing left
  CHECK_THROWS_AS(run(q, 1), Error);
  ModConvParams same;  // the same-padded conv crops with pad_top / pad_bottom, not crop_top
  same.crop_top = 1;
  const TensorView y3 = make_view(y.data(), DType::f32, Shape{1, 3, 4, 8});
  CHECK_THROWS_AS(cpu::modconv(same, a, y3, wsp.data()), Error);
}
