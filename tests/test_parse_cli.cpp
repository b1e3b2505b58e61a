// gpen restore's mask options, refused before any work: --mask parse without the parser,
// --parse / --mask with --aligned, an unknown mask; and gpen plan --arch parsenet's figures.
#include <doctest/doctest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/parsenet_fixture.h"
#include "tests/test_paths.h"

using parsenet_test::run;

namespace {

std::string gpen_cli() { return gpen_test::binary_dir() + "/gpen"; }
const std::string kAny = std::string(GPEN_SOURCE_DIR) + "/README.md";  // an existing file

}  // namespace

TEST_CASE("gpen restore: mask options refused with a clear message") {
  struct Case {
    std::string args, want;
  };
  const Case cases[] = {
      {"-m " + kAny + " -d " + kAny + " --mask parse photo.png -o out.png",
       "--mask parse needs the face parser: --parse PARSENET.gpw"},
      {"-m " + kAny + " --aligned --parse " + kAny + " crop.png -o out.png", "--aligned pastes nothing"},
      {"-m " + kAny + " -d " + kAny + " --mask oval photo.png -o out.png", "--mask"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    std::string out;
    const int rc = run(gpen_cli() + " restore " + c.args, &out);
    CHECK(rc != 0);
    CHECK_MESSAGE(out.find(c.want) != std::string::npos, out);
  }
}

TEST_CASE("gpen restore --parse with a model that is not ParseNet: refused, naming the file, no output") {
  const std::string shared = gpen_test::shared_dir();
  const std::string photo = shared + "/images/kids_1024x768.jpg", det_pth = shared + "/models/retinaface-mobilenet0.25.pth";
  if (!std::filesystem::exists(photo) || !std::filesystem::exists(det_pth)) {
    MESSAGE("skipped: the shared photo or detector is missing");
    return;
  }
  const std::string tmp = std::filesystem::temp_directory_path() / ("gpen_parse_cli_" + std::to_string(getpid()));
  std::filesystem::create_directories(tmp);
  std::string out;
  REQUIRE(run(gpen_cli() + " convert " + gpen_test::fixture_dir() + "/checkpoints/gpen_s64.zip.pth -o " + tmp + "/g.gpw", &out) == 0);
  REQUIRE(run(gpen_cli() + " convert " + det_pth + " -o " + tmp + "/d.gpw", &out) == 0);
  const int rc = run(gpen_cli() + " restore -m " + tmp + "/g.gpw -d " + tmp + "/d.gpw --parse " + tmp + "/g.gpw " + photo +
                         " -o " + tmp + "/out.png",
                     &out);
  CHECK(rc != 0);
  CHECK_MESSAGE(out.find(tmp + "/g.gpw: not a ParseNet model (arch 'gpen')") != std::string::npos, out);
  CHECK_FALSE(std::filesystem::exists(tmp + "/out.png"));
  std::filesystem::remove_all(tmp);
}

TEST_CASE("gpen plan --arch parsenet reports weights, arena, workspace, lower bound and GFLOP") {
  std::string out;
  REQUIRE(run(gpen_cli() + " plan --arch parsenet --json", &out) == 0);
  const auto j = nlohmann::json::parse(out);
  CHECK(j["arch"] == "parsenet");
  CHECK(j["input_size"][0] == 512);
  CHECK(j["gflop"].get<double>() == doctest::Approx(468.0).epsilon(0.003));
  CHECK(j["weights_bytes"].get<size_t>() > 21000000u * 4);
  CHECK(j["arena_bytes"].get<size_t>() >= j["lower_bound_bytes"].get<size_t>());
  REQUIRE(run(gpen_cli() + " plan --arch parsenet --input-size 256x128 --json", &out) == 0);
  const auto k = nlohmann::json::parse(out);
  CHECK(k["input_size"][0] == 256);
  CHECK(k["arena_bytes"].get<size_t>() < j["arena_bytes"].get<size_t>());
  REQUIRE(run(gpen_cli() + " plan --pipeline --parse --arch retinaface-mnet --size 256 --channel-multiplier 1 --narrow 0.5 --json",
              &out) == 0);
  const auto p = nlohmann::json::parse(out);
  REQUIRE(p.contains("parser"));
  // One arena for the three models, in turns: the largest of the three, not their sum.
  const size_t joint = p["joint"]["arena_bytes"].get<size_t>();
  CHECK(joint >= p["parser"]["arena_bytes"].get<size_t>());
  CHECK(joint < p["separate"]["arena_bytes"].get<size_t>());
  CHECK(run(gpen_cli() + " plan --arch parsenet --input-size 500", &out) != 0);
  CHECK(out.find("multiple of 16") != std::string::npos);
}

TEST_CASE("gpen convert --arch takes every architecture the converter knows, and checks the checkpoint against it") {
  const std::string tmp = std::filesystem::temp_directory_path() / ("gpen_convert_arch_" + std::to_string(getpid()));
  std::filesystem::create_directories(tmp);
  const std::string ck = gpen_test::fixture_dir() + "/checkpoints/gpen_s64.zip.pth";
  std::string out;
  for (const char* arch : {"parsenet", "realesrnet"}) {
    // A GPEN checkpoint named as another model: the converter's layout check refuses it, not the
    // option parser, and no file is written.
    CHECK(run(gpen_cli() + " convert --arch " + arch + " " + ck + " -o " + tmp + "/x.gpw", &out) != 0);
    CHECK_MESSAGE(out.find("not in {") == std::string::npos, out);
    CHECK_FALSE(std::filesystem::exists(tmp + "/x.gpw"));
  }
  CHECK(run(gpen_cli() + " convert --arch gpen " + ck + " -o " + tmp + "/g.gpw", &out) == 0);
  CHECK(run(gpen_cli() + " convert --arch bogus " + ck + " -o " + tmp + "/b.gpw", &out) != 0);
  std::filesystem::remove_all(tmp);
}
