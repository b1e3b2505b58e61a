// RealESRNet (RrdbModel + super_resolve) on the CPU against the PyTorch re-creation of the
// official RRDBNet / RealESRNet.process / tile_process (tests/reference/rrdbnet_reference.py) on
// the same random weights, for x1, x2 and x4, untiled and tiled, with the engine's corrections
// (--fixed in the reference) and with the official behaviour (SrOptions::official), and the
// difference between the two (the 2H+1 crop at x2; the x1 tiling that fails officially).
//
// Target (issue 15): 8-bit output within 1 level on >= 99.9 % of the values. The two sides sum
// the same fp32 products in different orders; through ~70 convs the outputs differ by ~1e-6
// relative, so only values sitting at a rounding boundary of the 8-bit output can move by one.
//
// Checkpoints and reference outputs are generated here by one /usr/bin/python3 run (skipped with
// a message where torch or cv2 is missing): reduced models (2 RRDB blocks, official widths) for
// every case, and one full 23-block x2 model.
#include <doctest/doctest.h>
#include "tests/run_command.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "converter/convert.h"
#include "engine/models/rrdbnet.h"
#include "engine/photo/image.h"
#include "engine/photo/super_resolution.h"
#include "engine/runtime/backend.h"

using namespace gpen;
namespace fs = std::filesystem;

namespace {

const std::string kPython = "/usr/bin/python3";

using gpen_test::run;

// A smooth photo-like BGR image with some texture (odd sizes exercise the padding).
Image test_image(int w, int h) {
  Image im;
  im.width = w;
  im.height = h;
  im.bgr.resize(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        const double v = 128 + 90 * std::sin(0.21 * x + 0.9 * c) * std::cos(0.17 * y - 0.4 * c) + ((x * 7 + y * 13 + c * 5) % 23) - 11;
        im.bgr[(static_cast<size_t>(y) * w + x) * 3 + c] = static_cast<uint8_t>(std::min(255.0, std::max(0.0, v)));
      }
  return im;
}

struct Compare {
  double within1 = 0;  // fraction of values within 1 level
  int maxdiff = 0;
};

Compare compare(const Image& a, const Image& b) {
  REQUIRE(a.width == b.width);
  REQUIRE(a.height == b.height);
  Compare c;
  size_t ok = 0;
  for (size_t i = 0; i < a.bgr.size(); ++i) {
    const int d = std::abs(int(a.bgr[i]) - int(b.bgr[i]));
    ok += d <= 1;
    c.maxdiff = std::max(c.maxdiff, d);
  }
  c.within1 = double(ok) / double(a.bgr.size());
  return c;
}

struct Case {
  std::string name;
  int scale, blocks, tile;
  bool fixed;
  int w, h;
};

// The cases, the reference outputs and the converted models, made once per test binary run.
struct Fixture {
  bool ok = false;
  std::string why;
  fs::path dir;
  std::vector<Case> cases;
  std::map<std::string, std::string> gpw;  // "s2b2" -> .gpw
  Fixture() {
    if (access(kPython.c_str(), X_OK) != 0 || run(kPython + " -c 'import torch, numpy, cv2'") != 0) {
      why = kPython + " with torch, numpy and cv2 is not available";
      return;
    }
    dir = fs::temp_directory_path() / ("gpen_test_sr_" + std::to_string(getpid()));
    fs::create_directories(dir);
    cases = {
        {"x1", 1, 2, 0, true, 61, 47},          {"x1_official", 1, 2, 0, false, 61, 47},
        {"x2", 2, 2, 0, true, 61, 47},          {"x2_official", 2, 2, 0, false, 61, 47},
        {"x4", 4, 2, 0, true, 61, 47},          {"x2_tile24", 2, 2, 24, true, 64, 48},
        {"x2_tile24_official", 2, 2, 24, false, 64, 48}, {"x4_tile20", 4, 2, 20, true, 45, 38},
        {"x1_tile24", 1, 2, 24, true, 64, 48},  {"x1_tile24_official", 1, 2, 24, false, 64, 48},
        {"x2_tile13", 2, 2, 13, true, 50, 40},  {"x2_full", 2, 23, 0, true, 40, 30},
        {"x2_full_tile16", 2, 23, 16, true, 40, 30},
    };
    nlohmann::json spec = {{"checkpoints", nlohmann::json::array()}, {"runs", nlohmann::json::array()}};
    for (const auto& [s, b] : std::vector<std::pair<int, int>>{{1, 2}, {2, 2}, {4, 2}, {2, 23}}) {
      const std::string key = std::string("s") + std::to_string(s) + "b" + std::to_string(b);
      spec["checkpoints"].push_back(
          {{"path", (dir / (key + ".pth")).string()}, {"scale", s}, {"num_block", b}, {"seed", 10 * s + b}});
    }
    for (const Case& c : cases) {
      const std::string in = (dir / (c.name + "_in.png")).string();
      write_image(in, test_image(c.w, c.h));
      const std::string key = std::string("s") + std::to_string(c.scale) + "b" + std::to_string(c.blocks);
      spec["runs"].push_back({{"ckpt", (dir / (key + ".pth")).string()},
                              {"input", in},
                              {"output", (dir / (c.name + "_ref.png")).string()},
                              {"tile", c.tile},
                              {"fixed", c.fixed}});
    }
    std::ofstream(dir / "spec.json") << spec.dump();
    std::string out;
    const int rc = run(kPython + " " + std::string(GPEN_SOURCE_DIR) + "/tests/reference/rrdbnet_reference.py cases " +
                           (dir / "spec.json").string(),
                       &out);
    REQUIRE_MESSAGE(rc == 0, "rrdbnet_reference.py failed: " << out);
    for (const auto& c : spec["checkpoints"]) {
      const std::string pth = c["path"];
      const std::string g = pth.substr(0, pth.size() - 4) + ".gpw";
      conv::convert(pth, g);
      gpw[fs::path(pth).stem().string()] = g;
      fs::remove(pth);
    }
    ok = true;
  }
  ~Fixture() {
    if (!dir.empty()) fs::remove_all(dir);
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

}  // namespace

TEST_CASE("RealESRNet x1/x2/x4, untiled and tiled, matches the PyTorch re-creation") {
  Fixture& f = fixture();
  if (!f.ok) {
    MESSAGE("skipped: " << f.why);
    return;
  }
  auto backend = make_cpu_backend();
  std::map<std::string, std::unique_ptr<RrdbModel>> models;
  for (const Case& c : f.cases) {
    CAPTURE(c.name);
    const std::string key = std::string("s") + std::to_string(c.scale) + "b" + std::to_string(c.blocks);
    auto& m = models[key];
    if (!m) m = RrdbModel::open(f.gpw.at(key), *backend);
    const Image in = read_image((f.dir / (c.name + "_in.png")).string());
    SrOptions opt;
    opt.tile = c.tile;
    opt.official = !c.fixed;
    const fs::path ref = f.dir / (c.name + "_ref.png");
    if (fs::exists(ref.string() + ".failed")) {
      // The official code fails here (x1 with 3 tiles per axis): so does official mode; the
      // engine's corrected run is compared in the "_fixed" twin of the case.
      CHECK_THROWS_WITH_AS(super_resolve(*m, in, opt), doctest::Contains("sr failed"), Error);
      continue;
    }
    SrReport rep;
    const Image out = super_resolve(*m, in, opt, &rep);
    const Image want = read_image(ref.string());
    const Compare cmp = compare(out, want);
    MESSAGE(c.name << ": " << out.width << "x" << out.height << ", within 1 level " << cmp.within1 * 100
                   << " %, max diff " << cmp.maxdiff);
    CHECK(cmp.within1 >= 0.999);
    CHECK(cmp.maxdiff <= 3);
    if (c.fixed) {
      CHECK(out.width == c.scale * c.w);
      CHECK(out.height == c.scale * c.h);
    }
  }
}

TEST_CASE("the corrected x2 crop drops exactly the official extra row and column") {
  Fixture& f = fixture();
  if (!f.ok) return;
  auto backend = make_cpu_backend();
  auto m = RrdbModel::open(f.gpw.at("s2b2"), *backend);
  const Image in = test_image(61, 47);
  SrOptions fixed, official;
  official.official = true;
  SrReport rep;
  const Image a = super_resolve(*m, in, fixed, &rep);
  const Image b = super_resolve(*m, in, official);
  CHECK(a.width == 122);
  CHECK(a.height == 94);
  CHECK(b.width == 123);  // 2 * (61 + 1) - 1: the official crop
  CHECK(b.height == 95);
  size_t diff = 0;
  for (int y = 0; y < a.height; ++y)
    for (int x = 0; x < a.width * 3; ++x)
      diff += a.bgr[static_cast<size_t>(y) * a.width * 3 + x] != b.bgr[static_cast<size_t>(y) * b.width * 3 + x];
  CHECK(diff == 0);  // the same network run; only the crop differs
  REQUIRE(rep.corrections.size() == 1);
  CHECK(rep.corrections[0].find("2H") == std::string::npos);
  CHECK(rep.corrections[0].find("official crop") != std::string::npos);
}
