#pragma once
// What the facexlib flows' tests (GFPGAN, CodeFormer) share: why the official code cannot run here,
// the shared detector converted once into a cache folder, the engine's detections written as the
// reference scripts' stand-in detectors read them, and the PSNR of two 8-bit images.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "converter/convert.h"
#include "engine/models/retinaface.h"
#include "engine/photo/image.h"
#include "tests/run_command.h"
#include "tests/test_paths.h"

namespace gpen_test {

// Why a comparison with the official flow cannot run here ("" when it can): a file of the official
// code missing under `root` (installed as `install` says), /usr/bin/python3 without the modules
// `python_import` imports, or the shared detector missing. Given as the test's message when not "".
inline std::string official_flow_missing(const std::string& root, std::initializer_list<const char*> files,
                                         const std::string& install, const std::string& python_import) {
  for (const char* f : files)
    if (!std::filesystem::exists(root + f)) return root + f + " is missing (" + install + ")";
  if (run("/usr/bin/python3 -c 'import " + python_import + "'") != 0)
    return "/usr/bin/python3 cannot import " + python_import;
  if (!std::filesystem::exists(shared_dir() + "/models/retinaface-mobilenet0.25.pth")) return "the shared detector is missing";
  return "";
}

inline bool skipped_because(const std::string& why) {
  if (!why.empty()) MESSAGE("skipped: " << why);
  return !why.empty();
}

// retinaface-mobilenet0.25 of the shared folder, converted into `cache` once (renamed into place).
inline std::string facexlib_detector_gpw(const std::filesystem::path& cache) {
  const std::filesystem::path gpw = cache / "retinaface_mnet.gpw";
  if (std::filesystem::exists(gpw)) return gpw.string();
  const std::filesystem::path tmp = gpw.string() + "." + std::to_string(getpid());
  gpen::conv::convert(shared_dir() + "/models/retinaface-mobilenet0.25.pth", tmp.string());
  std::filesystem::rename(tmp, gpw);
  return gpw.string();
}

// The engine's detections of `image` (at its own size, score above 0.5), as
// {"faces": [{"box", "score", "landmarks"}]}.
inline std::string write_facexlib_dets(gpen::RetinaFaceDetector& det, gpen::ImageView image,
                                       const std::filesystem::path& json) {
  gpen::DetectOptions o;
  o.post.threshold = 0.5f;
  o.max_side = 0;
  nlohmann::json faces = nlohmann::json::array();
  for (const gpen::Face& f : det.detect(image, o))
    faces.push_back({{"box", f.box}, {"score", f.score}, {"landmarks", f.landmarks}});
  std::ofstream(json) << nlohmann::json{{"faces", faces}}.dump();
  return json.string();
}

inline double image_psnr(const gpen::Image& a, const gpen::Image& b, int* max_diff) {
  REQUIRE(a.width == b.width);
  REQUIRE(a.height == b.height);
  double se = 0;
  *max_diff = 0;
  for (size_t i = 0; i < a.bgr.size(); ++i) {
    const int d = int(a.bgr[i]) - int(b.bgr[i]);
    se += double(d) * d;
    *max_diff = std::max(*max_diff, std::abs(d));
  }
  const double mse = se / double(a.bgr.size());
  return mse > 0 ? 10 * std::log10(255.0 * 255.0 / mse) : 999.0;
}

}  // namespace gpen_test
