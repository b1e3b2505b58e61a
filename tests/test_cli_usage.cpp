// The `gpen` CLI as a user meets it before any work starts, and without a source checkout: a
// mistyped subcommand is named with the nearest one, `gpen NAME --help` of an unknown NAME is an
// error, `gpen bench --compare onnxruntime` finds its peers only through --peers-python or
// GPEN_PEERS_PYTHON (and says how to make one when neither is given), and `restore --trace-start`
// prints its timestamp and still restores.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "converter/convert.h"
#include "tests/run_command.h"
#include "tests/test_paths.h"

namespace fs = std::filesystem;
using gpen_test::run;

namespace {

const std::string kGpen = gpen_test::binary_dir() + "/gpen";

// A fresh folder, removed with the object.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) {
    path = fs::temp_directory_path() / ("gpen_test_cli_usage_" + tag + "_" + std::to_string(getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("gpen: an unknown subcommand is named, with the nearest one") {
  std::string out;
  CHECK(run(kGpen + " restor x.jpg", &out) != 0);
  CHECK_MESSAGE(out.find("unknown subcommand 'restor'; did you mean 'restore'?") != std::string::npos, out);
  CHECK(run(kGpen + " --threads 2 plann", &out) != 0);
  CHECK_MESSAGE(out.find("did you mean 'plan'?") != std::string::npos, out);
  CHECK(run(kGpen + " bnech --size 64", &out) != 0);
  CHECK_MESSAGE(out.find("did you mean 'bench'?") != std::string::npos, out);
  // Nothing near: the list of subcommands instead of a guess.
  CHECK(run(kGpen + " xyzzy", &out) != 0);
  CHECK_MESSAGE(out.find("unknown subcommand 'xyzzy' (subcommands: ") != std::string::npos, out);
  CHECK_MESSAGE(out.find("restore") != std::string::npos, out);
}

TEST_CASE("gpen NAME --help: an error for an unknown NAME, the subcommand's help for a known one") {
  std::string out;
  CHECK(run(kGpen + " restor --help", &out) != 0);
  CHECK_MESSAGE(out.find("unknown subcommand 'restor'") != std::string::npos, out);
  CHECK_MESSAGE(out.find("Subcommands:") == std::string::npos, out);  // not the main help
  REQUIRE(run(kGpen + " restore --help", &out) == 0);
  CHECK_MESSAGE(out.find("--aligned") != std::string::npos, out);
  REQUIRE(run(kGpen + " --help", &out) == 0);
  CHECK_MESSAGE(out.find("Subcommands:") != std::string::npos, out);
}

TEST_CASE("gpen bench --compare onnxruntime: the peers' interpreter from --peers-python or GPEN_PEERS_PYTHON") {
  const std::string bench = kGpen + " --threads 1 bench --device cpu --size 64 --channel-multiplier 1 --narrow 0.25 "
                                    "--runs 1 --warmup 0 --compare onnxruntime";
  std::string out;
  // Neither: refused before the engine runs, saying how to make one.
  CHECK(run("env -u GPEN_PEERS_PYTHON " + bench, &out) != 0);
  CHECK_MESSAGE(out.find("--peers-python") != std::string::npos, out);
  CHECK_MESSAGE(out.find("GPEN_PEERS_PYTHON") != std::string::npos, out);
  CHECK_MESSAGE(out.find("scripts/peers_venv.sh") != std::string::npos, out);
  CHECK_MESSAGE(out.find("ms per face") == std::string::npos, out);
  // A path that is not there: named.
  CHECK(run(bench + " --peers-python /nonexistent/bin/python", &out) != 0);
  CHECK_MESSAGE(out.find("/nonexistent/bin/python: no such interpreter") != std::string::npos, out);

  // A stand-in interpreter and reference folder: what the flag (or the variable) names is what runs.
  TempDir t("peers");
  const fs::path fake = t.path / "python", refs = t.path / "reference";
  std::ofstream(fake) << "#!/bin/sh\necho '{\"ms_per_face\": 1000.0, \"peak_rss_mib\": 1.0, \"threads\": 1, "
                         "\"version\": \"stand-in 1.0\", \"max_abs_vs_pytorch\": 0.0}'\n";
  fs::permissions(fake, fs::perms::owner_all);
  fs::create_directories(refs);
  std::ofstream(refs / "peer_bench.py") << "# stand-in: the interpreter above ignores it\n";
  const std::string env = "GPEN_REFERENCE_DIR=" + refs.string() + " GPEN_PEERS_CACHE=" + (t.path / "cache").string() + " ";
  for (const std::string& how : {env + bench + " --peers-python " + fake.string(),
                                 env + "GPEN_PEERS_PYTHON=" + fake.string() + " " + bench}) {
    CAPTURE(how);
    run(how + " --json 2>/dev/null | cat", &out);  // stdout alone (run_command.h folds stderr in)
    const nlohmann::json j = nlohmann::json::parse(out);
    CHECK(j["peers"]["onnxruntime"]["version"] == "stand-in 1.0");
    CHECK(j["vs_peers"]["onnxruntime"]["speedup"].get<double>() > 0);
  }
}

TEST_CASE("gpen restore --aligned --trace-start: prints the first op's wall clock and restores") {
  TempDir t("trace");
  const fs::path gpw = t.path / "gpen_s32.gpw", out = t.path / "face.png";
  gpen::conv::convert(gpen_test::fixture_dir() + "/gpen/s32/checkpoint.pth", gpw.string());
  std::string text;
  REQUIRE(run(kGpen + " restore --aligned --device cpu --trace-start -m " + gpw.string() + " " +
                  gpen_test::fixture_dir() + "/align/kids/image.png -o " + out.string(),
              &text) == 0);
  CHECK_MESSAGE(text.find("gpen: first op at ") != std::string::npos, text);
  CHECK(fs::exists(out));
}
