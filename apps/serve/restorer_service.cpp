#include "apps/serve/restorer_service.h"

#include <algorithm>
#include <cstdio>

#include "engine/core/bytes.h"
#include "engine/photo/facexlib_flow.h"
#include "apps/restore_tasks.h"
#include "engine/core/error.h"
#include "engine/photo/face_flow.h"
#include "engine/photo/parse_mask.h"
#include "kernels/cpu/face_io.h"
#include "kernels/cpu/ops.h"
#include "reports/plan.h"

namespace gpen::serve {

using namespace cli::restore_detail;

namespace {

// The largest input the detector plans for: photos over 1500 px are shrunk to 1000 for detection
// (DetectOptions), so 1500 x 1500 is the most a photo makes it plan.
constexpr int kLargestDetectorInput = 1500;

// /v1/plan for GFPGAN, CodeFormer or RestoreFormer: the network at batch 1 and the detector at the warm-up's
// 1500 x 1500, each in an arena of its own (the facexlib flows share none), in the keys of
// `gpen plan --pipeline`.
nlohmann::json facexlib_plan(FaceFlow flow, const std::string& model, const std::string& detector_arch) {
  report::PlanArgs g;
  g.arch = face_flow_arch(flow);
  g.model = model;
  report::PlanArgs d;
  d.arch = detector_arch;
  d.input_size = std::to_string(kLargestDetectorInput) + "x" + std::to_string(kLargestDetectorInput);
  nlohmann::json gen = report::plan_report(g), det = report::plan_report(d);
  gen["model"] = model;
  size_t arena = 0, workspace = 0, weights = 0;
  for (const nlohmann::json* part : {&gen, &det}) {
    arena += (*part)["arena_bytes"].get<size_t>();
    workspace += (*part)["workspace_bytes"].get<size_t>();
    weights += (*part)["weights_bytes"].get<size_t>();
  }
  const size_t total = arena + workspace + weights;
  return {{"device", "cpu"},
          {"detector", det},
          {"generator", gen},
          {"joint", {{"arena_bytes", arena}, {"workspace_bytes", workspace}, {"weights_bytes", weights},
                     {"total_bytes", total}}},
          {"separate", {{"arena_bytes", arena}, {"workspace_bytes", workspace}, {"total_bytes", total}}},
          {"bytes_saved", 0},
          {"batch_limit", 1}};
}

}  // namespace

RestorerService::RestorerService(const EngineOptions& opt) : opt_(opt) {
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

RestorerService::~RestorerService() {
  batcher_.reset();  // runs what it holds on the engine thread, so before that stops
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void RestorerService::loop() {
  for (;;) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return stop_ || !jobs_.empty() || !photos_.empty(); });
    if (!jobs_.empty()) {
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      continue;
    }
    if (photos_.empty()) return;  // stopping, nothing left
    // Photos wait for others to share their GPEN batches: until enough have come or the first
    // has waited the batch wait (other engine work goes first meanwhile).
    const auto deadline = photos_.front()->queued + opt_.batch_wait;
    const size_t enough = static_cast<size_t>(std::max(info_.batch_limit, 1));
    cv_.wait_until(lock, deadline, [&] { return stop_ || !jobs_.empty() || photos_.size() >= enough; });
    if (!jobs_.empty()) continue;
    std::vector<PhotoJob*> group = take_photo_group();
    lock.unlock();
    restore_photos(group);
  }
}

std::vector<RestorerService::PhotoJob*> RestorerService::take_photo_group() {
  std::vector<PhotoJob*> group;
  const RestoreCall call = photos_.front()->call;
  for (auto it = photos_.begin(); it != photos_.end() && static_cast<int>(group.size()) < info_.batch_limit;) {
    if ((*it)->call == call) {
      group.push_back(*it);
      it = photos_.erase(it);
    } else {
      ++it;
    }
  }
  return group;
}

void RestorerService::restore_photos(const std::vector<PhotoJob*>& group) {
  std::vector<ImageView> views;
  for (const PhotoJob* j : group) views.push_back(*j->photo);
  std::vector<gpen::RestoreResult> done;
  try {
    done = restorer_->restore(views, group.front()->call);
  } catch (...) {
    for (PhotoJob* j : group) j->done.set_exception(std::current_exception());
    return;
  }
  // The facexlib flows' detector is planned for each photo's size: its arena may have grown.
  if (is_facexlib_flow(restorer_->flow())) update_memory();
  int faces = 0;
  for (size_t i = 0; i < group.size(); ++i) {
    RestoreResult r;
    r.image = std::move(done[i].image);
    r.faces_found = static_cast<int>(done[i].faces.size());
    r.faces_restored = done[i].restored;
    faces += r.faces_restored;
    group[i]->done.set_value(std::move(r));
  }
  // The faces went through GPEN in photo order, in batches of the planned batch.
  if (opt_.on_batch)
    for (int left = faces; left > 0; left -= info_.batch_limit) opt_.on_batch(std::min(left, info_.batch_limit));
}

template <class F>
auto RestorerService::on_engine(F f) -> decltype(f()) {
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

void RestorerService::wait_loaded() { loaded_.get(); }

bool RestorerService::ready() const { return ready_; }

void RestorerService::load() {
  RestoreArgs a = opt_.args;
  finish_task_options(a);  // the task recorded in the .gpw: photos need an enhance model
  RestoreConfig c = restore_config(a);
  c.plan_at_limit = true;  // memory fixed at start, whatever the load
  restorer_ = Restorer::open(c);
  const RestorePlan& p = restorer_->plan();
  info_.model = face_flow_name(restorer_->flow());
  info_.device = p.device;
  info_.precision = p.precision;
  info_.size = p.size;
  info_.batch_limit = p.split.batch;
  info_.parser = restorer_->parser() != nullptr;
  info_.sr = restorer_->sr_model() != nullptr;
  const std::string detector_arch =
      restorer_->detector().backbone() == RetinaFaceBackbone::resnet50 ? "retinaface-r50" : "retinaface-mnet";
  if (is_facexlib_flow(restorer_->flow())) {
    plan_ = facexlib_plan(restorer_->flow(), a.model, detector_arch);
    std::fprintf(stderr, "gpen serve: %s %dx%d on %s (%s), one face per run; %s, upscale %d, paste mask %s\n",
                 info_.model.c_str(), p.size, p.size, p.device.c_str(), p.precision.c_str(),
                 restorer_->facexlib()->rules().name, c.upscale, p.mask.c_str());
    return;
  }
  GpenModel& model = restorer_->model();

  // Aligned crops of concurrent requests share GPEN batches, run on the engine thread.
  BatcherOptions bo;
  bo.max_batch = p.split.batch;
  bo.max_wait = opt_.batch_wait;
  bo.max_depth = opt_.batch_depth;
  bo.in_floats = static_cast<size_t>(model.size()) * model.size() * 3;
  bo.out_floats = static_cast<size_t>(model.output_size()) * model.output_size() * 3;
  batcher_ = std::make_unique<FaceBatcher>(
      bo, [this](int n, const float* in, float* out) { on_engine([&] { restorer_->model().run(n, in, out); }); },
      opt_.on_batch);

  report::PlanArgs pa;
  pa.pipeline = true;
  pa.arch = detector_arch;
  pa.input_size = std::to_string(kLargestDetectorInput) + "x" + std::to_string(kLargestDetectorInput);
  pa.model = a.model;
  pa.batch = p.split.batch;
  pa.precision = p.precision;
  pa.device = is_device_backend(restorer_->backend()) ? "cuda" : "cpu";
  pa.parse = info_.parser;
  plan_ = report::plan_report(pa);
  plan_["batch_limit"] = p.split.batch;
  std::fprintf(stderr, "gpen serve: GPEN %dx%d on %s (%s), batch limit %d from a budget of %s; paste mask %s\n",
               p.size, p.size, p.device.c_str(), p.precision.c_str(), p.split.batch,
               human_bytes(double(p.budget_bytes)).c_str(), p.mask.c_str());
}

void RestorerService::warm_up() {
  Image blank;
  blank.width = blank.height = kLargestDetectorInput;
  blank.bgr.assign(blank.pixels() * 3, 128);
  const ImageView view = blank;
  if (is_facexlib_flow(restorer_->flow())) {
    // The network once, and the detector at 1500 x 1500 (the facexlib flows detect on photos at
    // their own size: a larger one grows the detector's arena, and the figures follow it).
    Image face;
    face.width = face.height = info_.size;
    face.bgr.assign(face.pixels() * 3, 128);
    (void)restorer_->restore_aligned(face);
    (void)restorer_->restore(view);
    update_memory();
    return;
  }
  // GPEN at the full batch, the detector at its largest input and the paste steps (each mask's)
  // touch every page they will use.
  GpenModel& model = restorer_->model();
  const int S = model.size(), B = info_.batch_limit;
  std::vector<float> in(static_cast<size_t>(S) * S * 3 * static_cast<size_t>(B), 0.0f),
      out(static_cast<size_t>(model.output_size()) * model.output_size() * 3 * static_cast<size_t>(B));
  model.run(B, in.data(), out.data());
  RestoreCall call;
  call.sr = false;
  (void)restorer_->restore({&view, 1}, call);
  if (ParseNetModel* parser = restorer_->parser()) {
    call.rect_mask = true;
    (void)restorer_->restore({&view, 1}, call);
    (void)face_parse(*parser, model_to_face(out.data(), S));
  }
  update_memory();
}

void RestorerService::update_memory() {
  MemoryFigures m;
  if (is_facexlib_flow(restorer_->flow())) {
    const nlohmann::json j = restorer_->memory_json();
    m.weights_bytes = j["weights_bytes"].get<size_t>();
    m.workspace_bytes = j["workspace_bytes"].get<size_t>();
    m.arena_bytes = j["arena_bytes"].get<size_t>() + j["detector_arena_bytes"].get<size_t>();
  } else {
    GpenModel& model = restorer_->model();
    RetinaFaceDetector& det = restorer_->detector();
    m.weights_bytes = model.plan().weights_bytes;
    m.workspace_bytes = model.workspace_bytes();
    m.arena_bytes = model.arena_bytes() + (det.uses_shared_memory() ? 0 : det.arena_capacity());
  }
  std::lock_guard lock(mu_);
  memory_ = m;
}

int RestorerService::batch_depth() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(photos_.size()) + (batcher_ ? batcher_->depth() : 0);
}

ServiceInfo RestorerService::info() const { return info_; }
nlohmann::json RestorerService::plan() const { return plan_; }
MemoryFigures RestorerService::memory() const {
  std::lock_guard lock(mu_);
  return memory_;
}

RestoreResult RestorerService::restore(const Image& photo, const RestoreRequest& req) {
  RestoreCall call;
  call.rect_mask = req.mask == "rect";
  call.sr = req.sr;
  RestoreResult out;
  if (req.aligned && is_facexlib_flow(restorer_->flow())) {
    // As `gpen restore --aligned` with GFPGAN, CodeFormer or RestoreFormer (has_aligned=True), one crop per run.
    out.image = on_engine([&] { return restorer_->restore_aligned(photo); });
    if (opt_.on_batch) opt_.on_batch(1);
    out.faces_found = out.faces_restored = 1;
    return out;
  }
  if (req.aligned) {
    // As `gpen restore --aligned`: the crop resized to the model's size, GPEN (in a batch with
    // other requests' crops), then RealESRNet when asked; the conversions on this request thread.
    const int S = info_.size, O = restorer_->model().output_size();
    std::vector<float> x(static_cast<size_t>(S) * S * 3), y(static_cast<size_t>(O) * O * 3);
    face_to_model(photo, S, x.data());
    batcher_->run(1, x.data(), y.data());
    out.image = model_to_face(y.data(), O);
    if (req.sr) out.image = on_engine([&] { return restorer_->super_resolve(out.image, true); });
    out.faces_found = out.faces_restored = 1;
    return out;
  }
  PhotoJob job;
  job.photo = &photo;
  job.call = call;
  job.queued = std::chrono::steady_clock::now();
  std::future<RestoreResult> result = job.done.get_future();
  {
    std::lock_guard lock(mu_);
    photos_.push_back(&job);
  }
  cv_.notify_one();
  return result.get();
}

std::vector<Face> RestorerService::detect(const Image& photo) {
  return on_engine([&] { return restorer_->detector().detect(photo, DetectOptions{}); });
}

}  // namespace gpen::serve
