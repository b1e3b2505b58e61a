// parse_labels: the first maximum over the class channels (torch.argmax), NaN handling, and
// MASK_COLORMAP's keep (255) / drop (0) for background (0), hat (14) and cloth (18).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "engine/core/error.h"
#include "kernels/cpu/parse_labels.h"

using namespace gpen;

TEST_CASE("parse_labels: argmax, first maximum on ties, mask of the kept classes") {
  const int C = 19;
  // Pixel k has its maximum at class k (k < 19); pixel 19 ties classes 3 and 7; pixel 20 is all equal.
  std::vector<float> x(21 * C, 0.0f);
  for (int k = 0; k < 19; ++k) x[static_cast<size_t>(k * C + k)] = 1.0f;
  x[19 * C + 3] = x[19 * C + 7] = 2.0f;
  std::vector<uint8_t> lab(21), mask(21);
  cpu::parse_labels(make_view(x.data(), DType::f32, Shape{1, 3, 7, C}), lab.data(), mask.data());
  for (int k = 0; k < 19; ++k) {
    CAPTURE(k);
    CHECK(lab[static_cast<size_t>(k)] == k);
    CHECK(mask[static_cast<size_t>(k)] == ((k == 0 || k == 14 || k == 18) ? 0 : 255));
  }
  CHECK(lab[19] == 3);
  CHECK(lab[20] == 0);
  CHECK(mask[20] == 0);
}

TEST_CASE("parse_labels: random logits against a naive argmax, strided input, NaN wins") {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  const int N = 2, H = 5, W = 6, C = 19, wide = 24;
  std::vector<float> x(static_cast<size_t>(N) * H * W * wide);
  for (float& v : x) v = nd(rng);
  x[wide * 4 + 5] = std::numeric_limits<float>::quiet_NaN();  // pixel 4, class 5
  TensorView v = make_view(x.data() + 1, DType::f32, Shape{N, H, W, C});
  v.strides = {int64_t{H} * W * wide, int64_t{W} * wide, wide, 1};
  std::vector<uint8_t> lab(static_cast<size_t>(N) * H * W);
  cpu::parse_labels(v, lab.data(), nullptr);
  for (int p = 0; p < N * H * W; ++p) {
    const float* q = x.data() + static_cast<size_t>(p) * wide + 1;
    int best = 0;
    for (int c = 1; c < C; ++c)
      if (std::isnan(q[c])) {
        best = c;
        break;
      } else if (q[c] > q[best]) {
        best = c;
      }
    CAPTURE(p);
    CHECK(lab[static_cast<size_t>(p)] == best);
  }
  CHECK(lab[4] == 4);  // class 5 of pixel 4 sits at offset 1 + 4 = channel 4 of the view
}

TEST_CASE("parse_labels refuses more than 32 classes and non-f32 logits") {
  std::vector<float> x(40);
  std::vector<uint8_t> m(1);
  CHECK_THROWS_AS(cpu::parse_labels(make_view(x.data(), DType::f32, Shape{1, 1, 1, 40}), m.data(), m.data()), Error);
  CHECK_THROWS_AS(cpu::parse_labels(make_view(x.data(), DType::f16, Shape{1, 1, 1, 19}), m.data(), m.data()), Error);
}
