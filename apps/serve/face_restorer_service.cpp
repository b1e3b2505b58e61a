#include "apps/serve/face_restorer_service.h"

#include <cstdio>

#include "apps/format.h"
#include "apps/plan_internal.h"
#include "apps/restore_tasks.h"
#include "apps/sr_common.h"
#include "engine/core/error.h"
#include "engine/models/gpen_model.h"
#include "engine/models/parsenet.h"
#include "engine/models/retinaface.h"
#include "engine/models/rrdbnet.h"
#include "engine/photo/parse_mask.h"
#include "engine/photo/pipeline.h"
#include "engine/photo/super_resolution.h"
#include "engine/runtime/device.h"
#include "kernels/cpu/face_io.h"
#include "kernels/cpu/image_resize.h"
#include "kernels/cpu/ops.h"

namespace gpen::serve {

using namespace cli::restore_detail;

namespace {

// The largest input the detector plans for: photos over 1500 px are shrunk to 1000 for detection
// (DetectOptions), so 1500 x 1500 is the most a photo makes it plan.
constexpr int kLargestDetectorInput = 1500;

}  // namespace

FaceRestorerService::FaceRestorerService(const EngineOptions& opt) : opt_(opt) {
  const int threads = cpu::num_threads();
  thread_ = std::thread([this, threads] {
    cpu::set_num_threads(threads);  // OpenMP's thread count is per calling thread
    loop();
  });
  std::promise<void> done;
  loaded_ = done.get_future().share();
  std::lock_guard lock(mu_);
  jobs_.push_back([this, p = std::make_shared<std::promise<void>>(std::move(done))] {
    try {
      load();
      warm_up();
      ready_ = true;
      p->set_value();
    } catch (...) {
      p->set_exception(std::current_exception());
    }
  });
  cv_.notify_one();
}

FaceRestorerService::~FaceRestorerService() {
  batcher_.reset();  // runs what it holds on the engine thread, so before that stops
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void FaceRestorerService::loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

template <class F>
auto FaceRestorerService::on_engine(F f) -> decltype(f()) {
  using R = decltype(f());
  std::packaged_task<R()> task(std::move(f));
  std::future<R> result = task.get_future();
  {
    std::lock_guard lock(mu_);
    jobs_.push_back([&task] { task(); });
  }
  cv_.notify_one();
  return result.get();
}

void FaceRestorerService::wait_loaded() { loaded_.get(); }

bool FaceRestorerService::ready() const { return ready_; }

void FaceRestorerService::load() {
  RestoreArgs a = opt_.args;
  finish_task_options(a);  // the task recorded in the .gpw: photos need an enhance model
  const std::string mask_kind = a.parse.empty() ? "rect" : "parse";
  backend_ = make_backend(device_options(a));
  model_ = open_model(a, *backend_);
  // As `gpen restore`: the detector on the same kind of device with its own backend, ParseNet on
  // GPEN's (so that it can run in GPEN's arena).
  DeviceOptions det_opt = device_options(a);
  det_opt.kind = is_device_backend(*backend_) ? DeviceKind::cuda : DeviceKind::cpu;
  detector_ = std::make_unique<RetinaFaceDetector>(a.detector, make_backend(det_opt));
  if (!a.parse.empty()) parser_ = std::make_unique<ParseNetModel>(a.parse, *backend_);

  size_t budget = 0;
  if (!opt_.memory_budget.empty())
    budget = cli::parse_bytes(opt_.memory_budget);
  else if (auto* dev = dynamic_cast<DeviceBackend*>(backend_.get()))
    budget = dev->memory_info().free / 10 * 8 + model_->device_weights_bytes();
  else
    budget = available_ram() / 2;
  RestoreOptions ro;
  ro.alpha = a.alpha;
  ro.min_score = a.threshold;
  ro.detect.post.threshold = a.threshold;
  ro.plan = plan_options(a);
  // With --sr, RealESRNet keeps its own arena beside GPEN's: GPEN's batch from half the budget.
  const BatchChoice bc =
      choose_batch_banded(model_->config(), *backend_, a.sr_model.empty() ? budget : budget / 2, 16, ro.plan);
  ro.batch = bc.batch;
  ro.plan = bc.plan;
  ro.grow_batch = false;  // planned once, at the batch limit: memory does not grow with load
  // The restorer without a parser first: the one with it re-plans GPEN's arena for ParseNet too.
  if (parser_) rect_restorer_ = std::make_unique<FaceRestorer>(*model_, *detector_, ro);
  ro.parser = parser_.get();
  restorer_ = std::make_unique<FaceRestorer>(*model_, *detector_, ro);
  if (!a.sr_model.empty()) {
    sr_ = cli::open_sr_model(a.sr_model, *backend_, a.precision);
    const size_t gpen_total = model_->plan().total_bytes();
    GPEN_CHECK(gpen_total < budget, "--sr: GPEN at batch " + std::to_string(ro.batch) + " plans to " +
                                        cli::human_bytes(double(gpen_total)) + ", the whole memory budget of " +
                                        cli::human_bytes(double(budget)));
    sr_budget_ = budget - gpen_total;
  }

  // Aligned crops of concurrent requests share GPEN batches, run on the engine thread.
  BatcherOptions bo;
  bo.max_batch = ro.batch;
  bo.max_wait = opt_.batch_wait;
  bo.max_depth = opt_.batch_depth;
  bo.in_floats = static_cast<size_t>(model_->size()) * model_->size() * 3;
  bo.out_floats = static_cast<size_t>(model_->output_size()) * model_->output_size() * 3;
  batcher_ = std::make_unique<FaceBatcher>(
      bo, [this](int n, const float* in, float* out) { on_engine([&] { model_->run(n, in, out); }); }, opt_.on_batch);

  info_.device = backend_->name();
  info_.precision = precision_name(model_->precision());
  info_.size = model_->size();
  info_.batch_limit = ro.batch;
  info_.parser = parser_ != nullptr;
  info_.sr = sr_ != nullptr;

  cli::plan_detail::PlanArgs pa;
  pa.pipeline = true;
  pa.arch = detector_->backbone() == RetinaFaceBackbone::resnet50 ? "retinaface-r50" : "retinaface-mnet";
  pa.input_size = std::to_string(kLargestDetectorInput) + "x" + std::to_string(kLargestDetectorInput);
  pa.model = a.model;
  pa.batch = ro.batch;
  pa.precision = info_.precision;
  pa.device = is_device_backend(*backend_) ? "cuda" : "cpu";
  pa.parse = parser_ != nullptr;
  plan_ = cli::plan_detail::plan_report(pa);
  plan_["batch_limit"] = ro.batch;
  std::fprintf(stderr, "gpen serve: GPEN %dx%d on %s (%s), batch limit %d from a budget of %s; paste mask %s\n",
               model_->size(), model_->size(), backend_->name(), info_.precision.c_str(), ro.batch,
               cli::human_bytes(double(budget)).c_str(), mask_kind.c_str());
}

void FaceRestorerService::warm_up() {
  // GPEN at the full batch and the detector at its largest input touch every page they will use.
  const int S = model_->size(), B = info_.batch_limit;
  std::vector<float> in(static_cast<size_t>(S) * S * 3 * static_cast<size_t>(B), 0.0f),
      out(static_cast<size_t>(model_->output_size()) * model_->output_size() * 3 * static_cast<size_t>(B));
  model_->run(B, in.data(), out.data());
  Image blank;
  blank.width = blank.height = kLargestDetectorInput;
  blank.bgr.assign(blank.pixels() * 3, 128);
  restorer_->process(blank);
  if (parser_) (void)face_parse(*parser_, model_to_face(out.data(), S));
  const MemoryPlan& p = model_->plan();
  memory_.weights_bytes = p.weights_bytes;
  memory_.workspace_bytes = model_->workspace_bytes();
  memory_.arena_bytes = model_->arena_bytes() + (detector_->uses_shared_memory() ? 0 : detector_->arena_capacity());
}

Image FaceRestorerService::super_resolved(ImageView img, bool aligned) {
  // RealESRNet's tile as `gpen restore --sr` chooses it: beside GPEN's plan for photos; from the
  // whole budget (none given: untiled) for aligned crops.
  cli::SrSettings s;
  s.budget = aligned ? (opt_.memory_budget.empty() ? 0 : cli::parse_bytes(opt_.memory_budget)) : sr_budget_;
  SrOptions so;
  so.tile = cli::resolve_sr_tile(s, *sr_, img.width, img.height, nullptr);
  return super_resolve(*sr_, img, so);
}

int FaceRestorerService::batch_depth() const { return batcher_ ? batcher_->depth() : 0; }

ServiceInfo FaceRestorerService::info() const { return info_; }
nlohmann::json FaceRestorerService::plan() const { return plan_; }
MemoryFigures FaceRestorerService::memory() const { return memory_; }

RestoreResult FaceRestorerService::restore(const Image& photo, const RestoreRequest& req) {
  RestoreResult out;
  if (req.aligned) {
    // As `gpen restore --aligned`: the crop resized to the model's size, GPEN (in a batch with
    // other requests' crops), then RealESRNet when asked; the conversions on this request thread.
    const int S = model_->size(), O = model_->output_size();
    std::vector<float> x(static_cast<size_t>(S) * S * 3), y(static_cast<size_t>(O) * O * 3);
    face_to_model(photo, S, x.data());
    batcher_->run(1, x.data(), y.data());
    out.image = model_to_face(y.data(), O);
    if (req.sr) out.image = on_engine([&] { return super_resolved(out.image, true); });
    out.faces_found = out.faces_restored = 1;
    return out;
  }
  return on_engine([&] {
    const bool rect = req.mask == "rect" && rect_restorer_;
    FaceRestorer& fr = rect ? *rect_restorer_ : *restorer_;
    PhotoResult r;
    if (req.sr) {
      // The official order: SR of the photo; the photo resized (bilinear) to the SR size;
      // detection, alignment, GPEN and paste on that; composite onto the SR background.
      const Image bg = super_resolved(photo, false);
      r = fr.process(resize_bilinear(photo, bg.width, bg.height), bg);
    } else {
      r = fr.process(photo);
    }
    out.image = std::move(r.image);
    out.faces_found = static_cast<int>(r.faces.size());
    out.faces_restored = r.restored;
    for (int left = r.restored; left > 0; left -= fr.batch()) {
      const int n = std::min(left, fr.batch());
      if (opt_.on_batch) opt_.on_batch(n);
    }
    return out;
  });
}

std::vector<Face> FaceRestorerService::detect(const Image& photo) {
  return on_engine([&] { return detector_->detect(photo, DetectOptions{}); });
}

}  // namespace gpen::serve
