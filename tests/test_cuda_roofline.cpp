// `gpen plan --device cuda --roofline` (reports/plan_roofline.cpp): the per-node figures add up, the
// FLOPs are the graph's, every bound is max(FLOPs / peak, bytes / bandwidth) at the H200 figures,
// the tiles are the family's (GPEN_CUDA_GEMM=mma: the per-shape choice; wmma: 128 x 64 modconv,
// 64 x 64 conv2d), and it refuses what it cannot estimate. Runs the CLI; no GPU needed.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "engine/models/gpen.h"
#include "tests/test_paths.h"

using namespace gpen;
namespace fs = std::filesystem;

namespace {

struct CliRun {
  int status = -1;
  std::string out;
};

CliRun gpen_plan(const std::string& env, const std::string& args) {
  const fs::path log = fs::temp_directory_path() / ("gpen_test_roofline_" + std::to_string(::getpid()) + ".log");
  const int st = std::system((env + " " + gpen_test::binary_dir() + "/gpen plan " + args + " >" + log.string() +
                              " 2>&1").c_str());
  std::ifstream in(log, std::ios::binary);
  CliRun r{WIFEXITED(st) ? WEXITSTATUS(st) : -1, std::string(std::istreambuf_iterator<char>(in), {})};
  fs::remove(log);
  return r;
}

}  // namespace

TEST_CASE("gpen plan --roofline: per-node bounds at H200 figures, summed, with the family's tiles") {
  if (!fs::exists(gpen_test::binary_dir() + "/gpen")) {
    MESSAGE("skipped: " << gpen_test::binary_dir() << "/gpen is not built");
    return;
  }
  const CliRun probe = gpen_plan("", "--size 64 --device cuda");
  if (probe.status != 0) {
    CHECK(probe.out.find("CUDA support was not compiled in") != std::string::npos);
    return;
  }
  GpenConfig c;
  c.size = 128;
  c.act_dtype = c.weight_dtype = DType::f16;
  const GpenGraph gg = build_gpen_graph(c);
  for (const char* family : {"mma", "wmma"}) {
    CAPTURE(family);
    const CliRun r = gpen_plan(std::string("GPEN_CUDA_GEMM=") + family,
                               "--size 128 --precision fp16 --device cuda --roofline --json");
    REQUIRE_MESSAGE(r.status == 0, r.out);
    const nlohmann::json j = nlohmann::json::parse(r.out)["roofline"];
    CHECK(j["gemm_family"] == family);
    const double peak = j["peak_tensor_flops"], peak32 = j["peak_f32_flops"], bw = j["bandwidth_bytes_per_s"];
    CHECK(peak == 989e12);
    CHECK(bw == 4.8e12);
    REQUIRE(j["nodes"].size() == gg.graph.nodes().size());
    double flops = 0, bound = 0, bytes = 0;
    std::set<std::string> tiles;
    for (size_t i = 0; i < j["nodes"].size(); ++i) {
      const nlohmann::json& n = j["nodes"][i];
      const Node& node = gg.graph.nodes()[i];
      CAPTURE(node.name);
      CHECK(n["node"] == node.name);
      CHECK(n["flops"].get<double>() == doctest::Approx(node_flops(gg.graph, node)).epsilon(1e-12));
      const std::string tile = n["tile"];
      const double p = tile.empty() ? peak32 : peak;
      const double want = std::max(n["flops"].get<double>() / p, n["bytes"].get<double>() / bw);
      CHECK(n["bound_s"].get<double>() == doctest::Approx(want).epsilon(1e-9));
      CHECK(n["bytes"].get<double>() > 0);
      const bool modconv = std::holds_alternative<ModConvParams>(node.params);
      const bool conv = std::holds_alternative<Conv2dParams>(node.params);
      CHECK(tile.empty() == !(modconv || conv));
      if (std::string(family) == "wmma" && modconv) CHECK(tile == "128x64");
      if (!tile.empty()) tiles.insert(tile);
      flops += n["flops"].get<double>(), bound += n["bound_s"].get<double>(), bytes += n["bytes"].get<double>();
    }
    CHECK(j["flops"].get<double>() == doctest::Approx(graph_flops(gg.graph)).epsilon(1e-12));
    CHECK(j["flops"].get<double>() == doctest::Approx(flops).epsilon(1e-12));
    CHECK(j["bytes"].get<double>() == doctest::Approx(bytes).epsilon(1e-12));
    CHECK(j["bound_s"].get<double>() == doctest::Approx(bound).epsilon(1e-9));
    CHECK(j["bound_s"].get<double>() >= j["bound_unique_s"].get<double>());
    CHECK(j["bound_unique_s"].get<double>() >= j["compute_s"].get<double>());
    for (const std::string& t : tiles) CHECK((t == "128x64" || t == "64x64" || t == "64x128"));
  }
  // The text report ends with the model's sum.
  const CliRun text = gpen_plan("", "--size 128 --precision fp16 --device cuda --roofline");
  REQUIRE(text.status == 0);
  CHECK(text.out.find("Roofline (H200: 989 TFLOP/s") != std::string::npos);
  CHECK(text.out.find("ms per run with the tiled bytes") != std::string::npos);
  // What it cannot estimate is refused with one line.
  const CliRun cpu = gpen_plan("", "--size 128 --roofline");
  CHECK(cpu.status != 0);
  CHECK(cpu.out.find("--roofline: needs --device cuda and one configuration") != std::string::npos);
  const CliRun bad = gpen_plan("GPEN_CUDA_GEMM=cublas", "--size 128 --precision fp16 --device cuda --roofline");
  CHECK(bad.status != 0);
  CHECK(bad.out.find("GPEN_CUDA_GEMM: unknown GEMM family 'cublas'") != std::string::npos);
}
