// RestoreFormer++ and RestoreFormer layouts and recognition: the released models' layouts against
// the official class's state dicts (tests/fixtures/restoreformer/layout_official.json: names,
// shapes, order, 73,472,579 parameters for RestoreFormer++), the configuration inferred from the
// shapes with and without the released checkpoint's "vqvae." prefix (a reduced one too), and
// refusals naming the tensor at fault. The conversion of a whole checkpoint and its tensors'
// layouts: tests/test_restoreformer_network.cpp.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "converter/layouts.h"
#include "engine/core/error.h"
#include "tests/converter_fixtures.h"
#include "tests/layout_shapes.h"
#include "tests/test_paths.h"

using namespace gpen;
using namespace gpen::conv;
using gpen_test::error_of;
using gpen_test::shapes_of;

namespace {

nlohmann::json official_layout() {
  std::ifstream f(gpen_test::fixture_dir() + "/restoreformer/layout_official.json");
  REQUIRE_MESSAGE(f.good(), "missing fixture layout_official.json (run tests/reference/make_restoreformer_fixtures.py)");
  return nlohmann::json::parse(f);
}

// The official state dict's shapes, its names under `prefix`.
ShapeMap official_shapes(const nlohmann::json& variant, const std::string& prefix) {
  ShapeMap m;
  for (const auto& t : variant["tensors"]) m[prefix + t[0].get<std::string>()] = t[1].get<std::vector<int64_t>>();
  return m;
}

}  // namespace

TEST_CASE("restoreformer_layout of the released configurations is the official state dict, in order") {
  const nlohmann::json j = official_layout();
  for (const char* variant : {"RestoreFormer++", "RestoreFormer"}) {
    CAPTURE(variant);
    const nlohmann::json& v = j[variant];
    RestoreformerConfig c;
    c.head_size = v["args"]["head_size"];
    c.ex_multi_scale_num = v["args"]["ex_multi_scale_num"];
    const std::vector<TensorSpec> mine = restoreformer_layout(c);
    REQUIRE(mine.size() == v["tensors"].size());
    int64_t params = 0;
    for (size_t i = 0; i < mine.size(); ++i) {
      CAPTURE(i);
      CHECK(mine[i].name == v["tensors"][i][0].get<std::string>());
      CHECK(mine[i].shape == v["tensors"][i][1].get<std::vector<int64_t>>());
      int64_t n = 1;
      for (int64_t d : mine[i].shape) n *= d;
      params += n;
    }
    CHECK(params == v["parameters"].get<int64_t>());
  }
  CHECK(j["RestoreFormer++"]["parameters"] == 73472579);
}

TEST_CASE("RestoreFormer++ and RestoreFormer are recognised from their tensor names, the configuration from the shapes") {
  const nlohmann::json j = official_layout();
  for (const std::string prefix : {"vqvae.", ""}) {
    CAPTURE(prefix);
    const ShapeMap m = official_shapes(j["RestoreFormer++"], prefix);
    const Recognition r = recognize(m);
    CHECK(r.arch == Arch::restoreformer);
    CHECK(std::string(arch_name(r.arch)) == "restoreformer");
    CHECK(r.restoreformer.key_prefix == prefix);
    CHECK(r.config["variant"] == "RestoreFormer++");
    CHECK(r.config["ch"] == 64);
    CHECK(r.config["n_embed"] == 1024);
    CHECK(r.config["embed_dim"] == 256);
    CHECK(r.config["z_channels"] == 256);
    CHECK(r.config["head_size"] == 4);
    CHECK(r.config["ex_multi_scale_num"] == 1);
    CHECK(r.config["resolution"] == 512);
    CHECK(validate_layout(r.layout, m).empty());
    CHECK(restoreformer_model_name(r.restoreformer) == "RestoreFormer++ 512");
    CHECK(RestoreformerConfig::from_json(r.config).head_size == 4);
  }
  CHECK(parse_arch("restoreformer") == Arch::restoreformer);
  // The lightning checkpoint's other modules (the loss's networks) are extras, not a failure.
  ShapeMap extra = official_shapes(j["RestoreFormer++"], "vqvae.");
  extra["loss.discriminator.main.0.weight"] = {64, 3, 4, 4};
  CHECK(validate_layout(recognize(extra).layout, extra) == std::vector<std::string>{"loss.discriminator.main.0.weight"});

  const Recognition v1 = recognize(official_shapes(j["RestoreFormer"], "vqvae."));
  CHECK(v1.config["variant"] == "RestoreFormer");
  CHECK(v1.config["head_size"] == 8);
  CHECK(v1.config["ex_multi_scale_num"] == 0);
  CHECK(restoreformer_model_name(v1.restoreformer) == "RestoreFormer 512");

  // A reduced model, as the network test's: ch and the codebook from the shapes.
  RestoreformerConfig small;
  small.ch = 32;
  small.n_embed = 64;
  small.embed_dim = 32;
  small.key_prefix = "vqvae.";
  const Recognition s = recognize(shapes_of(restoreformer_layout(small)), Arch::restoreformer);
  CHECK(s.restoreformer.ch == 32);
  CHECK(s.restoreformer.n_embed == 64);
  CHECK(s.restoreformer.embed_dim == 32);
  CHECK(s.restoreformer.z_channels == 256);
}

TEST_CASE("an incomplete RestoreFormer++ checkpoint is refused, naming the missing tensor") {
  const ShapeMap m = official_shapes(official_layout()["RestoreFormer++"], "vqvae.");
  for (const char* gone : {"vqvae.decoder.up.4.attn.2.k.bias", "vqvae.encoder.down.3.block.0.nin_shortcut.weight",
                           "vqvae.decoder.up.1.upsample.conv.bias", "vqvae.post_quant_conv.weight"}) {
    CAPTURE(gone);
    ShapeMap less = m;
    less.erase(gone);
    const Recognition r = recognize(less);
    CHECK(r.config["ex_multi_scale_num"] == 1);
    const std::string e = error_of([&] { validate_layout(r.layout, less); });
    CHECK(e.find(gone) != std::string::npos);
  }
  ShapeMap less = m;
  less.erase("vqvae.encoder.conv_in.weight");
  CHECK(error_of([&] { recognize(less); }).find("vqvae.encoder.conv_in.weight") != std::string::npos);
}

TEST_CASE("RestoreformerConfig refuses impossible values and damaged headers") {
  RestoreformerConfig c;
  c.ch = 48;
  CHECK_THROWS_AS(c.check(), Error);
  c = RestoreformerConfig{};
  c.head_size = 3;
  CHECK_THROWS_AS(c.check(), Error);
  c = RestoreformerConfig{};
  c.ex_multi_scale_num = 2;
  CHECK_THROWS_AS(c.check(), Error);
  nlohmann::json j = RestoreformerConfig{}.to_json();
  j.erase("n_embed");
  CHECK_THROWS_AS(RestoreformerConfig::from_json(j), Error);
  j = RestoreformerConfig{}.to_json();
  j["resolution"] = 256;
  CHECK_THROWS_AS(RestoreformerConfig::from_json(j), Error);
  j = RestoreformerConfig{}.to_json();
  j["ch_mult"] = {1, 2, 4, 8};
  CHECK_THROWS_AS(RestoreformerConfig::from_json(j), Error);
}
