// warpAffine against cv2.warpAffine(INTER_LINEAR / INTER_CUBIC, BORDER_CONSTANT 0)
// (tests/reference/make_align_fixtures.py): bit-exact for 8-bit BGR and float images.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/photo/image.h"
#include "engine/photo/npy.h"
#include "kernels/cpu/warp.h"
#include "tests/json_fixture.h"

using namespace gpen;
using gpen_test::load_json;
using gpen_test::matrix;

namespace {

const std::string kDir = std::string(GPEN_FIXTURE_DIR) + "/align/";

}  // namespace

TEST_CASE("warp_affine u8 and f32 equal cv2.warpAffine bit for bit") {
  const nlohmann::json meta = load_json(kDir + "warp_cases.json");
  const Image src = read_image(kDir + "warp_src_u8.png");
  const npy::Array srcf = npy::load(kDir + "warp_src_f32.npy");
  const int dw = meta["dst_size"][0], dh = meta["dst_size"][1];
  REQUIRE(srcf.shape == std::vector<int64_t>{src.height, src.width});
  for (const auto& [interp_name, mode] : {std::pair{"linear", WarpInterp::linear}, std::pair{"cubic", WarpInterp::cubic}}) {
    const std::string in = interp_name;
    CAPTURE(in);
    const npy::Array outf = npy::load(kDir + "warp_" + in + "_f32.npy");
    size_t diff8 = 0, difff = 0, total8 = 0, totalf = 0;
    for (const auto& c : meta["cases"]) {
      const std::string name = c["name"];
      CAPTURE(name);
      const int index = c["index"];
      const AffineTransform m = matrix(c["matrix"]);
      const Image ref = read_image(kDir + "warp_" + in + "_u8_" + std::to_string(index) + ".png");
      const Image got = warp_affine(src, m, dw, dh, mode);
      REQUIRE(got.bgr.size() == ref.bgr.size());
      size_t d8 = 0;
      for (size_t i = 0; i < got.bgr.size(); ++i) d8 += got.bgr[i] != ref.bgr[i];
      CHECK(d8 == 0);
      diff8 += d8;
      total8 += got.bgr.size();

      const std::vector<float> gf = warp_affine(srcf.data<float>(), src.width, src.height, m, dw, dh, mode);
      const float* rf = outf.data<float>() + static_cast<size_t>(index) * gf.size();
      size_t df = 0;
      float maxd = 0;
      for (size_t i = 0; i < gf.size(); ++i) {
        df += gf[i] != rf[i];
        maxd = std::max(maxd, std::fabs(gf[i] - rf[i]));
      }
      CHECK(df == 0);
      CHECK(maxd <= 1e-6f);
      difff += df;
      totalf += gf.size();

      // Every non-zero pixel of OpenCV's result lies inside the footprint.
      const PixelRect fp = warp_footprint(m, src.width, src.height, dw, dh);
      size_t outside = 0;
      for (int y = 0; y < dh; ++y)
        for (int x = 0; x < dw; ++x) {
          const bool inside = x >= fp.x && x < fp.x + fp.width && y >= fp.y && y < fp.y + fp.height;
          const size_t i = static_cast<size_t>(y) * dw + x;
          if (!inside && (ref.bgr[3 * i] || ref.bgr[3 * i + 1] || ref.bgr[3 * i + 2] || rf[i] != 0.0f)) ++outside;
        }
      CHECK(outside == 0);
    }
    MESSAGE(in << " warp u8: " << diff8 << " of " << total8 << " values differ from cv2; f32: " << difff << " of "
               << totalf);
  }
}

TEST_CASE("warp_affine_roi equals the same rectangle of the full warp") {
  const Image src = read_image(kDir + "warp_src_u8.png");
  AffineTransform m;
  m.m = {0.93, -0.31, 7.25, 0.29, 0.91, -2.5};
  const int dw = 50, dh = 44;
  for (WarpInterp mode : {WarpInterp::linear, WarpInterp::cubic}) {
    const Image full = warp_affine(src, m, dw, dh, mode);
    const PixelRect roi{9, 5, 23, 17};
    std::vector<uint8_t> part(static_cast<size_t>(roi.width) * roi.height * 3);
    warp_affine_roi(src.bgr.data(), src.width, src.height, m, roi, part.data(), mode);
    size_t bad = 0;
    for (int y = 0; y < roi.height; ++y)
      for (int x = 0; x < roi.width * 3; ++x)
        bad += part[static_cast<size_t>(y) * roi.width * 3 + x] !=
               full.bgr[(static_cast<size_t>(roi.y + y) * dw + roi.x) * 3 + x];
    CHECK(bad == 0);

    // Float: a constant image is reproduced inside and falls to 0 outside.
    std::vector<float> ones(static_cast<size_t>(src.width) * src.height, 1.0f);
    const std::vector<float> w = warp_affine(ones.data(), src.width, src.height, m, dw, dh, mode);
    double x, y;
    m.apply(src.width / 2.0, src.height / 2.0, &x, &y);
    CHECK(w[static_cast<size_t>(std::lround(y)) * dw + std::lround(x)] == doctest::Approx(1.0).epsilon(1e-6));
    CHECK(w[0] == 0.0f);
  }
}

TEST_CASE("warp footprint is empty when the source lands outside") {
  AffineTransform m;
  m.m = {1, 0, 1000, 0, 1, 0};
  CHECK(warp_footprint(m, 30, 20, 64, 64).empty());
  const Image src{4, 4, std::vector<uint8_t>(48, 200)};
  const Image out = warp_affine(src, m, 16, 16, WarpInterp::linear);
  for (uint8_t v : out.bgr) CHECK(v == 0);
}

TEST_CASE("warp rejects bad input") {
  const Image src{4, 3, std::vector<uint8_t>(36, 1)};
  AffineTransform singular;
  singular.m = {1, 2, 0, 2, 4, 0};
  const WarpInterp L = WarpInterp::linear;
  CHECK_THROWS_AS(warp_affine(src, singular, 8, 8, L), Error);
  AffineTransform nan;
  nan.m[2] = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_AS(warp_affine(src, nan, 8, 8, L), Error);
  CHECK_THROWS_AS(warp_affine(src, AffineTransform{}, 0, 8, L), Error);
  CHECK_THROWS_AS(warp_affine(src, AffineTransform{}, 1 << 20, 8, WarpInterp::cubic), Error);
  CHECK_THROWS_AS(warp_affine(Image{}, AffineTransform{}, 8, 8, L), Error);
  const Image bad{4, 3, std::vector<uint8_t>(5, 1)};
  CHECK_THROWS_AS(warp_affine(bad, AffineTransform{}, 8, 8, L), Error);
  float f[4] = {};
  CHECK_THROWS_AS(warp_affine(f, 2, 0, AffineTransform{}, 8, 8, L), Error);
  CHECK_THROWS_AS(warp_affine(nullptr, 2, 2, AffineTransform{}, 8, 8, L), Error);
}

TEST_CASE("warp with absurd matrices stays defined") {
  // Positions overflow OpenCV's 32-bit arithmetic; the result must still be computed without
  // undefined behaviour (the sanitizer build checks) and stay in range.
  const Image src{4, 4, std::vector<uint8_t>(48, 9)};
  AffineTransform m;
  for (WarpInterp mode : {WarpInterp::linear, WarpInterp::cubic}) {
    m.m = {1e-7, 0, 0, 0, 1e-7, 0};
    const Image out = warp_affine(src, m, 16, 16, mode);
    CHECK(out.bgr.size() == 16 * 16 * 3);
    m.m = {1e7, 3, -2e9, 5, 1e7, 7e8};
    const Image out2 = warp_affine(src, m, 16, 16, mode);
    CHECK(out2.bgr.size() == 16 * 16 * 3);
    std::vector<float> f(16, 0.5f);
    CHECK(warp_affine(f.data(), 4, 4, m, 16, 16, mode).size() == 256);
  }
}
