// `gpen fetch realesrnet_x1|x2|x4` against the loopback server (tests/fetch_server.py): a
// checkpoint in the official layout (RRDBNet x4, 23 blocks, random weights, state dict under
// params_ema, written by tests/reference/rrdbnet_reference.py) is accepted and converted; a
// reduced model served as realesrnet_x2 and an x4 served as realesrnet_x1 are refused with what
// they hold, and deleted.
#include <doctest/doctest.h>

#include <string>

#include "tests/fetch_test_server.h"
#include "weights/gpw.h"

using namespace fetch_test;

TEST_CASE("gpen fetch realesrnet: accepted by layout, wrong ones refused") {
  if (!fs::exists(kGpen)) {
    MESSAGE("skipped: " << kGpen << " is not built");
    return;
  }
  const fs::path work = fs::temp_directory_path() / ("gpen_test_sr_fetch_" + std::to_string(getpid()));
  fs::remove_all(work);
  const fs::path root = work / "root" / "good", dir = work / "models", log = work / "log.txt";
  fs::create_directories(root);
  const std::string ref = kPython + " " GPEN_SOURCE_DIR "/tests/reference/rrdbnet_reference.py make ";
  std::string text;
  if (run(ref + (root / "realesrnet_x4.pth").string() + " --scale 4", log, &text) != 0 ||
      run(ref + (root / "realesrnet_x2.pth").string() + " --scale 2 --num-block 2", log, &text) != 0) {
    MESSAGE("skipped: cannot write the checkpoints (needs PyTorch):\n" << text);
    fs::remove_all(work);
    return;
  }
  fs::copy_file(root / "realesrnet_x4.pth", root / "realesrnet_x1.pth");
  Server server;
  if (!server.start(work / "root", work)) return;
  const std::string base = " --dir " + dir.string() + " --base-url " + server.url("ok/good");
  int rc = run(kGpen + " fetch realesrnet_x4 --convert" + base, log, &text);
  INFO("gpen fetch said:\n" << text);
  REQUIRE(rc == 0);
  gpen::GpwFile g = gpen::GpwFile::open((dir / "realesrnet_x4.gpw").string());
  CHECK(g.arch() == "realesrnet");
  CHECK(g.config()["scale"] == 4);
  CHECK(g.config()["num_block"] == 23);
  CHECK(g.parameter_count() == 9588355);

  rc = run(kGpen + " fetch realesrnet_x2" + base, log, &text);
  CHECK(rc != 0);
  CHECK(text.find("not realesrnet_x2") != std::string::npos);
  CHECK(text.find("2 blocks") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "realesrnet_x2.pth"));
  rc = run(kGpen + " fetch realesrnet_x1" + base, log, &text);
  CHECK(rc != 0);
  CHECK(text.find("it holds RealESRNet x4") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "realesrnet_x1.pth"));
  fs::remove_all(work);
}
