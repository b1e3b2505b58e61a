// FaceRestorer on the CUDA backend with the photo kept on the device (engine/photo/pipeline.cpp)
// against the same models with the pipeline steps on the host: the same faces, restored faces and
// composite; one buffer, no allocation once it is sized; alpha blending and short batches.
// Emulated by default (tests/cuda_emu), natively with GPEN_CUDA_TESTS_NATIVE.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "engine/runtime/device.h"
#include "engine/photo/image.h"
#include "engine/models/gpen_model.h"
#include "engine/models/retinaface.h"
#include "tests/pipeline_models_fixture.h"
#include "tests/test_paths.h"
#include "engine/photo/pipeline.h"
#include "engine/runtime/cuda/backend_cuda.h"

using namespace gpen;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<Backend> cuda_backend() {
  DeviceOptions o;
  o.kind = DeviceKind::cuda;
  return cuda::make_cuda_backend(o);
}

using pipeline_test::Models;

bool prepare(Models& m) { return pipeline_test::prepare(m, "test_cuda_pipeline"); }

struct Diff {
  int max = 0;
  size_t differing = 0, total = 0;
};

Diff diff(const Image& a, const Image& b) {
  REQUIRE(a.width == b.width);
  REQUIRE(a.height == b.height);
  Diff d;
  d.total = a.bgr.size();
  for (size_t i = 0; i < a.bgr.size(); ++i) {
    const int e = std::abs(int{a.bgr[i]} - int{b.bgr[i]});
    d.max = std::max(d.max, e);
    d.differing += e != 0;
  }
  return d;
}

}  // namespace

TEST_CASE("device pipeline: the photo stays on the device, results as the host steps give") {
  Models m;
  if (!prepare(m)) return;
  // 256 x 192, 4 children's faces, all under 100 pixels (so every face is smoothed).
  const Image photo = read_image(gpen_test::fixture_dir() + "/align/kids/image.png");

  for (double alpha : {1.0, 0.6}) {
    CAPTURE(alpha);
    auto gpen_be = cuda_backend();
    auto gpen = GpenModel::open(m.gpen, *gpen_be, DType::f32);
    RetinaFaceDetector det(m.det, cuda_backend());
    RestoreOptions opt;
    opt.batch = 3;  // 4 faces: one full batch and a short one
    opt.alpha = alpha;
    opt.device_pipeline = false;
    FaceRestorer host(*gpen, det, opt);
    CHECK_FALSE(host.on_device());
    const PhotoResult want = host.process(photo);
    REQUIRE(want.restored >= 3);

    opt.device_pipeline = true;
    FaceRestorer dev(*gpen, det, opt);
    REQUIRE(dev.on_device());
    const PhotoResult got = dev.process(photo);
    REQUIRE(got.faces.size() == want.faces.size());
    CHECK(got.restored == want.restored);
    // Detection: the same network on the same device; the decode differs from the host's only by
    // the host compiler's fused multiply-adds (docs/cuda.md): well under a thousandth of a pixel.
    for (size_t i = 0; i < got.faces.size(); ++i) {
      CHECK(got.faces[i].score == doctest::Approx(want.faces[i].score).epsilon(1e-6));
      for (int k = 0; k < 4; ++k) CHECK(std::fabs(got.faces[i].box[k] - want.faces[i].box[k]) < 1e-3f);
      for (int k = 0; k < 10; ++k) CHECK(std::fabs(got.faces[i].landmarks[k] - want.faces[i].landmarks[k]) < 1e-3f);
    }
    // Crops, GPEN, conversions and paste are bit-exact twins; a landmark a few ulp away can move
    // a warp tap across a 1/32-pixel cell, which changes a crop pixel by at most a level or two,
    // and GPEN (f32) spreads that over its receptive field a little.
    REQUIRE(got.restored_faces.size() == want.restored_faces.size());
    for (size_t i = 0; i < got.restored_faces.size(); ++i) {
      const Diff d = diff(got.restored_faces[i], want.restored_faces[i]);
      CAPTURE(i);
      CHECK(d.max <= 2);
      CHECK(d.differing <= d.total / 100);
    }
    const Diff d = diff(got.image, want.image);
    MESSAGE("alpha " << alpha << ": composite max diff " << d.max << ", " << d.differing << " of " << d.total
                     << " bytes differ");
    CHECK(d.max <= 2);
    CHECK(d.differing <= d.total / 1000);

    // Sized once; the next photo of the same size allocates nothing and gives the same result
    // (checked once: each emulated photo costs seconds under ASan).
    if (alpha != 1.0) continue;
    const size_t before = gpen_be->allocations();
    CHECK(dev.device_buffer_bytes() > photo.bgr.size() * 2);
    const PhotoResult again = dev.process(photo);
    CHECK(gpen_be->allocations() == before);
    CHECK(again.image.bgr == got.image.bgr);
  }
}

TEST_CASE("device pipeline with grow_batch: the batch and the buffer grow to the faces, same composite") {
  Models m;
  if (!prepare(m)) return;
  const Image photo = read_image(std::string(GPEN_FIXTURE_DIR) + "/align/kids/image.png");
  auto gpen_be = cuda_backend();
  auto gpen = GpenModel::open(m.gpen, *gpen_be, DType::f32);
  RetinaFaceDetector det(m.det, cuda_backend());
  RestoreOptions opt;
  opt.batch = 3;
  FaceRestorer fixed(*gpen, det, opt);
  REQUIRE(fixed.on_device());
  const PhotoResult want = fixed.process(photo);
  REQUIRE(want.restored > 3);
  opt.grow_batch = true;
  FaceRestorer grown(*gpen, det, opt);
  CHECK(grown.batch() == 1);
  const PhotoResult got = grown.process(photo);
  CHECK(grown.batch() == 3);
  CHECK(got.image.bgr == want.image.bgr);
}

TEST_CASE("device pipeline: a photo without faces comes back unchanged, an empty one is refused") {
  Models m;
  if (!prepare(m)) return;
  auto gpen_be = cuda_backend();
  auto gpen = GpenModel::open(m.gpen, *gpen_be, DType::f32);
  RetinaFaceDetector det(m.det, cuda_backend());
  FaceRestorer dev(*gpen, det, RestoreOptions{});
  REQUIRE(dev.on_device());
  Image flat{64, 48, std::vector<uint8_t>(64 * 48 * 3, 128)};
  const PhotoResult r = dev.process(flat);
  CHECK(r.restored == 0);
  CHECK(r.image.bgr == flat.bgr);
  CHECK_THROWS_AS(dev.process(Image{}), Error);
}
