#pragma once
// Runs a planned graph: one arena and one workspace allocated when the executor is made, every
// view resolved to an address then, so run() allocates nothing and can repeat any number of times.
// On a device backend with graphs enabled (engine/runtime/device.h), the first run() captures the
// sequence of launches and every run replays it: the addresses never change, so the recording
// stays valid for the executor's lifetime.
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/runtime/backend.h"
#include "engine/runtime/device.h"
#include "engine/plan/memory_plan.h"

namespace gpen {

// Weight tensors by name, already on the backend's device (host pointers for the CPU backend).
using WeightMap = std::unordered_map<std::string, TensorView>;

class Executor {
 public:
  Executor(const Graph& g, const MemoryPlan& plan, Backend& backend, const WeightMap& weights);
  // Runs inside memory another executor owns (a smaller plan sharing a larger arena): nothing is
  // allocated; the caller guarantees the sizes (arena >= plan.arena_bytes, likewise workspace).
  Executor(const Graph& g, const MemoryPlan& plan, Backend& backend, const WeightMap& weights, void* arena,
           void* workspace);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // The arena view of a graph input or output (device memory on a device backend).
  const TensorView& view(int tensor) const { return views_.at(tensor); }
  void set_input(int tensor, const void* host_data, size_t bytes);
  void get_output(int tensor, void* host_data, size_t bytes) const;
  void run();
  // One run with every node timed, for profiling: milliseconds per node in graph order. Device
  // backends: events around each launch (no graph replay; the host waits after every node, so
  // the sum exceeds a replayed run by the launch gaps); CPU: the wall clock around each node.
  std::vector<double> run_profiled();
  // Whether run() replays a captured graph (after the first run on a device backend with graphs).
  bool uses_graph() const { return graph_ != nullptr; }
  // Host backends: called after each node with every weight tensor (a view's root) no later node
  // reads, so a loader can let that weight's pages go (GpenModel's low-memory mode). Empty: none.
  void set_weight_done(std::function<void(int tensor)> f);
  size_t arena_bytes() const { return plan_.arena_bytes; }
  void* arena() const { return arena_; }
  void* workspace() const { return workspace_; }

 private:
  const Graph& g_;
  MemoryPlan plan_;
  Backend& backend_;
  void bind(const WeightMap& weights);
  void launch_all();
  void check_workspace() const;
  bool owns_memory_ = true;
  void* arena_ = nullptr;
  void* workspace_ = nullptr;
  std::vector<TensorView> views_;                 // per tensor id
  std::vector<std::vector<TensorView>> node_in_;  // per node, resolved once
  std::vector<std::vector<TensorView>> node_out_;
  std::function<void(int)> weight_done_;
  std::vector<std::vector<int>> done_after_;  // per node: the weights whose last reader it is
  void after_node(size_t i) const;
  DeviceBackend* device_ = nullptr;  // the backend, when it is a device backend
  void* graph_ = nullptr;            // captured launches (device backends with graphs)
};

}  // namespace gpen
