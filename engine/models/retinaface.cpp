// RetinaFaceDetector: the weights, one planned executor per input size in one shared arena, and
// detect() around them (the graph it runs: engine/models/retinaface_graph.cpp).
#include "engine/models/retinaface.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/runtime/device.h"
#include "engine/runtime/device_weights.h"
#include "engine/runtime/executor.h"
#include "engine/plan/memory_plan.h"
#include "kernels/cpu/detect_input.h"
#include "weights/gpw.h"
#include "weights/half.h"

namespace gpen {

double detect_input_scale(int w, int h, int max_side, int target_side, int* out_w, int* out_h) {
  GPEN_CHECK(w > 0 && h > 0, "empty image");
  double ss = 1.0;
  const int longer = std::max(w, h);
  if (max_side > 0 && longer > max_side) {
    GPEN_CHECK(target_side > 0, "detection target side must be positive");
    ss = static_cast<double>(target_side) / longer;
  }
  // cv2.resize with fx/fy: dst = saturate_cast<int>(src * f), i.e. round half to even.
  *out_w = ss == 1.0 ? w : std::max(1, static_cast<int>(std::nearbyint(w * ss)));
  *out_h = ss == 1.0 ? h : std::max(1, static_cast<int>(std::nearbyint(h * ss)));
  return ss;
}

// ---------------------------------------------------------------------------------- detector

// Lets every cached executor run in one arena and one workspace: the detector runs one executor
// at a time, so they can share them. Executor asks for its arena and then its workspace; the
// sizes are announced beforehand, and the shared blocks only grow (dropping the executors that
// point into the old ones) when a plan needs more.
class SharedArenaBackend final : public Backend {
 public:
  explicit SharedArenaBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}
  ~SharedArenaBackend() override { drop_own(); }
  // True when a plan does not fit: reserve() will move the blocks, so every executor built on
  // them must be destroyed first.
  bool must_grow(size_t arena, size_t ws) const { return !arena_ || arena > arena_cap_ || ws > ws_cap_; }
  // Makes room for a plan and arms allocate() for the executor built next.
  void reserve(size_t arena, size_t ws) {
    if (!arena_ || arena > arena_cap_) {
      if (arena_ && own_arena_) inner_->release(arena_);
      arena_ = nullptr;
      arena_ = inner_->allocate(std::max<size_t>(arena, 1));
      arena_cap_ = arena;
      own_arena_ = true;
    }
    if (ws > ws_cap_) {
      if (ws_ && own_ws_) inner_->release(ws_);
      ws_ = nullptr;
      ws_ = inner_->allocate(ws);
      ws_cap_ = ws;
      own_ws_ = true;
    }
    next_ = 0;
  }
  // Blocks someone else owns, used until a plan needs more (then reserve() allocates our own).
  // Every executor built on the previous blocks must be gone.
  void lend(void* arena, size_t arena_bytes, void* ws, size_t ws_bytes) {
    drop_own();
    arena_ = arena_bytes ? arena : nullptr;
    arena_cap_ = arena_ ? arena_bytes : 0;
    ws_ = ws_bytes ? ws : nullptr;
    ws_cap_ = ws_ ? ws_bytes : 0;
  }
  bool borrowing() const { return (arena_ && !own_arena_) || (ws_ && !own_ws_); }
  size_t arena_capacity() const { return arena_cap_; }
  size_t workspace_capacity() const { return ws_cap_; }
  Backend& inner() { return *inner_; }

  const char* name() const override { return inner_->name(); }
  size_t workspace_bytes(const Graph& g, const Node& n) const override { return inner_->workspace_bytes(g, n); }
  NodeKernel plan_node(const Graph& g, const Node& n) const override { return inner_->plan_node(g, n); }
  size_t planned_workspace_bytes(const Graph& g, const Node& n, const NodeKernel& k) const override {
    return inner_->planned_workspace_bytes(g, n, k);
  }
  bool huge_pages() const override { return inner_->huge_pages(); }
  void* allocate(size_t bytes) override {
    // First request after reserve(): the arena; second: the workspace.
    const int k = next_++;
    if (k == 0 && bytes <= arena_cap_) return arena_;
    if (k == 1 && bytes <= ws_cap_) return ws_;
    ++allocations_;
    return inner_->allocate(bytes);
  }
  void release(void* p) override {
    if (p != arena_ && p != ws_) inner_->release(p);
  }
  void upload(void* dst, const void* src, size_t bytes) override { inner_->upload(dst, src, bytes); }
  void download(void* dst, const void* src, size_t bytes) override { inner_->download(dst, src, bytes); }
  void run(const Node& n, std::span<const TensorView> in, std::span<const TensorView> out, void* ws) override {
    inner_->run(n, in, out, ws);
  }
  void run_planned(const Node& n, const NodeKernel& k, std::span<const TensorView> in, std::span<const TensorView> out,
                   void* ws) override {
    inner_->run_planned(n, k, in, out, ws);
  }
  void synchronize() override { inner_->synchronize(); }

 private:
  void drop_own() {
    if (arena_ && own_arena_) inner_->release(arena_);
    if (ws_ && own_ws_) inner_->release(ws_);
    arena_ = ws_ = nullptr;
    arena_cap_ = ws_cap_ = 0;
    own_arena_ = own_ws_ = false;
  }
  std::unique_ptr<Backend> inner_;
  void* arena_ = nullptr;
  void* ws_ = nullptr;
  size_t arena_cap_ = 0, ws_cap_ = 0;
  bool own_arena_ = false, own_ws_ = false;
  int next_ = 0;
};

struct RetinaFaceDetector::Model {
  GpwFile file;
  std::vector<std::vector<float>> widened;  // f32 copies of weights stored in f16 / bf16
  WeightMap weights;
  void* device_weights = nullptr;  // device backends: every weight, one allocation
};

struct RetinaFaceDetector::Cached {
  int h = 0, w = 0;
  RetinaFaceGraph rg;
  MemoryPlan plan;
  std::unique_ptr<Executor> ex;
};

RetinaFaceDetector::RetinaFaceDetector(const std::string& path, std::unique_ptr<Backend> backend)
    : backend_(std::make_unique<SharedArenaBackend>(backend ? std::move(backend) : make_cpu_backend())) {
  model_ = std::unique_ptr<Model>(new Model{GpwFile::open(path), {}, {}});
  const GpwFile& f = model_->file;
  GPEN_CHECK(f.arch() == "retinaface", path + ": not a RetinaFace model (arch '" + f.arch() + "')");
  const auto& cfg = f.config();
  GPEN_CHECK(cfg.is_object() && cfg.contains("backbone") && cfg["backbone"].is_string(),
             path + ": RetinaFace config lacks the backbone");
  backbone_ = parse_retinaface_backbone(cfg["backbone"].get<std::string>());
  for (const auto& e : f.tensors()) {
    TensorView v = e.view;
    if (v.dtype == DType::f16 || v.dtype == DType::bf16) {
      // The CPU kernels read f32 weights; a half-precision file is widened once at load.
      std::vector<float> wide(static_cast<size_t>(v.numel()));
      const uint16_t* src = v.as<const uint16_t>();
      for (size_t i = 0; i < wide.size(); ++i)
        wide[i] = v.dtype == DType::f16 ? f16_to_f32(src[i]) : bf16_to_f32(src[i]);
      model_->widened.push_back(std::move(wide));
      v.data = model_->widened.back().data();
      v.dtype = DType::f32;
    }
    GPEN_CHECK(v.dtype == DType::f32, path + ": tensor '" + e.name + "' has unsupported dtype " + dtype_name(v.dtype));
    model_->weights[e.name] = v;
  }
  // On the CPU the weights stay in the file's mapping: a copy on 2 MiB pages, as GpenModel makes
  // (device_weights.h), ran R50 1-3 % slower in two A/Bs and level in a third: R50 reads its
  // weights far less often per FLOP than GPEN's small layers.
  Backend& inner = static_cast<SharedArenaBackend&>(*backend_).inner();
  if (is_device_backend(inner)) {
    // One upload (device_weights.h); the host copies go.
    std::vector<TensorView*> views;
    for (auto& [name, v] : model_->weights) {
      GPEN_CHECK(v.contiguous(), path + ": tensor '" + name + "' is not contiguous");
      views.push_back(&v);
    }
    model_->device_weights = upload_views(inner, views).base;
    model_->widened.clear();
  }
}

RetinaFaceDetector::~RetinaFaceDetector() {
  cache_.clear();
  if (model_ && model_->device_weights) static_cast<SharedArenaBackend&>(*backend_).inner().release(model_->device_weights);
}

RetinaFaceDetector::Cached& RetinaFaceDetector::executor_for(int h, int w) {
  for (size_t i = 0; i < cache_.size(); ++i)
    if (cache_[i]->h == h && cache_[i]->w == w) {
      // Most recently used goes last.
      std::rotate(cache_.begin() + static_cast<std::ptrdiff_t>(i), cache_.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                  cache_.end());
      return *cache_.back();
    }
  if (cache_.size() >= kMaxCached) cache_.erase(cache_.begin());
  // The graph and plan planned_memory just made for this size, else new ones.
  std::unique_ptr<Cached> c = planned_graph_ && planned_graph_->h == h && planned_graph_->w == w
                                  ? std::move(planned_graph_)
                                  : graph_and_plan(h, w);
  auto& be = static_cast<SharedArenaBackend&>(*backend_);
  const MemoryPlan& plan = c->plan;
  // Executors hold addresses in the shared blocks: when these move, the cached ones go.
  if (be.must_grow(plan.arena_bytes, plan.workspace_bytes)) cache_.clear();
  be.reserve(plan.arena_bytes, plan.workspace_bytes);
  c->ex = std::make_unique<Executor>(c->rg.graph, plan, be, model_->weights);
  cache_.push_back(std::move(c));
  return *cache_.back();
}

size_t RetinaFaceDetector::arena_bytes(int h, int w) const {
  for (const auto& c : cache_)
    if (c->h == h && c->w == w) return c->ex->arena_bytes();
  return 0;
}

std::unique_ptr<RetinaFaceDetector::Cached> RetinaFaceDetector::graph_and_plan(int h, int w) const {
  auto c = std::make_unique<Cached>();
  c->h = h;
  c->w = w;
  c->rg = build_retinaface_graph(backbone_, h, w);
  c->plan = plan_memory(c->rg.graph, planned_on(*backend_));
  return c;
}

RetinaFaceDetector::Memory RetinaFaceDetector::planned_memory(int h, int w) {
  for (const auto& [hw, m] : planned_)
    if (hw == std::pair(h, w)) return m;
  // Kept for executor_for: the detection that follows a size's check runs on this plan.
  planned_graph_ = graph_and_plan(h, w);
  const MemoryPlan& plan = planned_graph_->plan;
  if (planned_.size() >= kMaxCached) planned_.erase(planned_.begin());
  planned_.push_back({{h, w}, {plan.arena_bytes, plan.workspace_bytes}});
  return planned_.back().second;
}

size_t RetinaFaceDetector::weights_bytes() const {
  size_t bytes = 0;
  for (const auto& [name, v] : model_->weights) bytes += static_cast<size_t>(v.shape.numel()) * dtype_size(v.dtype);
  return bytes;
}

void RetinaFaceDetector::share_memory(void* arena, size_t arena_bytes, void* workspace, size_t workspace_bytes) {
  cache_.clear();  // the executors point into the blocks being replaced
  static_cast<SharedArenaBackend&>(*backend_).lend(arena, arena_bytes, workspace, workspace_bytes);
}

bool RetinaFaceDetector::uses_shared_memory() const {
  return static_cast<const SharedArenaBackend&>(*backend_).borrowing();
}

size_t RetinaFaceDetector::arena_capacity() const {
  return static_cast<const SharedArenaBackend&>(*backend_).arena_capacity();
}

RetinaFaceDetector::Raw RetinaFaceDetector::run(const float* input, int h, int w) {
  Cached& c = executor_for(h, w);
  const Graph& g = c.rg.graph;
  c.ex->set_input(c.rg.input, input, g.tensor(c.rg.input).bytes());
  c.ex->run();
  Raw r;
  r.loc.resize(static_cast<size_t>(g.tensor(c.rg.loc).shape.numel()));
  r.conf.resize(static_cast<size_t>(g.tensor(c.rg.conf).shape.numel()));
  r.landms.resize(static_cast<size_t>(g.tensor(c.rg.landms).shape.numel()));
  c.ex->get_output(c.rg.loc, r.loc.data(), r.loc.size() * sizeof(float));
  c.ex->get_output(c.rg.conf, r.conf.data(), r.conf.size() * sizeof(float));
  c.ex->get_output(c.rg.landms, r.landms.data(), r.landms.size() * sizeof(float));
  return r;
}

std::vector<double> RetinaFaceDetector::run_profiled(const float* input, int h, int w) {
  Cached& c = executor_for(h, w);
  c.ex->set_input(c.rg.input, input, c.rg.graph.tensor(c.rg.input).bytes());
  return c.ex->run_profiled();
}

const Graph& RetinaFaceDetector::graph_for(int h, int w) { return executor_for(h, w).rg.graph; }

std::vector<Face> RetinaFaceDetector::detect(ImageView img, const DetectOptions& opt) {
  GPEN_CHECK(img.width > 0 && img.height > 0 && img.bgr.size() == img.pixels() * 3, "detect: empty or malformed image");
  // On the host the photo is in the detector's memory already: the input goes straight into the arena.
  if (!is_device_backend(static_cast<SharedArenaBackend&>(*backend_).inner()))
    return detect_in_memory(img.bgr.data(), img.width, img.height, opt, cpu_pipeline_ops(), nullptr);
  int nw = 0, nh = 0;
  const double ss = detect_input_scale(img.width, img.height, opt.max_side, opt.target_side, &nw, &nh);
  std::vector<float> x(static_cast<size_t>(nw) * static_cast<size_t>(nh) * 3);
  cpu::detect_input(img.bgr.data(), img.width, img.height, ss, nw, nh, x.data());
  Raw r = run(x.data(), nh, nw);
  return retinaface_postprocess(r.loc.data(), r.conf.data(), r.landms.data(), nh, nw, opt.post,
                                static_cast<float>(ss));
}

PipelineOps* RetinaFaceDetector::pipeline_ops() const {
  return pipeline_ops_of(static_cast<SharedArenaBackend&>(*backend_).inner());
}

std::vector<Face> RetinaFaceDetector::detect_in_memory(const uint8_t* bgr, int w, int h, const DetectOptions& opt,
                                                       PipelineOps& ops, void* scratch) {
  GPEN_CHECK(&ops == pipeline_ops(), "detect: the steps given are not those of the detector's memory");
  GPEN_CHECK(bgr != nullptr && w > 0 && h > 0, "detect: empty image");
  int nw = 0, nh = 0;
  const double ss = detect_input_scale(w, h, opt.max_side, opt.target_side, &nw, &nh);
  GPEN_CHECK(scratch != nullptr || ops.detect_scratch_bytes(nh, nw) == 0, "detect: no scratch for the candidates");
  Cached& c = executor_for(nh, nw);
  ops.detect_input(bgr, w, h, ss, c.ex->view(c.rg.input));
  c.ex->run();
  return ops.detect_faces(static_cast<const float*>(c.ex->view(c.rg.loc).data),
                          static_cast<const float*>(c.ex->view(c.rg.conf).data),
                          static_cast<const float*>(c.ex->view(c.rg.landms).data), nh, nw, opt.post,
                          static_cast<float>(ss), scratch);
}

}  // namespace gpen
