#pragma once
// What `gpen sr` and `gpen restore --sr` share: opening RealESRNet, choosing the tile from the
// memory budget (`--sr-tile auto|N`), the per-tile progress line and the report entry.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/models/rrdbnet.h"
#include "engine/photo/super_resolution.h"
#include "engine/runtime/backend.h"

namespace gpen::cli {

struct SrSettings {
  std::string tile = "auto";  // "auto", or a tile size in pixels (0: untiled)
  size_t budget = 0;          // weights + arena + workspace; 0: no limit
};

// The model on `backend` at `precision` ("" = fp32 on the CPU, fp16 on a device).
std::unique_ptr<RrdbModel> open_sr_model(const std::string& path, Backend& backend, const std::string& precision);

// The tile for a width x height photo and the reason, in words.
int resolve_sr_tile(const SrSettings& s, RrdbModel& model, int width, int height, std::string* why);

// A progress line per tile on a terminal ("SR name: tile k/n"), nothing otherwise.
std::function<void(int, int)> sr_progress(const std::string& name);

nlohmann::json sr_report_json(const SrReport& r, const std::string& why, const RrdbModel& model);

}  // namespace gpen::cli
