#pragma once
// A runnable GPEN: weights (a mapped .gpw, or synthetic ones for benchmarks and plans), the graph
// for one batch size, its memory plan and an executor. Runs NHWC float batches in model space.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/executor.h"
#include "engine/memory_plan.h"
#include "engine/models/gpen.h"
#include "weights/gpw.h"

namespace gpen {

// Reads (size, channel_multiplier, narrow) from a .gpw written by the converter; throws a
// gpen::Error naming the file when it is not a GPEN model.
GpenConfig gpen_config_from_gpw(const GpwFile& f);

class GpenModel {
 public:
  // Loads a converted model. The weights stay mapped (CPU) and are not copied.
  static std::unique_ptr<GpenModel> open(const std::string& gpw_path, Backend& backend);
  // Random weights of the right shapes (seeded), for benchmarks without a checkpoint.
  static std::unique_ptr<GpenModel> synthetic(const GpenConfig& c, Backend& backend, uint32_t seed = 1);

  const GpenConfig& config() const { return config_; }
  int size() const { return config_.size; }
  // Plans and prepares the executor for this batch size (cached: the last batch size is kept).
  void prepare(int batch, const std::string& strategy = "", bool allow_inplace = true);
  const Graph& graph() const { return graph_->graph; }
  // The arena view of a tensor by graph name (after run(); only meaningful for tensors still
  // alive at the end, e.g. every tensor under a "naive" plan without in-place).
  const TensorView& view(const std::string& tensor_name) const;
  const MemoryPlan& plan() const { return *plan_; }
  int batch() const { return batch_; }
  // in: [batch, S, S, 3] RGB in [-1, 1]; out: same shape, the raw generator output.
  void run(const float* in, float* out);
  // The first n <= batch() faces only: runs a plan for n faces inside the arena made for batch()
  // (planned once per n, no new memory), so a short last batch costs only its own faces.
  void run(int n, const float* in, float* out);
  size_t weights_bytes() const;

 private:
  GpenModel(Backend& b) : backend_(b) {}
  Backend& backend_;
  GpenConfig config_;
  std::optional<GpwFile> file_;
  std::vector<std::vector<float>> synthetic_data_;
  WeightMap weights_;
  int batch_ = 0;
  std::string plan_key_;
  std::unique_ptr<GpenGraph> graph_;
  std::unique_ptr<MemoryPlan> plan_;
  std::unique_ptr<Executor> exec_;
  struct Smaller {
    std::unique_ptr<GpenGraph> graph;
    std::unique_ptr<MemoryPlan> plan;
    std::unique_ptr<Executor> exec;
  };
  std::map<int, Smaller> smaller_;
};

}  // namespace gpen
