// RealESRNet (RRDBNet) layouts: the converter's realesrnet_x1/x2/x4 layouts against the published
// checkpoint_layouts.json (names, shapes, order, parameter counts 9,601,315 / 9,590,947 /
// 9,588,355), recognition from the keys, the configuration from the shapes (scale from
// conv_first's input channels, blocks counted, reduced test models), and refusals naming the
// tensor at fault. The .pth -> .gpw path itself runs in test_sr_reference (PyTorch checkpoints).
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "converter/fetch/fetch_models.h"
#include "converter/layouts.h"
#include "tests/layout_shapes.h"
#include "engine/core/error.h"
#include "tests/converter_fixtures.h"

using namespace gpen;
using namespace gpen::conv;
using gpen_test::error_of;
using gpen_test::shapes_of;

TEST_CASE("realesrnet layouts match the official checkpoints") {
  std::ifstream f(GPEN_SHARED_DIR "/reference/checkpoint_layouts.json");
  if (!f.good()) {
    MESSAGE("skipped: ../shared/reference/checkpoint_layouts.json not found");
    return;
  }
  const nlohmann::json j = nlohmann::json::parse(f);
  const std::pair<int, int64_t> want[] = {{1, 9601315}, {2, 9590947}, {4, 9588355}};
  for (const auto& [scale, params] : want) {
    CAPTURE(scale);
    const auto& e = j.at("realesrnet_x" + std::to_string(scale));
    RealesrnetConfig c;
    c.scale = scale;
    const std::vector<TensorSpec> mine = realesrnet_layout(c);
    const auto& tensors = e.at("tensors");
    REQUIRE(mine.size() == tensors.size());
    int64_t n = 0;
    for (size_t i = 0; i < mine.size(); ++i) {
      CHECK(mine[i].name == tensors[i][0].get<std::string>());
      CHECK(mine[i].shape == tensors[i][1].get<std::vector<int64_t>>());
      int64_t k = 1;
      for (int64_t d : mine[i].shape) k *= d;
      n += k;
    }
    CHECK(n == params);
    CHECK(e.at("config").at("checkpoint_key") == "params_ema");
    // Recognised from the keys alone, the configuration from the shapes.
    const Recognition r = recognize(shapes_of(mine));
    CHECK(r.arch == Arch::realesrnet);
    CHECK(r.realesrnet.scale == scale);
    CHECK(r.realesrnet.num_block == 23);
    CHECK(r.realesrnet.num_feat == 32);
    CHECK(r.realesrnet.num_grow_ch == 32);
    CHECK(r.config.at("scale") == scale);
    CHECK(validate_layout(r.layout, shapes_of(mine)).empty());
    CHECK(std::string(arch_name(r.arch)) == "realesrnet");
  }
}

TEST_CASE("reduced RRDBNet test models are recognised with their block count") {
  RealesrnetConfig c;
  c.scale = 2;
  c.num_block = 2;
  const Recognition r = recognize(shapes_of(realesrnet_layout(c)));
  CHECK(r.realesrnet.num_block == 2);
  CHECK(r.layout.size() == 2 + 2 * 3 * 5 * 2 + 5 * 2);
  CHECK(parse_arch("realesrnet") == Arch::realesrnet);
  CHECK(RealesrnetConfig::from_json(r.config).num_block == 2);
}

TEST_CASE("bad RealESRNet state dicts are refused naming the tensor") {
  RealesrnetConfig c;
  c.scale = 4;
  ShapeMap m = shapes_of(realesrnet_layout(c));
  {
    ShapeMap b = m;
    b["conv_first.weight"] = {32, 6, 3, 3};
    const std::string e = error_of([&] { recognize(b); });
    CHECK(e.find("conv_first.weight") != std::string::npos);
    CHECK(e.find("6 input channels") != std::string::npos);
  }
  {
    ShapeMap b = m;
    b["body.7.rdb2.conv3.weight"] = {32, 95, 3, 3};
    const Recognition r = recognize(b);
    const std::string e = error_of([&] { validate_layout(r.layout, b); });
    CHECK(e.find("body.7.rdb2.conv3.weight") != std::string::npos);
    CHECK(e.find("[32, 96, 3, 3]") != std::string::npos);
  }
  {
    ShapeMap b = m;
    b.erase("conv_hr.bias");
    const Recognition r = recognize(b);
    const std::string e = error_of([&] { validate_layout(r.layout, b); });
    CHECK(e.find("missing tensor 'conv_hr.bias'") != std::string::npos);
  }
  {
    ShapeMap b = m;
    b.erase("body.0.rdb1.conv1.weight");
    CHECK(error_of([&] { recognize(b); }).find("lacks tensor 'body.0.rdb1.conv1.weight'") != std::string::npos);
  }
}

TEST_CASE("gpen fetch knows realesrnet_x1/x2/x4") {
  for (int s : {1, 2, 4}) {
    const auto* m = fetch::find_model("realesrnet_x" + std::to_string(s));
    REQUIRE(m != nullptr);
    CHECK(m->supported);
    CHECK(m->at_base);
    CHECK(m->expect.arch == Arch::realesrnet);
    CHECK(m->expect.sr_scale == s);
    CHECK(fetch::describe(m->expect).find("RealESRNet x" + std::to_string(s)) != std::string::npos);
  }
}
