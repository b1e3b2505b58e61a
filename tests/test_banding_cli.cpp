// `gpen plan --arena-budget / --bands` (reports/plan_band.cpp): the JSON's `bands` object and
// `extra_flops_fraction`, the clear answer when no banding fits, the refusals for detectors and
// CodeFormer, and GFPGAN banded.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/test_paths.h"

namespace fs = std::filesystem;

namespace {

struct CliRun {
  int status = -1;
  std::string out;
};

CliRun gpen_plan(const std::string& args) {
  const fs::path log = fs::temp_directory_path() / ("gpen_test_banding_cli_" + std::to_string(::getpid()) + ".log");
  const int st = std::system((gpen_test::binary_dir() + "/gpen plan " + args + " >" + log.string() + " 2>&1").c_str());
  std::ifstream in(log, std::ios::binary);
  CliRun r{WIFEXITED(st) ? WEXITSTATUS(st) : -1, std::string(std::istreambuf_iterator<char>(in), {})};
  fs::remove(log);
  CHECK_MESSAGE(r.out.find("Sanitizer") == std::string::npos, r.out);
  return r;
}

const std::string k256 = "--size 256 --channel-multiplier 1 --narrow 0.5 --precision fp16 ";

}  // namespace

TEST_CASE("gpen plan --arena-budget: the cheapest banding that fits, reported under bands") {
  const CliRun r = gpen_plan(k256 + "--arena-budget 7MiB --json");
  REQUIRE_MESSAGE(r.status == 0, r.out);
  const auto j = nlohmann::json::parse(r.out);
  const auto& b = j.at("bands");
  CHECK(b.at("applied").get<bool>());
  CHECK(b.at("fits").get<bool>());
  CHECK(j.at("arena_bytes").get<size_t>() <= 7u << 20);
  CHECK(b.at("arena_bytes") == j.at("arena_bytes"));
  CHECK(j.at("lower_bound_bytes").get<size_t>() <= j.at("arena_bytes").get<size_t>());
  CHECK(b.at("lower_bound_before_bytes").get<size_t>() > 12u << 20);  // 12.1 MiB unbanded
  const double extra = j.at("extra_flops_fraction").get<double>();
  CHECK(extra > 0);
  CHECK(extra < 0.05);  // 5.3 MiB at +0.07 % (6.6 MiB at +2.4 % before the modconv row crops)
  const auto bounds = b.at("boundaries").get<std::vector<int64_t>>();
  REQUIRE(bounds.size() == b.at("count").get<size_t>() + 1);
  CHECK(bounds.front() == 0);
  CHECK(bounds.back() == 256);
}

TEST_CASE("gpen plan --bands N forces the band count, an unreachable budget is said so") {
  CliRun r = gpen_plan(k256 + "--bands 5 --json");
  REQUIRE_MESSAGE(r.status == 0, r.out);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("bands").at("count") == 5);
  CHECK(j.at("bands").at("max_band_rows") == 52);  // 256 rows in 5 bands: 51 or 52

  r = gpen_plan(k256 + "--arena-budget 1MiB");
  CHECK(r.status == 0);
  CHECK_MESSAGE(r.out.find("no banding fits an arena of 1.0 MiB") != std::string::npos, r.out);
  j = nlohmann::json::parse(gpen_plan(k256 + "--arena-budget 1MiB --json").out);
  CHECK_FALSE(j.at("bands").at("fits").get<bool>());

  r = gpen_plan("--arch retinaface-mnet --input-size 320x240 --arena-budget 1MiB");
  CHECK(r.status != 0);
  CHECK_MESSAGE(r.out.find("not the detector") != std::string::npos, r.out);
}

TEST_CASE("gpen plan --arch gfpgan --bands / --arena-budget band GFPGANv1Clean and report it under bands") {
  const std::string small = "--arch gfpgan --size 64 --channel-multiplier 1 --narrow 0.0625 ";
  CliRun r = gpen_plan(small + "--json");
  REQUIRE_MESSAGE(r.status == 0, r.out);
  const size_t whole = nlohmann::json::parse(r.out).at("arena_bytes").get<size_t>();
  r = gpen_plan(small + "--bands 4 --json");
  REQUIRE_MESSAGE(r.status == 0, r.out);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("bands").at("applied").get<bool>());
  CHECK(j.at("bands").at("count") == 4);
  CHECK(j.at("arena_bytes").get<size_t>() < whole);
  const size_t budget = whole / 2;
  r = gpen_plan(small + "--arena-budget " + std::to_string(budget) + " --json");
  REQUIRE_MESSAGE(r.status == 0, r.out);
  j = nlohmann::json::parse(r.out);
  CHECK(j.at("bands").at("fits").get<bool>());
  CHECK(j.at("arena_bytes").get<size_t>() <= budget);
  CHECK(j.at("bands").at("boundaries").back() == 64);
}

TEST_CASE("gpen plan --bands refuses CodeFormer's graph, naming the shapes banding takes") {
  const CliRun r = gpen_plan("--arch codeformer --bands 4");
  CHECK(r.status != 0);
  CHECK_MESSAGE(r.out.find("banding takes graphs shaped as GPEN's and GFPGAN's") != std::string::npos, r.out);
}
