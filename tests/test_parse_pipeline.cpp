// The whole photo with the face-parsing paste mask (gpen restore --parse) against the official
// flow re-created in Python (tests/reference/pipeline_reference.py --parse: cv2 + the PyTorch
// GPEN, RetinaFace and ParseNet references), on a PNG of /work/shared/images with the real
// RetinaFace mobilenet0.25 weights, a synthetic GPEN-BFR-256 (scripts/make_synthetic_gpen.py,
// seed 1) and the random-weight ParseNet of tests/parsenet_fixture.h. ParseNet runs once at 512
// on each side (about 470 GFLOP): the reference run is cached in <build>/test_parsenet_cache.
// Also the CLI: --parse is the default mask when given, the report names the mask. Labelled
// "slow" (tests/CMakeLists.txt).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "converter/convert.h"
#include "engine/models/gpen_model.h"
#include "engine/models/parsenet.h"
#include "engine/models/retinaface.h"
#include "engine/photo/image.h"
#include "engine/photo/npy.h"
#include "engine/photo/parse_mask.h"
#include "engine/photo/pipeline.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parse_labels.h"
#include "tests/parsenet_fixture.h"

using namespace gpen;
namespace fs = std::filesystem;
using parsenet_test::kPython;
using parsenet_test::run;

namespace {

const char* kPhoto = "ffhq_lq_00000.png";

// The synthetic GPEN-256 checkpoint and the reference run, cached; "" when they cannot be made.
std::string reference_run(const std::string& cache, const std::string& photo, std::string* why) {
  const fs::path dir = fs::path(cache) / "pipeline";
  const std::string src = GPEN_SOURCE_DIR;
  const std::string want = parsenet_test::file_hash(src + "/tests/reference/pipeline_reference.py") + "_" +
                           parsenet_test::file_hash(src + "/tests/reference/parsenet_reference.py");
  std::string have;
  {
    std::ifstream s(dir / "stamp");
    s >> have;
  }
  if (have == want && fs::exists(dir / "composite.png")) return dir.string();
  if (!parsenet_test::python_ok(why)) return "";
  fs::create_directories(dir);
  std::string out;
  const fs::path pth = dir / "gpen256_seed1.pth";
  if (!fs::exists(pth)) {
    const fs::path tmp = dir / ("gpen_" + std::to_string(getpid()) + ".pth");
    REQUIRE_MESSAGE(run(kPython + " " + src + "/scripts/make_synthetic_gpen.py " + tmp.string() + " --size 256 --seed 1",
                        &out) == 0,
                    out);
    fs::rename(tmp, pth);
  }
  const std::string cmd = kPython + " " + src + "/tests/reference/pipeline_reference.py " + photo + " -o " +
                          (dir / "composite.tmp.png").string() + " --checkpoint " + pth.string() + " --parse " + cache +
                          "/parsenet_seed1.pth --save-faces " + dir.string() + " --threads 2";
  REQUIRE_MESSAGE(run(cmd, &out) == 0, "pipeline_reference.py failed: " << out);
  MESSAGE("reference: " << out);
  fs::rename(dir / "composite.tmp.png", dir / "composite.png");
  std::ofstream(dir / "stamp") << want << "\n";
  return dir.string();
}

struct Agreement {
  double within2 = 0, within1 = 0, psnr = 0;
  int max_diff = 0;
};

Agreement compare(const Image& a, const Image& b) {
  REQUIRE(a.width == b.width);
  REQUIRE(a.height == b.height);
  Agreement g;
  double se = 0;
  size_t n1 = 0, n2 = 0;
  for (size_t p = 0; p < a.pixels(); ++p) {
    int m = 0;
    for (int c = 0; c < 3; ++c) {
      const int d = std::abs(int(a.bgr[p * 3 + c]) - int(b.bgr[p * 3 + c]));
      se += double(d) * d;
      m = std::max(m, d);
    }
    g.max_diff = std::max(g.max_diff, m);
    n1 += m <= 1;
    n2 += m <= 2;
  }
  g.within1 = double(n1) / double(a.pixels());
  g.within2 = double(n2) / double(a.pixels());
  const double mse = se / (double(a.pixels()) * 3);
  g.psnr = mse > 0 ? 10 * std::log10(255.0 * 255.0 / mse) : 999.0;
  return g;
}

}  // namespace

TEST_CASE("restore with the face-parsing mask matches the official flow (ffhq_lq_00000.png, GPEN-256)") {
  const std::string photo_path = std::string(GPEN_SHARED_DIR) + "/images/" + kPhoto;
  const std::string det_pth = std::string(GPEN_SHARED_DIR) + "/models/retinaface-mobilenet0.25.pth";
  if (!fs::exists(photo_path) || !fs::exists(det_pth)) {
    MESSAGE("skipped: " << photo_path << " or " << det_pth << " is missing");
    return;
  }
  std::string why;
  const std::string cache = parsenet_test::parsenet_cache(&why);
  const std::string ref = cache.empty() ? "" : reference_run(cache, photo_path, &why);
  if (ref.empty()) {
    MESSAGE("skipped: " << why);
    return;
  }
  const std::string gpen_gpw = ref + "/gpen256.gpw", det_gpw = ref + "/retinaface_mnet.gpw";
  conv::convert(ref + "/gpen256_seed1.pth", gpen_gpw);
  conv::convert(det_pth, det_gpw);

  cpu::set_num_threads(2);
  auto backend = make_cpu_backend();
  auto gpen = GpenModel::open(gpen_gpw, *backend);
  RetinaFaceDetector detector(det_gpw);
  ParseNetModel parser(cache + "/parsenet_seed1.gpw", *backend);
  RestoreOptions opt;
  opt.parser = &parser;
  FaceRestorer restorer(*gpen, detector, opt);
  const Image photo = read_image(photo_path);
  const PhotoResult r = restorer.process(photo);
  REQUIRE(r.restored >= 1);
  CHECK(std::string(r.mask) == "parse");
  // One arena in turns: GPEN's is made as large as ParseNet's plan, and the parser and the
  // detector run inside it.
  CHECK(parser.uses_shared_memory());
  CHECK(gpen->arena_bytes() >= parser.plan().arena_bytes);
  CHECK(detector.uses_shared_memory());
  REQUIRE(fs::exists(ref + "/labels00.npy"));

  // The class map of the reference's GPEN output (a PNG, lossless), parsed by the engine.
  const Image face = read_image(ref + "/face00.png");
  std::vector<float> x(static_cast<size_t>(kParseSize) * kParseSize * 3);
  parse_input(face, x.data());
  std::vector<uint8_t> lab(static_cast<size_t>(kParseSize) * kParseSize);
  parser.parse(x.data(), kParseSize, kParseSize, lab.data(), nullptr);
  const npy::Array want_lab = npy::load(ref + "/labels00.npy");
  REQUIRE(static_cast<size_t>(want_lab.numel()) == lab.size());
  size_t same = 0;
  for (size_t i = 0; i < lab.size(); ++i) same += lab[i] == want_lab.data<uint8_t>()[i];
  const double agree = double(same) / double(lab.size());
  MESSAGE("ParseNet class map at 512 identical on " << agree * 100 << " % of pixels");
  CHECK(agree >= 0.999);

  const Agreement g = compare(r.image, read_image(ref + "/composite.png"));
  MESSAGE("composite with the parsing mask: within 1 level " << g.within1 * 100 << " %, within 2 levels "
                                                               << g.within2 * 100 << " %, max " << g.max_diff
                                                               << ", PSNR " << g.psnr << " dB");
  CHECK(g.within2 >= 0.99);
  CHECK(g.psnr >= 40.0);

  // The rectangle differs: the parsing mask really is what was pasted through.
  RestoreOptions rect;
  FaceRestorer rect_restorer(*gpen, detector, rect);
  const Agreement gr = compare(rect_restorer.process(photo).image, read_image(ref + "/composite.png"));
  MESSAGE("rectangle-mask composite against the parsing-mask reference: PSNR " << gr.psnr << " dB");
  CHECK(gr.psnr < g.psnr);

  // The CLI: --mask rect with the parser given pastes through the rectangle, and says so.
  const std::string out = ref + "/cli_rect.png", rep = ref + "/cli_rect.json";
  std::string text;
  REQUIRE_MESSAGE(run(std::string(GPEN_BINARY_DIR) + "/gpen --threads 2 restore -m " + gpen_gpw + " -d " + det_gpw +
                          " --parse " + cache + "/parsenet_seed1.gpw --mask rect " + photo_path + " -o " + out +
                          " --report " + rep,
                      &text) == 0,
                  text);
  std::ifstream rs(rep);
  const nlohmann::json report = nlohmann::json::parse(rs);
  CHECK(report["memory"]["mask"] == "rect");
  CHECK(report["images"][0]["mask"] == "rect");
  CHECK(compare(read_image(out), rect_restorer.process(photo).image).psnr >= 50.0);  // the same flow, another process
  fs::remove(out);
  fs::remove(rep);
  fs::remove(gpen_gpw);
  fs::remove(det_gpw);
}
