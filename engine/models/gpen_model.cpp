#include "engine/models/gpen_model.h"

#include <cmath>
#include <map>
#include <random>

namespace gpen {

GpenConfig gpen_config_from_gpw(const GpwFile& f) {
  GPEN_CHECK(f.arch() == "gpen", f.path() + " holds a '" + f.arch() + "' model, not GPEN (pass it as the detector?)");
  const auto& j = f.config();
  GpenConfig c;
  try {
    c.size = j.at("size").get<int>();
    c.channel_multiplier = static_cast<int>(j.at("channel_multiplier").get<double>());
    c.narrow = j.at("narrow").get<double>();
    c.style_dim = j.value("style_dim", 512);
  } catch (const std::exception& e) {
    throw Error(f.path() + ": GPEN configuration incomplete in the header (" + e.what() + ")");
  }
  validate_gpen_config(c);
  return c;
}

std::unique_ptr<GpenModel> GpenModel::open(const std::string& gpw_path, Backend& backend) {
  std::unique_ptr<GpenModel> m(new GpenModel(backend));
  m->file_.emplace(GpwFile::open(gpw_path));
  m->config_ = gpen_config_from_gpw(*m->file_);
  m->config_.weight_dtype = m->file_->storage_dtype();
  GPEN_CHECK(std::string(backend.name()) != "cpu" || m->config_.weight_dtype == DType::f32,
             gpw_path + ": the CPU backend runs fp32 weights; convert with --dtype fp32");
  for (const auto& e : m->file_->tensors()) m->weights_[e.name] = e.view;
  return m;
}

std::unique_ptr<GpenModel> GpenModel::synthetic(const GpenConfig& c, Backend& backend, uint32_t seed) {
  std::unique_ptr<GpenModel> m(new GpenModel(backend));
  m->config_ = c;
  m->config_.batch = 1;
  GpenGraph g = build_gpen_graph(m->config_);
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  // Values with the magnitudes of a trained model after the converter's scaling: weights ~
  // N(0, 1/fan_in), modulation biases 1, small biases, Q consistent with its conv weight.
  std::map<std::string, const TensorDesc*> by_name;
  for (const auto& t : g.graph.tensors())
    if (t.kind == TensorKind::Weight) by_name[t.name] = &t;
  for (const auto& [name, t] : by_name) {
    std::vector<float> v(t->shape.numel());
    bool is_bias = name.find("bias") != std::string::npos;
    if (name.find("modulation.bias") != std::string::npos) {
      std::fill(v.begin(), v.end(), 1.0f);
    } else if (is_bias || name.find("noise.weight") != std::string::npos) {
      for (auto& x : v) x = 0.1f * nd(rng);
    } else if (name.find("demod_q") == std::string::npos) {
      int64_t fan_in = t->shape.rank == 4 ? t->shape[0] * t->shape[1] * t->shape[2] : t->shape[t->shape.rank - 1];
      float sd = 1.0f / std::sqrt(static_cast<float>(std::max<int64_t>(fan_in, 1)));
      for (auto& x : v) x = sd * nd(rng);
    }
    m->synthetic_data_.push_back(std::move(v));
    m->weights_[name] = make_view(m->synthetic_data_.back().data(), DType::f32, t->shape);
  }
  // Q[o, i] = sum over taps of W[.., i, o]^2 for every demodulated conv.
  for (const auto& [name, t] : by_name) {
    const std::string suffix = ".demod_q";
    if (name.size() < suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    std::string wname = name.substr(0, name.size() - suffix.size()) + ".weight";
    const TensorView& w = m->weights_.at(wname);
    float* q = m->weights_.at(name).f32();
    int64_t taps = w.dim(0) * w.dim(1), cin = w.dim(2), cout = w.dim(3);
    std::fill(q, q + cin * cout, 0.0f);
    for (int64_t k = 0; k < taps; ++k)
      for (int64_t i = 0; i < cin; ++i)
        for (int64_t o = 0; o < cout; ++o) {
          float x = w.f32()[(k * cin + i) * cout + o];
          q[o * cin + i] += x * x;
        }
  }
  return m;
}

void GpenModel::prepare(int batch, const std::string& strategy, bool allow_inplace) {
  std::string key = strategy + (allow_inplace ? "+inplace" : "");
  if (batch == batch_ && exec_ && key == plan_key_) return;
  plan_key_ = key;
  smaller_.clear();
  exec_.reset();
  GpenConfig c = config_;
  c.batch = batch;
  graph_ = std::make_unique<GpenGraph>(build_gpen_graph(c));
  WorkspaceFn ws = [this](const Graph& g, const Node& n) { return backend_.workspace_bytes(g, n); };
  plan_ = std::make_unique<MemoryPlan>(plan_memory(graph_->graph, ws, {strategy, allow_inplace}));
  exec_ = std::make_unique<Executor>(graph_->graph, *plan_, backend_, weights_);
  batch_ = batch;
}

void GpenModel::run(const float* in, float* out) {
  GPEN_CHECK(exec_, "GpenModel::run before prepare");
  size_t bytes = static_cast<size_t>(batch_) * config_.size * config_.size * 3 * sizeof(float);
  exec_->set_input(graph_->input, in, bytes);
  exec_->run();
  exec_->get_output(graph_->output, out, bytes);
}

const TensorView& GpenModel::view(const std::string& name) const {
  GPEN_CHECK(exec_, "GpenModel::view before prepare");
  const auto& ts = graph_->graph.tensors();
  for (size_t t = 0; t < ts.size(); ++t)
    if (ts[t].name == name) return exec_->view(static_cast<int>(t));
  throw Error("no tensor named '" + name + "' in the GPEN graph");
}

void GpenModel::run(int n, const float* in, float* out) {
  GPEN_CHECK(exec_ && n >= 1 && n <= batch_, "GpenModel::run with " + std::to_string(n) + " faces, prepared for " +
                                                 std::to_string(batch_));
  if (n == batch_) return run(in, out);
  auto it = smaller_.find(n);
  if (it == smaller_.end()) {
    Smaller s;
    GpenConfig c = config_;
    c.batch = n;
    s.graph = std::make_unique<GpenGraph>(build_gpen_graph(c));
    WorkspaceFn ws = [this](const Graph& g, const Node& nd) { return backend_.workspace_bytes(g, nd); };
    s.plan = std::make_unique<MemoryPlan>(plan_memory(s.graph->graph, ws, {plan_->strategy}));
    // Every tensor scales with the batch, so the smaller plan fits; checked all the same.
    GPEN_CHECK(s.plan->arena_bytes <= plan_->arena_bytes && s.plan->workspace_bytes <= plan_->workspace_bytes,
               "plan for " + std::to_string(n) + " faces does not fit the arena for " + std::to_string(batch_));
    s.exec = std::make_unique<Executor>(s.graph->graph, *s.plan, backend_, weights_, exec_->arena(), exec_->workspace());
    it = smaller_.emplace(n, std::move(s)).first;
  }
  Smaller& s = it->second;
  size_t bytes = static_cast<size_t>(n) * config_.size * config_.size * 3 * sizeof(float);
  s.exec->set_input(s.graph->input, in, bytes);
  s.exec->run();
  s.exec->get_output(s.graph->output, out, bytes);
}

size_t GpenModel::weights_bytes() const { return plan_ ? plan_->weights_bytes : 0; }

}  // namespace gpen
