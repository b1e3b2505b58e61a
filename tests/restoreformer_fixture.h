#pragma once
// What the RestoreFormer tests share: the checkpoints of tests/reference/make_restoreformer_fixtures.py
// (the released configurations with ch 32, their weights rebuilt from the rule of
// tests/codeformer_fixture.h under the released checkpoint's "vqvae." prefix) converted to .gpw in
// a per-process temporary folder, and one run of RestoreformerModel on the fixture's faces
// compared with the official codes and output.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "converter/layouts.h"
#include "engine/models/restoreformer.h"
#include "tests/codeformer_fixture.h"
#include "tests/test_paths.h"

namespace gpen_test {

inline const std::string kRestoreformerPrefix = "vqvae.";

inline std::string restoreformer_fixture(const std::string& name) { return fixture_dir() + "/restoreformer/" + name; }

inline nlohmann::json restoreformer_manifest() {
  std::ifstream f(restoreformer_fixture("manifest.json"));
  REQUIRE(f.good());
  return nlohmann::json::parse(f);
}

inline std::filesystem::path restoreformer_temp_dir() {
  const std::filesystem::path d = scratch_path("restoreformer");
  std::filesystem::create_directories(d);
  return d;
}

struct RemoveRestoreformerTempDir {
  ~RemoveRestoreformerTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(scratch_path("restoreformer"), ec);
  }
};
inline RemoveRestoreformerTempDir remove_restoreformer_temp_dir;

// The variant's configuration: "rfpp" (RestoreFormer++) or "rf" (RestoreFormer).
inline gpen::conv::RestoreformerConfig restoreformer_fixture_config(const std::string& variant) {
  const nlohmann::json m = restoreformer_manifest()["variants"][variant]["config"];
  gpen::conv::RestoreformerConfig c;
  c.ch = m["ch"];
  c.head_size = m["head_size"];
  c.ex_multi_scale_num = m["ex_multi_scale_num"];
  c.key_prefix = kRestoreformerPrefix;
  return c;
}

// The variant's checkpoint (official layout, the names under the released checkpoint's prefix,
// the weights from the rule of their unprefixed names) converted to .gpw; its path.
inline std::string converted_restoreformer_fixture(const std::string& variant) {
  const std::string st = (restoreformer_temp_dir() / (variant + ".safetensors")).string();
  write_rule_checkpoint(st, gpen::conv::restoreformer_layout(restoreformer_fixture_config(variant)),
                        restoreformer_manifest()["seed"].get<uint64_t>(), "", kRestoreformerPrefix);
  const std::string out = (restoreformer_temp_dir() / (variant + ".gpw")).string();
  gpen::conv::convert(st, out);
  std::filesystem::remove(st);
  return out;
}

// m on the first `faces` of the fixture's faces (CodeFormer's fixture input), in one batch,
// against the variant's official codes and output.
inline OfficialDiff run_restoreformer_fixture(gpen::RestoreformerModel& m, const std::string& variant, int64_t faces) {
  const std::vector<float> x = codeformer_fixture_input(faces);
  std::vector<float> y(static_cast<size_t>(faces * 512 * 512 * 3));
  std::vector<int32_t> idx(static_cast<size_t>(faces * 256));
  m.run(x.data(), static_cast<int>(faces), y.data(), idx.data());
  return compare_with_official(y, idx, faces, restoreformer_fixture("indices_" + variant + ".npy"),
                               restoreformer_fixture("output_" + variant + ".npy"));
}

}  // namespace gpen_test
