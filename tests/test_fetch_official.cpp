// `gpen fetch GPEN-BFR-256 RetinaFace-R50 --convert` by the official names, against a loopback
// server (tests/fetch_server.py) that serves checkpoints with every tensor name and shape of the
// official layouts (tests/make_fetch_checkpoints.py, random values) and cuts each download
// halfway: both are resumed with a Range request, verified, renamed and converted; a second run
// finds them there and downloads nothing.
#include <doctest/doctest.h>

#include <string>

#include "tests/fetch_test_server.h"
#include "weights/gpw.h"

using namespace fetch_test;

TEST_CASE("gpen fetch: official names and layouts, cut halfway, resumed, converted") {
  if (!fs::exists(kGpen)) {
    MESSAGE("skipped: " << kGpen << " is not built");
    return;
  }
  const fs::path work = fs::temp_directory_path() / ("gpen_test_fetch_official_" + std::to_string(getpid()));
  fs::remove_all(work);
  const fs::path root = work / "root", dir = work / "models", log = work / "log.txt";
  fs::create_directories(work);
  std::string text;
  if (run(kPython + " " GPEN_SOURCE_DIR "/tests/make_fetch_checkpoints.py " + (root / "good").string(), log, &text) != 0) {
    MESSAGE("skipped: cannot write the official-layout checkpoints (needs PyTorch):\n" << text);
    fs::remove_all(work);
    return;
  }
  Server server;
  if (!server.start(root, work)) return;
  const std::string base = server.url("cut/good");
  const std::string cmd = kGpen + " fetch GPEN-BFR-256 RetinaFace-R50 --convert --dir " + dir.string() + " --base-url " + base;
  int rc = run(cmd, log, &text);
  INFO("gpen fetch said:\n" << text);
  REQUIRE(rc == 0);
  CHECK(listing(dir) == std::set<std::string>{"GPEN-BFR-256.gpw", "GPEN-BFR-256.pth", "RetinaFace-R50.gpw", "RetinaFace-R50.pth"});
  for (const char* name : {"GPEN-BFR-256", "RetinaFace-R50"}) {
    CAPTURE(name);
    const std::string file = std::string(name) + ".pth", served = read_file(root / "good" / file);
    CHECK(read_file(dir / file) == served);
    CHECK(text.find(std::string(name) + ": downloaded (resumed) " + (dir / file).string()) != std::string::npos);
    std::vector<std::string> ranges;
    for (const auto& r : server.requests())
      if (r.path == "/cut/good/" + file) ranges.push_back(r.range);
    CHECK(ranges == std::vector<std::string>{"", "bytes=" + std::to_string(served.size() / 2) + "-"});
  }
  gpen::GpwFile g = gpen::GpwFile::open((dir / "GPEN-BFR-256.gpw").string());
  CHECK(g.arch() == "gpen");
  CHECK(g.config()["size"] == 256);
  CHECK(g.config()["channel_multiplier"] == 1);
  CHECK(g.config()["narrow"] == 0.5);
  gpen::GpwFile d = gpen::GpwFile::open((dir / "RetinaFace-R50.gpw").string());
  CHECK(d.arch() == "retinaface");
  CHECK(d.config()["backbone"] == "resnet50");

  server.clear_log();
  rc = run(cmd, log, &text);
  CHECK(rc == 0);
  CHECK(text.find("GPEN-BFR-256: already there") != std::string::npos);
  CHECK(text.find("RetinaFace-R50: already there") != std::string::npos);
  CHECK(server.requests().empty());
  fs::remove_all(work);
}
