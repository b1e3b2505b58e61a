#include "engine/models/gpen_model.h"

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "engine/models/float_convert.h"
#include "engine/models/gpen_noise.h"
#include "engine/models/gpen_weights8.h"
#include "engine/runtime/device_weights.h"

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
    c.out_size = j.value("out_size", 0);  // FullGenerator_SR only
    c.q8_group = j.value("quant8_group", 0);  // 8-bit files with per-group scales only
  } catch (const std::exception& e) {
    throw Error(f.path() + ": GPEN configuration incomplete in the header (" + e.what() + ")");
  }
  // 8-bit dense layers (gpen convert --dense-dtype, --dense-layers): the tensors say which.
  c.dense8_layers = 0;
  for (auto [name, bit] : {std::pair{"generator.conv1.conv.modulation.weight", kDense8Modulation},
                           std::pair{"final_linear.0.weight", kDense8FinalLinear},
                           std::pair{"generator.style.1.weight", kDense8StyleMlp}}) {
    const TensorView* v = f.find(name);
    if (!v || !dtype_is_8bit_weight(v->dtype)) continue;
    c.dense8 = v->dtype;
    c.dense8_layers |= bit;
  }
  if (!c.dense8_layers) c.dense8_layers = kDense8All;
  GPEN_CHECK(c.q8_group >= 0, f.path() + ": quant8_group must be >= 0, got " + std::to_string(c.q8_group));
  validate_gpen_config(c);
  return c;
}

std::unique_ptr<GpenModel> GpenModel::open(const std::string& gpw_path, Backend& backend,
                                           std::optional<DType> precision) {
  std::unique_ptr<GpenModel> m(new GpenModel(backend));
  m->file_.emplace(GpwFile::open(gpw_path));
  m->config_ = gpen_config_from_gpw(*m->file_);
  // An 8-bit file (gpen convert --dtype int8|fp8): its big convs run from the codes; everything
  // else in it is f32.
  const DType stored = m->file_->storage_dtype();
  if (dtype_is_8bit_weight(stored)) m->config_.quant8 = stored;
  if (m->device_) {
    // Weights are converted at upload, so any stored dtype runs at any precision.
    m->config_.act_dtype = m->config_.weight_dtype = precision.value_or(default_precision(backend));
  } else {
    m->config_.act_dtype = precision.value_or(DType::f32);  // anything else fails in load_weights
    m->config_.weight_dtype = dtype_is_8bit_weight(stored) ? DType::f32 : stored;
    GPEN_CHECK(m->config_.weight_dtype == DType::f32,
               gpw_path + ": the CPU backend runs fp32 weights; convert with --dtype fp32");
  }
  WeightMap src;
  for (const auto& e : m->file_->tensors()) src[e.name] = e.view;
  m->load_weights(src, gpw_path);
  // Once the weights are copied (the device's upload, the CPU's huge-page copy), unmap the file.
  if (m->device_ || m->host_weights_) m->file_.reset();
  return m;
}

void GpenModel::load_weights(const WeightMap& src, const std::string& origin) {
  const DType p = config_.act_dtype;
  GPEN_CHECK(p == DType::f32 || p == DType::f16 || p == DType::bf16,
             std::string("GPEN precision must be fp32, fp16 or bf16, got ") + dtype_name(p));
  if (!device_) {
    GPEN_CHECK(p == DType::f32, std::string("the CPU backend runs fp32 only (precision ") + precision_name(p) + " asked)");
    weights_ = src;
    // Without huge pages the views stay on the file's mapping (or the synthetic vectors).
    if (backend_.huge_pages() && !backend_.low_memory()) pack_cpu_weights(origin);
    link_qscales(weights_, origin);
    return;
  }
  // Every weight the graph binds, in the graph's dtype, in one upload (device_weights.h).
  GpenConfig c = config_;
  c.batch = 1;
  const GpenGraph gg = build_gpen_graph(c);
  struct Slot {
    const TensorDesc* t;
    const TensorView* v;
  };
  std::vector<Slot> slots;
  std::vector<size_t> sizes;
  for (const TensorDesc& t : gg.graph.tensors()) {
    if (t.kind != TensorKind::Weight) continue;
    auto it = src.find(t.name);
    GPEN_CHECK(it != src.end(), origin + ": weight '" + t.name + "' is missing");
    const TensorView& v = it->second;
    // 8-bit weights are copied as they are (codes) and come only from an 8-bit file; float ones
    // are converted to the graph's dtype.
    const bool w8 = dtype_is_8bit_weight(t.dtype) || dtype_is_8bit_weight(v.dtype);
    GPEN_CHECK(v.shape.numel() == t.shape.numel() &&
                   (w8 ? v.dtype == t.dtype : v.dtype == DType::f32 || v.dtype == DType::f16 || v.dtype == DType::bf16),
               origin + ": weight '" + t.name + "' is " + v.shape.str() + " " + dtype_name(v.dtype) +
                   ", the graph expects " + t.shape.str() + (w8 ? std::string(" ") + dtype_name(t.dtype) : ""));
    GPEN_CHECK(v.contiguous(), origin + ": weight '" + t.name + "' is not contiguous");
    slots.push_back({&t, &v});
    sizes.push_back(t.bytes());
  }
  const PackedWeights packed = upload_packed(backend_, sizes, [&](size_t i, uint8_t* dst) {
    const Slot& s = slots[i];
    const size_t n = static_cast<size_t>(s.t->shape.numel());
    if (s.v->dtype == s.t->dtype) {
      std::memcpy(dst, s.v->data, s.t->bytes());
    } else if (s.v->dtype == DType::f32) {
      floats_to(static_cast<const float*>(s.v->data), dst, s.t->dtype, n);
    } else {
      std::vector<float> wide(n);
      floats_from(s.v->data, s.v->dtype, wide.data(), n);
      floats_to(wide.data(), dst, s.t->dtype, n);
    }
  });
  device_weights_ = packed.base;
  device_weights_bytes_ = packed.bytes;
  weights_.clear();
  for (size_t i = 0; i < slots.size(); ++i) {
    const Slot& s = slots[i];
    TensorView v;
    v.data = static_cast<uint8_t*>(device_weights_) + packed.offset[i];
    v.dtype = s.t->dtype;
    v.shape = s.t->shape;
    v.strides = s.t->strides;
    weights_[s.t->name] = v;
  }
  link_qscales(weights_, origin);
}

void GpenModel::pack_cpu_weights(const std::string& origin) {
  std::vector<TensorView*> views;
  for (auto& [name, v] : weights_) {
    GPEN_CHECK(v.contiguous(), origin + ": weight '" + name + "' is not contiguous");
    views.push_back(&v);
  }
  host_weights_ = pack_host_weights(backend_, views, [&](const void* d, size_t bytes) {
                    if (file_) file_->drop_pages(d, bytes);
                    for (auto& s : synthetic_data_)
                      if (s.data() == d) std::vector<float>().swap(s);
                  }).base;
  synthetic_data_.clear();
  // The small sources were heap blocks: hand their pages back, or the peak resident size keeps them.
  ::malloc_trim(0);
}

GpenModel::~GpenModel() {
  smaller_.clear();
  exec_.reset();
  release_io();
  if (device_weights_) backend_.release(device_weights_);
  if (host_weights_) backend_.release(host_weights_);
}

void GpenModel::release_io() {
  if (device_) {
    if (io_in_) device_->release_host(io_in_);
    if (io_out_) device_->release_host(io_out_);
  }
  io_in_ = io_out_ = nullptr;
}

void GpenModel::prepare(int batch, const std::string& strategy, bool allow_inplace) {
  PlanOptions opt;
  opt.strategy = strategy;
  opt.allow_inplace = allow_inplace;
  prepare(batch, opt);
}

void GpenModel::set_min_memory(size_t arena_bytes, size_t workspace_bytes) {
  min_arena_ = arena_bytes;
  min_ws_ = workspace_bytes;
}

void GpenModel::prepare(int batch, const PlanOptions& opt) {
  std::string key = opt.key() + "+min" + std::to_string(min_arena_) + "," + std::to_string(min_ws_);
  if (batch == batch_ && exec_ && key == plan_key_) return;
  plan_key_ = key;
  opt_ = opt;
  smaller_.clear();
  exec_.reset();
  GpenConfig c = config_;
  c.batch = batch;
  fit_memory_budget_for(c);
  graph_ = std::make_unique<GpenGraph>(build_gpen_graph(c));
  // Transforms keep the input and output tensor ids, so the rest of the model is unaffected.
  transform_ = transform_for_memory(graph_->graph, opt_);
  GPEN_CHECK(!transform_.banding_requested || transform_.banding_fits,
             "GPEN " + std::to_string(c.size) + " at batch " + std::to_string(batch) + ": no banding fits an arena of " +
                 std::to_string(opt_.arena_budget) + " bytes (the smallest lower bound any banding reached is " +
                 std::to_string(transform_.banding_smallest_bound) + " bytes)");
  plan_ = std::make_unique<MemoryPlan>(plan_memory(graph_->graph, planned_on(backend_), opt_));
  MemoryPlan sized = *plan_;  // the executor allocates what its plan says: at least the minimum
  sized.arena_bytes = std::max(sized.arena_bytes, min_arena_);
  sized.workspace_bytes = std::max(sized.workspace_bytes, min_ws_);
  exec_ = std::make_unique<Executor>(graph_->graph, sized, backend_, weights_);
  release_weights_after_use(*exec_, graph_->graph);
  batch_ = batch;
  release_io();
  if (device_) {
    const size_t bytes = static_cast<size_t>(batch) * config_.size * config_.size * 3 * dtype_size(config_.act_dtype);
    const int O = config_.output_size();
    io_in_ = device_->allocate_host(bytes);
    io_out_ = device_->allocate_host(static_cast<size_t>(batch) * O * O * 3 * dtype_size(config_.act_dtype));
  }
}

void GpenModel::set_input(Executor& ex, const GpenGraph& gg, int n, const float* in) {
  const size_t count = static_cast<size_t>(n) * config_.size * config_.size * 3;
  fill_noise(ex, gg, n);
  if (!device_) {
    ex.set_input(gg.input, in, count * sizeof(float));
    return;
  }
  // Through the pinned buffer: the input copy is asynchronous, and the conversion to the
  // precision happens on the way.
  floats_to(in, io_in_, config_.act_dtype, count);
  ex.set_input(gg.input, io_in_, count * dtype_size(config_.act_dtype));
}

void GpenModel::run_timed(Executor& ex) {
  const bool timed = timing_ && device_;
  if (timed) device_->start_timer();
  ex.run();
  if (timed) last_device_ms_ = device_->stop_timer_ms();
}

void GpenModel::fill_noise(Executor& ex, const GpenGraph& gg, int n) {
  if (gg.noise.empty()) return;
  // Face k of this model's stream gets the same noise whatever batch it runs in (gpen_noise.h).
  std::vector<size_t> offset{0};
  for (int t : gg.noise) offset.push_back(offset.back() + static_cast<size_t>(gg.graph.tensor(t).shape.numel()));
  noise_.resize(offset.back());
  for (size_t l = 0; l < gg.noise.size(); ++l) {
    const size_t per_face = (offset[l + 1] - offset[l]) / static_cast<size_t>(n);
    for (int i = 0; i < n; ++i)
      gaussian_noise(noise_seed_, noise_faces_ + static_cast<uint64_t>(i), static_cast<uint32_t>(l),
                     noise_.data() + offset[l] + per_face * i, per_face);
  }
  const DType t = config_.act_dtype;
  const size_t es = dtype_size(t);
  const uint8_t* src = reinterpret_cast<const uint8_t*>(noise_.data());
  if (t != DType::f32) {
    noise_cast_.resize(noise_.size() * es);
    floats_to(noise_.data(), noise_cast_.data(), t, noise_.size());
    src = noise_cast_.data();
  }
  for (size_t l = 0; l < gg.noise.size(); ++l)
    ex.set_input(gg.noise[l], src + offset[l] * es, (offset[l + 1] - offset[l]) * es);
  backend_.synchronize();  // the host buffer is rewritten by the next run
  noise_faces_ += static_cast<uint64_t>(n);
}

void GpenModel::run_on(Executor& ex, const GpenGraph& gg, int n, const float* in, float* out) {
  const size_t count = static_cast<size_t>(n) * config_.output_size() * config_.output_size() * 3;
  set_input(ex, gg, n, in);
  run_timed(ex);
  if (!device_) {
    ex.get_output(gg.output, out, count * sizeof(float));
    return;
  }
  const DType t = config_.act_dtype;
  ex.get_output(gg.output, io_out_, count * dtype_size(t));
  floats_from(io_out_, t, out, count);
}

void GpenModel::run(const float* in, float* out) {
  GPEN_CHECK(exec_, "GpenModel::run before prepare");
  run_on(*exec_, *graph_, batch_, in, out);
}

const TensorView& GpenModel::view(const std::string& name) const {
  GPEN_CHECK(exec_, "GpenModel::view before prepare");
  const auto& ts = graph_->graph.tensors();
  for (size_t t = 0; t < ts.size(); ++t)
    if (ts[t].name == name) return exec_->view(static_cast<int>(t));
  throw Error("no tensor named '" + name + "' in the GPEN graph");
}

std::vector<double> GpenModel::run_profiled(const float* in) {
  GPEN_CHECK(exec_, "GpenModel::run_profiled before prepare");
  set_input(*exec_, *graph_, batch_, in);
  return exec_->run_profiled();
}

GpenModel::Prepared GpenModel::prepared_for(int n) {
  GPEN_CHECK(exec_ && n >= 1 && n <= batch_, "GpenModel::run with " + std::to_string(n) + " faces, prepared for " +
                                                 std::to_string(batch_));
  if (n == batch_) return {exec_.get(), graph_.get()};
  auto it = smaller_.find(n);
  if (it == smaller_.end()) {
    Smaller s;
    GpenConfig c = config_;
    c.batch = n;
    s.graph = std::make_unique<GpenGraph>(build_gpen_graph(c));
    PlanOptions so = opt_;
    // A banding chosen under a budget for n faces must fit the arena made for batch() faces.
    if (so.arena_budget > 0) so.arena_budget = std::min(so.arena_budget, plan_->arena_bytes);
    transform_for_memory(s.graph->graph, so);
    so.strategy = plan_->strategy;
    s.plan = std::make_unique<MemoryPlan>(plan_memory(s.graph->graph, planned_on(backend_), so));
    // Every tensor scales with the batch, so the smaller plan fits; checked all the same.
    GPEN_CHECK(s.plan->arena_bytes <= plan_->arena_bytes && s.plan->workspace_bytes <= plan_->workspace_bytes,
               "plan for " + std::to_string(n) + " faces (arena " + std::to_string(s.plan->arena_bytes) +
                   " B, workspace " + std::to_string(s.plan->workspace_bytes) + " B) does not fit the one for " +
                   std::to_string(batch_) + " (" + std::to_string(plan_->arena_bytes) + " B, " +
                   std::to_string(plan_->workspace_bytes) + " B)");
    s.exec = std::make_unique<Executor>(s.graph->graph, *s.plan, backend_, weights_, exec_->arena(), exec_->workspace());
    release_weights_after_use(*s.exec, s.graph->graph);
    it = smaller_.emplace(n, std::move(s)).first;
  }
  return {it->second.exec.get(), it->second.graph.get()};
}

void GpenModel::run(int n, const float* in, float* out) {
  Prepared p = prepared_for(n);
  run_on(*p.exec, *p.graph, n, in, out);
}

void GpenModel::prepare_smaller() {
  for (int n = 1; n < batch_; ++n) prepared_for(n);
}

void GpenModel::run_in_place(int n, const std::function<void(const TensorView& x)>& fill,
                             const std::function<void(const TensorView& y)>& drain) {
  Prepared p = prepared_for(n);
  fill(p.exec->view(p.graph->input));
  fill_noise(*p.exec, *p.graph, n);
  run_timed(*p.exec);
  drain(p.exec->view(p.graph->output));
}

size_t GpenModel::weights_bytes() const { return plan_ ? plan_->weights_bytes : 0; }

}  // namespace gpen
