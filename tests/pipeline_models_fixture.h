#pragma once
// The two models the photo pipeline's tests run: the s32 GPEN fixture and the real RetinaFace
// mobilenet0.25 from ../shared, converted into a private temporary folder removed afterwards.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "converter/convert.h"
#include "tests/test_paths.h"

namespace pipeline_test {

struct Models {
  std::filesystem::path dir;
  std::string gpen, det;
  ~Models() {
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }
};

// False (with a message) when the shared detector weights are missing; `tag` names the folder.
inline bool prepare(Models& m, const std::string& tag) {
  namespace fs = std::filesystem;
  const std::string det_pth = gpen_test::shared_dir() + "/models/retinaface-mobilenet0.25.pth";
  if (!fs::exists(det_pth)) {
    MESSAGE("skipped: " << det_pth << " is missing");
    return false;
  }
  m.dir = fs::temp_directory_path() / ("gpen_" + tag + "_" + std::to_string(getpid()));
  fs::create_directories(m.dir);
  m.gpen = (m.dir / "s32.gpw").string();
  m.det = (m.dir / "mnet.gpw").string();
  gpen::conv::convert(gpen_test::fixture_dir() + "/gpen/s32/checkpoint.pth", m.gpen);
  gpen::conv::convert(det_pth, m.det);
  return true;
}

}  // namespace pipeline_test
