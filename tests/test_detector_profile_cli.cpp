// gpen bench --arch retinaface --profile (apps/bench_detector_profile.cpp) on the shared
// mobilenet0.25 detector and a small synthetic photo: the profile covers every node once, the
// part table adds up to the total, conv nodes name the CPU path their shapes choose, and the
// CPU peak is reported on the host.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>

#include "engine/photo/image.h"
#include "tests/run_command.h"
#include "tests/test_paths.h"

namespace fs = std::filesystem;
using gpen_test::run;

TEST_CASE("gpen bench --arch retinaface --profile: by op, by part and per node, adding up") {
  const std::string det_pth = gpen_test::shared_dir() + "/models/retinaface-mobilenet0.25.pth";
  if (!fs::exists(det_pth)) {
    MESSAGE("skipped: the shared detector is missing");
    return;
  }
  const fs::path tmp = fs::temp_directory_path() / ("gpen_det_profile_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  gpen::Image img;
  img.width = 96, img.height = 72;
  img.bgr.resize(img.pixels() * 3);
  for (size_t i = 0; i < img.bgr.size(); ++i) img.bgr[i] = static_cast<uint8_t>((i * 37) % 251);
  gpen::write_image((tmp / "p.png").string(), img);
  const std::string cli = gpen_test::binary_dir() + "/gpen";
  std::string out;
  REQUIRE_MESSAGE(run(cli + " convert " + det_pth + " -o " + (tmp / "d.gpw").string(), &out) == 0, out);
  // stdout alone (the JSON): run() folds stderr into what it reads from the last command.
  REQUIRE_MESSAGE(run(cli + " --threads 2 bench --device cpu --arch retinaface -d " + (tmp / "d.gpw").string() +
                          " --image " + (tmp / "p.png").string() + " --runs 1 --warmup 0 --profile --json 2>/dev/null | cat",
                      &out) == 0,
                  out);
  const nlohmann::json j = nlohmann::json::parse(out);
  REQUIRE(j.contains("profile"));
  const auto& p = j["profile"];
  CHECK(p["runs"] == 3);  // max(3, --runs)
  const double total = p["total_ms"].get<double>();
  CHECK(total > 0);
  double nodes = 0, parts = 0, ops = 0, share = 0;
  std::map<std::string, int> paths;
  for (const auto& e : p["nodes"]) {
    nodes += e["ms"].get<double>();
    REQUIRE(e.contains("part"));
    if (e["op"].get<std::string>().rfind("conv2d", 0) == 0) {  // conv2d, conv2d_grouped
      REQUIRE(e.contains("path"));
      ++paths[e["path"].get<std::string>()];
    }
  }
  for (const auto& e : p["by_part"]) parts += e["ms"].get<double>(), share += e["share"].get<double>();
  for (const auto& e : p["by_op"]) ops += e["ms"].get<double>();
  CHECK(nodes == doctest::Approx(total).epsilon(1e-9));
  CHECK(parts == doctest::Approx(total).epsilon(1e-9));
  CHECK(ops == doctest::Approx(total).epsilon(1e-9));
  CHECK(share == doctest::Approx(1.0).epsilon(1e-9));
  // mobilenet0.25: the depthwise 3x3s, the thin-output direct convs, the stem.
  CHECK(paths["depthwise"] == 13);
  CHECK(paths["direct"] == 28);  // at 96x72 every conv of <= 32 outputs and the stem
  CHECK(paths["gemm1x1"] == 13);  // kernels/cpu/conv2d_1x1.cpp: the pointwise and FPN 1x1 convs
  CHECK(paths["gemm"] == 2);
  CHECK(p.contains("cpu_isa"));
  if (p.contains("peak_gflops")) CHECK(p["peak_gflops"].get<double>() > 0);
  fs::remove_all(tmp);
}
