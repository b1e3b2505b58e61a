// The RealESRNet helpers of `gpen sr` and `gpen restore --sr` (apps/sr_common.h).
#include "apps/sr_common.h"

#include <unistd.h>

#include <cstdio>

#include "engine/runtime/device.h"

namespace gpen::cli {

std::unique_ptr<RrdbModel> open_sr_model(const std::string& path, Backend& backend, const std::string& precision) {
  std::optional<DType> p;
  if (!precision.empty()) p = parse_precision(precision);
  GPEN_CHECK(!p || *p == DType::f32 || is_device_backend(backend),
             "--precision " + precision + ": the CPU backend runs fp32 only (use --device cuda)");
  return RrdbModel::open(path, backend, p);
}

int resolve_sr_tile(const SrSettings& s, RrdbModel& model, int width, int height, std::string* why) {
  if (s.tile != "auto") {
    size_t used = 0;
    int t = -1;
    try {
      t = std::stoi(s.tile, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    GPEN_CHECK(used == s.tile.size() && t >= 0 && t <= 65536,
               "--sr-tile " + s.tile + ": expected auto, 0 (untiled) or a tile size in pixels");
    if (why) *why = t == 0 ? "untiled, as asked (--sr-tile 0)" : "tile " + std::to_string(t) + ", as asked (--sr-tile)";
    return t;
  }
  Backend& b = model.backend();
  WorkspaceFn ws = [&b](const Graph& g, const Node& n) { return b.workspace_bytes(g, n); };
  return choose_sr_tile(model.config(), width, height, s.budget, model.precision(), ws, why);
}

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
