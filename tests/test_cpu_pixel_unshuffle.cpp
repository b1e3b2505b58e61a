// cpu::pixel_unshuffle against the definition written as a naive loop over NCHW indices (the
// form of gpen-semantics.md: f0[c*f*f + dy*f + dx][i][j] = x[c][f*i + dy][f*j + dx]), for the
// factors RRDBNet uses (2 at x2, 4 at x1), strided views in and out, and the refusals. A copy:
// results must be identical.
#include <doctest/doctest.h>

#include <vector>

#include "engine/core/error.h"
#include "kernels/cpu/ops.h"

using namespace gpen;

namespace {

std::vector<float> iota(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * 0.5f - 7.0f;
  return v;
}

}  // namespace

TEST_CASE("pixel_unshuffle follows PyTorch's channel order") {
  for (int f : {1, 2, 4}) {
    CAPTURE(f);
    const int64_t N = 2, H = 4 * 3, W = 4 * 2, C = 3;
    std::vector<float> x = iota(static_cast<size_t>(N * H * W * C));
    // Output as a channel slice [5, 5 + C f f) of a wider buffer, the rest sentinels.
    const int64_t Co = C * f * f, Cp = Co + 7;
    std::vector<float> buf(static_cast<size_t>(N * (H / f) * (W / f) * Cp), 999.0f);
    TensorView xv = make_view(x.data(), DType::f32, Shape{N, H, W, C});
    TensorView yv = make_view(buf.data(), DType::f32, Shape{N, H / f, W / f, Cp});
    yv.shape = Shape{N, H / f, W / f, Co};
    yv.data = buf.data() + 5;
    cpu::pixel_unshuffle(PixelUnshuffleParams{f}, xv, yv);
    int64_t bad = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t dy = 0; dy < f; ++dy)
          for (int64_t dx = 0; dx < f; ++dx)
            for (int64_t i = 0; i < H / f; ++i)
              for (int64_t j = 0; j < W / f; ++j) {
                const float want = x[static_cast<size_t>(((n * H + f * i + dy) * W + f * j + dx) * C + c)];
                const float got = buf[static_cast<size_t>(((n * (H / f) + i) * (W / f) + j) * Cp + 5 + c * f * f + dy * f + dx)];
                bad += got != want;
              }
    CHECK(bad == 0);
    int64_t touched = 0;
    for (size_t k = 0; k < buf.size(); ++k) {
      const int64_t ch = static_cast<int64_t>(k) % Cp;
      if (ch < 5 || ch >= 5 + Co) touched += buf[k] != 999.0f;
    }
    CHECK(touched == 0);
  }
}

TEST_CASE("pixel_unshuffle refuses sizes that are not multiples and wrong outputs") {
  std::vector<float> x(1 * 6 * 8 * 3), y(1 * 2 * 2 * 48);
  TensorView xv = make_view(x.data(), DType::f32, Shape{1, 6, 8, 3});
  TensorView yv = make_view(y.data(), DType::f32, Shape{1, 1, 2, 48});
  CHECK_THROWS_AS(cpu::pixel_unshuffle(PixelUnshuffleParams{4}, xv, yv), Error);  // 6 % 4 != 0
  TensorView y2 = make_view(y.data(), DType::f32, Shape{1, 3, 4, 11});
  CHECK_THROWS_AS(cpu::pixel_unshuffle(PixelUnshuffleParams{2}, xv, y2), Error);  // 11 != 12 channels
}
