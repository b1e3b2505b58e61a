// CodeFormer on the engine against the official network: the checkpoint of
// tests/reference/make_codeformer_fixtures.py (its weights rebuilt here from their rule,
// tests/codeformer_fixture.h) converted to .gpw, the raw network run on the CPU in fp32 on two
// degraded aligned faces, batched, at fidelity w 0, 0.5 and 1. The codes picked must be the
// official ones, position for position; the output may differ from the official one by 1e-4 of
// its largest magnitude (float rounding alone moves it by ~1e-6 of it: manifest.json's
// f64_maxabs_diff at w 0), checked on the fixture's sixteenth of the pixels. The converted file's
// layouts and `gpen info` on it in the same case (the checkpoint is written and converted once per
// process); the memory plan and `gpen plan --arch codeformer` apart.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/models/codeformer.h"
#include "engine/plan/memory_plan.h"
#include "engine/photo/npy.h"
#include "engine/runtime/backend.h"
#include "tests/codeformer_fixture.h"
#include "tests/converter_fixtures.h"
#include "tests/run_command.h"
#include "tests/test_paths.h"
#include "weights/gpw.h"

using namespace gpen;
using gpen_test::converted_codeformer_fixture;

namespace {

// The converted file holds the official tensors in the engine's layouts.
void check_converted_layouts(const std::string& gpw) {
  const GpwFile f = GpwFile::open(gpw);
  const uint64_t seed = gpen_test::codeformer_manifest()["seed"].get<uint64_t>();
  CHECK(f.arch() == "codeformer");
  auto at = [&](const std::string& n) {
    const TensorView* v = f.find(n);
    REQUIRE_MESSAGE(v != nullptr, "missing converted tensor " << n);
    REQUIRE(v->dtype == DType::f32);
    return static_cast<const float*>(v->data);
  };
  // A 3x3 conv OIHW [512][256][3][3] -> HWIO: element (o, i, y, x) at ((y * 3 + x) * 256 + i) * 512 + o.
  const std::string conv = "encoder.blocks.16.conv1.weight";
  const gpen_test::CodeformerWeightRule cw(conv, {512, 256, 3, 3}, seed);
  CHECK(f.find(conv)->shape == Shape{3, 3, 256, 512});
  for (int64_t o : {0, 7, 511})
    for (int64_t i : {0, 100, 255})
      for (int64_t k : {0, 4, 8})
        CHECK(at(conv)[(k * 256 + i) * 512 + o] == cw(static_cast<uint64_t>((o * 256 + i) * 9 + k)));
  // An AttnBlock's q, k, v 1x1 convs as the rows of one [3C, C] in-projection.
  const std::string p = "generator.blocks.5";
  CHECK(f.find(p + ".in_proj_weight")->shape == (Shape{3 * 512, 512}));
  CHECK(f.find(p + ".q.weight") == nullptr);
  const char* parts[] = {".q", ".k", ".v"};
  for (int part = 0; part < 3; ++part) {
    const gpen_test::CodeformerWeightRule w(p + parts[part] + ".weight", {512, 512, 1, 1}, seed);
    const gpen_test::CodeformerWeightRule b(p + parts[part] + ".bias", {512}, seed);
    for (int64_t e : {int64_t{0}, int64_t{1234}, int64_t{512 * 512 - 1}})
      CHECK(at(p + ".in_proj_weight")[part * 512 * 512 + e] == w(static_cast<uint64_t>(e)));
    CHECK(at(p + ".in_proj_bias")[part * 512 + 3] == b(3));
  }
  CHECK(f.find("position_emb")->shape == (Shape{1, 256, 128}));
}

}  // namespace

TEST_CASE("CodeFormer converted from the official layout picks the official codes and matches the official output at w 0, 0.5 and 1") {
  const std::string gpw = converted_codeformer_fixture();
  check_converted_layouts(gpw);
  {
    std::string out;
    const std::string gpen = gpen_test::binary_dir() + "/gpen";
    REQUIRE(gpen_test::run(gpen + " info " + gpw + " --json", &out) == 0);
    const auto info = nlohmann::json::parse(out);
    CHECK(info["arch"] == "codeformer");
    CHECK(info["model"] == "CodeFormer 512");
    CHECK(info["config"]["dim_embd"] == 128);
    CHECK(info["config"]["n_layers"] == 3);
    CHECK(info["config"]["codebook_size"] == 64);
    CHECK(info["config"]["connect_list"] == nlohmann::json::array({32, 64, 128, 256}));
    REQUIRE(gpen_test::run(gpen + " plan --arch codeformer -m " + gpw + " --json", &out) == 0);
    CHECK(nlohmann::json::parse(out)["arena_bytes"].get<size_t>() > 0);
  }
  auto backend = make_cpu_backend();
  CodeformerModel m(gpw, *backend);
  const nlohmann::json manifest = gpen_test::codeformer_manifest();
  CHECK(m.config().dim_embd == manifest["config"]["dim_embd"].get<int>());
  const int64_t N = 2;
  const std::vector<float> x = gpen_test::codeformer_fixture_input(N);
  for (const char* w : {"0", "0.5", "1"}) {
    const std::string ws = w;
    CAPTURE(ws);
    std::vector<float> y(static_cast<size_t>(N * 512 * 512 * 3));
    std::vector<int32_t> idx(static_cast<size_t>(N * 256));
    m.run(x.data(), static_cast<int>(N), std::stof(w), y.data(), idx.data());
    const auto d = gpen_test::compare_with_official(y, idx, N, gpen_test::codeformer_dir() + "indices.npy",
                                                    gpen_test::codeformer_dir() + "output_w" + ws + ".npy");
    const double scale = manifest["outputs"][w]["max_abs"].get<double>();
    MESSAGE("w " << ws << ": max abs diff " << d.worst << " of max |output| " << scale << ", relative " << d.worst / scale);
    CHECK(d.codes_differ == 0);
    CHECK(d.not_finite == 0);
    CHECK(d.worst <= 1e-4 * scale);
  }
}

TEST_CASE("CodeFormer's memory plan puts every intermediate in one arena, smaller than all of them") {
  auto backend = make_cpu_backend();
  CodeformerNetConfig c;
  c.batch = 2;
  const CodeformerGraph cg = build_codeformer_graph(c);
  const MemoryPlan p = plan_memory(cg.graph, planned_on(*backend));
  CHECK(p.arena_bytes > 0);
  CHECK(p.arena_bytes < p.naive_bytes);
  CHECK(p.arena_bytes >= p.lower_bound_bytes);
  CHECK(p.workspace_bytes > 0);  // the attention's scores and the convs' tiles
  CHECK(cg.graph.tensor(cg.indices).dtype == DType::i32);
  // At w 0 the fuse blocks are skipped, as the official forward skips them.
  c.w = 0.0f;
  CHECK(build_codeformer_graph(c).graph.nodes().size() < cg.graph.nodes().size());
}

TEST_CASE("CodeformerModel refuses a .gpw of another model and bad configurations") {
  auto backend = make_cpu_backend();
  auto ck = conv::Checkpoint::open(gpen_test::fixture_dir() + "/checkpoints/gpen_s64.zip.pth");
  const auto gpw = gpen_test::codeformer_temp_dir() / "gpen_s64.gpw";
  conv::convert(*ck, gpw.string());
  const std::string e = gpen_test::error_of([&] { CodeformerModel m(gpw.string(), *backend); });
  CHECK(e.find("not CodeFormer") != std::string::npos);
  CHECK(e.find(gpw.string()) != std::string::npos);
  CodeformerNetConfig c;
  c.dim_embd = 100;  // not a multiple of 8 heads
  CHECK_THROWS_AS(build_codeformer_graph(c), Error);
  c = CodeformerNetConfig{};
  c.connect_list = {48};
  CHECK_THROWS_AS(build_codeformer_graph(c), Error);
  c = CodeformerNetConfig{};
  c.w = 1.5f;
  CHECK_THROWS_AS(build_codeformer_graph(c), Error);
}

TEST_CASE("gpen plan --arch codeformer reports the released configuration's plan") {
  std::string out;
  const std::string gpen = gpen_test::binary_dir() + "/gpen";
  REQUIRE(gpen_test::run(gpen + " plan --arch codeformer --batch 2 --json", &out) == 0);
  const auto j = nlohmann::json::parse(out);
  CHECK(j["arch"] == "codeformer");
  CHECK(j["size"] == 512);
  CHECK(j["batch"] == 2);
  CHECK(j["gflop"].get<double>() > 0);
  CHECK(j["arena_bytes"].get<size_t>() >= j["lower_bound_bytes"].get<size_t>());
  CHECK(gpen_test::run(gpen + " plan --arch codeformer --size 256 --json", &out) != 0);
}
