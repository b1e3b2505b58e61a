// The photo pipeline's host steps (cpu_pipeline_ops, engine/runtime/pipeline_ops_cpu.cpp) give the
// bytes of the host functions they stand for; FaceRestorer restores several photos in shared GPEN
// batches exactly as it restores each alone; Restorer::open sets up what FaceRestorer runs by hand.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "engine/models/gpen_model.h"
#include "engine/models/retinaface.h"
#include "engine/photo/align.h"
#include "engine/photo/image.h"
#include "engine/photo/paste.h"
#include "engine/photo/pipeline.h"
#include "engine/photo/restorer.h"
#include "engine/runtime/pipeline_ops.h"
#include "kernels/cpu/image_resize.h"
#include "tests/pipeline_models_fixture.h"
#include "tests/test_paths.h"

using namespace gpen;
namespace fs = std::filesystem;

namespace {

Image noise_image(int w, int h, uint32_t seed) {
  std::mt19937 rng(seed);
  Image img{w, h, std::vector<uint8_t>(static_cast<size_t>(w) * h * 3)};
  for (auto& v : img.bgr) v = static_cast<uint8_t>(rng() & 255);
  return img;
}

using pipeline_test::Models;

bool prepare(Models& m) { return pipeline_test::prepare(m, "test_pipeline_steps"); }

}  // namespace

TEST_CASE("host steps: the bytes of the host functions they stand for") {
  PipelineOps& ops = cpu_pipeline_ops();
  const Image photo = noise_image(97, 83, 1);
  const int S = 32;
  const float landmarks[10] = {38.f, 40.f, 58.f, 39.f, 49.f, 52.f, 41.f, 63.f, 57.f, 62.f};
  AffineTransform fwd;
  const Image crop = align_face(photo, landmarks, S, &fwd);
  std::vector<uint8_t> got(crop.bgr.size(), 7);
  ops.warp_face(photo.bgr.data(), photo.width, photo.height, fwd, S, got.data());
  CHECK(got == crop.bgr);

  const Image face = noise_image(S, S, 2);
  const Image smoothed = smooth_small_face(face);
  std::vector<uint8_t> out(face.bgr.size());
  ops.smooth_face(face.bgr.data(), out.data(), S);
  CHECK(out == smoothed.bgr);
  const Image blended = blend_faces(face, crop, 0.6);
  ops.blend_faces(face.bgr.data(), crop.bgr.data(), 0.6, out.data(), S);
  CHECK(out == blended.bgr);

  // The canvas: one face added, composited over the photo, as PasteCanvas does it.
  const auto mask = paste_mask(S);
  const AffineTransform back = invert(fwd);
  PasteCanvas canvas(photo.width, photo.height);
  canvas.add(face, *mask, back);
  const Image want = canvas.composite(photo);
  std::vector<float> cm(photo.pixels(), 5.0f);
  std::vector<uint8_t> cf(photo.bgr.size(), 9), composite(photo.bgr.size());
  ops.canvas_clear(cm.data(), cf.data(), photo.width, photo.height);
  ops.canvas_add(face.bgr.data(), mask->data(), S, back, cm.data(), cf.data(), photo.width, photo.height);
  ops.composite(photo.bgr.data(), cm.data(), cf.data(), composite.data(), photo.width, photo.height);
  CHECK(composite == want.bgr);

  // The detector's input, shrunk: the float photo resized, then the mean off.
  int nw = 0, nh = 0;
  const double scale = detect_input_scale(photo.width, photo.height, 64, 50, &nw, &nh);
  REQUIRE(scale != 1.0);
  std::vector<float> as_float(photo.bgr.begin(), photo.bgr.end()), ref(static_cast<size_t>(nw) * nh * 3);
  resize_bilinear_f32(as_float.data(), photo.width, photo.height, 3, ref.data(), nw, nh, scale, scale);
  const float mean[3] = {104.0f, 117.0f, 123.0f};
  for (size_t i = 0; i < ref.size(); ++i) ref[i] -= mean[i % 3];
  std::vector<float> x(ref.size());
  ops.detect_input(photo.bgr.data(), photo.width, photo.height, scale, make_view(x.data(), DType::f32, Shape{1, nh, nw, 3}));
  CHECK(std::memcmp(x.data(), ref.data(), x.size() * sizeof(float)) == 0);
}

TEST_CASE("several photos in shared GPEN batches: each result as that photo alone") {
  Models m;
  if (!prepare(m)) return;
  // 256 x 192 with 4 children's faces, and the same mirrored: 8 faces over batches of 3, so
  // batches hold faces of both photos.
  const Image kids = read_image(gpen_test::fixture_dir() + "/align/kids/image.png");
  Image mirrored = kids;
  for (int y = 0; y < kids.height; ++y)
    for (int x = 0; x < kids.width; ++x)
      std::memcpy(&mirrored.bgr[(static_cast<size_t>(y) * kids.width + x) * 3],
                  &kids.bgr[(static_cast<size_t>(y) * kids.width + (kids.width - 1 - x)) * 3], 3);
  auto backend = make_cpu_backend();
  auto gpen = GpenModel::open(m.gpen, *backend);
  RetinaFaceDetector det(m.det);
  RestoreOptions opt;
  opt.batch = 3;
  opt.alpha = 0.7;
  FaceRestorer restorer(*gpen, det, opt);
  const PhotoResult a = restorer.process(kids);
  const PhotoResult b = restorer.process(mirrored);
  REQUIRE(a.restored >= 3);
  REQUIRE(b.restored >= 3);
  const std::vector<ImageView> both{kids, mirrored};
  const std::vector<PhotoResult> r = restorer.process(both);
  REQUIRE(r.size() == 2);
  CHECK(r[0].restored == a.restored);
  CHECK(r[1].restored == b.restored);
  CHECK(r[0].image.bgr == a.image.bgr);
  CHECK(r[1].image.bgr == b.image.bgr);
  REQUIRE(r[1].restored_faces.size() == b.restored_faces.size());
  for (size_t i = 0; i < b.restored_faces.size(); ++i) CHECK(r[1].restored_faces[i].bgr == b.restored_faces[i].bgr);
  // The backgrounds of a super-resolved run: composited onto them, one per photo.
  const Image bg = noise_image(kids.width, kids.height, 3);
  const std::vector<ImageView> bgs{bg, bg};
  const std::vector<PhotoResult> onto = restorer.process(both, bgs);
  CHECK(onto[0].image.bgr == restorer.process(kids, bg).image.bgr);
  CHECK_THROWS_AS(restorer.process(both, std::vector<ImageView>{bg}), Error);
}

TEST_CASE("Restorer::open: the setup of gpen restore, its plan reported") {
  Models m;
  if (!prepare(m)) return;
  RestoreConfig c;
  c.model = m.gpen;
  c.detector = m.det;
  c.device = DeviceKind::cpu;
  c.memory_budget = size_t{64} << 20;
  auto r = Restorer::open(c);
  const RestorePlan& p = r->plan();
  CHECK(p.device == "cpu");
  CHECK(p.size == 32);
  CHECK(p.budget_given);
  CHECK(p.split.batch_from_budget);
  CHECK(p.split.batch == choose_batch_banded(r->model().config(), r->backend(), p.budget_bytes, 16).batch);
  CHECK(p.split.gpen.total_bytes() <= p.budget_bytes);
  const nlohmann::json j = to_json(p);
  CHECK(j.at("gpen").at("batch") == p.split.batch);
  CHECK(j.at("mask") == "rect");
  CHECK(j.at("sr").is_null());

  // What it restores is what FaceRestorer gives with the same choices.
  const Image kids = read_image(gpen_test::fixture_dir() + "/align/kids/image.png");
  const RestoreResult got = r->restore(kids);
  CHECK_FALSE(got.sr);
  auto backend = make_cpu_backend();
  auto gpen = GpenModel::open(m.gpen, *backend);
  RetinaFaceDetector det(m.det);
  RestoreOptions opt;
  opt.batch = p.split.batch;
  opt.grow_batch = true;
  FaceRestorer direct(*gpen, det, opt);
  CHECK(got.image.bgr == direct.process(kids).image.bgr);
  CHECK(r->memory_json().at("gpen_batch") == r->faces().batch());

  RestoreConfig bad = c;
  bad.detector.clear();
  CHECK_THROWS_WITH_AS(Restorer::open(bad), doctest::Contains("needs a detector"), Error);
  bad = c;
  bad.mask = "parse";
  CHECK_THROWS_WITH_AS(Restorer::open(bad), doctest::Contains("needs the face parser"), Error);
}
