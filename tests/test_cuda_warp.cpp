// CUDA warp_affine_roi against gpen::warp_affine_roi (kernels/cpu/warp.cpp), bilinear and bicubic, on
// 8-bit BGR and float planes: random similarity and general affine matrices (rotations, scales,
// flips, shears, integer translations that hit the weight-1 cell), ROIs covering borders and
// regions mapped wholly or partly outside the source, compact and pitched destinations.
// Expected equality is exact for both types: the kernel performs the CPU's operations in the
// CPU's order with one rounding each (integer sums for 8-bit; for float the same products and
// sums, never fused), so any difference is a bug, not round-off.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "engine/core/error.h"
#include "kernels/cpu/warp.h"
#include "kernels/cuda/ops_pipeline.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;
using cuda_test::DeviceBuffer;

namespace {

constexpr int kSw = 40, kSh = 33;    // source
constexpr int kDw = 64, kDh = 48;    // destination the ROIs live in

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng() & 0xff);
  return v;
}

// Source -> destination transforms of every kind the pipeline meets and a few it does not.
std::vector<AffineTransform> random_transforms(uint32_t seed, int n) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<AffineTransform> out;
  // Identity and integer translations: every position falls on cell (0, 0).
  out.push_back(AffineTransform{});
  out.push_back(AffineTransform{{1, 0, 7, 0, 1, -3}});
  out.push_back(AffineTransform{{1, 0, -5.5, 0, 1, 2.25}});  // half / quarter cells
  out.push_back(AffineTransform{{-1, 0, 50, 0, 1, 4}});      // mirror
  for (int i = 0; i < n; ++i) {
    const double s = 0.4 * std::pow(6.0, u(rng));  // 0.4 .. 2.4
    const double a = (u(rng) * 2 - 1) * M_PI;
    const double cx = kDw * u(rng), cy = kDh * u(rng);
    AffineTransform t;
    if (i % 3 == 2) {  // general affine: independent entries
      t.m = {s * (u(rng) * 2 - 1), s * (u(rng) * 2 - 1), 0, s * (u(rng) * 2 - 1), s * (u(rng) * 2 - 1), 0};
    } else {  // similarity, as face alignment produces
      t.m = {s * std::cos(a), -s * std::sin(a), 0, s * std::sin(a), s * std::cos(a), 0};
    }
    // Put the source centre somewhere around the destination (partly outside it too).
    t.m[2] = cx - (t.m[0] * kSw / 2 + t.m[1] * kSh / 2);
    t.m[5] = cy - (t.m[3] * kSw / 2 + t.m[4] * kSh / 2);
    const double det = t.m[0] * t.m[4] - t.m[1] * t.m[3];
    if (std::fabs(det) < 0.05) continue;
    out.push_back(t);
  }
  return out;
}

std::vector<PixelRect> rois_for(const AffineTransform& m, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<PixelRect> r = {{0, 0, kDw, kDh}, warp_footprint(m, kSw, kSh, kDw, kDh)};
  const int x = static_cast<int>(rng() % kDw), y = static_cast<int>(rng() % kDh);
  r.push_back({x, y, 1 + static_cast<int>(rng() % (kDw - x)), 1 + static_cast<int>(rng() % (kDh - y))});
  return r;
}

const char* interp_name(WarpInterp i) { return i == WarpInterp::linear ? "linear" : "cubic"; }

}  // namespace

TEST_CASE("cuda warp_affine_roi (BGR) is bit-exact with the CPU warp") {
  const std::vector<uint8_t> src = random_bytes(size_t{kSw} * kSh * 3, 1);
  DeviceBuffer dsrc(src.size());
  dsrc.upload(src);
  DeviceBuffer ddst(size_t{kDw} * kDh * 3);
  int cases = 0;
  for (WarpInterp interp : {WarpInterp::linear, WarpInterp::cubic}) {
    const auto ts = random_transforms(interp == WarpInterp::linear ? 2 : 3, 14);
    for (size_t ti = 0; ti < ts.size(); ++ti) {
      for (const PixelRect& roi : rois_for(ts[ti], static_cast<uint32_t>(ti) + 10)) {
        if (roi.empty()) continue;
        CAPTURE(interp_name(interp));
        CAPTURE(ti);
        CAPTURE(roi.x);
        CAPTURE(roi.y);
        CAPTURE(roi.width);
        CAPTURE(roi.height);
        const size_t n = size_t(roi.width) * roi.height * 3;
        std::vector<uint8_t> want(n);
        warp_affine_roi(src.data(), kSw, kSh, ts[ti], roi, want.data(), interp);
        cuda::warp_affine_roi(dsrc.as<uint8_t>(), kSw, kSh, 0, ts[ti], roi, ddst.as<uint8_t>(), 0, interp, nullptr);
        const auto got = ddst.download<uint8_t>(n);
        size_t bad = 0;
        for (size_t i = 0; i < n; ++i) bad += got[i] != want[i];
        CHECK(bad == 0);
        ++cases;
      }
    }
  }
  CHECK(cases > 40);
}

TEST_CASE("cuda warp_affine_roi (float) is bit-exact with the CPU warp") {
  auto src = cuda_test::random_values(size_t{kSw} * kSh, 4, -0.5f, 1.5f);
  DeviceBuffer dsrc(src.size() * 4);
  dsrc.upload(src);
  DeviceBuffer ddst(size_t{kDw} * kDh * 4);
  for (WarpInterp interp : {WarpInterp::linear, WarpInterp::cubic}) {
    const auto ts = random_transforms(interp == WarpInterp::linear ? 5 : 6, 14);
    for (size_t ti = 0; ti < ts.size(); ++ti) {
      for (const PixelRect& roi : rois_for(ts[ti], static_cast<uint32_t>(ti) + 20)) {
        if (roi.empty()) continue;
        CAPTURE(interp_name(interp));
        CAPTURE(ti);
        const size_t n = size_t(roi.width) * roi.height;
        std::vector<float> want(n);
        warp_affine_roi(src.data(), kSw, kSh, ts[ti], roi, want.data(), interp);
        cuda::warp_affine_roi(dsrc.as<float>(), kSw, kSh, 0, ts[ti], roi, ddst.as<float>(), 0, interp, nullptr);
        const auto got = ddst.download<float>(n);
        size_t bad = 0;
        for (size_t i = 0; i < n; ++i) bad += std::memcmp(&got[i], &want[i], 4) != 0;
        CHECK(bad == 0);
      }
    }
  }
}

TEST_CASE("cuda warp_affine_roi writes a ROI in place into a pitched image, and a pitched source") {
  // Source rows padded to 128 bytes; destination: the whole 64 x 48 image, ROI written at its place.
  const int64_t sp = 128;
  const std::vector<uint8_t> tight = random_bytes(size_t{kSw} * kSh * 3, 7);
  std::vector<uint8_t> padded(size_t(sp) * kSh, 0xEE);
  for (int y = 0; y < kSh; ++y) std::copy_n(tight.data() + size_t(y) * kSw * 3, kSw * 3, padded.data() + size_t(y) * sp);
  DeviceBuffer dsrc(padded.size());
  dsrc.upload(padded);
  const AffineTransform m{{0.5, -0.2, 25, 0.2, 0.5, 6}};
  const PixelRect roi = warp_footprint(m, kSw, kSh, kDw, kDh);
  REQUIRE(!roi.empty());
  REQUIRE((roi.width < kDw || roi.height < kDh));
  std::vector<uint8_t> want(size_t(roi.width) * roi.height * 3);
  warp_affine_roi(tight.data(), kSw, kSh, m, roi, want.data(), WarpInterp::linear);

  std::vector<uint8_t> canvas(size_t{kDw} * kDh * 3, 0x5A);  // outside the ROI must stay 0x5A
  DeviceBuffer dimg(canvas.size());
  dimg.upload(canvas);
  uint8_t* at = dimg.as<uint8_t>() + (int64_t{roi.y} * kDw + roi.x) * 3;
  cuda::warp_affine_roi(dsrc.as<uint8_t>(), kSw, kSh, sp, m, roi, at, int64_t{kDw} * 3, WarpInterp::linear, nullptr);
  const auto got = dimg.download<uint8_t>(canvas.size());
  size_t bad = 0;
  for (int y = 0; y < kDh; ++y)
    for (int x = 0; x < kDw; ++x)
      for (int c = 0; c < 3; ++c) {
        const bool in = x >= roi.x && x < roi.x + roi.width && y >= roi.y && y < roi.y + roi.height;
        const uint8_t w = in ? want[(size_t(y - roi.y) * roi.width + (x - roi.x)) * 3 + c] : 0x5A;
        bad += got[(size_t(y) * kDw + x) * 3 + c] != w;
      }
  CHECK(bad == 0);
}

TEST_CASE("cuda warp_affine_roi rejects bad arguments before queueing") {
  DeviceBuffer s(size_t{kSw} * kSh * 3), d(size_t{kDw} * kDh * 3);
  const PixelRect roi{0, 0, 8, 8};
  const AffineTransform singular{{1, 2, 0, 2, 4, 0}};
  CHECK_THROWS_AS(cuda::warp_affine_roi(s.as<uint8_t>(), kSw, kSh, 0, singular, roi, d.as<uint8_t>(), 0,
                                        WarpInterp::linear, nullptr),
                  Error);
  const AffineTransform id{};
  CHECK_THROWS_AS(cuda::warp_affine_roi(static_cast<const uint8_t*>(nullptr), kSw, kSh, 0, id, roi, d.as<uint8_t>(), 0,
                                        WarpInterp::linear, nullptr),
                  Error);
  CHECK_THROWS_AS(cuda::warp_affine_roi(s.as<uint8_t>(), 0, kSh, 0, id, roi, d.as<uint8_t>(), 0, WarpInterp::linear, nullptr),
                  Error);
  CHECK_THROWS_AS(cuda::warp_affine_roi(s.as<uint8_t>(), kSw, kSh, kSw * 3 - 1, id, roi, d.as<uint8_t>(), 0,
                                        WarpInterp::linear, nullptr),
                  Error);
  CHECK_THROWS_AS(cuda::warp_affine_roi(s.as<float>(), kSw, kSh, 0, id, PixelRect{-1, 0, 4, 4}, d.as<float>(), 0,
                                        WarpInterp::cubic, nullptr),
                  Error);
  CHECK_THROWS_AS(cuda::warp_affine_roi(s.as<float>(), kSw, kSh, 0, id, roi, d.as<float>(), 7, WarpInterp::cubic, nullptr),
                  Error);
  // An empty ROI queues nothing and is fine.
  cuda::warp_affine_roi(s.as<float>(), kSw, kSh, 0, id, PixelRect{3, 3, 0, 5}, d.as<float>(), 0, WarpInterp::cubic, nullptr);
}
