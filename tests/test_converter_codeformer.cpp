// CodeFormer layouts and recognition: the released model's layout against the official class's
// state dict (tests/fixtures/codeformer/layout_official.json: names, shapes, order, 94,112,707
// parameters), the configuration inferred from shapes (reduced ones too), the header written by
// the converter, and refusals naming the tensor at fault. The conversion of a whole checkpoint and
// its tensors' layouts: tests/test_codeformer_network.cpp.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "converter/convert.h"
#include "converter/layouts.h"
#include "tests/layout_shapes.h"
#include "engine/core/error.h"
#include "tests/converter_fixtures.h"
#include "tests/test_paths.h"

using namespace gpen;
using namespace gpen::conv;
using gpen_test::error_of;
using gpen_test::shapes_of;
namespace fs = std::filesystem;

namespace {

nlohmann::json official_layout() {
  std::ifstream f(gpen_test::fixture_dir() + "/codeformer/layout_official.json");
  REQUIRE_MESSAGE(f.good(), "missing fixture layout_official.json (run tests/reference/make_codeformer_fixtures.py)");
  return nlohmann::json::parse(f);
}

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("gpen_test_cf_convert_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// A safetensors file of zeros with these tensors (f32).
void write_zeros(const fs::path& p, const std::vector<TensorSpec>& ts) {
  nlohmann::json h = nlohmann::json::object();
  uint64_t off = 0;
  for (const auto& t : ts) {
    uint64_t n = 4;
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    h[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {off, off + n}}};
    off += n;
  }
  std::string text = h.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream f(p, std::ios::binary);
  const uint64_t hn = text.size();
  f.write(reinterpret_cast<const char*>(&hn), 8);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  const std::string zeros(off, '\0');
  f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
}

}  // namespace

TEST_CASE("codeformer_layout of the released configuration is the official state dict, in order") {
  const nlohmann::json j = official_layout();
  const std::vector<TensorSpec> mine = codeformer_layout(CodeformerConfig{});
  REQUIRE(mine.size() == j["tensors"].size());
  int64_t params = 0;
  for (size_t i = 0; i < mine.size(); ++i) {
    CAPTURE(i);
    CHECK(mine[i].name == j["tensors"][i][0].get<std::string>());
    CHECK(mine[i].shape == j["tensors"][i][1].get<std::vector<int64_t>>());
    int64_t n = 1;
    for (int64_t d : mine[i].shape) n *= d;
    params += n;
  }
  CHECK(params == j["parameters"].get<int64_t>());
  CHECK(params == 94112707);
}

TEST_CASE("CodeFormer is recognised from its tensor names, its configuration from the shapes") {
  const nlohmann::json j = official_layout();
  ShapeMap m;
  for (const auto& t : j["tensors"]) m[t[0].get<std::string>()] = t[1].get<std::vector<int64_t>>();
  Recognition r = recognize(m);
  CHECK(r.arch == Arch::codeformer);
  CHECK(std::string(arch_name(r.arch)) == "codeformer");
  CHECK(parse_arch("codeformer") == Arch::codeformer);
  CHECK(r.config["dim_embd"] == 512);
  CHECK(r.config["n_head"] == 8);
  CHECK(r.config["n_layers"] == 9);
  CHECK(r.config["dim_mlp"] == 1024);
  CHECK(r.config["codebook_size"] == 1024);
  CHECK(r.config["connect_list"] == nlohmann::json::array({32, 64, 128, 256}));
  CHECK(r.config["resolution"] == 512);
  CHECK(validate_layout(r.layout, m).empty());
  CHECK(CodeformerConfig::from_json(r.config).n_layers == 9);
  CHECK(codeformer_model_name(r.codeformer) == "CodeFormer 512");

  // A reduced model, as the network test's: every dimension but the VQGAN's from the shapes.
  CodeformerConfig small;
  small.dim_embd = 64;
  small.n_layers = 2;
  small.codebook_size = 32;
  small.connect_list = {16, 512};
  Recognition s = recognize(shapes_of(codeformer_layout(small)), Arch::codeformer);
  CHECK(s.codeformer.dim_embd == 64);
  CHECK(s.codeformer.n_layers == 2);
  CHECK(s.codeformer.codebook_size == 32);
  CHECK(s.codeformer.connect_list == std::vector<int>{16, 512});
}

TEST_CASE("an incomplete CodeFormer checkpoint is refused, naming the missing tensor") {
  const nlohmann::json j = official_layout();
  ShapeMap m;
  for (const auto& t : j["tensors"]) m[t[0].get<std::string>()] = t[1].get<std::vector<int64_t>>();
  // A tensor inside a layer or fuse block leaves the configuration as it is: reported missing,
  // not read as a smaller model.
  for (const char* gone : {"fuse_convs_dict.64.encode_enc.norm1.weight", "ft_layers.8.self_attn.in_proj_weight",
                           "generator.blocks.17.conv.bias", "encoder.blocks.21.q.weight"}) {
    CAPTURE(gone);
    ShapeMap less = m;
    less.erase(gone);
    Recognition r = recognize(less);
    CHECK(r.config["n_layers"] == 9);
    CHECK(r.config["connect_list"].size() == 4);
    const std::string e = error_of([&] { validate_layout(r.layout, less); });
    CHECK(e.find(gone) != std::string::npos);
  }
  // Through the converter: a file with the recognisable tensors only.
  CodeformerConfig tiny;
  tiny.dim_embd = 16;
  tiny.n_layers = 0;
  tiny.codebook_size = 4;
  tiny.connect_list = {};
  std::vector<TensorSpec> some;
  for (const auto& t : codeformer_layout(tiny))
    if (t.name == "position_emb" || t.name == "quantize.embedding.weight" || t.name.rfind("idx_pred_layer.", 0) == 0 ||
        t.name.rfind("feat_emb.", 0) == 0)
      some.push_back(t);
  const fs::path p = temp_dir() / "partial.safetensors";
  write_zeros(p, some);
  const std::string e = error_of([&] { convert(p.string(), (temp_dir() / "partial.gpw").string()); });
  CHECK(e.find("CodeFormer") != std::string::npos);
  CHECK(e.find("encoder.blocks.0.weight") != std::string::npos);
  CHECK(e.find(p.string()) != std::string::npos);
  // --arch codeformer on another model's checkpoint names what it lacks.
  const std::string g = error_of([&] {
    ConvertOptions o;
    o.arch = Arch::codeformer;
    convert(gpen_test::fixture_dir() + "/checkpoints/gpen_s64.zip.pth", (temp_dir() / "gpen.gpw").string(), o);
  });
  CHECK(g.find("position_emb") != std::string::npos);
  fs::remove_all(temp_dir());
}

TEST_CASE("CodeformerConfig refuses impossible values and damaged headers") {
  CodeformerConfig c;
  c.dim_embd = 100;
  CHECK_THROWS_AS(c.check(), Error);
  c = CodeformerConfig{};
  c.connect_list = {64, 32};
  CHECK_THROWS_AS(c.check(), Error);
  c = CodeformerConfig{};
  c.connect_list = {48};
  CHECK_THROWS_AS(c.check(), Error);
  nlohmann::json j = CodeformerConfig{}.to_json();
  j.erase("codebook_size");
  CHECK_THROWS_AS(CodeformerConfig::from_json(j), Error);
  j = CodeformerConfig{}.to_json();
  j["resolution"] = 256;
  CHECK_THROWS_AS(CodeformerConfig::from_json(j), Error);
}
