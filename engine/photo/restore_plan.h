#pragma once
// How a restore fits its memory budget, decided in one place for every caller (gpen restore, the
// Python Restorer, video and serving through engine/photo/restorer.h): the default budget, GPEN's
// batch from it (banded execution before a smaller batch), and with background super-resolution
// the share RealESRNet's tile comes from.
#include <cstddef>

#include "engine/models/gpen.h"
#include "engine/plan/memory_plan.h"
#include "engine/runtime/backend.h"

namespace gpen {

// The largest batch (<= cap) whose planned GPEN total (weights + arena + workspace) fits
// `budget_bytes`; at least 1. Throws when even one face does not fit.
int choose_batch(const GpenConfig& c, Backend& backend, size_t budget_bytes, int cap);

// The same, but a batch whose plain plan does not fit may fit with banded execution
// (engine/plan/banding.h): the batch is lowered only when no banding fits either. Returns the
// batch and the plan options to prepare it with (`base` plus the arena budget banding needs).
struct BatchChoice {
  int batch = 1;
  PlanOptions plan;
  bool banded = false;
};
BatchChoice choose_batch_banded(const GpenConfig& c, Backend& backend, size_t budget_bytes, int cap,
                                const PlanOptions& base = {});

// MemAvailable of /proc/meminfo in bytes (4 GiB when it cannot be read).
size_t available_ram();
// The memory budget when none is given: half the available RAM on the host; on a device 80% of its
// free memory plus `device_weights_bytes`, the weights already uploaded there (they count in the
// plan's total).
size_t default_memory_budget(Backend& backend, size_t device_weights_bytes);

// GPEN's plan for `batch` faces under `opt`, as GpenModel::prepare makes it (graph transforms,
// banding, then placement).
MemoryPlan plan_gpen(const GpenConfig& c, int batch, Backend& backend, const PlanOptions& opt,
                     TransformReport* transforms = nullptr);

// What the budget decides for GPEN (and RealESRNet beside it).
struct BudgetRequest {
  size_t budget = 0;    // the whole memory budget, bytes
  int batch = 0;        // faces per GPEN run as given; 0: the largest that fits the budget
  int batch_cap = 16;   // the most the budget may choose
  PlanOptions plan;     // banded execution as asked (arena budget, bands)
  bool sr = false;      // RealESRNet runs beside GPEN, in its own arena
};
struct BudgetSplit {
  int batch = 1;              // the most faces per GPEN run
  bool batch_from_budget = false;
  size_t gpen_budget = 0;     // what the batch was chosen from: the budget, half of it with SR
  PlanOptions plan;           // GPEN's plan options (the request's, or banding chosen for the budget)
  bool banded = false;        // banding was chosen to fit the budget
  MemoryPlan gpen;            // GPEN's plan at `batch` with `plan`
  int bands = 0;              // the bands it runs in (0: unbanded)
  size_t sr_budget = 0;       // with SR: the budget less GPEN's plan, RealESRNet's tile comes from it
};
// Without a given batch the batch comes from the budget (half of it with SR: RealESRNet keeps its
// own arena beside GPEN's), banded before smaller; with SR its tile budget is what GPEN's plan at
// that batch leaves. gpen::Error when nothing fits.
BudgetSplit split_budget(const GpenConfig& c, Backend& backend, const BudgetRequest& r);

}  // namespace gpen
