#pragma once
// A runnable GPEN: weights (a mapped .gpw, or synthetic ones for benchmarks and plans), the graph
// for one batch size, its memory plan and an executor. Runs NHWC float batches in model space.
// On a device backend (engine/runtime/device.h) the weights are converted to the model's precision and
// uploaded once, into one allocation; faces go through pinned host buffers in that precision.
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/runtime/backend.h"
#include "engine/runtime/device.h"
#include "engine/runtime/executor.h"
#include "engine/plan/memory_budget.h"
#include "engine/plan/memory_plan.h"
#include "engine/models/gpen.h"
#include "engine/models/gpen_noise.h"
#include "weights/gpw.h"

namespace gpen {

// Reads (size, channel_multiplier, narrow) from a .gpw written by the converter; throws a
// gpen::Error naming the file when it is not a GPEN model.
GpenConfig gpen_config_from_gpw(const GpwFile& f);

class GpenModel {
 public:
  // Loads a converted model. CPU (fp32 only): the weights are copied once onto 2 MiB pages where
  // the backend has them (Backend::huge_pages), else they stay mapped; in the low-memory mode
  // (Backend::low_memory) they stay mapped and each run lets a weight's pages go once it is used. Device: converted to
  // `precision` (default: default_precision(backend)) and uploaded once.
  static std::unique_ptr<GpenModel> open(const std::string& gpw_path, Backend& backend,
                                         std::optional<DType> precision = std::nullopt);
  // Random weights of the right shapes (seeded), for benchmarks without a checkpoint. The
  // precision is c.act_dtype (fp32 only on the CPU).
  static std::unique_ptr<GpenModel> synthetic(const GpenConfig& c, Backend& backend, uint32_t seed = 1);
  ~GpenModel();
  GpenModel(const GpenModel&) = delete;
  GpenModel& operator=(const GpenModel&) = delete;

  const GpenConfig& config() const { return config_; }
  int size() const { return config_.size; }  // input resolution
  int output_size() const { return config_.output_size(); }  // > size() for FullGenerator_SR
  // FullGenerator_SR noise (gpen_noise.h): restarts the stream at face 0 of `seed`. Models without
  // noise inputs ignore it.
  void set_noise_seed(uint64_t seed) {
    noise_seed_ = seed;
    noise_faces_ = 0;
  }
  uint64_t noise_seed() const { return noise_seed_; }
  // Plans and prepares the executor for this batch size (cached: the last batch size is kept).
  void prepare(int batch, const std::string& strategy = "", bool allow_inplace = true);
  // The same with every planner option, including the graph transforms (rematerialization,
  // reordering) applied to the graph before it is planned and run.
  void prepare(int batch, const PlanOptions& opt);
  // What the graph transforms of the last prepare() did (all zero without any).
  const TransformReport& transform_report() const { return transform_; }
  // PlanOptions::memory_budget (the low-memory mode): what the last prepare() chose to fit it
  // (budget 0 without one).
  const BudgetFit& budget_fit() const { return budget_fit_; }
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
  // Plans every smaller batch now instead of the first time a run has that many faces: a
  // service or a video planned at its batch limit then has all its memory at the start.
  void prepare_smaller();
  // One run of the prepared batch with every node timed (Executor::run_profiled): milliseconds per
  // node of graph(), in order. For `gpen bench --profile`.
  std::vector<double> run_profiled(const float* in);
  // Runs the first n <= batch() faces with input and output left in the arena (the backend's
  // memory: the device's, or the host's), so a pipeline working in that memory needs no copies:
  // `fill` writes (on a device: queues the writing of) x [n, S, S, 3] in precision(), `drain` reads
  // the raw output y, which the next run (or anything else lent this arena) overwrites.
  void run_in_place(int n, const std::function<void(const TensorView& x)>& fill,
                    const std::function<void(const TensorView& y)>& drain);
  size_t weights_bytes() const;
  DType precision() const { return config_.act_dtype; }
  // Bytes of the one device allocation holding the weights (0 on the CPU).
  size_t device_weights_bytes() const { return device_weights_bytes_; }
  // Device backends: time each run's launches with events (stream time from after the input copy
  // to the end of the last kernel); last_device_ms() reads the last one.
  void set_device_timing(bool on) { timing_ = on; }
  double last_device_ms() const { return last_device_ms_; }
  // Whether runs replay a captured CUDA graph (after the first run of the prepared batch).
  bool uses_graph() const { return exec_ && exec_->uses_graph(); }
  Backend& backend() const { return backend_; }
  // The prepared executor's arena and workspace (plan().arena_bytes / workspace_bytes long), for
  // a model that runs strictly between this one's runs to borrow (FaceRestorer's detector).
  void* arena() const { return exec_ ? exec_->arena() : nullptr; }
  // From the next prepare() on, the arena and workspace are at least this large (the larger of
  // the plan's and these), so that a model taking turns with this one fits in them: FaceRestorer
  // sizes them for its face parser, whose plan is larger than GPEN's. arena_bytes() says how
  // large they are; plan() stays GPEN's own.
  void set_min_memory(size_t arena_bytes, size_t workspace_bytes);
  size_t arena_bytes() const { return exec_ ? exec_->arena_bytes() : 0; }
  size_t workspace_bytes() const { return exec_ ? std::max(plan_->workspace_bytes, min_ws_) : 0; }
  void* workspace() const { return exec_ ? exec_->workspace() : nullptr; }

 private:
  GpenModel(Backend& b) : backend_(b), device_(dynamic_cast<DeviceBackend*>(&b)) {}
  // Puts the weights where the backend reads them: `src` holds host views of any float dtype.
  void load_weights(const WeightMap& src, const std::string& origin);
  void set_input(Executor& ex, const GpenGraph& gg, int n, const float* in);  // n faces, any backend
  void run_timed(Executor& ex);
  void fill_noise(Executor& ex, const GpenGraph& gg, int n);  // n faces' noise inputs, if any  // ex.run(), timed with events when set_device_timing is on
  void run_on(Executor& ex, const GpenGraph& gg, int n, const float* in, float* out);
  struct Prepared {
    Executor* exec;
    const GpenGraph* graph;
  };
  Prepared prepared_for(int n);  // the executor for n faces (a smaller plan in the same arena)
  void release_io();
  void pack_cpu_weights(const std::string& origin);
  // The low-memory mode (Backend::low_memory): each weight's pages of the file's mapping (its
  // codes and scales) go after its last reader in a run of `ex`.
  void release_weights_after_use(Executor& ex, const Graph& g);
  // PlanOptions::memory_budget of opt_: fits it (budget_fit_) and puts the banding into opt_.
  void fit_memory_budget_for(const GpenConfig& c);
  void fit(const GpenConfig& c, const std::string& key);  // fit_memory_budget_for's search
  Backend& backend_;
  DeviceBackend* device_ = nullptr;
  void* device_weights_ = nullptr;
  size_t device_weights_bytes_ = 0;
  void* host_weights_ = nullptr;  // the CPU backend's copy (pack_cpu_weights)
  void* io_in_ = nullptr;  // pinned, batch faces in the activation dtype (device backends)
  void* io_out_ = nullptr;
  bool timing_ = false;
  uint64_t noise_seed_ = kDefaultNoiseSeed;
  uint64_t noise_faces_ = 0;  // faces run so far: the next face's index in the noise stream
  std::vector<float> noise_;
  std::vector<uint8_t> noise_cast_;
  double last_device_ms_ = 0;
  GpenConfig config_;
  std::optional<GpwFile> file_;
  std::vector<std::vector<float>> synthetic_data_;
  WeightMap weights_;
  int batch_ = 0;
  std::string plan_key_;
  size_t min_arena_ = 0, min_ws_ = 0;  // set_min_memory
  PlanOptions opt_;
  TransformReport transform_;
  BudgetFit budget_fit_;
  std::string fit_key_;  // the options and batch budget_fit_ was made for (a prepare that only changes
                         // set_min_memory reuses it: a fit searches bandings)
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
