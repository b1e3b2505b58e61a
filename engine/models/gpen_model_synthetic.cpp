// GpenModel::synthetic: a model with seeded random weights in the official layout (tests,
// benchmarks and `gpen plan` runs without a checkpoint), optionally quantised to 8 bits as the
// converter would. Apart from gpen_model.cpp to keep that file to the loading and running.
#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "engine/models/gpen_model.h"
#include "engine/models/gpen_weights8.h"

namespace gpen {

std::unique_ptr<GpenModel> GpenModel::synthetic(const GpenConfig& c, Backend& backend, uint32_t seed) {
  std::unique_ptr<GpenModel> m(new GpenModel(backend));
  m->config_ = c;
  m->config_.batch = 1;
  m->config_.weight_dtype = c.act_dtype;
  GpenConfig gen = m->config_;  // values are drawn in f32 and converted by load_weights
  gen.act_dtype = gen.weight_dtype = DType::f32;
  gen.quant8 = DType::f32;
  GpenGraph g = build_gpen_graph(gen);
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
  WeightMap host = std::move(m->weights_);
  if (dtype_is_8bit_weight(c.quant8)) {
    // The same float values quantised as the converter would (Q stays the fp32 weights' table).
    GpenConfig qc = m->config_;
    quantize_host_weights(build_gpen_graph(qc).graph, host, m->synthetic_data_);
  }
  m->load_weights(host, "synthetic GPEN");
  if (m->device_ || m->host_weights_) m->synthetic_data_.clear();  // copied: no longer read
  return m;
}

}  // namespace gpen
