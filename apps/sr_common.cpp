// The RealESRNet helpers of `gpen sr` and `gpen restore --sr` (apps/sr_common.h).
#include "apps/sr_common.h"

#include <unistd.h>

#include <cstdio>


namespace gpen::cli {

std::function<void(int, int)> sr_progress(const std::string& name) {
  if (!isatty(fileno(stderr))) return {};
  return [name](int done, int total) {
    std::fprintf(stderr, "\r  SR %s: tile %d/%d", name.c_str(), done, total);
    if (done == total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}

nlohmann::json sr_report_json(const SrReport& r, const std::string& why, const RrdbModel& model) {
  return {{"model", model.config().describe()},
          {"scale", model.config().scale},
          {"precision", precision_name(model.precision())},
          {"tile", r.tile},
          {"tiles", r.tiles},
          {"tile_reason", why},
          {"input", {r.in_w, r.in_h}},
          {"output", {r.out_w, r.out_h}},
          {"seconds", r.seconds},
          {"gflop", r.flops * 1e-9},
          {"arena_bytes", model.arena_bytes()},
          {"workspace_bytes", model.workspace_bytes()},
          {"weights_bytes", model.weights_bytes()},
          {"corrections_of_official", r.corrections}};
}

}  // namespace gpen::cli
