#include "engine/runtime/executor.h"

#include <chrono>

namespace gpen {

Executor::Executor(const Graph& g, const MemoryPlan& plan, Backend& backend, const WeightMap& weights)
    : g_(g), plan_(plan), backend_(backend), device_(dynamic_cast<DeviceBackend*>(&backend)) {
  arena_ = backend_.allocate(plan_.arena_bytes);
  if (plan_.workspace_bytes) workspace_ = backend_.allocate(plan_.workspace_bytes);
  bind(weights);
}

Executor::Executor(const Graph& g, const MemoryPlan& plan, Backend& backend, const WeightMap& weights, void* arena,
                   void* workspace)
    : g_(g),
      plan_(plan),
      backend_(backend),
      owns_memory_(false),
      arena_(arena),
      workspace_(workspace),
      device_(dynamic_cast<DeviceBackend*>(&backend)) {
  GPEN_CHECK(arena_ && (workspace_ || plan_.workspace_bytes == 0), "executor given no memory to run in");
  bind(weights);
}

void Executor::bind(const WeightMap& weights) {
  // Each node's kernel as the plan chose it; a plan made with sizes alone gets its backend's now.
  if (plan_.node_kernels.size() != g_.nodes().size()) {
    plan_.node_kernels.clear();
    for (const Node& n : g_.nodes()) plan_.node_kernels.push_back(backend_.plan_node(g_, n));
  }
  const auto& ts = g_.tensors();
  views_.resize(ts.size());
  for (size_t t = 0; t < ts.size(); ++t) {
    const TensorDesc& d = ts[t];
    TensorView v;
    v.dtype = d.dtype;
    v.shape = d.shape;
    v.strides = d.strides;
    if (d.kind == TensorKind::Weight) {
      auto it = weights.find(d.name);
      GPEN_CHECK(it != weights.end(), "weight '" + d.name + "' is missing from the model file");
      GPEN_CHECK(it->second.shape.numel() == d.shape.numel() && it->second.dtype == d.dtype,
                 "weight '" + d.name + "' has shape " + it->second.shape.str() + " " + dtype_name(it->second.dtype) +
                     ", the graph expects " + d.shape.str() + " " + dtype_name(d.dtype));
      v.data = it->second.data;
      v.qscale = it->second.qscale;  // 8-bit weights: their scales
      v.qgroup = it->second.qgroup;
    } else if (d.kind == TensorKind::View && ts[g_.root_of(static_cast<int>(t))].kind == TensorKind::Weight) {
      // A window of a weight (e.g. one half of a StyledConv's activation bias).
      int root = g_.root_of(static_cast<int>(t));
      GPEN_CHECK(views_[root].data, "view " + d.name + " of a missing weight");
      v.data = static_cast<char*>(views_[root].data) +
               g_.offset_in_root(static_cast<int>(t)) * static_cast<int64_t>(dtype_size(d.dtype));
    } else if (plan_.tensor_offset[t] >= 0) {
      v.data = static_cast<char*>(arena_) + plan_.tensor_offset[t];
    }
    views_[t] = v;
  }
  for (const Node& n : g_.nodes()) {
    std::vector<TensorView> in, out;
    for (int t : n.inputs) in.push_back(t >= 0 ? views_[t] : TensorView{});
    for (int t : n.outputs) out.push_back(views_[t]);
    node_in_.push_back(std::move(in));
    node_out_.push_back(std::move(out));
  }
}

Executor::~Executor() {
  if (graph_) device_->destroy_graph(graph_);
  if (!owns_memory_) return;
  if (workspace_) backend_.release(workspace_);
  backend_.release(arena_);
}

void Executor::set_input(int tensor, const void* host_data, size_t bytes) {
  const TensorDesc& d = g_.tensor(tensor);
  GPEN_CHECK(bytes == d.bytes(), "input '" + d.name + "' takes " + std::to_string(d.bytes()) + " bytes, got " +
                                     std::to_string(bytes));
  backend_.upload(views_[tensor].data, host_data, bytes);
}

void Executor::get_output(int tensor, void* host_data, size_t bytes) const {
  const TensorDesc& d = g_.tensor(tensor);
  GPEN_CHECK(bytes == d.bytes(), "output '" + d.name + "' has " + std::to_string(d.bytes()) + " bytes");
  backend_.download(host_data, views_[tensor].data, bytes);
}

void Executor::check_workspace() const {
  // A kernel's scratch need can depend on run-time settings (CPU thread count); a plan made under
  // other settings must fail here rather than let a kernel overrun its workspace.
  const auto& nodes = g_.nodes();
  for (size_t i = 0; i < nodes.size(); ++i)
    GPEN_CHECK(backend_.planned_workspace_bytes(g_, nodes[i], plan_.node_kernels[i]) <= plan_.workspace_bytes,
               "op " + nodes[i].name +
                   " needs more workspace than planned (was the thread count raised after planning?)");
}

std::vector<double> Executor::run_profiled() {
  check_workspace();
  backend_.begin_run();
  const auto& nodes = g_.nodes();
  std::vector<double> ms(nodes.size(), 0.0);
  backend_.synchronize();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (device_) {
      device_->start_timer();
      backend_.run_planned(nodes[i], plan_.node_kernels[i], node_in_[i], node_out_[i], workspace_);
      ms[i] = device_->stop_timer_ms();
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      backend_.run_planned(nodes[i], plan_.node_kernels[i], node_in_[i], node_out_[i], workspace_);
      ms[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      after_node(i);
    }
  }
  backend_.synchronize();
  return ms;
}

void Executor::run() {
  check_workspace();
  backend_.begin_run();
  if (device_ && device_->graphs_enabled()) {
    if (!graph_) graph_ = device_->capture([this] { launch_all(); });
    device_->replay(graph_);
  } else {
    launch_all();
  }
  backend_.synchronize();
}

void Executor::set_weight_done(std::function<void(int tensor)> f) {
  GPEN_CHECK(!f || !device_, "set_weight_done: weights on a host backend only");
  weight_done_ = std::move(f);
  done_after_.assign(g_.nodes().size(), {});
  if (!weight_done_) return;
  std::vector<int> last(g_.tensors().size(), -1);
  const auto& nodes = g_.nodes();
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int t : nodes[i].inputs) {
      if (t < 0) continue;
      const int r = g_.root_of(t);
      if (g_.tensor(r).kind == TensorKind::Weight) last[r] = static_cast<int>(i);
    }
  for (size_t t = 0; t < last.size(); ++t)
    if (last[t] >= 0) done_after_[last[t]].push_back(static_cast<int>(t));
}

void Executor::after_node(size_t i) const {
  if (weight_done_)
    for (int t : done_after_[i]) weight_done_(t);
}

void Executor::launch_all() {
  const auto& nodes = g_.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    backend_.run_planned(nodes[i], plan_.node_kernels[i], node_in_[i], node_out_[i], workspace_);
    after_node(i);
  }
}

}  // namespace gpen
