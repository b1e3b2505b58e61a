#pragma once
// What the CodeFormer tests share: the fixture's checkpoint, rebuilt here because CodeFormer's
// fixed VQGAN makes it ~300 MB. Its weights are the function of tensor name and element index
// that tests/reference/make_codeformer_fixtures.py gives the official network (its docstring has
// the rule); written as a safetensors file in the official layout (conv::codeformer_layout) into
// a per-process temporary folder, and converted to .gpw there once.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "converter/layouts.h"
#include "engine/photo/npy.h"
#include "tests/test_paths.h"

namespace gpen_test {

inline std::string codeformer_dir() { return fixture_dir() + "/codeformer/"; }

inline nlohmann::json codeformer_manifest() {
  std::ifstream f(codeformer_dir() + "manifest.json");
  REQUIRE(f.good());
  return nlohmann::json::parse(f);
}

inline std::filesystem::path codeformer_temp_dir() {
  namespace fs = std::filesystem;
  fs::path d = fs::temp_directory_path() / ("gpen_test_codeformer_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// The checkpoint and the converted file go when the test process ends.
struct RemoveCodeformerTempDir {
  ~RemoveCodeformerTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(
        std::filesystem::temp_directory_path() / ("gpen_test_codeformer_" + std::to_string(::getpid())), ec);
  }
};
inline RemoveCodeformerTempDir remove_codeformer_temp_dir;

// The fixture's configuration (manifest.json "config", the official constructor's arguments).
inline gpen::conv::CodeformerConfig codeformer_fixture_config() {
  const nlohmann::json m = codeformer_manifest()["config"];
  gpen::conv::CodeformerConfig c;
  c.dim_embd = m["dim_embd"];
  c.n_head = m["n_head"];
  c.n_layers = m["n_layers"];
  c.codebook_size = m["codebook_size"];
  c.connect_list.clear();
  for (const auto& s : m["connect_list"]) c.connect_list.push_back(std::stoi(s.get<std::string>()));
  return c;
}

// Element i of tensor `name`: make_codeformer_fixtures.py's uniform() times its scale plus its
// offset. The scales are powers of two, so the float products are exact.
struct CodeformerWeightRule {
  uint64_t base;
  float scale, offset;
  CodeformerWeightRule(const std::string& name, const std::vector<int64_t>& shape, uint64_t seed) {
    constexpr uint64_t G = 0x9E3779B97F4A7C15ull;
    uint64_t h = 0xCBF29CE484222325ull;
    for (unsigned char ch : name) h = (h ^ ch) * 0x100000001B3ull;
    base = h ^ (seed * G);
    offset = 0.0f;
    if (name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0) {
      scale = 0.0625f;
    } else if (shape.size() == 1) {
      scale = 0.125f;
      offset = 1.0f;
    } else {
      int64_t fan_in = 1;
      for (size_t d = 1; d < shape.size(); ++d) fan_in *= shape[d];
      scale = static_cast<float>(std::exp2(std::floor(std::log2(std::sqrt(3.0 / static_cast<double>(fan_in))) + 0.5)));
    }
  }
  float operator()(uint64_t i) const {
    uint64_t z = base + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const float u = static_cast<float>(z >> 40) * 0x1p-23f - 1.0f;
    return u * scale + offset;
  }
};

// Writes a safetensors checkpoint of `layout` to `path`, every weight by the rule above keyed by
// the tensor's name without `strip_prefix`, leaving out the tensor named `skip` when not empty.
inline void write_rule_checkpoint(const std::string& path, const std::vector<gpen::conv::TensorSpec>& layout,
                                  uint64_t seed, const std::string& skip = "", const std::string& strip_prefix = "") {
  nlohmann::json h = nlohmann::json::object();
  uint64_t off = 0;
  for (const auto& t : layout) {
    if (t.name == skip) continue;
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    h[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {off, off + static_cast<uint64_t>(n) * 4}}};
    off += static_cast<uint64_t>(n) * 4;
  }
  std::string text = h.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream f(path, std::ios::binary);
  const uint64_t hn = text.size();
  f.write(reinterpret_cast<const char*>(&hn), 8);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  std::vector<float> buf;
  for (const auto& t : layout) {
    if (t.name == skip) continue;
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    const std::string key = t.name.compare(0, strip_prefix.size(), strip_prefix) == 0 ? t.name.substr(strip_prefix.size()) : t.name;
    const CodeformerWeightRule rule(key, t.shape, seed);
    buf.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) buf[static_cast<size_t>(i)] = rule(static_cast<uint64_t>(i));
    f.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size() * 4));
  }
  REQUIRE(f.good());
}

// The checkpoint of configuration c (official layout, flat names).
inline void write_codeformer_checkpoint(const std::string& path, const gpen::conv::CodeformerConfig& c, uint64_t seed,
                                        const std::string& skip = "") {
  write_rule_checkpoint(path, gpen::conv::codeformer_layout(c), seed, skip);
}

// The fixture's checkpoint converted to .gpw (once per process); its path.
inline std::string converted_codeformer_fixture() {
  static const std::string gpw = [] {
    const auto d = codeformer_temp_dir();
    const std::string st = (d / "codeformer_fixture.safetensors").string();
    write_codeformer_checkpoint(st, codeformer_fixture_config(), codeformer_manifest()["seed"].get<uint64_t>());
    const std::string out = (d / "codeformer_fixture.gpw").string();
    gpen::conv::convert(st, out);
    std::filesystem::remove(st);
    return out;
  }();
  return gpw;
}

// The first `faces` of the fixture's faces (CodeFormer's, RestoreFormer's too) as the network's
// input: (rgb / 255 - 0.5) / 0.5 in float, as the official scripts.
inline std::vector<float> codeformer_fixture_input(int64_t faces) {
  const gpen::npy::Array rgb = gpen::npy::load(codeformer_dir() + "input.npy");
  REQUIRE(rgb.shape == std::vector<int64_t>{2, 512, 512, 3});
  REQUIRE(faces >= 1);
  REQUIRE(faces <= rgb.shape[0]);
  std::vector<float> x(static_cast<size_t>(faces * 512 * 512 * 3));
  const uint8_t* p = rgb.data<uint8_t>();
  for (size_t i = 0; i < x.size(); ++i) x[i] = (static_cast<float>(p[i]) / 255.0f - 0.5f) / 0.5f;
  return x;
}

// A transformer restorer's run on the first faces of the fixture against the official network.
struct OfficialDiff {
  size_t codes_differ = 0;  // positions whose code is not the official one
  size_t not_finite = 0;    // sampled output values that are not finite
  double worst = 0;         // max abs difference on the sampled pixels
};

// y: [faces, 512, 512, 3] and idx: [faces, 256], against the official indices (.npy [2, 16, 16])
// and output (.npy [2, 128, 128, 3]: rows 1::4, columns 2::4 of the official output).
inline OfficialDiff compare_with_official(const std::vector<float>& y, const std::vector<int32_t>& idx, int64_t faces,
                                          const std::string& indices_npy, const std::string& output_npy) {
  OfficialDiff d;
  const gpen::npy::Array want_idx = gpen::npy::load(indices_npy);
  REQUIRE(want_idx.numel() >= faces * 256);
  REQUIRE(idx.size() == static_cast<size_t>(faces * 256));
  for (size_t i = 0; i < idx.size(); ++i) d.codes_differ += idx[i] != want_idx.data<int32_t>()[i];
  const gpen::npy::Array want = gpen::npy::load(output_npy);
  REQUIRE(want.shape == std::vector<int64_t>{2, 128, 128, 3});
  REQUIRE(y.size() == static_cast<size_t>(faces * 512 * 512 * 3));
  const float* r = want.data<float>();
  for (int64_t n = 0; n < faces; ++n)
    for (int64_t i = 0; i < 128; ++i)
      for (int64_t j = 0; j < 128; ++j)
        for (int64_t c = 0; c < 3; ++c) {
          const float got = y[static_cast<size_t>(((n * 512 + 4 * i + 1) * 512 + 4 * j + 2) * 3 + c)];
          d.not_finite += !std::isfinite(got);
          d.worst = std::max(d.worst, std::abs(static_cast<double>(got) - r[((n * 128 + i) * 128 + j) * 3 + c]));
        }
  return d;
}

}  // namespace gpen_test
