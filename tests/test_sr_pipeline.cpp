// The whole-photo flow with background super-resolution (gpen restore --sr) against the official
// FaceEnhancement.process with use_sr re-created in Python (tests/reference/pipeline_reference.py
// --sr, the engine's corrections via --sr-fixed): SR of the photo, the photo resized bilinear to
// the SR size, detection (real RetinaFace mobilenet0.25 weights), alignment, GPEN (the s64 test
// checkpoint), paste, composite onto the SR background. Target (issue 15): within 2 levels on
// >= 99 % of the values and PSNR >= 40 dB. Input: ffhq_lq_00000.png from ../shared/images,
// resized to 160 x 160 here (RealESRNet x2 with 2 RRDB blocks keeps the test to seconds).
#include <doctest/doctest.h>
#include "tests/run_command.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "converter/convert.h"
#include "engine/models/gpen_model.h"
#include "engine/models/retinaface.h"
#include "engine/models/rrdbnet.h"
#include "engine/photo/image.h"
#include "engine/photo/pipeline.h"
#include "engine/photo/super_resolution.h"
#include "kernels/cpu/image_resize.h"
#include "tests/test_paths.h"

using namespace gpen;
namespace fs = std::filesystem;

namespace {

using gpen_test::run;

}  // namespace

TEST_CASE("restore with --sr matches the official use_sr flow on a photo") {
  const std::string py = "/usr/bin/python3";
  const std::string photo_src = gpen_test::shared_dir() + "/images/ffhq_lq_00000.png";
  const std::string retina = gpen_test::shared_dir() + "/models/retinaface-mobilenet0.25.pth";
  if (access(py.c_str(), X_OK) != 0 || run(py + " -c 'import torch, numpy, cv2'") != 0 || !fs::exists(photo_src) ||
      !fs::exists(retina)) {
    MESSAGE("skipped: needs " << py << " with torch and cv2, " << photo_src << " and " << retina);
    return;
  }
  const fs::path dir = fs::temp_directory_path() / ("gpen_test_sr_pipeline_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string src = GPEN_SOURCE_DIR;
  const std::string gpen_pth = std::string(GPEN_FIXTURE_DIR) + "/gpen/s64/checkpoint.pth";
  const Image big = read_image(photo_src);
  const Image photo = resize_bilinear(big, 160, 160);
  const std::string in = (dir / "photo.png").string();
  write_image(in, photo);
  const std::string sr_pth = (dir / "sr.pth").string(), ref = (dir / "ref.png").string();
  std::string out;
  int rc = run(py + " " + src + "/tests/reference/rrdbnet_reference.py make " + sr_pth + " --scale 2 --num-block 2 --seed 5",
               &out);
  REQUIRE_MESSAGE(rc == 0, out);
  rc = run(py + " " + src + "/tests/reference/pipeline_reference.py " + in + " -o " + ref + " --checkpoint " + gpen_pth +
               " --detector " + retina + " --sr " + sr_pth + " --sr-fixed",
           &out);
  REQUIRE_MESSAGE(rc == 0, out);
  MESSAGE("reference: " << out);
  const std::string sr_gpw = (dir / "sr.gpw").string(), gpen_gpw = (dir / "gpen.gpw").string(),
                    det_gpw = (dir / "det.gpw").string();
  conv::convert(sr_pth, sr_gpw);
  conv::convert(gpen_pth, gpen_gpw);
  conv::convert(retina, det_gpw);

  auto backend = make_cpu_backend();
  auto sr = RrdbModel::open(sr_gpw, *backend);
  auto gpen = GpenModel::open(gpen_gpw, *backend);
  RetinaFaceDetector det(det_gpw);
  RestoreOptions opt;
  FaceRestorer restorer(*gpen, det, opt);
  const Image bg = super_resolve(*sr, photo, SrOptions{});
  REQUIRE(bg.width == 320);
  REQUIRE(bg.height == 320);
  const Image up = resize_bilinear(photo, bg.width, bg.height);
  const PhotoResult r = restorer.process(up, bg);
  CHECK(r.restored >= 1);
  const Image want = read_image(ref);
  REQUIRE(want.width == r.image.width);
  REQUIRE(want.height == r.image.height);
  size_t within2 = 0;
  double se = 0;
  for (size_t i = 0; i < want.bgr.size(); ++i) {
    const int d = std::abs(int(want.bgr[i]) - int(r.image.bgr[i]));
    within2 += d <= 2;
    se += double(d) * d;
  }
  const double frac = double(within2) / double(want.bgr.size());
  const double mse = se / double(want.bgr.size());
  const double psnr = mse == 0 ? 99.0 : 10 * std::log10(255.0 * 255.0 / mse);
  MESSAGE(r.restored << " faces; within 2 levels " << frac * 100 << " %, PSNR " << psnr << " dB");
  CHECK(frac >= 0.99);
  CHECK(psnr >= 40.0);
  fs::remove_all(dir);
}
