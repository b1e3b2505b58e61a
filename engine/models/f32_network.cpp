#include "engine/models/f32_network.h"

#include "engine/models/f32_weights.h"

namespace gpen {

F32Network::F32Network(const std::string& path, Backend& backend)
    : backend_(backend), file_(GpwFile::open(path)) {}

F32Network::~F32Network() {
  ex_.reset();
  if (device_weights_) backend_.release(device_weights_);
}

void F32Network::bind_weights(const Graph& every_weight, const std::string& model) {
  GPEN_CHECK(device_weights_ == nullptr, file_.path() + ": " + model + " weights bound twice");
  views_ = f32_weight_views(file_, widened_);
  check_graph_weights(every_weight, views_, file_.path(), model);
  device_weights_ = upload_weight_views(backend_, views_, widened_, file_.path());
}

size_t F32Network::weights_bytes() const {
  size_t b = 0;
  for (const auto& [name, v] : views_) b += static_cast<size_t>(v.numel()) * 4;
  return b;
}

const MemoryPlan& F32Network::install(const std::vector<double>& key, Graph g, Ports ports) {
  ex_.reset();
  plan_.reset();
  graph_ = std::make_unique<Graph>(std::move(g));
  ports_ = std::move(ports);
  plan_ = std::make_unique<MemoryPlan>(plan_memory(*graph_, planned_on(backend_)));
  key_ = key;
  return *plan_;
}

const Graph& F32Network::graph() const {
  GPEN_CHECK(graph_ != nullptr, file_.path() + ": no graph planned yet");
  return *graph_;
}

const MemoryPlan& F32Network::plan() const {
  GPEN_CHECK(plan_ != nullptr, file_.path() + ": no graph planned yet");
  return *plan_;
}

int F32Network::port(const std::string& name) const {
  auto it = ports_.find(name);
  GPEN_CHECK(it != ports_.end(), file_.path() + ": the graph has no port '" + name + "'");
  return it->second;
}

void F32Network::share_memory(void* arena, size_t arena_bytes, void* ws, size_t ws_bytes) {
  lent_arena_ = arena;
  lent_arena_bytes_ = arena ? arena_bytes : 0;
  lent_ws_ = ws;
  lent_ws_bytes_ = ws ? ws_bytes : 0;
  if (plan_) {
    ex_.reset();
    prepare();
  }
}

void F32Network::prepare() {
  if (ex_) return;
  const MemoryPlan& p = plan();
  own_arena_ = !(lent_arena_ && p.arena_bytes <= lent_arena_bytes_ &&
                 (p.workspace_bytes == 0 || (lent_ws_ && p.workspace_bytes <= lent_ws_bytes_)));
  if (own_arena_)
    ex_ = std::make_unique<Executor>(*graph_, p, backend_, views_);
  else
    ex_ = std::make_unique<Executor>(*graph_, p, backend_, views_, lent_arena_, lent_ws_);
}

void F32Network::set_inputs(const std::vector<In>& in) {
  prepare();
  for (const auto& i : in) {
    const int t = port(i.port);
    ex_->set_input(t, i.data, graph_->tensor(t).bytes());
  }
}

void F32Network::run(const std::vector<In>& in, const std::vector<Out>& out) {
  set_inputs(in);
  ex_->run();
  for (const auto& o : out) {
    if (!o.data) continue;
    const int t = port(o.port);
    ex_->get_output(t, o.data, graph_->tensor(t).bytes());
  }
}

std::vector<double> F32Network::run_profiled(const std::vector<In>& in) {
  set_inputs(in);
  return ex_->run_profiled();
}

}  // namespace gpen
