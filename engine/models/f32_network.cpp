#include "engine/models/f32_network.h"

#include "engine/models/f32_weights.h"
#include "engine/models/float_convert.h"
#include "engine/runtime/device.h"

namespace gpen {

namespace {

bool half_float(DType t) { return t == DType::f16 || t == DType::bf16; }

}  // namespace

DType network_precision(std::optional<DType> asked, const Backend& backend, const std::string& model) {
  const DType p = asked.value_or(DType::f32);
  GPEN_CHECK(p == DType::f32 || half_float(p),
             model + " precision must be fp32, fp16 or bf16, got " + dtype_name(p));
  GPEN_CHECK(p == DType::f32 || is_device_backend(backend),
             "the CPU backend runs " + model + " in fp32 only (precision " + precision_name(p) + " asked)");
  return p;
}

F32Network::F32Network(const std::string& path, Backend& backend, DType act)
    : backend_(backend), act_(act), file_(GpwFile::open(path)) {}

F32Network::~F32Network() {
  ex_.reset();
  if (device_weights_) backend_.release(device_weights_);
}

void F32Network::bind_weights(const Graph& every_weight, const std::string& model) {
  GPEN_CHECK(device_weights_ == nullptr, file_.path() + ": " + model + " weights bound twice");
  views_ = f32_weight_views(file_, widened_);
  check_graph_weights(every_weight, views_, file_.path(), model);
  device_weights_ = upload_weight_views(backend_, views_, widened_, file_.path(), &every_weight);
}

size_t F32Network::weights_bytes() const {
  size_t b = 0;
  for (const auto& [name, v] : views_) b += static_cast<size_t>(v.numel()) * dtype_size(v.dtype);
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
    const TensorDesc& t = graph_->tensor(port(i.port));
    if (!half_float(t.dtype)) {
      ex_->set_input(port(i.port), i.data, t.bytes());
      continue;
    }
    const size_t n = static_cast<size_t>(t.shape.numel());
    io_.resize(n);
    floats_to(static_cast<const float*>(i.data), io_.data(), t.dtype, n);
    ex_->set_input(port(i.port), io_.data(), t.bytes());
  }
}

void F32Network::run(const std::vector<In>& in, const std::vector<Out>& out) {
  set_inputs(in);
  ex_->run();
  for (const auto& o : out) {
    if (!o.data) continue;
    const TensorDesc& t = graph_->tensor(port(o.port));
    if (!half_float(t.dtype)) {
      ex_->get_output(port(o.port), o.data, t.bytes());
      continue;
    }
    const size_t n = static_cast<size_t>(t.shape.numel());
    io_.resize(n);
    ex_->get_output(port(o.port), io_.data(), t.bytes());
    floats_from(io_.data(), t.dtype, static_cast<float*>(o.data), n);
  }
}

std::vector<double> F32Network::run_profiled(const std::vector<In>& in) {
  set_inputs(in);
  return ex_->run_profiled();
}

}  // namespace gpen
