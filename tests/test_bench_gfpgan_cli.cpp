// `gpen bench --arch gfpgan`: a small synthetic GFPGANv1Clean is timed and its JSON holds the
// timing and memory fields; with the peers' environment (scripts/peers_venv.sh), torch and the
// official GFPGAN code (tests/reference/gfpgan_official.py) present, --accuracy and --compare
// onnxruntime,openvino run the official network with the engine's synthetic weights and input,
// and the outputs agree. Without them that part is skipped, saying why. --save-weights keeps the
// synthetic weights as a .gpw the engine opens.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/run_command.h"
#include "tests/test_paths.h"

namespace fs = std::filesystem;
using gpen_test::run;

namespace {

const std::string kGpen = gpen_test::binary_dir() + "/gpen";
const std::string kSmall =
    " --threads 1 bench --arch gfpgan --size 32 --channel-multiplier 1 --narrow 0.25 --runs 2 --warmup 1";

nlohmann::json bench_json(const std::string& cmd) {
  std::string out;
  const int rc = run(cmd + " --json 2>/dev/null", &out);
  INFO(cmd);
  INFO(out);
  REQUIRE(rc == 0);
  return nlohmann::json::parse(out);
}

std::string peers_python() {
  const char* env = std::getenv("GPEN_PEERS_PYTHON");
  if (env && *env) return env;
  const fs::path venv = fs::path(GPEN_SOURCE_DIR) / ".venv-peers/bin/python";
  return fs::exists(venv) ? venv.string() : "";
}

}  // namespace

TEST_CASE("gpen bench --arch gfpgan: synthetic weights of a configuration, timing and memory in the JSON") {
  const nlohmann::json j = bench_json(kGpen + kSmall);
  CHECK(j["arch"] == "gfpgan");
  CHECK(j["model"] == "synthetic");
  CHECK(j["size"] == 32);
  CHECK(j["batch"] == 1);
  CHECK(j["threads"] == 1);
  CHECK(j["runs"] == 2);
  CHECK(j["nonfinite"] == 0);
  for (const char* k : {"median_ms", "min_ms", "max_ms", "ms_per_face", "gflop_per_face", "gflops", "peak_rss_mib"})
    CHECK_MESSAGE(j[k].get<double>() > 0, k);
  CHECK(j["spread_pct"].get<double>() >= 0);
  CHECK(j["min_ms"].get<double>() <= j["median_ms"].get<double>());
  for (const char* k : {"weights_bytes", "arena_bytes"}) CHECK_MESSAGE(j[k].get<size_t>() > 0, k);
  CHECK(j.contains("workspace_bytes"));
  CHECK_FALSE(j.contains("peers"));
  // Two faces a run: the time per face is the run's over the batch.
  const nlohmann::json b = bench_json(kGpen + kSmall + " --batch 2");
  CHECK(b["batch"] == 2);
  CHECK(b["ms_per_face"].get<double>() == doctest::Approx(b["median_ms"].get<double>() / 2));
}

TEST_CASE("gpen bench --arch gfpgan: what it cannot do is refused before any run") {
  std::string out;
  CHECK(run(kGpen + kSmall + " -m /nonexistent.gpw --accuracy", &out) != 0);
  CHECK_MESSAGE(out.find("--pytorch-checkpoint") != std::string::npos, out);
  CHECK(run(kGpen + kSmall + " --profile", &out) != 0);
  CHECK_MESSAGE(out.find("--profile is for") != std::string::npos, out);
  // On CUDA: timed where a GPU is, else refused naming the missing device (or the build without CUDA).
  if (run(kGpen + kSmall + " --device cuda --json", &out) != 0)
    CHECK_MESSAGE((out.find("no CUDA device") != std::string::npos ||
                   out.find("CUDA support was not compiled in") != std::string::npos),
                  out);
  else
    CHECK_MESSAGE(out.find("\"device\": \"cuda\"") != std::string::npos, out);
  // 16 bits run on a device only.
  CHECK(run(kGpen + kSmall + " --precision fp16", &out) != 0);
  CHECK_MESSAGE(out.find("the CPU backend runs GFPGAN in fp32 only (precision fp16 asked)") != std::string::npos, out);
  CHECK(run(kGpen + " bench --arch gfpgan --size 48 --runs 1", &out) != 0);
  CHECK_MESSAGE(out.find("power of two") != std::string::npos, out);
  CHECK(run(kGpen + kSmall + " -m /nonexistent.gpw --save-weights /nonexistent-out.gpw", &out) != 0);
  CHECK_MESSAGE(out.find("--save-weights keeps the synthetic weights") != std::string::npos, out);
  CHECK(run(kGpen + " bench --arch gpen --size 32 --runs 1 --save-weights /nonexistent-out.gpw", &out) != 0);
  CHECK_MESSAGE(out.find("--save-weights keeps the synthetic weights") != std::string::npos, out);
}

TEST_CASE("gpen bench --arch gfpgan --save-weights: the synthetic weights kept as a .gpw the engine opens") {
  const fs::path gpw = fs::temp_directory_path() / ("gpen_test_bench_gfpgan_" + std::to_string(getpid()) + ".gpw");
  const nlohmann::json j = bench_json(kGpen + kSmall + " --save-weights " + gpw.string());
  std::string out;
  REQUIRE_MESSAGE(run(kGpen + " info " + gpw.string() + " --json", &out) == 0, out);
  const nlohmann::json info = nlohmann::json::parse(out);
  CHECK(info["arch"] == "gfpgan");
  // The kept file is the one timed: the same plan for the same configuration.
  const nlohmann::json kept = bench_json(kGpen + " --threads 1 bench --arch gfpgan -m " + gpw.string() + " --runs 1");
  CHECK(kept["weights_bytes"] == j["weights_bytes"]);
  fs::remove(gpw);
}

TEST_CASE("gpen bench --arch gfpgan --accuracy --compare onnxruntime,openvino: equal work on the same weights") {
  const std::string py = peers_python();
  if (py.empty()) {
    MESSAGE("skipped: no peers' environment (scripts/peers_venv.sh, or GPEN_PEERS_PYTHON)");
    return;
  }
  const char* off = std::getenv("GFPGAN_OFFICIAL");
  const std::string official = off && *off ? off : "/tmp/gfpgan-official";
  if (!fs::exists(official + "/gfpgan/archs/gfpganv1_clean_arch.py") ||
      run("/usr/bin/python3 -c 'import torch' 2>/dev/null") != 0) {
    const std::string why = "skipped: no torch for /usr/bin/python3 or no official GFPGAN code under " + official +
                            " (tests/reference/gfpgan_official.py says how to install it)";
    MESSAGE(why);
    return;
  }
  const fs::path cache = fs::temp_directory_path() / ("gpen_test_bench_gfpgan_" + std::to_string(getpid()));
  fs::remove_all(cache);
  const std::string env = "GFPGAN_OFFICIAL=" + official + " GPEN_PEERS_CACHE=" + cache.string() + " ";
  const nlohmann::json j =
      bench_json(env + kGpen + kSmall + " --accuracy --compare onnxruntime,openvino --peers-python " + py);
  fs::remove_all(cache);
  INFO(j.dump(2));
  // The engine against the official network: float rounding apart.
  CHECK(j["accuracy_reference"] == "official PyTorch fp32");
  CHECK(j["accuracy_max_abs"].get<double>() < 1e-4);
  for (const char* peer : {"onnxruntime", "openvino"}) {
    CAPTURE(peer);
    const auto& r = j["peers"][peer];
    REQUIRE(r.contains("ms_per_face"));
    CHECK(r["threads"] == 1);
    CHECK(r["max_abs_vs_pytorch"].get<double>() < 1e-4);
    CHECK(r["max_abs_vs_engine"].get<double>() < 1e-4);
    CHECK(j["vs_peers"][peer]["speedup"].get<double>() > 0);
    CHECK(j["vs_peers"][peer]["rss_ratio"].get<double>() > 0);
  }
  CHECK(j["speedup_vs_fastest_peer"].get<double>() > 0);
}
