#pragma once
// RealESRNet's RRDBNet (gpen-semantics.md, "Background super-resolution") as an engine graph for
// any input size, and RrdbModel, its runner: weights from a .gpw (arch "realesrnet", written by
// the converter: every conv HWIO + bias), executors planned per input shape inside one arena.
//
// Graph: the dense-block concatenations [t, t1, .., t4] are channel slices of one buffer per RDB
// (nf + 4 gc channels): conv1..conv4 write their slices, conv5 reads the whole buffer, and its
// epilogue computes 0.2 * (acc + b) + t straight into slice 0 of the next RDB's buffer (the act
// Activation{slope 1, gain 0.2} is exactly x * 0.2, then the residual is added: PyTorch's
// `x5 * 0.2 + x` in the same float operations). The RRDB skip (out * 0.2 + t) is a bias_act
// (gain 0.2, in place) and an add writing into the next RRDB's buffer. conv_first runs twice
// (into the first buffer and into the long-lived f of the trunk skip), so no buffer of
// nf + 4 gc channels has to live across the whole trunk: it costs 12 x 32 x 9 MACs per pixel,
// 0.07 % of the network.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/graph/graph.h"
#include "engine/plan/memory_plan.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/executor.h"
#include "weights/gpw.h"

namespace gpen {

struct RrdbConfig {
  int scale = 2;  // 1, 2 or 4
  int num_in_ch = 3, num_out_ch = 3;
  int num_feat = 32, num_block = 23, num_grow_ch = 32;
  // The pixel-unshuffle factor in front of conv_first, and the multiple the input must be.
  int unshuffle() const { return scale == 2 ? 2 : scale == 1 ? 4 : 1; }
  void check() const;  // gpen::Error for an impossible configuration
  std::string describe() const;  // "RealESRNet x2 (RRDBNet 32 features, 23 blocks, growth 32)"
};

// Reads the configuration from a .gpw; a gpen::Error naming the file when it is not RealESRNet.
RrdbConfig rrdb_config_from_gpw(const GpwFile& f);

struct RrdbGraph {
  Graph graph;
  int input = -1;   // [1, h, w, num_in_ch] RGB in [0, 1], h and w multiples of unshuffle()
  int output = -1;  // [1, s*h, s*w, num_out_ch], raw (no clamp)
};

// act: the activation dtype (fp32 on the CPU; fp16 / bf16 on a device).
RrdbGraph build_rrdbnet_graph(const RrdbConfig& c, int h, int w, DType act = DType::f32);

// Arena, workspace and weights of the plan for one h x w input (the planner's default strategy).
MemoryPlan plan_rrdbnet(const RrdbConfig& c, int h, int w, DType act, const WorkspaceFn& ws);

class RrdbModel {
 public:
  // CPU: fp32, weights stay mapped. Device: converted to `precision` (default fp16 where the
  // backend is a device, fp32 on the CPU) and uploaded once.
  static std::unique_ptr<RrdbModel> open(const std::string& gpw_path, Backend& backend,
                                         std::optional<DType> precision = std::nullopt);
  // Random weights (seeded) of the right shapes, for benchmarks without a checkpoint.
  static std::unique_ptr<RrdbModel> synthetic(const RrdbConfig& c, Backend& backend, uint32_t seed = 1);
  ~RrdbModel();
  RrdbModel(const RrdbModel&) = delete;
  RrdbModel& operator=(const RrdbModel&) = delete;

  const RrdbConfig& config() const { return config_; }
  DType precision() const { return act_; }
  Backend& backend() const { return backend_; }
  // Makes one arena and workspace large enough for every shape in `shapes` (h, w pairs), planned
  // now; run() on any of them then allocates nothing. Other shapes plan on first use and grow
  // the arena when they need more.
  void reserve(const std::vector<std::pair<int, int>>& shapes);
  // in: [h, w, num_in_ch] RGB float (h, w multiples of unshuffle()); out: [s*h, s*w, num_out_ch].
  void run(const float* in, int h, int w, float* out);
  size_t arena_bytes() const { return arena_cap_; }
  size_t workspace_bytes() const { return ws_cap_; }
  size_t weights_bytes() const;
  // Seconds spent in the network (run), for the reports.
  double run_seconds() const { return run_seconds_; }
  // The graph for the last shape run (for profiling and tests).
  const Graph* last_graph() const { return last_ ? &last_->rg.graph : nullptr; }

 private:
  explicit RrdbModel(Backend& b) : backend_(b) {}
  struct Shaped {
    int h = 0, w = 0;
    RrdbGraph rg;
    MemoryPlan plan;
    std::unique_ptr<Executor> ex;
  };
  Shaped& shaped(int h, int w);
  void grow(size_t arena, size_t ws);
  void load_weights(const GpwFile* f, uint32_t seed);
  Backend& backend_;
  RrdbConfig config_;
  DType act_ = DType::f32;
  std::optional<GpwFile> file_;
  std::vector<std::vector<float>> host_;  // synthetic or widened weights (CPU)
  WeightMap weights_;
  void* device_weights_ = nullptr;
  size_t weights_bytes_ = 0;
  void* arena_ = nullptr;
  void* ws_ = nullptr;
  size_t arena_cap_ = 0, ws_cap_ = 0;
  std::vector<std::unique_ptr<Shaped>> shapes_;
  Shaped* last_ = nullptr;
  std::vector<uint8_t> io_;  // staging for non-fp32 inputs and outputs
  double run_seconds_ = 0;
};

}  // namespace gpen
