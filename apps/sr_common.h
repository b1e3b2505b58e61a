#pragma once
// What `gpen sr` and `gpen restore --sr` print: the per-tile progress line and the report entry
// (opening RealESRNet and choosing its tile are the engine's: engine/photo/super_resolution.h).
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/models/rrdbnet.h"
#include "engine/photo/super_resolution.h"
#include "engine/runtime/backend.h"

namespace gpen::cli {

// A progress line per tile on a terminal ("SR name: tile k/n"), nothing otherwise.
std::function<void(int, int)> sr_progress(const std::string& name);

nlohmann::json sr_report_json(const SrReport& r, const std::string& why, const RrdbModel& model);

}  // namespace gpen::cli
