// cpu::max_pool2d's unit-channel-stride path (eight channels at a time, kernels/cpu/pool.cpp)
// against a plain reference: a max is exact, so every output must equal the reference to the
// bit, NaN taps winning as in PyTorch and padding never winning; channel counts with and without
// a tail after the vectors, a channel-slice output and odd sizes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/ops.h"

using namespace gpen;

TEST_CASE("max_pool2d 3x3 stride 2 pad 1, unit channel stride: the reference's bits, NaN wins") {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(-1.0f, 1.0f);  // mostly negative: a zero pad would show
  for (int64_t C : {8, 20, 64, 3}) {
    const int64_t N = 2, H = 9, W = 12;
    MaxPool2dParams p;
    const int64_t Ho = (H + 2 - 3) / 2 + 1, Wo = (W + 2 - 3) / 2 + 1;
    std::vector<float> x(static_cast<size_t>(N * H * W * C));
    for (auto& v : x) v = nd(rng);
    for (size_t i = 5; i < x.size(); i += 97) x[i] = std::numeric_limits<float>::quiet_NaN();
    // The output as channels [1, 1 + C) of a parent with C + 3 channels: pixel strides that are
    // not C, channel stride 1.
    const int64_t Cp = C + 3;
    std::vector<float> parent(static_cast<size_t>(N * Ho * Wo * Cp), 7.0f);
    TensorView xv = make_view(x.data(), DType::f32, Shape{N, H, W, C});
    TensorView yv = make_view(parent.data() + 1, DType::f32, Shape{N, Ho, Wo, C});
    yv.strides = dense_strides(Shape{N, Ho, Wo, Cp});
    for (int threads : {1, 2}) {
      cpu::set_num_threads(threads);
      cpu::max_pool2d(p, xv, yv);
      int64_t bad = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t oy = 0; oy < Ho; ++oy)
          for (int64_t ox = 0; ox < Wo; ++ox)
            for (int64_t c = 0; c < C; ++c) {
              float want = -std::numeric_limits<float>::infinity();
              bool nan = false;
              for (int64_t iy = std::max<int64_t>(2 * oy - 1, 0); iy < std::min<int64_t>(2 * oy + 2, H); ++iy)
                for (int64_t ix = std::max<int64_t>(2 * ox - 1, 0); ix < std::min<int64_t>(2 * ox + 2, W); ++ix) {
                  const float v = x[static_cast<size_t>(((n * H + iy) * W + ix) * C + c)];
                  nan = nan || std::isnan(v);
                  want = std::max(want, v);
                }
              const float got = parent[static_cast<size_t>(((n * Ho + oy) * Wo + ox) * Cp + 1 + c)];
              const bool ok = nan ? std::isnan(got) : std::memcmp(&got, &want, 4) == 0;
              bad += ok ? 0 : 1;
            }
      CHECK_MESSAGE(bad == 0, "C " << C << ", " << threads << " threads: " << bad << " outputs differ");
      // The parent's other channels are untouched.
      for (int64_t px = 0; px < N * Ho * Wo; ++px) {
        CHECK(parent[static_cast<size_t>(px * Cp)] == 7.0f);
        CHECK(parent[static_cast<size_t>(px * Cp + C + 1)] == 7.0f);
      }
    }
    cpu::set_num_threads(0);
  }
}
