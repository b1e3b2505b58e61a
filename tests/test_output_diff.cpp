// compare_outputs (engine/photo/output_diff.h): the raw and 8-bit figures of `gpen bench --accuracy`,
// on outputs small enough to work out by hand. 8-bit values follow model_to_face:
// trunc(clip(y * 0.5 + 0.5, 0, 1) * 255), so y = 0 -> 127, 0.5 -> 191, -0.25 -> 95,
// 0.02 -> trunc(130.05) = 130, -0.26 -> trunc(94.35) = 94, and everything >= 1 -> 255.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "engine/core/error.h"
#include "engine/photo/output_diff.h"

using namespace gpen;

TEST_CASE("compare_outputs: raw and 8-bit differences of one 2x2 face, by hand") {
  // 2 x 2 x 3 = 12 values; the reference has its largest magnitude 0.5 at [0].
  std::vector<float> b(12, 0.0f);
  b[0] = 0.5f;
  b[5] = -0.25f;
  std::vector<float> a = b;
  a[3] = 0.02f;   // 127 -> 130: 8-bit difference 3
  a[5] = -0.26f;  // 95 -> 94: 8-bit difference 1
  const OutputDiff d = compare_outputs(a.data(), b.data(), 1, 2);
  CHECK(d.values == 12);
  CHECK(d.nonfinite == 0);
  CHECK(d.max_abs == doctest::Approx(0.02).epsilon(1e-6));
  CHECK(d.max_rel == doctest::Approx(0.02 / 0.5).epsilon(1e-6));
  // (3^2 + 1^2) / 12 values
  CHECK(d.mse_8bit == doctest::Approx(10.0 / 12.0));
  // 10 log10(65025 / 0.8333) = 10 log10(78030) = 48.9226
  CHECK(d.psnr_8bit == doctest::Approx(48.9226).epsilon(1e-5));
  CHECK(d.max_diff_8bit == 3);
  CHECK(d.differing_8bit == 2);
}

TEST_CASE("compare_outputs: identical outputs give 0 and an infinite PSNR") {
  std::vector<float> b = {0.1f, -0.7f, 0.3f, 0.9f, -1.0f, 0.0f};
  const OutputDiff d = compare_outputs(b.data(), b.data(), 2, 1);
  CHECK(d.max_abs == 0);
  CHECK(d.max_rel == 0);
  CHECK(d.mse_8bit == 0);
  CHECK(std::isinf(d.psnr_8bit));
  CHECK(d.psnr_8bit > 0);
  CHECK(d.differing_8bit == 0);
}

TEST_CASE("compare_outputs: the PSNR pools the squared errors of all faces (not an average of PSNRs)") {
  // Two 1x1 faces; only the second differs, by 3 levels in one channel: 9 / 6 values = 1.5,
  // 10 log10(65025 / 1.5) = 46.3699. (Averaging per-face PSNRs would give inf.)
  std::vector<float> b(6, 0.0f), a(6, 0.0f);
  a[4] = 0.02f;
  const OutputDiff d = compare_outputs(a.data(), b.data(), 2, 1);
  CHECK(d.mse_8bit == doctest::Approx(1.5));
  CHECK(d.psnr_8bit == doctest::Approx(46.3699).epsilon(1e-5));
  // max|b| is 0: no scale, so a non-zero difference is infinitely relative.
  CHECK(std::isinf(d.max_rel));
}

TEST_CASE("compare_outputs: clipping hides raw differences outside [-1, 1] from the 8-bit figures") {
  std::vector<float> b = {1.0f, -1.0f, 0.0f}, a = {1.5f, -1.25f, 0.0f};
  const OutputDiff d = compare_outputs(a.data(), b.data(), 1, 1);
  CHECK(d.max_abs == doctest::Approx(0.5));
  CHECK(d.max_rel == doctest::Approx(0.5));
  CHECK(d.mse_8bit == 0);
  CHECK(std::isinf(d.psnr_8bit));
}

TEST_CASE("compare_outputs: non-finite values") {
  std::vector<float> b = {0.25f, 0.5f, -0.5f}, a = {0.25f, NAN, -0.75f};
  const OutputDiff d = compare_outputs(a.data(), b.data(), 1, 1);
  CHECK(d.nonfinite == 1);
  CHECK(d.max_abs == doctest::Approx(0.25));  // over the finite values
  CHECK(std::isnan(d.psnr_8bit));
  CHECK(std::isnan(d.mse_8bit));
  // A reference must be finite; sizes must be positive.
  CHECK_THROWS_AS(compare_outputs(b.data(), a.data(), 1, 1), gpen::Error);
  CHECK_THROWS_AS(compare_outputs(a.data(), b.data(), 0, 1), gpen::Error);
}
