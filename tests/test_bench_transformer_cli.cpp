// `gpen bench --arch codeformer|restoreformer`: the released configuration with synthetic weights
// is timed once and its JSON holds the timing and memory fields; what the bench cannot do is
// refused before any run. Labelled slow: two full-size forwards, ~40 s on 2 busy cores. The
// peers' and the official network's part (--accuracy, --compare) is bench/cpu_peers.sh's: its ONNX
// exports take minutes.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/run_command.h"
#include "tests/test_paths.h"

using gpen_test::run;

namespace {

const std::string kGpen = gpen_test::binary_dir() + "/gpen";

nlohmann::json bench_json(const std::string& cmd) {
  std::string out;
  const int rc = run(cmd + " --json 2>/dev/null", &out);
  INFO(cmd);
  INFO(out);
  REQUIRE(rc == 0);
  return nlohmann::json::parse(out);
}

void check_timing(const nlohmann::json& j, const std::string& arch) {
  INFO(j.dump(2));
  CHECK(j["arch"] == arch);
  CHECK(j["model"] == "synthetic");
  CHECK(j["size"] == 512);
  CHECK(j["batch"] == 1);
  CHECK(j["threads"] == 2);
  CHECK(j["runs"] == 1);
  CHECK(j["nonfinite"] == 0);
  for (const char* k : {"median_ms", "ms_per_face", "gflop_per_face", "gflops", "peak_rss_mib"})
    CHECK_MESSAGE(j[k].get<double>() > 0, k);
  // The released configurations' plans (docs/status.md): the weights are all there, and the
  // process holds them and the arena, not a second copy of the weights from the conversion.
  const double weights_mib = double(j["weights_bytes"].get<size_t>()) / (1 << 20);
  CHECK(weights_mib > 250);
  CHECK(j["arena_bytes"].get<size_t>() > 0);
  CHECK(j["peak_rss_mib"].get<double>() < 2 * weights_mib + double(j["arena_bytes"].get<size_t>()) / (1 << 20));
  CHECK_FALSE(j.contains("peers"));
}

}  // namespace

TEST_CASE("gpen bench --arch codeformer: the released configuration at w 0.5, timing and memory in the JSON") {
  const nlohmann::json j = bench_json(kGpen + " --threads 2 bench --arch codeformer --runs 1 --warmup 0");
  check_timing(j, "codeformer");
  CHECK(j["fidelity_w"].get<double>() == 0.5);
  CHECK(j["gflop_per_face"].get<double>() > 700);
}

TEST_CASE("gpen bench --arch restoreformer: RestoreFormer++ as released, timing and memory in the JSON") {
  const nlohmann::json j = bench_json(kGpen + " --threads 2 bench --arch restoreformer --runs 1 --warmup 0");
  check_timing(j, "restoreformer");
  CHECK(j["model_name"].get<std::string>().rfind("RestoreFormer++ 512", 0) == 0);
  CHECK_FALSE(j.contains("fidelity_w"));
}

TEST_CASE("gpen bench --arch codeformer|restoreformer: what it cannot do is refused before any run") {
  std::string out;
  for (const std::string arch : {"codeformer", "restoreformer"}) {
    CAPTURE(arch);
    const std::string bench = kGpen + " bench --arch " + arch + " --runs 1";
    CHECK(run(bench + " -m /nonexistent.gpw --accuracy", &out) != 0);
    CHECK_MESSAGE(out.find("--pytorch-checkpoint") != std::string::npos, out);
    // On CUDA the official checkpoint has no use: refused there, and here for want of a GPU (or of
    // CUDA in the build).
    CHECK(run(bench + " --device cuda -m /nonexistent.gpw --pytorch-checkpoint /nonexistent.pth", &out) != 0);
    CHECK_MESSAGE((out.find("no CUDA device") != std::string::npos || out.find("CPU comparisons") != std::string::npos ||
                   out.find("CUDA support was not compiled in") != std::string::npos),
                  out);
    CHECK(run(bench + " --size 256", &out) != 0);
    CHECK_MESSAGE(out.find("512 x 512") != std::string::npos, out);
    CHECK(run(bench + " --compare-pytorch", &out) != 0);
    CHECK_MESSAGE(out.find("--accuracy") != std::string::npos, out);
    // 16 bits run on a device only.
    CHECK(run(bench + " --precision bf16", &out) != 0);
    CHECK_MESSAGE(out.find("in fp32 only (precision bf16 asked)") != std::string::npos, out);
  }
  CHECK(run(kGpen + " bench --arch codeformer --runs 1 --fidelity 1.5", &out) != 0);
  CHECK_MESSAGE(out.find("[0, 1]") != std::string::npos, out);
  CHECK(run(kGpen + " bench --arch restoreformer --runs 1 --fidelity 0.7", &out) != 0);
  CHECK_MESSAGE(out.find("--fidelity is CodeFormer's") != std::string::npos, out);
}
