#pragma once
// What `gpen info --json` prints for a .gpw, .pth or .safetensors file (apps/cmd_info.cpp and the
// Python package's info() share it, so the two cannot drift apart).
#include <nlohmann/json.hpp>
#include <string>

namespace gpen::report {

// With `tensors`, "tensor_list" holds every tensor's name, dtype and shape.
nlohmann::json info_report(const std::string& path, bool tensors);

}  // namespace gpen::report
