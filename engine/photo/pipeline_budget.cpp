// FaceRestorer's low-memory mode (RestoreOptions::memory_budget): each call's bytes decided before
// it runs. Detection and restoration take turns in one arena, so a call holds at its peak
//   GPEN's weights resident + the detector's weights + max(GPEN's arena, the detector's)
//   + max(their workspaces) + the images + the pipeline's buffer + the faces kept,
// and GPEN is banded (fit_memory_budget) into what the rest leaves it.
#include <algorithm>
#include <string>

#include "engine/core/bytes.h"
#include "engine/core/error.h"
#include "engine/photo/pipeline.h"

namespace gpen {

void FaceRestorer::fit_budget(size_t held) { fit_call(held, 0, 0, 0, 0, "the aligned face"); }

void FaceRestorer::fit_call(size_t images, size_t buffer, size_t faces, int det_h, int det_w, const std::string& what) {
  const size_t B = opt_.memory_budget;
  if (B == 0) return;
  BudgetUse u;
  u.budget = B;
  u.detector_weights = det_.weights_bytes();
  u.images = images;
  u.buffer = buffer;
  u.faces = faces;
  u.fits = budget_use_.fits;
  auto mib = [](size_t b) { return human_bytes(static_cast<double>(b)); };
  const size_t held = u.detector_weights + images + buffer + faces;
  const std::string beside = "the detector's weights " + mib(u.detector_weights) + ", images " + mib(images) +
                             ", the pipeline's buffer " + mib(buffer) + (faces ? ", faces kept " + mib(faces) : "");
  GPEN_CHECK(held < B, what + ": the memory budget " + mib(B) + " is spent before GPEN (" + beside + ")");
  // GPEN gets what the call leaves: fitted at the first call, again (smaller) only when what it
  // holds no longer fits beside the call (a fit searches bandings: seconds, so not per photo).
  const size_t gpen_budget = B - held;
  auto gpen_total = [this] { return gpen_.budget_fit().weights.peak_bytes + gpen_.arena_bytes() + gpen_.workspace_bytes(); };
  if (batch_ == 0 || gpen_total() > gpen_budget) {
    opt_.plan.memory_budget = gpen_budget;
    gpen_.set_min_memory(0, 0);
    try {
      plan_batch(std::max(opt_.batch, 1));
    } catch (const Error& e) {
      batch_ = 0;  // unplanned: the next call fits again
      throw Error(what + ": GPEN does not fit the " + mib(gpen_budget) + " the memory budget " + mib(B) + " leaves beside " +
                  beside + ": " + e.what());
    }
    ++u.fits;
  }
  u.gpen_weights = gpen_.budget_fit().weights.peak_bytes;
  u.arena = gpen_.arena_bytes();
  u.workspace = gpen_.workspace_bytes();
  // The detector runs in GPEN's arena; a detection planned larger makes that arena larger, when
  // the total still fits.
  if (det_h > 0) {
    const RetinaFaceDetector::Memory d = det_.planned_memory(det_h, det_w);
    if (d.arena_bytes > u.arena || d.workspace_bytes > u.workspace) {
      const size_t arena = std::max(u.arena, d.arena_bytes), ws = std::max(u.workspace, d.workspace_bytes);
      GPEN_CHECK(held + u.gpen_weights + arena + ws <= B,
                 what + ": detection at " + std::to_string(det_w) + "x" + std::to_string(det_h) + " plans an arena of " +
                     mib(d.arena_bytes) + " (GPEN's: " + mib(u.arena) + "); with GPEN's weights resident " +
                     mib(u.gpen_weights) + ", its workspace and " + beside + " that makes " +
                     mib(held + u.gpen_weights + arena + ws) + ", over the memory budget " + mib(B) +
                     ": detect on a smaller copy (--det-max-side) or give a larger budget");
      gpen_.set_min_memory(arena, ws);
      plan_batch(batch_);
      u.arena = gpen_.arena_bytes();
      u.workspace = gpen_.workspace_bytes();
    }
  }
  budget_use_ = u;
}

}  // namespace gpen
