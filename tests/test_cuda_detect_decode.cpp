// CUDA detect_decode + detect_finish against kernels/cpu/detect_post.cpp (retinaface_priors,
// decode_boxes, decode_landmarks, retinaface_postprocess) on random head outputs.
//
// What is compared how:
//  - which priors pass the threshold, their scores, and the order / identity of the final faces:
//    exactly (a comparison and a sort on the same floats);
//  - coordinates within 2e-4 pixels + 2^-20 relative. The kernel performs the official
//    (PyTorch) operations unfused; the CPU file is compiled with -mfma and no fp-contract
//    pragma, so GCC may fuse `cx + l * 0.1 * sx` (one rounding of a centre <= ~2 differs, 2^-23,
//    times the input size <= 128: ~1.5e-5 px), and on a GPU expf is within 2 ulp of the
//    host's (box sizes <= ~700 px here: 2 ulp = 1.2e-4 px). The bound covers both with margin and
//    is far below anything that matters for a face box (and a NMS decision flipping on it would
//    need an IoU within ~1e-6 of the threshold).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "kernels/cpu/detect_post.h"
#include "engine/core/error.h"
#include "kernels/cuda/ops_pipeline.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;
using cuda_test::DeviceBuffer;

namespace {

bool close(float got, float want) { return std::fabs(got - want) <= 2e-4 + std::ldexp(std::fabs(want), -20); }

struct Heads {
  int h, w;
  size_t P;
  std::vector<float> loc, conf, landms;
};

Heads random_heads(int h, int w, uint32_t seed) {
  Heads r{h, w, retinaface_prior_count(h, w), {}, {}, {}};
  r.loc = cuda_test::random_values(r.P * 4, seed, -1.5f, 1.5f);
  r.landms = cuda_test::random_values(r.P * 10, seed + 1, -3.0f, 3.0f);
  std::mt19937 rng(seed + 2);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  r.conf.resize(r.P * 2);
  for (size_t i = 0; i < r.P; ++i) {
    // Mostly background, a band of faces, and some exact ties (same score on several priors).
    float s = u(rng) < 0.7f ? u(rng) * 0.5f : 0.5f + 0.5f * u(rng);
    if (i % 37 == 5) s = 0.875f;
    r.conf[2 * i] = 1 - s;
    r.conf[2 * i + 1] = s;
  }
  return r;
}

struct Decoded {
  std::vector<cuda::DetectCandidate> cands;
  int32_t count = 0;
};

Decoded run_decode(const Heads& hd, float thr, int capacity) {
  DeviceBuffer loc(hd.loc.size() * 4), conf(hd.conf.size() * 4), lm(hd.landms.size() * 4);
  loc.upload(hd.loc);
  conf.upload(hd.conf);
  lm.upload(hd.landms);
  DeviceBuffer out(sizeof(cuda::DetectCandidate) * static_cast<size_t>(std::max(capacity, 1))), cnt(4);
  cnt.upload(std::vector<int32_t>{12345});  // stale value: the op must clear it
  cuda::detect_decode(loc.as<float>(), conf.as<float>(), lm.as<float>(), hd.h, hd.w, thr, out.as<cuda::DetectCandidate>(),
                      capacity, cnt.as<int32_t>(), nullptr);
  Decoded d;
  d.count = cnt.download<int32_t>(1)[0];
  const size_t n = static_cast<size_t>(std::min(d.count, capacity));
  const auto bytes = out.download<uint8_t>(n * sizeof(cuda::DetectCandidate));
  d.cands.resize(n);
  if (n > 0) std::memcpy(d.cands.data(), bytes.data(), bytes.size());
  return d;
}

}  // namespace

TEST_CASE("cuda detect_decode decodes every prior above the threshold like the CPU") {
  for (auto [h, w] : {std::pair{100, 120}, std::pair{37, 53}, std::pair{64, 64}}) {
    CAPTURE(h);
    CAPTURE(w);
    const Heads hd = random_heads(h, w, static_cast<uint32_t>(h * 1000 + w));
    const std::vector<Prior> pri = retinaface_priors(h, w);
    std::vector<float> boxes(hd.P * 4), lms(hd.P * 10);
    decode_boxes(hd.loc.data(), pri, h, w, boxes.data());
    decode_landmarks(hd.landms.data(), pri, h, w, lms.data());
    const float thr = 0.6f;
    const Decoded d = run_decode(hd, thr, static_cast<int>(hd.P));
    size_t expected = 0;
    for (size_t i = 0; i < hd.P; ++i) expected += hd.conf[2 * i + 1] > thr;
    CHECK(static_cast<size_t>(d.count) == expected);
    REQUIRE(d.cands.size() == expected);
    std::vector<int> seen(hd.P, 0);
    size_t bad = 0, exact_box = 0, exact_lm = 0;
    for (const auto& c : d.cands) {
      REQUIRE(c.prior >= 0);
      REQUIRE(static_cast<size_t>(c.prior) < hd.P);
      const size_t i = static_cast<size_t>(c.prior);
      ++seen[i];
      bad += !(hd.conf[2 * i + 1] > thr) || c.score != hd.conf[2 * i + 1];
      for (int j = 0; j < 4; ++j) {
        bad += !close(c.box[j], boxes[i * 4 + size_t(j)]);
        exact_box += c.box[j] == boxes[i * 4 + size_t(j)];
      }
      for (int j = 0; j < 10; ++j) {
        bad += !close(c.landmarks[j], lms[i * 10 + size_t(j)]);
        exact_lm += c.landmarks[j] == lms[i * 10 + size_t(j)];
      }
    }
    CHECK(bad == 0);
    CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<long>(expected));
    MESSAGE(h << "x" << w << ": " << expected << " candidates; bit-equal to the CPU: " << exact_box << " of "
              << expected * 4 << " box values, " << exact_lm << " of " << expected * 10 << " landmark values");
  }
}

TEST_CASE("cuda detect_decode + detect_finish equal retinaface_postprocess") {
  const Heads hd = random_heads(100, 120, 77);
  for (float scale : {1.0f, 0.5f}) {
    DetectParams p;
    p.threshold = 0.7f;
    p.nms = 0.3f;
    p.top_k = 40;
    p.keep_top_k = 12;
    const std::vector<Face> want =
        retinaface_postprocess(hd.loc.data(), hd.conf.data(), hd.landms.data(), hd.h, hd.w, p, scale);
    const Decoded d = run_decode(hd, p.threshold, static_cast<int>(hd.P));
    const std::vector<Face> got = cuda::detect_finish(d.cands.data(), d.cands.size(), p, scale);
    REQUIRE(got.size() == want.size());
    REQUIRE(!want.empty());
    size_t bad = 0;
    for (size_t k = 0; k < got.size(); ++k) {
      bad += got[k].score != want[k].score;
      for (int j = 0; j < 4; ++j) bad += !close(got[k].box[size_t(j)], want[k].box[size_t(j)]);
      for (int j = 0; j < 10; ++j) bad += !close(got[k].landmarks[size_t(j)], want[k].landmarks[size_t(j)]);
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("cuda detect_decode counts past its capacity and rejects bad arguments") {
  const Heads hd = random_heads(40, 48, 5);
  size_t expected = 0;
  for (size_t i = 0; i < hd.P; ++i) expected += hd.conf[2 * i + 1] > 0.5f;
  REQUIRE(expected > 8);
  const Decoded d = run_decode(hd, 0.5f, 8);
  CHECK(static_cast<size_t>(d.count) == expected);
  CHECK(d.cands.size() == 8);
  for (const auto& c : d.cands) CHECK(hd.conf[2 * size_t(c.prior) + 1] > 0.5f);
  const Decoded none = run_decode(hd, 2.0f, 8);
  CHECK(none.count == 0);

  DeviceBuffer b(4096);
  CHECK_THROWS_AS(cuda::detect_decode(b.as<float>(), b.as<float>(), b.as<float>(), 0, 10, 0.5f,
                                      b.as<cuda::DetectCandidate>(), 4, b.as<int32_t>(), nullptr),
                  Error);
  CHECK_THROWS_AS(cuda::detect_decode(b.as<float>(), nullptr, b.as<float>(), 10, 10, 0.5f, b.as<cuda::DetectCandidate>(),
                                      4, b.as<int32_t>(), nullptr),
                  Error);
  CHECK_THROWS_AS(cuda::detect_decode(b.as<float>(), b.as<float>(), b.as<float>(), 10, 10, 0.5f,
                                      b.as<cuda::DetectCandidate>(), 4, nullptr, nullptr),
                  Error);
  DetectParams p;
  p.top_k = -1;
  CHECK_THROWS_AS(cuda::detect_finish(nullptr, 0, p), Error);
  CHECK_THROWS_AS(cuda::detect_finish(nullptr, 0, DetectParams{}, 0.0f), Error);
}
