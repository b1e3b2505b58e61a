// Official layouts: GPEN for any configuration and RetinaFace for both backbones, checked against
// the published checkpoint_layouts.json; recognition and configuration inference from shapes;
// error messages naming the first missing or misshaped tensor.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "converter/layouts.h"
#include "tests/layout_shapes.h"
#include "engine/core/error.h"
#include "tests/converter_fixtures.h"

using namespace gpen;
using namespace gpen::conv;
using gpen_test::error_of;
using gpen_test::shapes_of;

namespace {

nlohmann::json official() {
  std::ifstream f(GPEN_SHARED_DIR "/reference/checkpoint_layouts.json");
  if (!f.good()) return nullptr;
  return nlohmann::json::parse(f);
}

void check_same(const std::vector<TensorSpec>& mine, const nlohmann::json& tensors) {
  REQUIRE(mine.size() == tensors.size());
  for (size_t i = 0; i < mine.size(); ++i) {
    CAPTURE(i);
    CHECK(mine[i].name == tensors[i][0].get<std::string>());
    CHECK(mine[i].shape == tensors[i][1].get<std::vector<int64_t>>());
    CHECK(mine[i].integer == (tensors[i][2] == "int64"));
    bool buffer = mine[i].name.size() > 7 && mine[i].name.compare(mine[i].name.size() - 7, 7, ".kernel") == 0;
    CHECK(mine[i].optional == (buffer || mine[i].integer));
  }
}

}  // namespace

TEST_CASE("layouts: the three official GPEN configurations match checkpoint_layouts.json") {
  auto j = official();
  if (j.is_null()) {
    MESSAGE("skipped: checkpoint_layouts.json is absent");
    return;
  }
  for (const char* name : {"GPEN-BFR-256", "GPEN-BFR-512", "GPEN-BFR-1024"}) {
    CAPTURE(name);
    const auto& e = j[name];
    GpenConfig c;
    c.size = e["config"]["size"];
    c.channel_multiplier = e["config"]["channel_multiplier"].get<double>();
    c.narrow = e["config"]["narrow"].get<double>();
    c.style_dim = e["config"]["style_dim"];
    c.n_mlp = e["config"]["n_mlp"];
    auto layout = gpen_layout(c);
    check_same(layout, e["tensors"]);
    // Recognised back from the shapes alone.
    ShapeMap shapes;
    for (const auto& t : e["tensors"]) shapes[t[0]] = t[1].get<std::vector<int64_t>>();
    Recognition r = recognize(shapes);
    CHECK(r.arch == Arch::gpen);
    CHECK(r.gpen.size == c.size);
    CHECK(r.gpen.channel_multiplier == c.channel_multiplier);
    CHECK(r.gpen.narrow == c.narrow);
    CHECK(r.config["size"] == c.size);
    CHECK(validate_layout(r.layout, shapes).empty());
  }
  // Parameter counts quoted in gpen-semantics.md: 18.9 M and 71.0 M.
  auto count = [](const std::vector<TensorSpec>& l) {
    int64_t n = 0;
    for (const auto& s : l) {
      int64_t k = 1;
      for (int64_t d : s.shape) k *= d;
      if (!s.optional) n += k;
    }
    return n;
  };
  GpenConfig c256{256, 1, 0.5};
  GpenConfig c512{512, 2, 1};
  CHECK((count(gpen_layout(c256)) + 50000) / 100000 == 189);
  CHECK((count(gpen_layout(c512)) + 50000) / 100000 == 710);
}

TEST_CASE("layouts: both RetinaFace backbones match checkpoint_layouts.json") {
  auto j = official();
  if (j.is_null()) {
    MESSAGE("skipped: checkpoint_layouts.json is absent");
    return;
  }
  struct Case {
    const char* key;
    RetinaBackbone b;
  } cases[] = {{"RetinaFace-R50", RetinaBackbone::resnet50}, {"RetinaFace-mobilenet0.25", RetinaBackbone::mobilenet025}};
  for (const auto& c : cases) {
    CAPTURE(c.key);
    check_same(retinaface_layout(c.b), j[c.key]["tensors"]);
    ShapeMap shapes;
    for (const auto& t : j[c.key]["tensors"]) shapes[t[0]] = t[1].get<std::vector<int64_t>>();
    Recognition r = recognize(shapes);
    CHECK(r.arch == Arch::retinaface);
    CHECK(r.backbone == c.b);
    CHECK(r.config["in_channel"] == j[c.key]["config"]["in_channel"]);
    CHECK(r.config["out_channel"] == j[c.key]["config"]["out_channel"]);
    CHECK(validate_layout(r.layout, shapes).empty());
  }
  CHECK(retinaface_units(RetinaBackbone::mobilenet025).size() == 27 + 5 + 15 + 9);
  CHECK(retinaface_units(RetinaBackbone::resnet50).size() == 1 + 16 * 3 + 4 + 5 + 15 + 9);
}

TEST_CASE("layouts: any GPEN configuration round-trips through recognition") {
  for (int size = 16; size <= 2048; size *= 2)
    for (double cm : {1.0, 2.0, 4.0})
      for (double narrow : {0.25, 0.5, 1.0, 0.3}) {
        CAPTURE(size);
        CAPTURE(cm);
        CAPTURE(narrow);
        GpenConfig c{size, cm, narrow, 512, 8};
        auto layout = gpen_layout(c);
        ShapeMap shapes = shapes_of(layout);
        Recognition r = recognize(shapes);
        REQUIRE(r.arch == Arch::gpen);
        CHECK(r.gpen.size == size);
        // The same tensors and shapes, whatever representation of cm/narrow was inferred.
        REQUIRE(r.layout.size() == layout.size());
        for (size_t i = 0; i < layout.size(); ++i) CHECK(r.layout[i].shape == layout[i].shape);
        if (narrow != 0.3) {
          CHECK(r.gpen.narrow == narrow);
          if (size >= 64) CHECK(r.gpen.channel_multiplier == cm);
        }
        CHECK(validate_layout(r.layout, shapes).empty());
      }
  // Small models, other mapping networks.
  GpenConfig tiny{64, 1, 1.0 / 64, 8, 2};
  Recognition r = recognize(shapes_of(gpen_layout(tiny)));
  CHECK(r.gpen.style_dim == 8);
  CHECK(r.gpen.n_mlp == 2);
  CHECK(r.gpen.channels(64) == 4);
  CHECK(r.config["narrow"].get<double>() == 1.0 / 64);
}

TEST_CASE("layouts: configuration checks") {
  CHECK(error_of([] { gpen_layout(GpenConfig{48, 2, 1}); }).find("not a power of two") != std::string::npos);
  CHECK(error_of([] { gpen_layout(GpenConfig{4096, 2, 1}); }).find("not a power of two") != std::string::npos);
  CHECK(error_of([] { gpen_layout(GpenConfig{512, 2, 0.001}); }).find("no channels") != std::string::npos);
  CHECK(error_of([] { gpen_layout(GpenConfig{512, 0, 1}); }).find("channel_multiplier") != std::string::npos);
  auto c = GpenConfig::from_json({{"size", 256}, {"channel_multiplier", 1}, {"narrow", 0.5}});
  CHECK(c.size == 256);
  CHECK(c.style_dim == 512);
  CHECK(error_of([] { GpenConfig::from_json({{"size", 256}}); }).find("GPEN config") != std::string::npos);
  CHECK(parse_backbone("resnet50") == RetinaBackbone::resnet50);
  CHECK_THROWS_AS(parse_backbone("vgg"), Error);
  CHECK(parse_arch("auto") == Arch::unknown);
  CHECK_THROWS_AS(parse_arch("stylegan"), Error);
}

TEST_CASE("layouts: wrong or incomplete state dicts name the first bad tensor") {
  GpenConfig c{256, 1, 0.5};
  auto layout = gpen_layout(c);
  ShapeMap shapes = shapes_of(layout);
  {
    ShapeMap s = shapes;
    s.erase("generator.convs.3.noise.weight");
    s.erase("ecd2.0.2.bias");
    CHECK(error_of([&] { validate_layout(layout, s); }) ==
          "missing tensor 'generator.convs.3.noise.weight' (expected shape [1])");
  }
  {
    ShapeMap s = shapes;
    s["generator.to_rgbs.2.conv.weight"] = {1, 3, 256, 1, 1};
    CHECK(error_of([&] { validate_layout(layout, s); }) ==
          "tensor 'generator.to_rgbs.2.conv.weight' has shape [1, 3, 256, 1, 1], expected [1, 3, 512, 1, 1]");
  }
  {
    // Buffers may be absent; extra tensors are reported, not fatal.
    ShapeMap s = shapes;
    s.erase("generator.convs.0.conv.blur.kernel");
    s["generator.noises.noise_0"] = {1, 1, 4, 4};
    auto extra = validate_layout(layout, s);
    REQUIRE(extra.size() == 1);
    CHECK(extra[0] == "generator.noises.noise_0");
  }
  {
    // A missing tensor the configuration is inferred from.
    ShapeMap s = shapes;
    s.erase("generator.input.input");
    CHECK(error_of([&] { recognize(s); }).find("generator.input.input") != std::string::npos);
  }
  auto mnet = shapes_of(retinaface_layout(RetinaBackbone::mobilenet025));
  mnet.erase("body.stage2.3.4.running_mean");
  CHECK(error_of([&] { validate_layout(retinaface_layout(RetinaBackbone::mobilenet025), mnet); })
            .find("body.stage2.3.4.running_mean") != std::string::npos);
  // BatchNorm counters are ignored whatever their shape or presence.
  auto r50 = shapes_of(retinaface_layout(RetinaBackbone::resnet50));
  r50.erase("body.bn1.num_batches_tracked");
  r50["body.layer1.0.bn1.num_batches_tracked"] = {1};
  CHECK(validate_layout(retinaface_layout(RetinaBackbone::resnet50), r50).empty());
  // Not a known model, both models, or forced to the wrong one.
  CHECK(error_of([] { recognize(ShapeMap{{"fc.weight", {10, 5}}}); }).find("not a GPEN or RetinaFace") !=
        std::string::npos);
  ShapeMap both = shapes;
  both["ClassHead.0.conv1x1.weight"] = {4, 64, 1, 1};
  CHECK(error_of([&] { recognize(both); }).find("ambiguous") != std::string::npos);
  CHECK(error_of([&] { recognize(shapes, Arch::retinaface); }).find("backbone not recognised") != std::string::npos);
  CHECK(error_of([&] { recognize(shapes_of(retinaface_layout(RetinaBackbone::resnet50)), Arch::gpen); })
            .find("lacks") != std::string::npos);
}
