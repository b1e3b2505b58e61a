// FaceRestorer lends the generator's arena to the detector (they never run at the same time):
// the composite is byte-identical to running them in separate arenas, the detector borrows when
// its plan fits and falls back to its own memory when it does not.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "converter/convert.h"
#include "engine/photo/image.h"
#include "engine/models/gpen_model.h"
#include "engine/models/retinaface.h"
#include "engine/photo/pipeline.h"

using namespace gpen;
namespace fs = std::filesystem;

namespace {

struct Models {
  std::string gpen, det;
};

bool prepare(Models& m) {
  const std::string det_pth = std::string(GPEN_SHARED_DIR) + "/models/retinaface-mobilenet0.25.pth";
  if (!fs::exists(det_pth)) {
    MESSAGE("skipped: " << det_pth << " is missing");
    return false;
  }
  const fs::path dir = fs::temp_directory_path() / ("gpen_test_pipeline_arena_" + std::to_string(getpid()));
  fs::create_directories(dir);
  m.gpen = (dir / "s32.gpw").string();
  m.det = (dir / "mnet.gpw").string();
  conv::convert(std::string(GPEN_FIXTURE_DIR) + "/gpen/s32/checkpoint.pth", m.gpen);
  conv::convert(det_pth, m.det);
  return true;
}

PhotoResult restore(const Models& m, const Image& photo, int batch, bool share, bool* borrowed) {
  auto backend = make_cpu_backend();
  auto gpen = GpenModel::open(m.gpen, *backend);
  RetinaFaceDetector det(m.det);
  RestoreOptions opt;
  opt.batch = batch;
  opt.share_arena = share;
  FaceRestorer r(*gpen, det, opt);
  PhotoResult out = r.process(photo);
  *borrowed = det.uses_shared_memory();
  return out;
}

}  // namespace

TEST_CASE("the detector runs in the generator's arena when its plan fits, with identical results") {
  Models m;
  if (!prepare(m)) return;
  const Image photo = read_image(std::string(GPEN_FIXTURE_DIR) + "/align/kids/image.png");

  // Separate arenas: the reference composite, and how much the detector needs at this size.
  bool borrowed = true;
  const PhotoResult apart = restore(m, photo, 16, false, &borrowed);
  CHECK_FALSE(borrowed);
  REQUIRE(apart.restored >= 3);

  // GPEN-32 at batch 16 plans a larger arena than mobilenet0.25 at 256x192: the detector borrows.
  const PhotoResult shared = restore(m, photo, 16, true, &borrowed);
  CHECK(borrowed);
  CHECK(shared.restored == apart.restored);
  CHECK(shared.image.bgr == apart.image.bgr);

  // At batch 1 the generator's arena is too small: the detector uses its own, same result.
  const PhotoResult own = restore(m, photo, 1, true, &borrowed);
  CHECK_FALSE(borrowed);
  CHECK(own.image.bgr == apart.image.bgr);
  fs::remove_all(fs::path(m.gpen).parent_path());
}
