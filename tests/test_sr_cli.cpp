// `gpen sr` end to end on a tiny RealESRNet .gpw written here (8 features, growth 8, 1 block, x2;
// random weights): a folder with a bad file (reported and skipped, exit status 1, the others
// written, no partial output), the report (tile, tiles, reason, corrections), tiling from
// --sr-tile, the official crop, refusals (an input as output, a bad --sr-tile), `gpen info`, and
// `gpen restore --sr` (output at the SR size, the SR entry of the report).
#include <doctest/doctest.h>
#include "tests/realesrnet_fixture.h"
#include "tests/run_command.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "converter/convert.h"
#include "engine/models/rrdbnet.h"
#include "engine/photo/image.h"
#include "weights/gpw_writer.h"

using namespace gpen;
namespace fs = std::filesystem;

namespace {

const std::string kGpen = GPEN_BINARY_DIR "/gpen";

using gpen_test::run;

Image photo(int w, int h) {
  Image im;
  im.width = w;
  im.height = h;
  im.bgr.resize(static_cast<size_t>(w) * h * 3);
  for (size_t i = 0; i < im.bgr.size(); ++i) im.bgr[i] = static_cast<uint8_t>((i * 37) % 251);
  return im;
}

}  // namespace

TEST_CASE("gpen sr: folders, report, tiles, refusals") {
  const fs::path dir = fs::temp_directory_path() / ("gpen_test_sr_cli_" + std::to_string(getpid()));
  fs::create_directories(dir / "in" / "sub");
  const std::string model = (dir / "tiny.gpw").string();
  gpen_test::write_tiny_realesrnet(model);
  write_image((dir / "in" / "a.png").string(), photo(33, 21));
  write_image((dir / "in" / "sub" / "b.png").string(), photo(20, 16));
  std::ofstream(dir / "in" / "bad.png") << "not an image";
  const std::string out = (dir / "out").string(), report = (dir / "r.json").string();
  std::string text;
  int rc = run(kGpen + " --threads 1 sr -s " + model + " " + (dir / "in").string() + " -o " + out + " --sr-tile 16 --report " +
                   report,
               &text);
  INFO(text);
  CHECK(rc == 1);  // one bad file
  CHECK(text.find("bad.png") != std::string::npos);
  const Image a = read_image(out + "/a.png");
  CHECK(a.width == 66);
  CHECK(a.height == 42);
  const Image b = read_image(out + "/sub/b.png");
  CHECK(b.width == 40);
  CHECK(b.height == 32);
  CHECK_FALSE(fs::exists(out + "/bad.png"));
  for (const auto& e : fs::recursive_directory_iterator(out))  // no temporary left behind
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
  std::ifstream rf(report);
  const nlohmann::json r = nlohmann::json::parse(rf);
  REQUIRE(r["images"].size() == 3);
  CHECK(r["totals"]["failed"] == 1);
  for (const auto& im : r["images"]) {
    if (im.contains("error")) {
      CHECK(im["image"].get<std::string>().find("bad.png") != std::string::npos);
      continue;
    }
    CHECK(im["sr"]["tile"] == 16);
    CHECK(im["sr"]["tiles"].get<int>() >= 2);
    CHECK(im["sr"]["tile_reason"].get<std::string>().find("as asked") != std::string::npos);
  }
  // a.png is 33x21: padded to 34x22, so the corrected crop is reported.
  bool crop_noted = false;
  for (const auto& im : r["images"])
    if (im.value("image", "").find("a.png") != std::string::npos)
      for (const auto& c : im["sr"]["corrections_of_official"]) crop_noted |= c.get<std::string>().find("official crop") != std::string::npos;
  CHECK(crop_noted);

  // auto: a tiny photo fits untiled; the official crop keeps 2H + 1 rows.
  rc = run(kGpen + " --threads 1 sr -s " + model + " " + (dir / "in" / "a.png").string() + " -o " + (dir / "o.png").string() +
               " --official-crop",
           &text);
  CHECK(rc == 0);
  const Image o = read_image((dir / "o.png").string());
  CHECK(o.width == 67);
  CHECK(o.height == 43);
  CHECK(text.find("untiled") != std::string::npos);

  // Refusals: writing over an input, a bad --sr-tile, a model that is not RealESRNet.
  rc = run(kGpen + " sr -s " + model + " " + (dir / "in" / "a.png").string() + " -o " + (dir / "in" / "a.png").string(), &text);
  CHECK(rc != 0);
  CHECK(text.find("refusing to overwrite an input") != std::string::npos);
  rc = run(kGpen + " sr -s " + model + " " + (dir / "in" / "a.png").string() + " -o " + (dir / "x.png").string() +
               " --sr-tile big",
           &text);
  CHECK(rc != 0);
  CHECK(text.find("--sr-tile big") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "x.png"));
  rc = run(kGpen + " info " + model, &text);
  CHECK(rc == 0);
  CHECK(text.find("realesrnet") != std::string::npos);

  // restore --sr: the output has the SR size and the report the SR entry (the composite itself
  // is checked against the official flow in test_sr_pipeline).
  const std::string gpen = (dir / "g.gpw").string(), det = (dir / "d.gpw").string();
  const std::string retina = std::string(GPEN_SHARED_DIR) + "/models/retinaface-mobilenet0.25.pth";
  if (fs::exists(retina)) {
    conv::convert(std::string(GPEN_FIXTURE_DIR) + "/gpen/s64/checkpoint.pth", gpen);
    conv::convert(retina, det);
    rc = run(kGpen + " --threads 1 restore -m " + gpen + " -d " + det + " " + (dir / "in" / "a.png").string() + " -o " +
                 (dir / "r.png").string() + " --sr " + model + " --sr-tile 0 --report " + (dir / "rr.json").string(),
             &text);
    CHECK(rc == 0);
    const Image rimg = read_image((dir / "r.png").string());
    CHECK(rimg.width == 66);
    CHECK(rimg.height == 42);
    std::ifstream rr(dir / "rr.json");
    const nlohmann::json rj = nlohmann::json::parse(rr);
    CHECK(rj["images"][0]["sr"]["tile_reason"].get<std::string>().find("untiled") != std::string::npos);
    CHECK(rj["images"][0]["sr"]["output"] == nlohmann::json::array({66, 42}));
  }
  fs::remove_all(dir);
}
