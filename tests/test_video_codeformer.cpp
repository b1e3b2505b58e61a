// gpen video with a CodeFormer model: the frames of a 320-pixel clip (under 512, so CodeFormer's
// helper scales each up to 512 high first) restored as `gpen restore` restores each frame, the
// video written at that size. The CodeFormer of tests/codeformer_fixture.h (the full VQGAN, a
// reduced transformer); one face per frame (--only-center-face) keeps the run near a minute.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/photo/image.h"
#include "tests/codeformer_fixture.h"
#include "tests/facexlib_flow_fixture.h"
#include "tests/run_command.h"
#include "tests/test_paths.h"
#include "tests/video/clips.h"

using namespace gpen;
using namespace gpen_test::video;
namespace fs = std::filesystem;

TEST_CASE("gpen video with a CodeFormer model: frames scaled up as CodeFormer reads them, each as gpen restore makes it") {
  const fs::path dir = fs::path(gpen_test::binary_dir()) / ("video-codeformer-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string model = gpen_test::converted_codeformer_fixture();
  const std::string det = gpen_test::facexlib_detector_gpw(dir);
  const std::string args = " --threads 1 -m " + model + " -d " + det + " --only-center-face --fidelity 0.7 ";
  const std::string in = clip("faces_320.mp4"), out = (dir / "out.mov").string();
  std::string log;
  REQUIRE_MESSAGE(gpen_test::run(gpen_test::binary_dir() + "/gpen video" + args + in + " -o " + out +
                                     " --codec ffv1 --pix-fmt bgr0 --quiet --report " + (dir / "r.json").string(),
                                 &log) == 0,
                  log);
  const auto report = nlohmann::json::parse(read_bytes((dir / "r.json").string()));
  const auto& v = report["videos"][0];
  CHECK(v["memory"]["restorer"]["model"] == "codeformer");
  const std::vector<Image> input = read_all(in), restored = read_all(out);
  REQUIRE(restored.size() == input.size());
  REQUIRE(!input.empty());
  // 320 pixels wide: scaled by 512 / its shorter side.
  const double f = 512.0 / std::min(input[0].width, input[0].height);
  CHECK(restored[0].width == static_cast<int>(std::nearbyint(input[0].width * f)));
  CHECK(restored[0].height == static_cast<int>(std::nearbyint(input[0].height * f)));
  CHECK(v["faces"].get<int>() == static_cast<int>(input.size()));  // the centre face of every frame
  for (size_t i : {size_t{0}, input.size() - 1}) {
    INFO("frame " << i);
    const std::string frame = (dir / ("frame" + std::to_string(i) + ".png")).string();
    const std::string want = (dir / ("restored" + std::to_string(i) + ".png")).string();
    write_image(frame, input[i]);
    REQUIRE_MESSAGE(gpen_test::run(gpen_test::binary_dir() + "/gpen restore" + args + frame + " -o " + want, &log) == 0,
                    log);
    CHECK(read_image(want).bgr == restored[i].bgr);
  }
  fs::remove_all(dir);
}
