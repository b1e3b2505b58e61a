// pad_reflect (nearest upsample + reflection pad in one gather) against a naive loop written from
// the rule of gpen-semantics.md (row -1 = row 1, row H = row H - 2; up2: out[y][x] = in[y/2][x/2]),
// a hand-checked 3x3 case, strided views, and the refusals.
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "engine/core/error.h"
#include "kernels/cpu/ops.h"

using namespace gpen;

namespace {

int mirror(int i, int n) { return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i; }

std::vector<float> naive(const std::vector<float>& x, int N, int H, int W, int C, int pad, int up) {
  const int Hu = H * up, Wu = W * up, Ho = Hu + 2 * pad, Wo = Wu + 2 * pad;
  std::vector<float> y(static_cast<size_t>(N) * Ho * Wo * C);
  for (int n = 0; n < N; ++n)
    for (int oy = 0; oy < Ho; ++oy)
      for (int ox = 0; ox < Wo; ++ox) {
        const int uy = mirror(oy - pad, Hu), ux = mirror(ox - pad, Wu);  // in the upsampled map
        for (int c = 0; c < C; ++c)
          y[((static_cast<size_t>(n) * Ho + oy) * Wo + ox) * C + c] =
              x[((static_cast<size_t>(n) * H + uy / up) * W + ux / up) * C + c];
      }
  return y;
}

}  // namespace

TEST_CASE("pad_reflect: a 3x3 map, pad 1, mirrors without repeating the edge") {
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<float> y(25, -1.0f);
  cpu::pad_reflect(PadReflectParams{1, 1}, make_view(x.data(), DType::f32, Shape{1, 3, 3, 1}),
                   make_view(y.data(), DType::f32, Shape{1, 5, 5, 1}));
  const std::vector<float> want = {5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5, 8, 7, 8, 9, 8, 5, 4, 5, 6, 5};
  CHECK(y == want);
}

TEST_CASE("pad_reflect: up 2 then pad 1 on a 2x2 map") {
  // up2 of [[1,2],[3,4]] is [[1,1,2,2],[1,1,2,2],[3,3,4,4],[3,3,4,4]]; row -1 = row 1 = [1,1,2,2].
  std::vector<float> x = {1, 2, 3, 4};
  std::vector<float> y(36);
  cpu::pad_reflect(PadReflectParams{1, 2}, make_view(x.data(), DType::f32, Shape{1, 2, 2, 1}),
                   make_view(y.data(), DType::f32, Shape{1, 6, 6, 1}));
  const std::vector<float> row0 = {1, 1, 1, 2, 2, 2}, row5 = {3, 3, 3, 4, 4, 4};
  CHECK(std::vector<float>(y.begin(), y.begin() + 6) == row0);
  CHECK(std::vector<float>(y.begin() + 6, y.begin() + 12) == row0);
  CHECK(std::vector<float>(y.begin() + 30, y.end()) == row5);
}

TEST_CASE("pad_reflect matches the naive loop, dense and through channel slices") {
  struct Case {
    int n, h, w, c, pad, up;
  };
  const Case cases[] = {{1, 4, 4, 3, 1, 1}, {2, 5, 7, 8, 1, 2}, {1, 2, 3, 17, 1, 1}, {1, 6, 4, 5, 2, 1}, {1, 1, 1, 4, 1, 2}};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const Case& k : cases) {
    CAPTURE(k.h);
    CAPTURE(k.w);
    CAPTURE(k.up);
    std::vector<float> x(static_cast<size_t>(k.n) * k.h * k.w * k.c);
    for (float& v : x) v = u(rng);
    const int Ho = k.h * k.up + 2 * k.pad, Wo = k.w * k.up + 2 * k.pad;
    const std::vector<float> want = naive(x, k.n, k.h, k.w, k.c, k.pad, k.up);
    std::vector<float> y(want.size());
    cpu::pad_reflect(PadReflectParams{k.pad, k.up}, make_view(x.data(), DType::f32, Shape{k.n, k.h, k.w, k.c}),
                     make_view(y.data(), DType::f32, Shape{k.n, Ho, Wo, k.c}));
    CHECK(y == want);
    // The same with input and output as channel slices [2, 2 + c) of wider buffers.
    const int wide = k.c + 3;
    std::vector<float> xw(static_cast<size_t>(k.n) * k.h * k.w * wide, 9.0f), yw(static_cast<size_t>(k.n) * Ho * Wo * wide, 7.0f);
    for (size_t p = 0; p < x.size() / k.c; ++p)
      for (int c = 0; c < k.c; ++c) xw[p * wide + 2 + c] = x[p * k.c + c];
    TensorView xv = make_view(xw.data() + 2, DType::f32, Shape{k.n, k.h, k.w, k.c});
    TensorView yv = make_view(yw.data() + 2, DType::f32, Shape{k.n, Ho, Wo, k.c});
    xv.strides = {int64_t{k.h} * k.w * wide, int64_t{k.w} * wide, wide, 1};
    yv.strides = {int64_t{Ho} * Wo * wide, int64_t{Wo} * wide, wide, 1};
    cpu::pad_reflect(PadReflectParams{k.pad, k.up}, xv, yv);
    bool same = true, untouched = true;
    for (size_t p = 0; p < want.size() / k.c; ++p)
      for (int c = 0; c < wide; ++c) {
        const float v = yw[p * wide + c];
        if (c >= 2 && c < 2 + k.c) same = same && v == want[p * k.c + c - 2];
        else untouched = untouched && v == 7.0f;
      }
    CHECK(same);
    CHECK(untouched);
  }
}

TEST_CASE("pad_reflect refuses a pad as large as the map and a wrong output shape") {
  std::vector<float> x(4), y(64);
  CHECK_THROWS_AS(cpu::pad_reflect(PadReflectParams{1, 1}, make_view(x.data(), DType::f32, Shape{1, 1, 4, 1}),
                                   make_view(y.data(), DType::f32, Shape{1, 3, 6, 1})),
                  Error);
  CHECK_THROWS_AS(cpu::pad_reflect(PadReflectParams{1, 1}, make_view(x.data(), DType::f32, Shape{1, 2, 2, 1}),
                                   make_view(y.data(), DType::f32, Shape{1, 4, 5, 1})),
                  Error);
}
