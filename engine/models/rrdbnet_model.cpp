// RrdbModel: RealESRNet weights on a backend and one executor per input shape, all in one arena
// and one workspace owned here (the shapes of a tiled run are known up front: reserve()).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

#include "engine/models/float_convert.h"
#include "engine/models/rrdbnet.h"
#include "engine/runtime/device.h"
#include "engine/runtime/device_weights.h"

namespace gpen {

std::unique_ptr<RrdbModel> RrdbModel::open(const std::string& path, Backend& backend, std::optional<DType> precision) {
  std::unique_ptr<RrdbModel> m(new RrdbModel(backend));
  m->file_.emplace(GpwFile::open(path));
  m->config_ = rrdb_config_from_gpw(*m->file_);
  m->act_ = precision.value_or(is_device_backend(backend) ? DType::f16 : DType::f32);
  GPEN_CHECK(m->act_ == DType::f32 || is_device_backend(backend),
             std::string("the CPU backend runs RealESRNet in fp32 only (precision ") + precision_name(m->act_) + " asked)");
  GPEN_CHECK(m->act_ == DType::f32 || m->act_ == DType::f16 || m->act_ == DType::bf16,
             std::string("RealESRNet precision must be fp32, fp16 or bf16, got ") + dtype_name(m->act_));
  m->load_weights(&*m->file_, 0);
  if (is_device_backend(backend)) m->file_.reset();
  return m;
}

std::unique_ptr<RrdbModel> RrdbModel::synthetic(const RrdbConfig& c, Backend& backend, uint32_t seed) {
  std::unique_ptr<RrdbModel> m(new RrdbModel(backend));
  c.check();
  m->config_ = c;
  m->act_ = is_device_backend(backend) ? DType::f16 : DType::f32;
  m->load_weights(nullptr, seed);
  return m;
}

RrdbModel::~RrdbModel() {
  shapes_.clear();
  if (arena_) backend_.release(arena_);
  if (ws_) backend_.release(ws_);
  if (device_weights_) backend_.release(device_weights_);
}

size_t RrdbModel::weights_bytes() const { return weights_bytes_; }

void RrdbModel::load_weights(const GpwFile* f, uint32_t seed) {
  // The weight tensors the graph binds (any input size builds the same set).
  const int m = config_.unshuffle();
  const RrdbGraph rg = build_rrdbnet_graph(config_, m, m, act_);
  const std::string origin = f ? f->path() : "synthetic RealESRNet";
  std::mt19937 rng(seed);
  std::vector<const TensorDesc*> ts;
  std::vector<TensorView> src;
  for (const TensorDesc& t : rg.graph.tensors()) {
    if (t.kind != TensorKind::Weight) continue;
    TensorView v;
    if (f) {
      const TensorView* p = f->find(t.name);
      GPEN_CHECK(p, origin + ": weight '" + t.name + "' is missing");
      GPEN_CHECK(p->shape == t.shape, origin + ": weight '" + t.name + "' is " + p->shape.str() + ", the graph expects " +
                                          t.shape.str());
      GPEN_CHECK(p->dtype == DType::f32 || p->dtype == DType::f16 || p->dtype == DType::bf16,
                 origin + ": weight '" + t.name + "' has unsupported dtype " + dtype_name(p->dtype));
      v = *p;
    } else {
      // He-scaled normal weights, 0.1 on the residual branches (the official init), small biases.
      const double fan_in = t.shape.rank == 4 ? static_cast<double>(t.shape[0] * t.shape[1] * t.shape[2]) : 1.0;
      const double sd = t.shape.rank == 4 ? std::sqrt(2.0 / fan_in) * (t.name.rfind("body.", 0) == 0 ? 0.1 : 1.0) : 0.01;
      std::normal_distribution<float> nd(0.0f, static_cast<float>(sd));
      host_.emplace_back(static_cast<size_t>(t.shape.numel()));
      for (float& x : host_.back()) x = nd(rng);
      v = make_view(host_.back().data(), DType::f32, t.shape);
    }
    ts.push_back(&t);
    src.push_back(v);
  }
  weights_bytes_ = 0;
  for (const TensorDesc* t : ts) weights_bytes_ += t->bytes();
  if (!is_device_backend(backend_)) {
    for (size_t i = 0; i < ts.size(); ++i) {
      TensorView v = src[i];
      if (v.dtype != DType::f32) {  // a half-precision file is widened once
        host_.emplace_back(static_cast<size_t>(v.numel()));
        floats_from(v.data, v.dtype, host_.back().data(), host_.back().size());
        v = make_view(host_.back().data(), DType::f32, v.shape);
      }
      weights_[ts[i]->name] = v;
    }
    return;
  }
  std::vector<size_t> sizes;
  for (const TensorDesc* t : ts) sizes.push_back(t->bytes());
  const PackedWeights packed = upload_packed(backend_, sizes, [&](size_t i, uint8_t* dst) {
    const TensorView& v = src[i];
    const size_t n = static_cast<size_t>(v.numel());
    if (v.dtype == ts[i]->dtype) {
      std::memcpy(dst, v.data, ts[i]->bytes());
      return;
    }
    std::vector<float> wide(n);
    floats_from(v.data, v.dtype, wide.data(), n);
    floats_to(wide.data(), dst, ts[i]->dtype, n);
  });
  device_weights_ = packed.base;
  for (size_t i = 0; i < ts.size(); ++i)
    weights_[ts[i]->name] = make_view(static_cast<uint8_t*>(packed.base) + packed.offset[i], ts[i]->dtype, ts[i]->shape);
  host_.clear();
}

void RrdbModel::grow(size_t arena, size_t ws) {
  if (arena <= arena_cap_ && ws <= ws_cap_ && arena_) return;
  // Executors point into the blocks being replaced: rebuilt on next use.
  for (auto& s : shapes_) s->ex.reset();
  if (arena > arena_cap_ || !arena_) {
    if (arena_) backend_.release(arena_);
    arena_ = nullptr;
    arena_ = backend_.allocate(std::max<size_t>(arena, 256));
    arena_cap_ = std::max<size_t>(arena, 256);
  }
  if (ws > ws_cap_) {
    if (ws_) backend_.release(ws_);
    ws_ = nullptr;
    ws_ = backend_.allocate(ws);
    ws_cap_ = ws;
  }
}

RrdbModel::Shaped& RrdbModel::shaped(int h, int w) {
  Shaped* s = nullptr;
  for (auto& p : shapes_)
    if (p->h == h && p->w == w) s = p.get();
  if (!s) {
    auto n = std::make_unique<Shaped>();
    n->h = h;
    n->w = w;
    n->rg = build_rrdbnet_graph(config_, h, w, act_);
    n->plan = plan_memory(n->rg.graph, planned_on(backend_));
    shapes_.push_back(std::move(n));
    s = shapes_.back().get();
  }
  grow(s->plan.arena_bytes, s->plan.workspace_bytes);
  if (!s->ex) s->ex = std::make_unique<Executor>(s->rg.graph, s->plan, backend_, weights_, arena_, ws_);
  return *s;
}

void RrdbModel::reserve(const std::vector<std::pair<int, int>>& shapes) {
  size_t arena = 0, ws = 0;
  for (const auto& [h, w] : shapes) {
    bool have = false;
    for (auto& p : shapes_) have |= p->h == h && p->w == w;
    if (!have) {
      auto n = std::make_unique<Shaped>();
      n->h = h;
      n->w = w;
      n->rg = build_rrdbnet_graph(config_, h, w, act_);
      n->plan = plan_memory(n->rg.graph, planned_on(backend_));
      shapes_.push_back(std::move(n));
    }
    for (auto& p : shapes_)
      if (p->h == h && p->w == w) {
        arena = std::max(arena, p->plan.arena_bytes);
        ws = std::max(ws, p->plan.workspace_bytes);
      }
  }
  grow(arena, ws);
}

void RrdbModel::run(const float* in, int h, int w, float* out) {
  Shaped& s = shaped(h, w);
  last_ = &s;
  const auto t0 = std::chrono::steady_clock::now();
  const Graph& g = s.rg.graph;
  const TensorDesc& ti = g.tensor(s.rg.input);
  const TensorDesc& to = g.tensor(s.rg.output);
  const size_t ni = static_cast<size_t>(ti.shape.numel()), no = static_cast<size_t>(to.shape.numel());
  if (act_ == DType::f32) {
    s.ex->set_input(s.rg.input, in, ni * 4);
    s.ex->run();
    s.ex->get_output(s.rg.output, out, no * 4);
  } else {
    io_.resize(std::max(ni, no) * 2);
    floats_to(in, io_.data(), act_, ni);
    s.ex->set_input(s.rg.input, io_.data(), ni * 2);
    s.ex->run();
    s.ex->get_output(s.rg.output, io_.data(), no * 2);
    floats_from(io_.data(), act_, out, no);
  }
  run_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace gpen
