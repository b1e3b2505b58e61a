// `gpen plan -m GPEN.gpw -d RETINAFACE.gpw --input-size WxH --memory-budget B`: a whole photo in
// the CPU's low-memory mode, planned by the Restorer that `gpen restore --memory-budget B` opens
// (FaceRestorer::plan_call: the same sizing and fit as a restore of that photo, nothing detected
// or restored), so the account printed is the one the restore will report. The files are mapped,
// not read: the mode reads weights where they are mapped, and planning touches none.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "engine/core/bytes.h"
#include "engine/core/error.h"
#include "engine/photo/restorer.h"
#include "reports/plan.h"

namespace gpen::report {

void run_photo_memory_budget_plan(const PlanArgs& a) {
  GPEN_CHECK(!a.model.empty(), "gpen plan -d plans a photo with a converted GPEN model: give -m GPEN.gpw");
  GPEN_CHECK(a.strategy.empty() || a.strategy == "all",
             "the photo plan uses the restore's planner strategy: leave out --strategy");
  const auto [w, h] = parse_input_size(a.input_size);
  RestoreConfig c;
  c.model = a.model;
  c.detector = a.detector;
  c.memory_budget = parse_bytes(a.sr_budget);
  c.low_memory = true;
  c.batch = a.batch;
  std::unique_ptr<Restorer> r = Restorer::open(c);
  const nlohmann::json m = r->plan_photo(w, h);
  if (a.json) {
    nlohmann::json j = {{"arch", "gpen"}, {"model", a.model},   {"detector", a.detector},
                        {"input_size", {w, h}}, {"batch", a.batch}, {"mode", "low_memory"},
                        {"low_memory", m}};
    emit_json(a, j);
    return;
  }
  auto mib = [&m](const char* k) { return human_bytes(m[k].get<double>()); };
  const int bands = m["gpen_bands"].get<int>();
  std::printf("%s, a %dx%d photo, CPU low-memory mode within %s: fits\n", r->model().config().describe().c_str(), w,
              h, mib("budget_bytes").c_str());
  std::printf("  GPEN's weights resident  %10s  at most at once (of %s in the file, mapped, each let go after use)\n",
              mib("gpen_weights_resident_bytes").c_str(), mib("gpen_weights_file_bytes").c_str());
  std::printf("  arena                    %10s  (GPEN's, %s; the detector runs in it)\n", mib("arena_bytes").c_str(),
              bands ? ("in " + std::to_string(bands) + " bands").c_str() : "unbanded");
  std::printf("  workspace                %10s  (the larger of GPEN's and the detector's)\n", mib("workspace_bytes").c_str());
  std::printf("  detector's weights       %10s\n", mib("detector_weights_bytes").c_str());
  std::printf("  images                   %10s  (the photo and the composite)\n", mib("images_bytes").c_str());
  std::printf("  paste buffer             %10s  (paste canvases, detection scratch, one batch of crops and faces)\n",
              mib("pipeline_buffer_bytes").c_str());
  std::printf("  total                    %10s  of %s\n", mib("planned_bytes").c_str(), mib("budget_bytes").c_str());
  std::printf("  not planned: the process's own memory (code, libraries, heap) and faces kept by --save-faces\n");
}

}  // namespace gpen::report
