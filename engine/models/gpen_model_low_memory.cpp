// GpenModel in the CPU's low-memory mode (Backend::low_memory, PlanOptions::memory_budget): the
// banding that fits the budget, and the hook that lets each weight's pages of the file go after
// its last reader.
#include "engine/models/gpen_model.h"

namespace gpen {

void GpenModel::fit_memory_budget_for(const GpenConfig& c) {
  if (opt_.memory_budget == 0) {
    budget_fit_ = BudgetFit{};
    fit_key_.clear();
    return;
  }
  const std::string key = opt_.key() + "/batch" + std::to_string(c.batch);
  if (key != fit_key_) fit(c, key);
  // The banding the fit found, applied as it is (no second search).
  opt_.arena_budget = 0;
  opt_.bands = 0;
  opt_.band_spec = budget_fit_.banding;
}

void GpenModel::fit(const GpenConfig& c, const std::string& key) {
  budget_fit_ = BudgetFit{};
  fit_key_.clear();
  // The arena budget that fits weights resident + arena + workspace in the memory budget.
  GPEN_CHECK(backend_.low_memory(), "a memory budget plans the CPU backend's low-memory mode (the backend was "
                                    "made without it)");
  const Backend& b = backend_;
  budget_fit_ = fit_memory_budget([&c] { return build_gpen_graph(c).graph; },
                                  [&b](const Graph& g, const Node& n) { return b.workspace_bytes(g, n); },
                                  opt_.memory_budget, opt_);
  GPEN_CHECK(budget_fit_.fits, "GPEN " + std::to_string(c.size) + " at batch " + std::to_string(c.batch) +
                                   ": nothing fits a memory budget of " + std::to_string(opt_.memory_budget) +
                                   " bytes (weights resident " + std::to_string(budget_fit_.weights.peak_bytes) +
                                   " + workspace " + std::to_string(budget_fit_.workspace_bytes) +
                                   " + the smallest banded arena bound " +
                                   std::to_string(budget_fit_.smallest_bound) + ")");
  fit_key_ = key;
}

void GpenModel::release_weights_after_use(Executor& ex, const Graph& g) {
  if (!backend_.low_memory() || !file_) return;
  // Per weight tensor of the graph: the spans of the mapping it reads (the codes, their scales).
  std::vector<std::vector<std::pair<const void*, size_t>>> spans(g.tensors().size());
  for (size_t t = 0; t < spans.size(); ++t) {
    const TensorDesc& d = g.tensor(static_cast<int>(t));
    if (d.kind != TensorKind::Weight) continue;
    for (const std::string& n : {d.name, d.name + ".qscale"}) {
      auto it = weights_.find(n);
      if (it != weights_.end())
        spans[t].emplace_back(it->second.data, static_cast<size_t>(it->second.shape.numel()) * dtype_size(it->second.dtype));
    }
  }
  const GpwFile* f = &*file_;
  ex.set_weight_done([f, spans = std::move(spans)](int t) {
    for (const auto& [p, bytes] : spans[static_cast<size_t>(t)]) f->release_pages(p, bytes);
  });
}

}  // namespace gpen
