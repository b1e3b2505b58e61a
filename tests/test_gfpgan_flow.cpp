// GFPGAN's photo flow against the official one: `gpen restore` with a GFPGAN .gpw against
// GFPGANer.enhance + facexlib's FaceRestoreHelper run from the official packages
// (tests/reference/gfpgan_flow_reference.py), the engine's RetinaFace detections given to both
// sides. The model is a small random GFPGANv1Clean at out_size 512 (narrow 1/8, channel
// multiplier 1), generated here with /usr/bin/python3 + torch and the official code installed out
// of tree (GFPGAN_OFFICIAL, default /tmp/gfpgan-official: gfpgan, basicsr, facexlib, --no-deps);
// the test is skipped with a message where those are missing. Also: the LMEDS similarity against
// cv2.estimateAffinePartial2D on the shared photos' detections, the Lanczos background against
// cv2.resize, the face-parsing paste (a random ParseNet, tests/parsenet_fixture.h), the model kind
// taken from the file, GPEN-only options refused, --blend, and the
// aligned mode (`gpen restore --aligned`) against GFPGANer.enhance(has_aligned=True).
#include <doctest/doctest.h>

#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "engine/core/error.h"
#include "engine/models/retinaface.h"
#include "engine/photo/face_flow.h"
#include "engine/photo/align.h"
#include "engine/photo/facexlib_align.h"
#include "engine/photo/image.h"
#include "engine/photo/restorer.h"
#include "kernels/cpu/image_resize.h"
#include "tests/facexlib_flow_fixture.h"
#include "tests/parsenet_fixture.h"
#include "tests/run_command.h"
#include "tests/test_paths.h"

using namespace gpen;
namespace fs = std::filesystem;

namespace {

const std::string kPython = "/usr/bin/python3";

std::string official_root() {
  const char* e = std::getenv("GFPGAN_OFFICIAL");
  return e && *e ? e : "/tmp/gfpgan-official";
}

std::string reference() { return kPython + " " + std::string(GPEN_SOURCE_DIR) + "/tests/reference/gfpgan_flow_reference.py"; }

fs::path cache_dir() {
  const fs::path d = fs::path(gpen_test::binary_dir()) / "test_gfpgan_flow_cache";
  fs::create_directories(d);
  return d;
}

// True, with the reason as the test's message, when the official flow cannot run here.
bool skipped() {
  return gpen_test::skipped_because(gpen_test::official_flow_missing(
      official_root(),
      {"/gfpgan/utils.py", "/gfpgan/archs/gfpganv1_clean_arch.py", "/basicsr/utils/img_util.py",
       "/facexlib/utils/face_restoration_helper.py"},
      "install gfpgan, basicsr and facexlib out of tree", "torch, numpy, cv2"));
}

// Converted once per process into the cache (unique names, renamed into place).
std::string small_gfpgan() {
  const fs::path gpw = cache_dir() / "gfpgan512_small_seed1.gpw";
  if (fs::exists(gpw)) return gpw.string();
  const std::string tag = std::to_string(getpid());
  const fs::path pth = cache_dir() / ("gfpgan_" + tag + ".pth");
  std::string out;
  REQUIRE_MESSAGE(gpen_test::run("GFPGAN_OFFICIAL=" + official_root() + " " + reference() + " --make-checkpoint " +
                                     pth.string() + " --seed 1", &out) == 0, out);
  const fs::path tmp = cache_dir() / ("gfpgan_" + tag + ".gpw");
  conv::convert(pth.string(), tmp.string());
  fs::rename(tmp, gpw);
  fs::rename(pth, cache_dir() / "gfpgan512_small_seed1.pth");
  return gpw.string();
}

std::string detector_gpw() { return gpen_test::facexlib_detector_gpw(cache_dir()); }

std::string write_dets(RetinaFaceDetector& det, const std::string& photo, const fs::path& json) {
  return gpen_test::write_facexlib_dets(det, read_image(photo), json);
}

double psnr(const Image& a, const Image& b, int* max_diff) { return gpen_test::image_psnr(a, b, max_diff); }

struct Case {
  std::string photo, args, ref_args;
};

void compare_with_official(const Case& c, const std::string& name) {
  if (skipped()) return;
  const std::string photo = c.photo[0] == '/' ? c.photo : gpen_test::shared_dir() + "/images/" + c.photo;
  const std::string model = small_gfpgan(), det = detector_gpw();
  RetinaFaceDetector detector(det);
  const fs::path dir = cache_dir() / (name + "_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string dets = write_dets(detector, photo, dir / "dets.json");
  std::string out;
  REQUIRE_MESSAGE(gpen_test::run("GFPGAN_OFFICIAL=" + official_root() + " " + reference() + " " + photo +
                                     " --checkpoint " + (cache_dir() / "gfpgan512_small_seed1.pth").string() +
                                     " --dets " + dets + " -o " + (dir / "ref.png").string() + " " + c.ref_args,
                                 &out) == 0,
                  out);
  const nlohmann::json ref = nlohmann::json::parse(out.substr(out.rfind('{')));
  const std::string gpen = gpen_test::binary_dir() + "/gpen";
  REQUIRE_MESSAGE(gpen_test::run(gpen + " restore -m " + model + " -d " + det + " " + photo + " -o " +
                                     (dir / "out.png").string() + " --report " + (dir / "report.json").string() +
                                     " " + c.args,
                                 &out) == 0,
                  out);
  std::ifstream rs(dir / "report.json");
  const nlohmann::json rep = nlohmann::json::parse(rs);
  CHECK(rep["images"][0]["faces_restored"] == ref["faces"]);
  int max_diff = 0;
  const double p = psnr(read_image((dir / "out.png").string()), read_image((dir / "ref.png").string()), &max_diff);
  MESSAGE(name << ": " << ref["faces"] << " faces, PSNR " << p << " dB against the official flow, max diff " << max_diff);
  CHECK(p >= 60.0);
  fs::remove_all(dir);
}

}  // namespace

TEST_CASE("the model kind comes from the arch of the file") {
  CHECK(face_flow_of_arch("gpen") == FaceFlow::gpen);
  CHECK(face_flow_of_arch("gfpgan") == FaceFlow::gfpgan);
  // Anything else is GPEN's to refuse, with the message it always gave.
  CHECK(face_flow_of_arch("retinaface") == FaceFlow::gpen);
  CHECK(face_flow_of_file(std::string(GPEN_SOURCE_DIR) + "/README.md") == FaceFlow::gpen);
  // Options of one kind refused for the other, naming both.
  RestoreConfig c;
  c.model = "m.gpw";
  c.detector = "d.gpw";
  CHECK_NOTHROW(check_config(c, FaceFlow::gpen));
  CHECK_NOTHROW(check_config(c, FaceFlow::gfpgan));
  c.upscale = 2;
  CHECK_THROWS_WITH_AS(check_config(c, FaceFlow::gpen),
                       "--upscale is an option of GFPGAN, CodeFormer and RestoreFormer models; m.gpw is a GPEN model",
                       Error);
  CHECK_NOTHROW(check_config(c, FaceFlow::gfpgan));
  c.upscale = 1;
  c.batch = 2;
  CHECK_THROWS_WITH_AS(check_config(c, FaceFlow::gfpgan), "--batch is an option of GPEN models; m.gpw is a GFPGAN model",
                       Error);
  // The background upsampler is every flow's (RealESRNet for GPEN, RealESRGAN for the others).
  c.batch = 0;
  c.sr = "sr.gpw";
  CHECK_NOTHROW(check_config(c, FaceFlow::gfpgan));
  // The detection threshold: the flow's own unless given.
  c = RestoreConfig{};
  CHECK(detection_threshold(c, FaceFlow::gpen) == 0.9f);
  CHECK(detection_threshold(c, FaceFlow::gfpgan) == 0.97f);
  c.threshold = 0.5f;
  CHECK(detection_threshold(c, FaceFlow::gfpgan) == 0.5f);
}

TEST_CASE("LMEDS similarity: the one cv2.estimateAffinePartial2D returns on the shared photos' detections") {
  if (skipped()) return;
  RetinaFaceDetector detector(detector_gpw());
  int faces = 0, outliers = 0;
  double worst = 0;
  std::vector<fs::path> files;
  std::string cmd = reference() + " --lmeds";
  for (const char* name : {"kids_1024x768.jpg", "solvay_1927.png", "widerface_sample_1024x624.jpg", "crowd_1600x898.jpg"}) {
    files.push_back(cache_dir() / ("lmeds_" + std::to_string(getpid()) + "_" + name + ".json"));
    write_dets(detector, gpen_test::shared_dir() + "/images/" + name, files.back());
    cmd.append(" ").append(files.back().string());
  }
  std::string out;
  REQUIRE_MESSAGE(gpen_test::run(cmd, &out) == 0, out);
  const nlohmann::json cv_all = nlohmann::json::parse(out);
  for (size_t f = 0; f < files.size(); ++f) {
    std::ifstream js(files[f]);
    const nlohmann::json dets = nlohmann::json::parse(js);
    fs::remove(files[f]);
    const nlohmann::json& cv = cv_all["affine"][f];
    REQUIRE(cv.size() == dets["faces"].size());
    for (size_t i = 0; i < dets["faces"].size(); ++i) {
      const std::vector<float> lm = dets["faces"][i]["landmarks"].get<std::vector<float>>();
      const AffineTransform m = facexlib_face_transform(lm.data(), 512);
      double scale = 0, diff = 0;
      for (int r = 0; r < 2; ++r)
        for (int k = 0; k < 3; ++k) {
          const double want = cv[i][r][k].get<double>();
          scale = std::max(scale, std::abs(want));
          diff = std::max(diff, std::abs(m.m[static_cast<size_t>(r * 3 + k)] - want));
        }
      worst = std::max(worst, diff / std::max(scale, 1.0));
      ++faces;
      // Faces where LMEDS drops a landmark: the least-squares fit of all five differs.
      const std::array<double, 10> t = facexlib_template(512);
      std::array<double, 10> src{}, dst{};
      for (int k = 0; k < 10; ++k) {
        src[static_cast<size_t>(k)] = static_cast<float>(lm[static_cast<size_t>(k)]);
        dst[static_cast<size_t>(k)] = static_cast<float>(t[static_cast<size_t>(k)]);
      }
      const AffineTransform all = similarity_transform(src.data(), dst.data(), 5);
      if (std::abs(all.m[0] - m.m[0]) > 1e-6 * std::max(scale, 1.0)) ++outliers;
    }
  }
  MESSAGE(faces << " faces (" << outliers << " with a landmark LMEDS leaves out); largest difference from cv2's "
                   "matrix, relative: " << worst);
  CHECK(faces > 50);
  CHECK(outliers > 0);
  CHECK(worst < 1e-9);
}

TEST_CASE("gpen restore with a GFPGAN model: kids_1024x768.jpg as GFPGANer.enhance restores it") {
  compare_with_official({"kids_1024x768.jpg", "", ""}, "kids");
}

TEST_CASE("gpen restore with a GFPGAN model: --upscale 2 and --only-center-face as the official flow") {
  compare_with_official({"kids_1024x768.jpg", "--upscale 2 --only-center-face", "--upscale 2 --only-center-face"},
                        "kids_up2_center");
}

TEST_CASE("gpen restore with a GFPGAN model: --parse pastes through facexlib's face-parsing mask as the official flow") {
  if (skipped()) return;
  std::string why;
  const std::string pd = parsenet_test::parsenet_cache(&why);
  REQUIRE_MESSAGE(!pd.empty(), why);
  compare_with_official({"kids_1024x768.jpg", "--parse " + pd + "/parsenet_seed1.gpw --upscale 2",
                         "--parse " + pd + "/parsenet_seed1.pth --upscale 2"},
                        "kids_parse_up2");
}

TEST_CASE("gpen restore with a GFPGAN model: --sr REALESRGAN.gpw as the official RealESRGANer background, tiled") {
  if (skipped()) return;
  if (!fs::exists(official_root() + "/realesrgan/utils.py")) {
    MESSAGE("skipped: " << official_root() << "/realesrgan/utils.py is missing (install realesrgan out of tree, --no-deps)");
    return;
  }
  // RealESRGAN_x2plus's layout (64 features) with 2 blocks instead of 23: the official tile
  // process and crop around it, on kids at 400 x 300 (tiles of 128, two rows and four columns).
  const fs::path dir = cache_dir() / ("bg_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string out;
  const std::string pth = (dir / "realesrgan_x2_f64_b2.pth").string(), gpw = (dir / "realesrgan.gpw").string();
  REQUIRE_MESSAGE(gpen_test::run(kPython + " " + std::string(GPEN_SOURCE_DIR) + "/tests/reference/rrdbnet_reference.py make " +
                                     pth + " --scale 2 --num-block 2 --num-feat 64 --seed 3",
                                 &out) == 0,
                  out);
  conv::convert(pth, gpw);
  const std::string small = (dir / "kids_400x300.png").string();
  write_image(small, resize_bilinear(read_image(gpen_test::shared_dir() + "/images/kids_1024x768.jpg"), 400, 300));
  compare_with_official({small, "--sr " + gpw + " --sr-tile 128 --upscale 2", "--bg " + pth + " --bg-tile 128 --upscale 2"},
                        "kids_small_bg");
  fs::remove_all(dir);
}

TEST_CASE("gpen restore with a GFPGAN model: GPEN-only options are refused, naming the option and the kind") {
  if (skipped()) return;
  const std::string gpen = gpen_test::binary_dir() + "/gpen";
  const std::string base = gpen + " restore -m " + small_gfpgan() + " -d " + detector_gpw() + " " +
                           gpen_test::shared_dir() + "/images/kids_1024x768.jpg -o " +
                           (cache_dir() / ("never_" + std::to_string(getpid()) + ".png")).string();
  for (const std::string& opt : {std::string("--bands 2"), std::string("--task colorize"),
                                 std::string("--det-max-side 800"), std::string("--aligned --batch 2")}) {
    std::string out;
    CHECK(gpen_test::run(base + " " + opt, &out) != 0);
    CHECK_MESSAGE(out.find("GPEN models") != std::string::npos, opt << ": " << out);
    CHECK_MESSAGE(out.find("GFPGAN model") != std::string::npos, opt << ": " << out);
  }
  CHECK(!fs::exists(cache_dir() / ("never_" + std::to_string(getpid()) + ".png")));
}

TEST_CASE("--blend mixes each restored face with its aligned crop before the paste, and --alpha is the same option") {
  if (skipped()) return;
  const std::string gpen = gpen_test::binary_dir() + "/gpen";
  const fs::path dir = cache_dir() / ("blend_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string base = gpen + " restore -m " + small_gfpgan() + " -d " + detector_gpw() + " " +
                           gpen_test::shared_dir() + "/images/ffhq_lq_00000.png -o ";
  std::string out;
  for (const std::string& run : {std::string("full.png --blend 1"), std::string("half.png --blend 0.5"),
                                 std::string("alpha.png --alpha 0.5")})
    REQUIRE_MESSAGE(gpen_test::run(base + (dir / run).string(), &out) == 0, out);
  const Image full = read_image((dir / "full.png").string()), half = read_image((dir / "half.png").string());
  CHECK(read_image((dir / "alpha.png").string()).bgr == half.bgr);
  CHECK(full.bgr != half.bgr);
  CHECK(gpen_test::run(base + (dir / "bad.png").string() + " --blend 1.5", &out) != 0);
  fs::remove_all(dir);
}

TEST_CASE("gpen restore --aligned with a GFPGAN model: a degraded aligned face as GFPGANer.enhance(has_aligned=True)") {
  if (skipped()) return;
  // 1024 x 1024: the official code resizes it to 512 (cv2.resize, INTER_LINEAR) first.
  const std::string face = gpen_test::shared_dir() + "/images/ffhq_lq_00001.png";
  const std::string model = small_gfpgan();
  const fs::path dir = cache_dir() / ("aligned_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string out;
  REQUIRE_MESSAGE(gpen_test::run("GFPGAN_OFFICIAL=" + official_root() + " " + reference() + " " + face +
                                     " --checkpoint " + (cache_dir() / "gfpgan512_small_seed1.pth").string() +
                                     " --aligned -o " + (dir / "ref.png").string() + " --save-faces " +
                                     (dir / "ref").string(),
                                 &out) == 0,
                  out);
  const std::string gpen = gpen_test::binary_dir() + "/gpen";
  const std::string base = gpen + " --threads 1 restore --aligned -m " + model + " " + face + " -o ";
  REQUIRE_MESSAGE(gpen_test::run(base + (dir / "out.png").string(), &out) == 0, out);
  const Image got = read_image((dir / "out.png").string());
  CHECK(got.width == 512);
  CHECK(got.height == 512);
  int max_diff = 0;
  const double p = psnr(got, read_image((dir / "ref.png").string()), &max_diff);
  MESSAGE("aligned: PSNR " << p << " dB against the official flow, max diff " << max_diff);
  CHECK(p >= 60.0);
  // --blend 0 writes the crop the network saw: cv2.resize's, exactly.
  REQUIRE_MESSAGE(gpen_test::run(base + (dir / "crop.png").string() + " --blend 0", &out) == 0, out);
  CHECK(read_image((dir / "crop.png").string()).bgr == read_image((dir / "ref" / "crop0.png").string()).bgr);
  // --blend 0.5 lies between them; the Restorer's restore_aligned is the CLI's.
  REQUIRE_MESSAGE(gpen_test::run(base + (dir / "half.png").string() + " --blend 0.5", &out) == 0, out);
  const Image half = read_image((dir / "half.png").string());
  CHECK(half.bgr != got.bgr);
  RestoreConfig c;
  c.model = model;
  c.detector = detector_gpw();
  c.alpha = 0.5;
  c.threads = 1;
  CHECK(Restorer::open(c)->restore_aligned(read_image(face)).bgr == half.bgr);
  // What aligned crops cannot take, named.
  for (const std::string& opt : {std::string("--upscale 2"), std::string("--save-raw x.npy")}) {
    CHECK(gpen_test::run(base + (dir / "never.png").string() + " " + opt, &out) != 0);
    CHECK_MESSAGE(out.find(opt.substr(0, opt.find(' '))) != std::string::npos, opt << ": " << out);
  }
  CHECK(!fs::exists(dir / "never.png"));
  fs::remove_all(dir);
}
