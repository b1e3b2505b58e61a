#pragma once
// What the facexlib flows' tests (GFPGAN, CodeFormer) share: the shared detector converted once
// into a cache folder, the engine's detections written as the reference scripts' stand-in
// detectors read them, and the PSNR of two 8-bit images.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "converter/convert.h"
#include "engine/models/retinaface.h"
#include "engine/photo/image.h"
#include "tests/test_paths.h"

namespace gpen_test {

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
