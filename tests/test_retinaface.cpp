// RetinaFace mobilenet0.25 with the real weights against the PyTorch reference
// (tests/reference/retinaface_reference.py, fixtures in tests/fixtures/retinaface/): every layer
// of the small image, then the detections on every shared photo.
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "converter/convert.h"
#include "engine/runtime/executor.h"
#include "engine/photo/image.h"
#include "engine/plan/memory_plan.h"
#include "engine/models/retinaface.h"
#include "engine/photo/npy.h"
#include "weights/gpw.h"
#include "tests/json_fixture.h"

using namespace gpen;
using gpen_test::load_json;
namespace fs = std::filesystem;

namespace {

const std::string kFix = std::string(GPEN_FIXTURE_DIR) + "/retinaface/";
const std::string kShared = GPEN_SHARED_DIR;

// The real checkpoint converted once per test process with the converter's C++ API.
struct ConvertedWeights {
  std::string path;
  ConvertedWeights() {
    path = (fs::temp_directory_path() / ("gpen_test_retinaface_" + std::to_string(::getpid()) + ".gpw")).string();
    conv::convert(kShared + "/models/retinaface-mobilenet0.25.pth", path);
  }
  ~ConvertedWeights() { std::remove(path.c_str()); }
};
const std::string& mnet_gpw() {
  static ConvertedWeights w;
  return w.path;
}

RetinaFaceDetector& detector() {
  static RetinaFaceDetector d(mnet_gpw());
  return d;
}

// NCHW [1, C, H, W] -> NHWC.
std::vector<float> nchw_to_nhwc(const npy::Array& a) {
  REQUIRE(a.shape.size() == 4);
  const int64_t C = a.shape[1], H = a.shape[2], W = a.shape[3];
  std::vector<float> src = a.to_f32(), out(src.size());
  for (int64_t c = 0; c < C; ++c)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x) out[(y * W + x) * C + c] = src[(c * H + y) * W + x];
  return out;
}

float max_abs(const std::vector<float>& v) {
  float m = 0;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

float iou(const std::array<float, 4>& a, const std::vector<float>& b) {
  const float iw = std::max(0.0f, std::min(a[2], b[2]) - std::max(a[0], b[0]));
  const float ih = std::max(0.0f, std::min(a[3], b[3]) - std::max(a[1], b[1]));
  const float inter = iw * ih;
  return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter);
}

struct Agreement {
  size_t matched = 0;
  float min_iou = 1, max_lm = 0, max_score = 0;
};

// Each reference face is matched to the engine face of highest IoU; counts must agree.
Agreement compare_faces(const std::vector<Face>& got, const nlohmann::json& ref, const std::string& what) {
  Agreement a;
  CHECK_MESSAGE(got.size() == ref.size(), what << ": " << got.size() << " faces, reference " << ref.size());
  std::vector<char> used(got.size(), 0);
  for (const auto& rf : ref) {
    std::vector<float> rb = rf["box"].get<std::vector<float>>();
    std::vector<float> rl = rf["landmarks"].get<std::vector<float>>();
    float rs = rf["score"].get<float>();
    int best = -1;
    float best_iou = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      float v = iou(got[i].box, rb);
      if (!used[i] && v > best_iou) best_iou = v, best = static_cast<int>(i);
    }
    CHECK_MESSAGE(best >= 0, what << ": reference face at " << rb[0] << "," << rb[1] << " not found");
    if (best < 0) continue;
    used[static_cast<size_t>(best)] = 1;
    const Face& f = got[static_cast<size_t>(best)];
    float lm = 0;
    for (int j = 0; j < 10; ++j) lm = std::max(lm, std::fabs(f.landmarks[j] - rl[static_cast<size_t>(j)]));
    const float ds = std::fabs(f.score - rs);
    CHECK_MESSAGE(best_iou >= 0.95f, what << ": IoU " << best_iou << " for the face at " << rb[0] << "," << rb[1]);
    CHECK_MESSAGE(lm <= 1.0f, what << ": landmark error " << lm << " px for the face at " << rb[0] << "," << rb[1]);
    CHECK_MESSAGE(ds <= 0.01f, what << ": score " << f.score << " vs " << rs);
    ++a.matched;
    a.min_iou = std::min(a.min_iou, best_iou);
    a.max_lm = std::max(a.max_lm, lm);
    a.max_score = std::max(a.max_score, ds);
  }
  return a;
}

}  // namespace

TEST_CASE("retinaface mnet: every layer of the small image matches the reference") {
  GpwFile f = GpwFile::open(mnet_gpw());
  CHECK(f.arch() == "retinaface");
  CHECK(f.config()["backbone"] == "mobilenet0.25");
  WeightMap wm;
  for (const auto& e : f.tensors()) wm[e.name] = e.view;

  npy::Array in = npy::load(kFix + "mnet_small/input.npy");
  const int h = static_cast<int>(in.shape[2]), w = static_cast<int>(in.shape[3]);
  RetinaFaceGraph rg = build_retinaface_graph(RetinaFaceBackbone::mobilenet025, h, w, /*trace=*/true);
  auto be = make_cpu_backend();
  MemoryPlan plan = plan_memory(rg.graph, [&](const Graph& g, const Node& n) { return be->workspace_bytes(g, n); });
  Executor ex(rg.graph, plan, *be, wm);
  std::vector<float> x = nchw_to_nhwc(in);
  ex.set_input(rg.input, x.data(), x.size() * sizeof(float));
  ex.run();

  auto fetch = [&](int t) {
    std::vector<float> v(static_cast<size_t>(rg.graph.tensor(t).shape.numel()));
    // Taps may be strided views (head rows are windows of the concatenated outputs, but dense).
    ex.get_output(t, v.data(), v.size() * sizeof(float));
    return v;
  };
  int checked = 0;
  for (const auto& [name, t] : rg.taps) {
    std::string file = name;
    for (char& c : file)
      if (c == '.') c = '_';
    const std::string path = kFix + "mnet_small/" + file + ".npy";
    if (!fs::exists(path)) continue;
    npy::Array ref = npy::load(path);
    std::vector<float> want = ref.shape.size() == 4 ? nchw_to_nhwc(ref) : ref.to_f32();
    std::vector<float> got = fetch(t);
    REQUIRE_MESSAGE(got.size() == want.size(), name);
    float err = 0;
    for (size_t i = 0; i < got.size(); ++i) err = std::max(err, std::fabs(got[i] - want[i]));
    // float32 vs float32 with a different summation order: ~1e-6 relative per layer, growing
    // slowly with depth; 2e-5 of the tensor's range leaves a wide margin and still catches any
    // wrong tap, padding or activation (those show up at 1e-2 and above).
    const float tol = 2e-5f * std::max(1.0f, max_abs(want));
    CHECK_MESSAGE(err <= tol, name << ": max |diff| " << err << " > " << tol);
    ++checked;
  }
  CHECK(checked >= 25);

  // The network outputs and the post-processing of every prior.
  std::vector<float> loc = fetch(rg.loc), conf = fetch(rg.conf), lms = fetch(rg.landms);
  for (auto [name, v] : {std::pair{"loc", &loc}, std::pair{"conf", &conf}, std::pair{"landms", &lms}}) {
    std::vector<float> want = npy::load(kFix + "mnet_small/" + name + ".npy").to_f32();
    REQUIRE(want.size() == v->size());
    float err = 0;
    for (size_t i = 0; i < want.size(); ++i) err = std::max(err, std::fabs((*v)[i] - want[i]));
    CHECK_MESSAGE(err <= 2e-5f * std::max(1.0f, max_abs(want)), name << " " << err);
  }
  std::vector<Prior> pri = retinaface_priors(h, w);
  std::vector<float> pref = npy::load(kFix + "mnet_small/priors.npy").to_f32();
  REQUIRE(pref.size() == pri.size() * 4);
  for (size_t i = 0; i < pri.size(); ++i) {
    CHECK(pri[i].cx == pref[4 * i]);
    CHECK(pri[i].cy == pref[4 * i + 1]);
    CHECK(pri[i].sx == pref[4 * i + 2]);
    CHECK(pri[i].sy == pref[4 * i + 3]);
  }
  // Decoding the reference regressions must reproduce the reference boxes to float rounding.
  std::vector<float> rloc = npy::load(kFix + "mnet_small/loc.npy").to_f32();
  std::vector<float> rlm = npy::load(kFix + "mnet_small/landms.npy").to_f32();
  std::vector<float> boxes(pri.size() * 4), dl(pri.size() * 10);
  decode_boxes(rloc.data(), pri, h, w, boxes.data());
  decode_landmarks(rlm.data(), pri, h, w, dl.data());
  std::vector<float> bref = npy::load(kFix + "mnet_small/boxes_decoded.npy").to_f32();
  std::vector<float> lref = npy::load(kFix + "mnet_small/landms_decoded.npy").to_f32();
  float be_ = 0, le = 0;
  for (size_t i = 0; i < boxes.size(); ++i) be_ = std::max(be_, std::fabs(boxes[i] - bref[i]));
  for (size_t i = 0; i < dl.size(); ++i) le = std::max(le, std::fabs(dl[i] - lref[i]));
  CHECK(be_ <= 1e-4f);
  CHECK(le <= 1e-4f);

  std::vector<Face> faces = retinaface_postprocess(loc.data(), conf.data(), lms.data(), h, w, DetectParams{});
  nlohmann::json det = load_json(kFix + "mnet_small/detections.json");
  Agreement a = compare_faces(faces, det["faces"], "mnet_small");
  CHECK(a.matched == det["faces"].size());
  CHECK(a.max_lm <= 1e-3f);
  CHECK(a.max_score <= 1e-5f);
}

TEST_CASE("retinaface mnet: detections on every shared photo match the reference") {
  nlohmann::json man = load_json(kFix + "manifest.json");
  RetinaFaceDetector& det = detector();
  for (const auto& entry : man["detections"]) {
    nlohmann::json ref = load_json(kFix + entry["file"].get<std::string>());
    const std::string image = kShared + "/images/" + ref["image"].get<std::string>();
    Image img = read_image(image);
    CHECK(img.width == ref["width"].get<int>());
    CHECK(img.height == ref["height"].get<int>());
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Face> faces = det.detect(img);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    Agreement a = compare_faces(faces, ref["faces"], ref["image"].get<std::string>());
    MESSAGE(ref["image"].get<std::string>() << ": " << faces.size() << " faces (reference " << ref["faces"].size()
                                            << "), min IoU " << a.min_iou << ", max landmark error " << a.max_lm
                                            << " px, max score diff " << a.max_score << ", " << ms << " ms");
    // The photos decode to cv2.imread's pixels (JPEGs too), so what is left is float32 summation
    // order: scores agree to ~1e-6, boxes and landmarks to ~1e-3 px.
    CHECK(a.matched == ref["faces"].size());
    CHECK(a.max_score <= 1e-5f);
    CHECK(a.max_lm <= 5e-3f);
    CHECK(a.min_iou >= 0.9999f);
    for (size_t i = 1; i < faces.size(); ++i) CHECK(faces[i - 1].score >= faces[i].score);
    if (ref["image"] == "solvay_1927.png") CHECK(faces.size() == 29);
  }
}

TEST_CASE("retinaface detector: executors cached per size share one arena that only grows") {
  RetinaFaceDetector det(mnet_gpw());
  auto prep = [](int h, int w) {
    std::vector<float> x(static_cast<size_t>(h) * w * 3);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 255) - 117.0f;
    return x;
  };
  std::vector<float> small = prep(64, 96), big = prep(200, 150);
  auto r1 = det.run(small.data(), 64, 96);
  const size_t cap1 = det.arena_capacity();
  CHECK(cap1 == det.arena_bytes(64, 96));
  auto r2 = det.run(big.data(), 200, 150);
  const size_t cap2 = det.arena_capacity();
  CHECK(cap2 == det.arena_bytes(200, 150));
  CHECK(cap2 > cap1);
  // Back to the small size: rebuilt inside the larger arena, which does not move or shrink.
  auto r3 = det.run(small.data(), 64, 96);
  CHECK(det.arena_capacity() == cap2);
  CHECK(r3.conf == r1.conf);
  CHECK(r3.loc == r1.loc);
  auto r4 = det.run(big.data(), 200, 150);
  CHECK(r4.landms == r2.landms);
  CHECK(det.cached_sizes() == 2);
}
