#pragma once
// What every network with f32 host inputs and outputs (GFPGAN, CodeFormer, RestoreFormer, ParseNet)
// does the same way around its graph: its .gpw opened once, half-precision tensors widened to f32
// once, checked against a graph that binds every weight (a clear error at load, not at run) and, on
// a device backend, uploaded in one allocation in the dtype the graph declares each weight in; then
// one graph, its memory plan and its executor cached under a key (the batch, the size, the
// fidelity...) and run with named inputs and outputs. The graphs run in one activation dtype: fp32,
// or on a device fp16 / bf16, with the f32 host data converted at the float ports. The model
// classes keep only what is theirs: the configuration, the graph builder and the key.
#include <cstdint>
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

// The activation dtype `model` runs in on `backend`: `asked`, fp32 when not given (the official
// flows run fp32, and CodeFormer's code choice moves with the rounding). Throws gpen::Error for
// fp16 / bf16 on the CPU backend (fp32 only) and for any other dtype.
DType network_precision(std::optional<DType> asked, const Backend& backend, const std::string& model);

class F32Network {
 public:
  // Opens the .gpw; its tensors are read by bind_weights(), after the model has read (and
  // checked) its configuration. `act`: the activation dtype of the graphs installed (the model's
  // builder declares it), from network_precision().
  F32Network(const std::string& gpw_path, Backend& backend, DType act = DType::f32);
  ~F32Network();
  F32Network(const F32Network&) = delete;
  F32Network& operator=(const F32Network&) = delete;

  const GpwFile& file() const { return file_; }
  Backend& backend() const { return backend_; }
  DType precision() const { return act_; }
  // Widens the half-precision tensors (throws naming the file for another dtype); throws naming
  // the file and `model` when `every_weight` binds a weight the file lacks or holds
  // with another shape; then, on a device backend, uploads every weight once (in the dtype
  // `every_weight` declares it in) and drops the host widening.
  void bind_weights(const Graph& every_weight, const std::string& model);
  size_t weights_bytes() const;

  // The ports a graph is run through: a name per graph input or output tensor.
  using Ports = std::map<std::string, int>;
  // Whether the cached graph was installed under `key` (then graph() and plan() are it).
  bool holds(const std::vector<double>& key) const { return graph_ && key == key_; }
  // Caches g and its ports under `key` and plans it on the backend; the executor that ran the
  // previous graph goes, the next run binds a new one.
  const MemoryPlan& install(const std::vector<double>& key, Graph g, Ports ports);
  const Graph& graph() const;
  const MemoryPlan& plan() const;
  int port(const std::string& name) const;

  // Memory of this backend's device that the caller leaves alone while this network runs (a
  // lender's arena and workspace): the executor runs in it when the plan fits, else in its own.
  void share_memory(void* arena, size_t arena_bytes, void* workspace, size_t workspace_bytes);
  bool uses_shared_memory() const { return ex_ && !own_arena_; }
  // Binds the executor of the installed graph (done by run() when needed).
  void prepare();
  bool prepared() const { return ex_ != nullptr; }

  // Host data of a port's whole tensor: f32 for a float port whatever the graph's dtype (converted
  // on the way), as the graph holds it otherwise (the i32 code indices).
  struct In {
    std::string port;
    const void* data;
  };
  struct Out {
    std::string port;
    void* data;  // nullptr: not wanted
  };
  void run(const std::vector<In>& in, const std::vector<Out>& out);
  // As run() with each node timed alone (Executor::run_profiled): milliseconds per graph node.
  std::vector<double> run_profiled(const std::vector<In>& in);

 private:
  void set_inputs(const std::vector<In>& in);
  Backend& backend_;
  DType act_;
  std::vector<uint16_t> io_;  // a 16-bit port's data on its way in or out
  GpwFile file_;
  std::vector<std::vector<float>> widened_;  // the f16 / bf16 tensors as f32 (host backends)
  WeightMap views_;
  void* device_weights_ = nullptr;  // one allocation on a device backend
  std::vector<double> key_;
  std::unique_ptr<Graph> graph_;
  Ports ports_;
  std::unique_ptr<MemoryPlan> plan_;
  std::unique_ptr<Executor> ex_;
  bool own_arena_ = true;
  void* lent_arena_ = nullptr;
  void* lent_ws_ = nullptr;
  size_t lent_arena_bytes_ = 0, lent_ws_bytes_ = 0;
};

}  // namespace gpen
