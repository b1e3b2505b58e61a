// CodeFormer's photo flow against the official one: `gpen restore` with a CodeFormer .gpw against
// inference_codeformer.py's steps with the FaceRestoreHelper of CodeFormer's facelib, run from the
// installed package (tests/reference/codeformer_flow_reference.py), the engine's RetinaFace
// detections given to both sides (made on the image the helper hands its detector, which the
// reference checks pixel for pixel). The network is the CodeFormer of tests/codeformer_fixture.h
// (the full VQGAN, a reduced transformer, weights of a seeded rule both sides compute), the face
// parser a random ParseNet in the official layout (tests/parsenet_fixture.h). The test is skipped
// with a message where /usr/bin/python3 with torch or the official package (CODEFORMER_PIP,
// default /tmp/codeformer-official, installed --no-deps) is missing.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/core/affine.h"
#include "engine/core/error.h"
#include "engine/models/retinaface.h"
#include "engine/photo/face_flow.h"
#include "engine/photo/facexlib_flow.h"
#include "engine/photo/facexlib_paste.h"
#include "engine/photo/image.h"
#include "engine/photo/restorer.h"
#include "kernels/cpu/image_resize.h"
#include "tests/codeformer_fixture.h"
#include "tests/facexlib_flow_fixture.h"
#include "tests/parsenet_fixture.h"
#include "tests/run_command.h"
#include "tests/test_paths.h"

using namespace gpen;
namespace fs = std::filesystem;

namespace {

const std::string kPython = "/usr/bin/python3";

std::string official_root() {
  const char* e = std::getenv("CODEFORMER_PIP");
  return e && *e ? e : "/tmp/codeformer-official";
}

std::string reference() {
  return "CODEFORMER_PIP=" + official_root() + " " + kPython + " " + std::string(GPEN_SOURCE_DIR) +
         "/tests/reference/codeformer_flow_reference.py";
}

fs::path cache_dir() {
  const fs::path d = fs::path(gpen_test::binary_dir()) / "test_codeformer_flow_cache";
  fs::create_directories(d);
  return d;
}

bool skipped() {
  return gpen_test::skipped_because(gpen_test::official_flow_missing(
      official_root(),
      {"/codeformer/facelib/utils/face_restoration_helper.py", "/codeformer/basicsr/utils/img_util.py",
       "/codeformer/basicsr/archs/codeformer_arch.py", "/codeformer/facelib/parsing/parsenet.py",
       "/codeformer/basicsr/utils/realesrgan_utils.py"},
      "install codeformer-pip out of tree, --no-deps", "torch, numpy, cv2, PIL"));
}

// The ParseNet checkpoint (.pth) and its .gpw; "" where they cannot be made.
std::string parsenet_dir() {
  std::string why;
  const std::string dir = parsenet_test::parsenet_cache(&why);
  if (dir.empty()) MESSAGE("no ParseNet: " << why);
  return dir;
}

// The image inference_codeformer.py's helper hands its detector: read_image's upsizing of a photo
// whose shorter side is under 512 (cv2.resize fx = fy), then get_face_landmarks_5's resize of the
// shorter side up to 640 (never down).
Image detector_input(const Image& photo) {
  Image img = photo;
  if (const int s = std::min(img.width, img.height); s < 512) {
    const double f = 512.0 / s;
    img = resize_bilinear(img, static_cast<int>(std::nearbyint(img.width * f)),
                          static_cast<int>(std::nearbyint(img.height * f)), f, f);
  }
  const double scale = std::max(1.0, 640.0 / std::min(img.width, img.height));
  if (scale > 1.0) img = resize_bilinear(img, static_cast<int>(img.width * scale), static_cast<int>(img.height * scale));
  return img;
}

struct Case {
  std::string photo;       // a path
  std::string args;        // gpen restore's
  std::string ref_args;    // the reference's
  bool parse = false;
};

void compare_with_official(const Case& c, const std::string& name) {
  const std::string model = gpen_test::converted_codeformer_fixture();
  const std::string det = gpen_test::facexlib_detector_gpw(cache_dir());
  std::string parse_args, parse_ref;
  if (c.parse) {
    const std::string pd = parsenet_dir();
    REQUIRE(!pd.empty());
    parse_args = " --parse " + pd + "/parsenet_seed1.gpw";
    parse_ref = " --parse " + pd + "/parsenet_seed1.pth";
  }
  const fs::path dir = cache_dir() / (name + "_" + std::to_string(getpid()));
  fs::create_directories(dir);
  RetinaFaceDetector detector(det);
  const Image det_in = detector_input(read_image(c.photo));
  write_image((dir / "det_input.png").string(), det_in);
  const std::string dets = gpen_test::write_facexlib_dets(detector, det_in, dir / "dets.json");
  std::string out;
  REQUIRE_MESSAGE(gpen_test::run(reference() + " " + c.photo + " --dets " + dets + " --det-input " +
                                     (dir / "det_input.png").string() + " -o " + (dir / "ref.png").string() + " " +
                                     c.ref_args + parse_ref,
                                 &out) == 0,
                  out);
  const nlohmann::json ref = nlohmann::json::parse(out.substr(out.rfind('{')));
  const std::string gpen = gpen_test::binary_dir() + "/gpen";
  REQUIRE_MESSAGE(gpen_test::run(gpen + " --threads 1 restore -m " + model + " -d " + det + " " + c.photo + " -o " +
                                     (dir / "out.png").string() + " --report " + (dir / "report.json").string() + " " +
                                     c.args + parse_args,
                                 &out) == 0,
                  out);
  std::ifstream rs(dir / "report.json");
  const nlohmann::json rep = nlohmann::json::parse(rs);
  CHECK(rep["images"][0]["faces_restored"] == ref["faces"]);
  CHECK(ref["faces"].get<int>() >= 1);
  int max_diff = 0;
  const Image got = read_image((dir / "out.png").string());
  const double p = gpen_test::image_psnr(got, read_image((dir / "ref.png").string()), &max_diff);
  MESSAGE(name << ": " << ref["faces"] << " faces (gray photo: " << ref["gray"] << ", values clamped: " << ref["clamped"]
               << "), " << got.width << "x"
               << got.height << ", PSNR " << p << " dB against the official flow, max diff " << max_diff);
  CHECK(p >= 60.0);
  if (p >= 60.0) fs::remove_all(dir);
}

}  // namespace

TEST_CASE("the CodeFormer file picks CodeFormer's flow, its options, threshold and the refusals of other kinds'") {
  CHECK(face_flow_of_arch("codeformer") == FaceFlow::codeformer);
  CHECK(is_facexlib_flow(FaceFlow::codeformer));
  CHECK(std::string(face_flow_name(FaceFlow::codeformer)) == "CodeFormer");
  RestoreConfig c;
  c.model = "cf.gpw";
  c.detector = "d.gpw";
  CHECK(detection_threshold(c, FaceFlow::codeformer) == 0.8f);
  c.fidelity = 0.7f;
  CHECK_NOTHROW(check_config(c, FaceFlow::codeformer));
  CHECK_THROWS_WITH_AS(check_config(c, FaceFlow::gfpgan), doctest::Contains("--fidelity is an option of CodeFormer"),
                       Error);
  CHECK_THROWS_WITH_AS(check_config(c, FaceFlow::gpen), doctest::Contains("is a GPEN model"), Error);
  c.fidelity = 1.5f;
  CHECK_THROWS_WITH_AS(check_config(c, FaceFlow::codeformer), doctest::Contains("fidelity must be in [0, 1]"), Error);
  c.fidelity = 0.5f;
  c.upscale = 2;
  c.only_center_face = true;
  CHECK_NOTHROW(check_config(c, FaceFlow::codeformer));
  c.bands = 2;
  CHECK_THROWS_WITH_AS(check_config(c, FaceFlow::codeformer), doctest::Contains("--bands is an option of GPEN"), Error);
}

TEST_CASE("CodeFormer's is_gray and its output size: photos under 512 scaled up first") {
  Image gray;
  gray.width = 600;
  gray.height = 400;
  gray.bgr.resize(gray.pixels() * 3);
  for (size_t i = 0; i < gray.pixels(); ++i) gray.bgr[i * 3] = gray.bgr[i * 3 + 1] = gray.bgr[i * 3 + 2] = uint8_t(i % 251);
  CHECK(is_gray_photo(gray));
  for (size_t i = 0; i < gray.pixels(); i += 2) gray.bgr[i * 3] = uint8_t(255 - gray.bgr[i * 3]);
  CHECK_FALSE(is_gray_photo(gray));
  FacexlibFlowOptions o;
  o.helper = FacexlibHelper::codeformer;
  o.upscale = 2;
  const FacexlibRestorer r([](const float*, float*) {}, nullptr, nullptr, o);
  // 600 x 400: f = 1.28, 768 x 512, then twice that.
  CHECK(r.output_size(600, 400) == std::pair<int, int>(1536, 1024));
  CHECK(r.output_size(1328, 568) == std::pair<int, int>(2656, 1136));
  o.helper = FacexlibHelper::gfpgan;
  const FacexlibRestorer g([](const float*, float*) {}, nullptr, nullptr, o);
  CHECK(g.output_size(600, 400) == std::pair<int, int>(1200, 800));
}

TEST_CASE("gpen restore with a CodeFormer model: the gray 1927 photo's centre face, face-parsing mask, --upscale 2") {
  if (skipped()) return;
  // 1328 x 568: gray (the restored face gets the crop's tones), detected at 1496 x 640.
  compare_with_official({gpen_test::shared_dir() + "/images/solvay_1927.png", "--only-center-face --upscale 2",
                         "--only-center-face --upscale 2", true},
                        "solvay_center_parse_up2");
}

// kids at 480 x 360 in `dir`, and a RealESRGAN_x2plus layout (64 features) with 2 blocks as
// the official checkpoint (.pth) and its .gpw there.
struct SmallPhotoAndUpsampler {
  std::string photo, pth, gpw;
};
SmallPhotoAndUpsampler small_photo_and_upsampler(const fs::path& dir) {
  SmallPhotoAndUpsampler s{(dir / "kids_480x360.png").string(), (dir / "realesrgan_x2_f64_b2.pth").string(),
                           (dir / "realesrgan.gpw").string()};
  write_image(s.photo, resize_bilinear(read_image(gpen_test::shared_dir() + "/images/kids_1024x768.jpg"), 480, 360));
  std::string out;
  REQUIRE_MESSAGE(gpen_test::run(kPython + " " + std::string(GPEN_SOURCE_DIR) +
                                     "/tests/reference/rrdbnet_reference.py make " + s.pth +
                                     " --scale 2 --num-block 2 --num-feat 64 --seed 3",
                                 &out) == 0,
                  out);
  gpen::conv::convert(s.pth, s.gpw);
  return s;
}

TEST_CASE("gpen restore with a CodeFormer model: a photo under 512 pixels, its centre face, w 0.7, RealESRGAN background") {
  if (skipped()) return;
  // kids at 480 x 360: scaled up to 683 x 512 by read_image, detected at 640 / 512 of that. One
  // face: the official network takes ~20 s a face on one thread (all 8 agree at 88.9 dB without a
  // background upsampler). The background: on the photo as given (960 x 720, tiles of 128 with
  // 40 of context), then Lanczos to the output's 1366 x 1024.
  const fs::path dir = cache_dir() / ("small_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const SmallPhotoAndUpsampler s = small_photo_and_upsampler(dir);
  compare_with_official({s.photo, "--fidelity 0.7 --only-center-face --upscale 2 --sr " + s.gpw + " --sr-tile 128",
                         "--w 0.7 --only-center-face --upscale 2 --bg " + s.pth + " --bg-tile 128"},
                        "kids_small_w07_bg");
  fs::remove_all(dir);
}

TEST_CASE("gpen restore with a CodeFormer model: --face-upsample, the restored face through the RealESRGAN upsampler") {
  if (skipped()) return;
  // The photo and upsampler of the case above, its centre face, the face-parsing mask: the
  // restored face upsampled to 1024 x 1024 (tiles of 128), pasted from that size (the inverse
  // without the half-pixel offset, the square's erosions at 1024), the parser reading it resized
  // back to 512 and its mask resized to 1024.
  const fs::path dir = cache_dir() / ("face_up_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const SmallPhotoAndUpsampler s = small_photo_and_upsampler(dir);
  compare_with_official({s.photo, "--only-center-face --upscale 2 --sr " + s.gpw + " --sr-tile 128 --face-upsample",
                         "--only-center-face --upscale 2 --bg " + s.pth + " --bg-tile 128 --face-upsample", true},
                        "kids_small_face_upsample_parse");
  fs::remove_all(dir);
}

TEST_CASE("--face-upsample: CodeFormer's, and only with a background upsampler") {
  RestoreConfig c;
  c.model = "cf.gpw";
  c.detector = "d.gpw";
  c.face_upsample = true;
  CHECK_THROWS_WITH_AS(check_config(c, FaceFlow::codeformer), doctest::Contains("--face-upsample runs the restored faces"),
                       Error);
  c.sr = "realesrgan.gpw";
  CHECK_NOTHROW(check_config(c, FaceFlow::codeformer));
  CHECK_THROWS_WITH_AS(check_config(c, FaceFlow::gfpgan), doctest::Contains("--face-upsample is an option of CodeFormer"),
                       Error);
  CHECK_THROWS_WITH_AS(check_config(c, FaceFlow::restoreformer),
                       doctest::Contains("--face-upsample is an option of CodeFormer"), Error);
  FacexlibFlowOptions o;
  o.helper = FacexlibHelper::codeformer;
  o.face_upsample = true;
  CHECK_THROWS_WITH_AS(FacexlibRestorer([](const float*, float*) {}, nullptr, nullptr, o),
                       doctest::Contains("needs one (--sr)"), Error);
}

TEST_CASE("the inverse of an upsampled face: get_inverse_affine's, divided by the upscale, its translation times it") {
  AffineTransform m;
  m.m = {0.8, -0.3, 12.25, 0.3, 0.8, -40.5};
  for (int u : {1, 2, 3}) {
    const AffineTransform inv = invert(m), a = facexlib_face_upsample_inverse(m, u);
    for (int i : {0, 1, 3, 4}) CHECK(a.m[static_cast<size_t>(i)] == doctest::Approx(inv.m[static_cast<size_t>(i)]).epsilon(1e-15));
    CHECK(a.m[2] == doctest::Approx(inv.m[2] * u).epsilon(1e-15));
    CHECK(a.m[5] == doctest::Approx(inv.m[5] * u).epsilon(1e-15));
    // A point of the upsampled face lands where its point in the 512 crop lands, times the upscale.
    double x, y, ox, oy;
    a.apply(100.0 * u, 300.0 * u, &x, &y);
    inv.apply(100.0, 300.0, &ox, &oy);
    CHECK(x == doctest::Approx(ox * u));
    CHECK(y == doctest::Approx(oy * u));
  }
}

TEST_CASE("gpen restore --aligned with a CodeFormer model: a degraded aligned face as has_aligned=True") {
  if (skipped()) return;
  const std::string face = gpen_test::shared_dir() + "/images/ffhq_lq_00001.png";
  const fs::path dir = cache_dir() / ("aligned_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string out;
  REQUIRE_MESSAGE(gpen_test::run(reference() + " " + face + " --aligned --w 0.5 -o " + (dir / "ref.png").string(), &out) == 0,
                  out);
  const std::string gpen = gpen_test::binary_dir() + "/gpen";
  const std::string model = gpen_test::converted_codeformer_fixture();
  REQUIRE_MESSAGE(gpen_test::run(gpen + " --threads 1 restore --aligned -m " + model + " " + face + " -o " +
                                     (dir / "out.png").string(),
                                 &out) == 0,
                  out);
  int max_diff = 0;
  const double p = gpen_test::image_psnr(read_image((dir / "out.png").string()), read_image((dir / "ref.png").string()),
                                         &max_diff);
  MESSAGE("aligned: PSNR " << p << " dB against the official flow, max diff " << max_diff);
  CHECK(p >= 60.0);
  // Another fidelity, another face; the Restorer's restore_aligned is the CLI's.
  REQUIRE_MESSAGE(gpen_test::run(gpen + " --threads 1 restore --aligned -m " + model + " " + face + " -o " +
                                     (dir / "w0.png").string() + " --fidelity 0",
                                 &out) == 0,
                  out);
  const Image w0 = read_image((dir / "w0.png").string());
  CHECK(w0.bgr != read_image((dir / "out.png").string()).bgr);
  RestoreConfig c;
  c.model = model;
  c.detector = gpen_test::facexlib_detector_gpw(cache_dir());
  c.fidelity = 0.0f;
  c.threads = 1;
  CHECK(Restorer::open(c)->restore_aligned(read_image(face)).bgr == w0.bgr);
  fs::remove_all(dir);
}
