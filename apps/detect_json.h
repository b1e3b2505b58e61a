#pragma once
// The JSON object `gpen detect --json` prints per image, which `gpen serve`'s /v1/detect answers.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernels/cpu/detect_post.h"

namespace gpen::cli {

inline nlohmann::ordered_json face_json(const Face& f) {
  return {{"box", std::vector<float>(f.box.begin(), f.box.end())},
          {"score", f.score},
          {"landmarks", std::vector<float>(f.landmarks.begin(), f.landmarks.end())}};
}

inline nlohmann::ordered_json detect_json(const std::string& image, int width, int height,
                                          const std::vector<Face>& faces) {
  nlohmann::ordered_json j = {{"image", image}, {"width", width}, {"height", height}};
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const Face& f : faces) list.push_back(face_json(f));
  j["faces"] = list;
  return j;
}

}  // namespace gpen::cli
