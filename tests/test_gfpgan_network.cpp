// GFPGANv1Clean on the engine against the official network: the random-weight checkpoints of
// tests/reference/make_gfpgan_fixtures.py converted to .gpw, the raw network run on the CPU in
// fp32 on the fixtures' two inputs (a face crop and noise) and compared with the official output
// (randomize_noise=False) and style code. s64: different_w and SFT on half the channels; s32: one
// shared style code and SFT on all of them. Float rounding alone moves the official output by
// ~1e-6 (manifest.json's f64_maxabs_diff); the bound is 1e-4. And `gpen plan --arch gfpgan`.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "converter/checkpoint.h"
#include "converter/convert.h"
#include "engine/core/error.h"
#include "engine/models/gfpgan.h"
#include "engine/runtime/backend.h"
#include "tests/converter_fixtures.h"
#include "tests/gfpgan_fixture.h"
#include "tests/run_command.h"
#include "tests/test_paths.h"
#include "weights/gpw.h"

using namespace gpen;
namespace fs = std::filesystem;

using gpen_test::convert_gfpgan_fixture;
using gpen_test::run_gfpgan_fixture;

TEST_CASE("GFPGANv1Clean s64 (different_w, sft_half) matches the official network on the CPU") {
  auto backend = make_cpu_backend();
  const auto r = run_gfpgan_fixture("s64", *backend);
  MESSAGE("s64: max abs diff output " << r.output << ", style code " << r.style);
  CHECK(r.style <= 1e-4);
  CHECK(r.output <= 1e-4);
}

TEST_CASE("GFPGANv1Clean s32 (one style code, SFT on all channels) matches the official network on the CPU") {
  auto backend = make_cpu_backend();
  const auto r = run_gfpgan_fixture("s32", *backend);
  MESSAGE("s32: max abs diff output " << r.output << ", style code " << r.style);
  CHECK(r.style <= 1e-4);
  CHECK(r.output <= 1e-4);
}

TEST_CASE("GFPGAN's memory plan puts every intermediate in one arena, smaller than all of them") {
  auto backend = make_cpu_backend();
  GfpganModel m(convert_gfpgan_fixture("s64"), *backend);
  const MemoryPlan& p = m.plan_for(2);
  CHECK(p.arena_bytes > 0);
  CHECK(p.arena_bytes < p.naive_bytes);
  CHECK(p.inplace_count > 0);  // the StyleConv epilogues and SFTs run in place
}

TEST_CASE("GfpganModel refuses a .gpw of another model and the graph inconsistent configurations") {
  auto backend = make_cpu_backend();
  auto ck = conv::Checkpoint::open(gpen_test::fixture_dir() + "/checkpoints/gpen_s64.zip.pth");
  const fs::path gpw = gpen_test::gfpgan_temp_dir() / "gpen_s64.gpw";
  conv::convert(*ck, gpw.string());
  const std::string e = gpen_test::error_of([&] { GfpganModel m(gpw.string(), *backend); });
  CHECK(e.find("not GFPGAN") != std::string::npos);
  CHECK(e.find(gpw.string()) != std::string::npos);
  GfpganNetConfig c;
  c.out_size = 48;
  CHECK_THROWS_AS(build_gfpgan_graph(c), Error);
  // 3 decoder channels at 4..32 against int(1.5) = 1 in the U-Net: no SFT split fits.
  c.out_size = 8;
  c.narrow = 3.0 / 512;
  CHECK_THROWS_AS(build_gfpgan_graph(c), Error);
  c.sft_half = false;
  CHECK_THROWS_AS(build_gfpgan_graph(c), Error);
}

TEST_CASE("gpen plan --arch gfpgan reports the plan of a size and of a converted model") {
  std::string out;
  const std::string gpen = gpen_test::binary_dir() + "/gpen";
  REQUIRE(gpen_test::run(gpen + " plan --arch gfpgan --size 64 --batch 2 --json", &out) == 0);
  const auto j = nlohmann::json::parse(out);
  CHECK(j["arch"] == "gfpgan");
  CHECK(j["size"] == 64);
  CHECK(j["gflop"].get<double>() > 0);
  CHECK(j["arena_bytes"].get<size_t>() >= j["lower_bound_bytes"].get<size_t>());
  REQUIRE(gpen_test::run(gpen + " plan --arch gfpgan -m " + convert_gfpgan_fixture("s32") + " --json", &out) == 0);
  const auto k = nlohmann::json::parse(out);
  CHECK(k["size"] == 32);
  CHECK(k["arena_bytes"].get<size_t>() > 0);
  // --batches: one plan per batch, each the one --batch gives; the weights shared, the arena grows.
  REQUIRE(gpen_test::run(gpen + " plan --arch gfpgan --size 64 --batches 1,2 --json", &out) == 0);
  const auto s = nlohmann::json::parse(out);
  REQUIRE(s["batches"].size() == 2);
  CHECK(s["batches"][1]["batch"] == 2);
  CHECK(s["batches"][1]["arena_bytes"] == j["arena_bytes"]);
  CHECK(s["batches"][1]["weights_bytes"] == s["batches"][0]["weights_bytes"]);
  CHECK(s["batches"][1]["arena_bytes"].get<size_t>() > s["batches"][0]["arena_bytes"].get<size_t>());
}

TEST_CASE("GFPGAN in 16 bits: planned on every device, run on a device only") {
  std::string out;
  const std::string gpen = gpen_test::binary_dir() + "/gpen";
  // --precisions: one row per batch and precision; the fp16 graph declares every weight and
  // activation in 16 bits, so its weights are exactly half the fp32 ones and its arena about half.
  for (const std::string device : {"cpu", "cuda"}) {
    CAPTURE(device);
    const int rc = gpen_test::run(
        gpen + " plan --arch gfpgan --size 64 --batches 1,2 --precisions fp32,fp16 --device " + device + " --json", &out);
    if (device == "cuda" && rc != 0) continue;  // a build without CUDA has no cuda workspace figures
    REQUIRE(rc == 0);
    const auto j = nlohmann::json::parse(out);
    REQUIRE(j["batches"].size() == 4);
    for (int i = 0; i < 4; i += 2) {
      const auto& f32 = j["batches"][i];
      const auto& f16 = j["batches"][i + 1];
      CHECK(f32["precision"] == "fp32");
      CHECK(f16["precision"] == "fp16");
      CHECK(f16["batch"] == f32["batch"]);
      CHECK(2 * f16["weights_bytes"].get<size_t>() == f32["weights_bytes"].get<size_t>());
      const double arena = f16["arena_bytes"].get<double>() / f32["arena_bytes"].get<double>();
      MESSAGE("batch " << f32["batch"] << ": fp16 arena / fp32 arena " << arena);
      CHECK(arena > 0.45);
      CHECK(arena < 0.55);
    }
  }
  // One precision without --batches: the single report names it.
  REQUIRE(gpen_test::run(gpen + " plan --arch gfpgan --size 64 --precision fp16 --json", &out) == 0);
  CHECK(nlohmann::json::parse(out)["precision"] == "fp16");

  // The CPU backend runs fp32 only.
  auto cpu = make_cpu_backend();
  CHECK_THROWS_WITH_AS(GfpganModel(convert_gfpgan_fixture("s32"), *cpu, DType::f16),
                       "the CPU backend runs GFPGAN in fp32 only (precision fp16 asked)", Error);
}
