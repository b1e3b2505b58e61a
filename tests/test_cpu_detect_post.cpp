// RetinaFace post-processing: priors, decoding, threshold, NMS with the +1 area convention,
// top-k, scaling back; and the whole chain on the reference head outputs of the small image.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kernels/cpu/detect_post.h"
#include "engine/models/retinaface.h"
#include "engine/photo/npy.h"

using namespace gpen;

namespace {
const std::string kFix = std::string(GPEN_FIXTURE_DIR) + "/retinaface/";
}

TEST_CASE("priors: count and values for any size") {
  CHECK(retinaface_prior_count(120, 160) == 800);
  CHECK(retinaface_prior_count(1, 1) == 6);
  // ceil per level: 17x33 -> 3x5, 2x3, 1x2 cells.
  CHECK(retinaface_prior_count(17, 33) == 2 * (15 + 6 + 2));
  std::vector<Prior> p = retinaface_priors(17, 33);
  REQUIRE(p.size() == 46);
  CHECK(p[0].cx == static_cast<float>(0.5 * 8 / 33));
  CHECK(p[0].cy == static_cast<float>(0.5 * 8 / 17));
  CHECK(p[0].sx == static_cast<float>(16.0 / 33));
  CHECK(p[1].sx == static_cast<float>(32.0 / 33));
  CHECK(p[1].cx == p[0].cx);
  // Row-major cells: prior 2 is the second column of the first row.
  CHECK(p[2].cx == static_cast<float>(1.5 * 8 / 33));
  // The last level's last cell (row 0, column 1), second anchor: min size 512.
  CHECK(p[45].cx == static_cast<float>(1.5 * 32 / 33));
  CHECK(p[45].sy == static_cast<float>(512.0 / 17));
  CHECK_THROWS_AS(retinaface_priors(0, 5), Error);
}

TEST_CASE("decode: zero regressions give the prior box, variances 0.1 / 0.2") {
  std::vector<Prior> pri = {{0.5f, 0.25f, 0.1f, 0.2f}};
  float loc[4] = {0, 0, 0, 0}, box[4];
  decode_boxes(loc, pri, 100, 200, box);
  CHECK(box[0] == doctest::Approx(90.0));
  CHECK(box[1] == doctest::Approx(15.0));
  CHECK(box[2] == doctest::Approx(110.0));
  CHECK(box[3] == doctest::Approx(35.0));
  float loc2[4] = {1, -1, std::log(2.0f) / 0.2f, 0};
  decode_boxes(loc2, pri, 100, 200, box);
  // centre moves by 0.1 * prior size; width doubles.
  CHECK((box[0] + box[2]) / 2 == doctest::Approx((0.5 + 0.1 * 0.1) * 200));
  CHECK(box[2] - box[0] == doctest::Approx(2 * 0.1 * 200).epsilon(1e-5));
  float lm[10] = {1, 1, 0, 0, 0, 0, 0, 0, -1, 2}, out[10];
  decode_landmarks(lm, pri, 100, 200, out);
  CHECK(out[0] == doctest::Approx((0.5 + 0.1 * 0.1) * 200));
  CHECK(out[1] == doctest::Approx((0.25 + 0.1 * 0.2) * 100));
  CHECK(out[2] == doctest::Approx(100));
  CHECK(out[9] == doctest::Approx((0.25 + 0.2 * 0.2) * 100));
}

TEST_CASE("nms: +1 pixel areas, keep IoU <= threshold") {
  // Overlap 6x10 of two 10x10 (+1) boxes: IoU 60/140 = 0.43 > 0.4 -> suppressed. Without the
  // +1 convention it would be 45/117 = 0.38 and both would stay.
  const float a[] = {0, 0, 9, 9, 4, 0, 13, 9};
  CHECK(nms_plus1(a, 2, 0.4f) == std::vector<int>{0});
  // IoU exactly 0.4 (40 / 100) is kept.
  const float b[] = {0, 0, 9, 9, 0, 0, 9, 3};
  CHECK(nms_plus1(b, 2, 0.4f) == std::vector<int>{0, 1});
  // Greedy: a suppressed box does not suppress others.
  const float c[] = {0, 0, 9, 9, 4, 0, 13, 9, 8, 0, 17, 9};
  CHECK(nms_plus1(c, 3, 0.4f) == std::vector<int>{0, 2});
  CHECK(nms_plus1(c, 0, 0.4f).empty());
}

TEST_CASE("postprocess: strict threshold, order, top-k, keep-top-k, scale") {
  const int h = 8, w = 8;  // 6 priors: 1 cell per level, 2 anchors
  std::vector<Prior> pri = retinaface_priors(h, w);
  REQUIRE(pri.size() == 6);
  std::vector<float> loc(6 * 4, 0.0f), lms(6 * 10, 0.0f), conf(6 * 2);
  const float scores[6] = {0.9f, 0.95f, 0.99f, 0.91f, 0.5f, 0.97f};
  for (int i = 0; i < 6; ++i) conf[2 * i] = 1 - scores[i], conf[2 * i + 1] = scores[i];
  DetectParams p;
  p.nms = 1.0f;  // no suppression: every candidate survives
  std::vector<Face> f = retinaface_postprocess(loc.data(), conf.data(), lms.data(), h, w, p);
  REQUIRE(f.size() == 4);  // 0.9 itself is not > 0.9
  CHECK(f[0].score == 0.99f);
  CHECK(f[1].score == 0.97f);
  CHECK(f[2].score == 0.95f);
  CHECK(f[3].score == 0.91f);
  p.top_k = 2;
  CHECK(retinaface_postprocess(loc.data(), conf.data(), lms.data(), h, w, p).size() == 2);
  p.top_k = 5000;
  p.keep_top_k = 3;
  CHECK(retinaface_postprocess(loc.data(), conf.data(), lms.data(), h, w, p).size() == 3);
  // Default NMS: the two anchors of a cell share a centre; 16 vs 32 px boxes overlap little.
  p = DetectParams{};
  std::vector<Face> g = retinaface_postprocess(loc.data(), conf.data(), lms.data(), h, w, p, 0.5f);
  REQUIRE(!g.empty());
  // Scale 0.5: coordinates doubled. The top face (0.99, prior 2) is level 2's first anchor:
  // 64 px centred on its cell centre (8, 8) of the 8x8 input.
  CHECK(g[0].box[0] == doctest::Approx((8 - 32) * 2.0));
  CHECK(g[0].box[2] == doctest::Approx((8 + 32) * 2.0));
  CHECK(g[0].landmarks[0] == doctest::Approx(16.0));
}

TEST_CASE("postprocess of the reference head outputs reproduces the reference detections") {
  std::vector<float> loc = npy::load(kFix + "mnet_small/loc.npy").to_f32();
  std::vector<float> conf = npy::load(kFix + "mnet_small/conf.npy").to_f32();
  std::vector<float> lms = npy::load(kFix + "mnet_small/landms.npy").to_f32();
  std::ifstream in(kFix + "mnet_small/detections.json");
  REQUIRE(in);
  nlohmann::json ref = nlohmann::json::parse(in);
  std::vector<Face> f = retinaface_postprocess(loc.data(), conf.data(), lms.data(), ref["height"].get<int>(),
                                               ref["width"].get<int>(), DetectParams{});
  REQUIRE(f.size() == ref["faces"].size());
  for (size_t i = 0; i < f.size(); ++i) {
    const auto& r = ref["faces"][i];
    CHECK(f[i].score == r["score"].get<float>());
    for (int j = 0; j < 4; ++j) CHECK(f[i].box[j] == doctest::Approx(r["box"][j].get<float>()).epsilon(1e-6));
    for (int j = 0; j < 10; ++j)
      CHECK(f[i].landmarks[j] == doctest::Approx(r["landmarks"][j].get<float>()).epsilon(1e-6));
  }
  // The NMS input: candidates above the threshold, sorted.
  std::vector<float> cand = npy::load(kFix + "mnet_small/candidates.npy").to_f32();
  CHECK(cand.size() / 5 >= f.size());
}

TEST_CASE("detect input scale: GPEN's > 1500 -> 1000 and --det-max-side") {
  int w = 0, h = 0;
  CHECK(detect_input_scale(1600, 898, 1500, 1000, &w, &h) == doctest::Approx(0.625));
  CHECK(w == 1000);
  CHECK(h == 561);  // 561.25
  CHECK(detect_input_scale(1500, 700, 1500, 1000, &w, &h) == 1.0);
  CHECK(w == 1500);
  CHECK(detect_input_scale(3000, 2000, 0, 0, &w, &h) == 1.0);
  CHECK(detect_input_scale(800, 1200, 640, 640, &w, &h) == doctest::Approx(640.0 / 1200));
  CHECK(h == 640);
  CHECK(w == 427);  // 426.67
}
