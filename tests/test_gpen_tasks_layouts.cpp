// GPEN-BFR-2048, FullGenerator_SR (in_size != out_size) and the official task models
// (GPEN-Colorization-1024, GPEN-Inpainting-1024, GPEN-Seg2face-512) in the converter: layouts,
// recognition of in_size and out_size from shapes, refusal of inconsistent files, `gpen info`.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "converter/convert.h"
#include "converter/fetch/fetch_models.h"
#include "converter/layouts.h"
#include "tests/layout_shapes.h"
#include "engine/core/error.h"
#include "test_paths.h"
#include "weights/gpw.h"

using namespace gpen;
using namespace gpen::conv;
using gpen_test::shapes_of;
namespace fs = std::filesystem;

namespace {

std::string error_of(const ShapeMap& m) {
  try {
    Recognition r = recognize(m);
    validate_layout(r.layout, m);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

int64_t params(const std::vector<TensorSpec>& l) {
  int64_t n = 0;
  for (const auto& s : l) {
    int64_t k = 1;
    for (int64_t d : s.shape) k *= d;
    if (!s.optional) n += k;
  }
  return n;
}

}  // namespace

TEST_CASE("tasks layouts: the official task models are FullGenerator layouts of the BFR models") {
  // face_colorization.py / face_inpainting.py / segmentation2face.py build FaceGAN with their
  // defaults channel_multiplier=2, narrow=1 and demo.py passes --in_size 1024 / 1024 / 512 and no
  // out_size, so FullGenerator(1024, 2, 1) twice and FullGenerator(512, 2, 1): the same tensors
  // as GPEN-BFR-1024 and GPEN-BFR-512.
  std::ifstream f(gpen_test::shared_dir() + "/reference/checkpoint_layouts.json");
  REQUIRE(f.good());
  auto j = nlohmann::json::parse(f);
  struct Case {
    const char* task;
    int size;
    const char* same_as;
  } cases[] = {{"GPEN-Colorization-1024", 1024, "GPEN-BFR-1024"},
               {"GPEN-Inpainting-1024", 1024, "GPEN-BFR-1024"},
               {"GPEN-Seg2face-512", 512, "GPEN-BFR-512"}};
  for (const auto& c : cases) {
    CAPTURE(c.task);
    GpenConfig cfg{c.size, 2, 1};
    auto layout = gpen_layout(cfg);
    const auto& t = j[c.same_as]["tensors"];
    REQUIRE(layout.size() == t.size());
    for (size_t i = 0; i < layout.size(); ++i) {
      CHECK(layout[i].name == t[i][0].get<std::string>());
      CHECK(layout[i].shape == t[i][1].get<std::vector<int64_t>>());
    }
    Recognition r = recognize(shapes_of(layout));
    CHECK(r.gpen.size == c.size);
    CHECK(!r.gpen.is_sr());
    CHECK(!r.config.contains("out_size"));
  }
}

TEST_CASE("tasks layouts: gpen fetch knows the task models, in the official folder, and their tasks") {
  struct Case {
    const char* name;
    int size;
    const char* task;
  } cases[] = {{"GPEN-Colorization-1024", 1024, "colorize"}, {"GPEN-Inpainting-1024", 1024, "inpaint"},
               {"GPEN-Seg2face-512", 512, "seg2face"}};
  for (const auto& c : cases) {
    CAPTURE(c.name);
    const fetch::ModelInfo* m = fetch::find_model(c.name);
    REQUIRE(m);
    CHECK(m->at_base);
    CHECK(m->supported);
    CHECK(m->expect.gpen_size == c.size);
    CHECK(m->expect.channel_multiplier == 2);
    CHECK(m->expect.narrow == 1);
    CHECK(fetch::model_task(c.name) == c.task);
  }
  CHECK(fetch::model_task("GPEN-BFR-512").empty());
}

TEST_CASE("tasks layouts: GPEN-BFR-2048 (channel multiplier 2, narrow 1) is recognised") {
  GpenConfig c{2048, 2, 1};
  auto layout = gpen_layout(c);
  CHECK(c.channels(2048) == 16);
  CHECK(c.channels(1024) == 32);
  ShapeMap m = shapes_of(layout);
  CHECK(m.at("ecd0.0.0.weight") == std::vector<int64_t>{16, 3, 1, 1});
  CHECK(m.count("ecd9.0.1.weight") == 1);  // 2048 -> 4: ten encoder layers
  CHECK(m.count("ecd10.0.1.weight") == 0);
  CHECK(m.at("generator.to_rgbs.8.conv.weight") == std::vector<int64_t>{1, 3, 32, 1, 1});
  Recognition r = recognize(m);
  CHECK(r.gpen.size == 2048);
  CHECK(r.gpen.channel_multiplier == 2);
  CHECK(r.gpen.narrow == 1);
  CHECK(validate_layout(r.layout, m).empty());
  // The 1024 model plus two 2048 convs, a ToRGB and one more encoder layer (ch 16 and 32): ~90 k more.
  const int64_t p1024 = params(gpen_layout(GpenConfig{1024, 2, 1})), p2048 = params(layout);
  CHECK(p2048 > p1024);
  CHECK(p2048 - p1024 < 200000);
}

TEST_CASE("tasks layouts: FullGenerator_SR layouts round-trip with in_size and out_size") {
  struct Case {
    int in, out;
    double cm, narrow;
  } cases[] = {{32, 64, 1, 1.0 / 64}, {256, 512, 1, 0.5}, {512, 1024, 2, 1}, {64, 256, 2, 0.25}, {16, 2048, 2, 1}};
  for (const auto& k : cases) {
    CAPTURE(k.in);
    CAPTURE(k.out);
    GpenConfig c{k.in, k.cm, k.narrow};
    c.out_size = k.out;
    auto layout = gpen_layout(c);
    ShapeMap m = shapes_of(layout);
    // Encoder of FullGenerator(in): ecd0 maps 3 -> ch(in); decoder of Generator(out).
    CHECK(m.at("ecd0.0.0.weight")[0] == c.channels(k.in));
    int rgbs = 0;
    while (m.count("generator.to_rgbs." + std::to_string(rgbs) + ".conv.weight")) ++rgbs;
    CHECK((4 << rgbs) == k.out);
    Recognition r = recognize(m);
    CHECK(r.gpen.size == k.in);
    CHECK(r.gpen.out_size == k.out);
    CHECK(r.gpen.is_sr());
    CHECK(r.config["size"] == k.in);
    CHECK(r.config["out_size"] == k.out);
    CHECK(validate_layout(r.layout, m).empty());
    GpenConfig back = GpenConfig::from_json(r.config);
    CHECK(back.out_size == k.out);
    CHECK(gpen_layout(back).size() == layout.size());
  }
}

TEST_CASE("tasks layouts: inconsistent FullGenerator_SR files are refused naming the problem") {
  GpenConfig c{64, 1, 1.0 / 16};
  c.out_size = 128;
  ShapeMap m = shapes_of(gpen_layout(c));
  {
    ShapeMap bad = m;  // a noise weight of a StyledConv above in_size (convs.8, .9 are at 128)
    bad.erase("generator.convs.9.noise.weight");
    CHECK(error_of(bad).find("generator.convs.9.noise.weight") != std::string::npos);
  }
  {
    ShapeMap bad = m;  // the first 128x128 conv with 64x64's output channels (16, not 8)
    REQUIRE(m.at("generator.convs.8.conv.weight") == std::vector<int64_t>{1, 8, 32, 3, 3});
    bad["generator.convs.8.conv.weight"] = {1, 16, 32, 3, 3};
    CHECK(error_of(bad).find("generator.convs.8.conv.weight") != std::string::npos);
  }
  {
    // A decoder smaller than its encoder: FullGenerator(64) with its last ToRGB removed.
    ShapeMap bad = shapes_of(gpen_layout(GpenConfig{64, 1, 1.0 / 16}));
    bad.erase("generator.to_rgbs.3.conv.weight");
    CHECK(error_of(bad).find("decoder smaller than its encoder") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(GpenConfig::from_json({{"size", 64}, {"channel_multiplier", 1}, {"narrow", 1}, {"out_size", 48}}),
                       doctest::Contains("out_size 48"), Error);
  CHECK_THROWS_WITH_AS(GpenConfig::from_json({{"size", 64}, {"channel_multiplier", 1}, {"narrow", 1}, {"out_size", 32}}),
                       doctest::Contains("out_size 32"), Error);
}

TEST_CASE("tasks layouts: converting a FullGenerator_SR checkpoint records both sizes") {
  const std::string pth = gpen_test::fixture_dir() + "/gpen_tasks/sr_zero.pth";
  auto ck = Checkpoint::open(pth);
  CheckpointSummary s = summarize(*ck);
  CHECK(s.valid);
  CHECK(s.config["size"] == 32);
  CHECK(s.config["out_size"] == 64);
  CHECK(gpen_model_name(GpenConfig::from_json(s.config)) == "FullGenerator_SR 32 -> 64");
  const std::string gpw = (gpen_test::scratch_path("tasks_layouts_sr.gpw")).string();
  ConvertResult res = convert(pth, gpw);
  CHECK(res.config["out_size"] == 64);
  {
    GpwFile g = GpwFile::open(gpw);
    CHECK(g.config()["size"] == 32);
    CHECK(g.config()["out_size"] == 64);
  }
  fs::remove(gpw);
  // A FullGenerator: the architecture only (the file does not say which task it was trained for).
  auto t = Checkpoint::open(gpen_test::fixture_dir() + "/gpen_tasks/task64.pth");
  CHECK(gpen_model_name(GpenConfig::from_json(summarize(*t).config)) == "FullGenerator 64");
}
