// Restorer: the restore job's one setup (models, budget split, placement) and its runs on
// decoded images (restorer.h).
#include "engine/photo/restorer.h"

#include "engine/models/codeformer.h"
#include "engine/models/gfpgan.h"
#include "engine/photo/facexlib_flow.h"

#include <omp.h>

#include "engine/core/error.h"
#include "engine/runtime/env_options.h"
#include "kernels/cpu/face_io.h"
#include "kernels/cpu/image_resize.h"

namespace gpen {

std::string mask_kind(const RestoreConfig& c) { return c.mask.empty() ? (c.parser.empty() ? "rect" : "parse") : c.mask; }

void check_low_memory(const RestoreConfig& c) {
  GPEN_CHECK(c.memory_budget.has_value(), "the low-memory mode plans into a memory budget: give one (--memory-budget B)");
  GPEN_CHECK(c.device != DeviceKind::cuda, "--memory-budget plans the CPU's low-memory mode; on CUDA use --vram-budget");
  GPEN_CHECK(c.arena_budget == 0 && c.bands == 0,
             "--memory-budget chooses the banding itself: leave out --arena-budget and --bands");
}

void check_config(const RestoreConfig& c) {
  GPEN_CHECK(!c.detector.empty(), "restore needs a detector (-d RETINAFACE.gpw), or --aligned for face crops");
  GPEN_CHECK(c.mask.empty() || c.mask == "rect" || c.mask == "parse",
             "mask '" + c.mask + "': expected rect (the feathered rectangle) or parse (face parsing)");
  GPEN_CHECK(mask_kind(c) != "parse" || !c.parser.empty(),
             "--mask parse needs the face parser: --parse PARSENET.gpw (gpen convert ParseNet-latest.pth)");
  GPEN_CHECK(c.alpha >= 0.0 && c.alpha <= 1.0, "alpha must be in [0, 1]");
  GPEN_CHECK(c.batch >= 0 && c.batch_cap >= 1, "batch must be at least 1");
  GPEN_CHECK(c.threads >= 0, "threads must be at least 1");
  GPEN_CHECK(c.bands >= 0, "bands must be at least 1");
  if (c.low_memory) {
    check_low_memory(c);
    GPEN_CHECK(mask_kind(c) == "rect",
               "--memory-budget pastes with the rectangle mask: ParseNet (81 MiB of weights, a 289 MiB arena at 512) "
               "is not planned into the low-memory mode; leave out --parse");
    GPEN_CHECK(c.sr.empty(), "--memory-budget does not plan the background super-resolution (--sr): leave it out");
    GPEN_CHECK(!c.plan_at_limit, "the low-memory mode plans GPEN as photos come (plan_at_limit)");
  }
}

std::unique_ptr<GpenModel> open_gpen_model(const std::string& path, Backend& backend, const std::string& precision) {
  const DType p = parse_precision_flag(precision).value_or(default_precision(backend));
  GPEN_CHECK(p == DType::f32 || is_device_backend(backend),
             "--precision " + precision + ": the CPU backend runs fp32 only (use --device cuda)");
  return GpenModel::open(path, backend, p);
}

namespace {

// GPEN's photo steps as the configuration asks: the blend, the detection threshold and size.
RestoreOptions photo_steps(const RestoreConfig& c) {
  RestoreOptions opt;
  opt.alpha = c.alpha;
  opt.min_score = detection_threshold(c, FaceFlow::gpen);
  opt.detect.post.threshold = opt.min_score;
  if (c.det_max_side >= 0) {
    opt.detect.max_side = c.det_max_side;
    opt.detect.target_side = c.det_max_side;
  }
  return opt;
}

}  // namespace

nlohmann::json to_json(const RestorePlan& p) {
  const BudgetSplit& s = p.split;
  nlohmann::json j = {
      {"device", p.device},
      {"precision", p.precision},
      {"size", p.size},
      {"memory_budget_bytes", p.budget_bytes},
      {"memory_budget_given", p.budget_given},
      {"low_memory", p.low_memory},
      {"gpen",
       {{"batch", s.batch},
        {"batch_from_budget", s.batch_from_budget},
        {"budget_bytes", s.gpen_budget},
        {"banded", s.bands > 0},
        {"banded_for_budget", s.banded},
        {"arena_budget_bytes", s.plan.arena_budget},
        {"bands", s.bands},
        {"weights_bytes", s.gpen.weights_bytes},
        {"arena_bytes", s.gpen.arena_bytes},
        {"workspace_bytes", s.gpen.workspace_bytes},
        {"lower_bound_bytes", s.gpen.lower_bound_bytes},
        {"total_bytes", s.gpen.total_bytes()}}},
      {"pipeline_on_device", p.pipeline_on_device},
      {"detector", {{"device", p.detector_device}}},
      {"mask", p.mask},
      {"parser", nullptr},
      {"sr", nullptr}};
  if (p.mask == "parse")
    j["parser"] = {{"arena_bytes", p.parser_arena_bytes},
                   {"workspace_bytes", p.parser_workspace_bytes},
                   {"weights_bytes", p.parser_weights_bytes},
                   {"in_generator_arena", p.parser_in_generator_arena}};
  if (!p.sr_model.empty()) j["sr"] = {{"model", p.sr_model}, {"tile", p.sr_tile}, {"budget_bytes", s.sr_budget}};
  return j;
}

std::unique_ptr<Restorer> Restorer::open(const RestoreConfig& c, const CudaProvider* cuda) {
  check_config(c);
  const FaceFlow flow = face_flow_of_file(c.model);
  check_config(c, flow);
  if (is_facexlib_flow(flow)) return open_facexlib(c, flow, cuda);
  if (c.low_memory) return open_low_memory(c);
  std::unique_ptr<Restorer> r(new Restorer);
  r->config_ = c;
  r->apply_threads();
  DeviceOptions dopt;
  dopt.kind = c.device;
  dopt.cuda_graphs = c.cuda_graphs;
  r->backend_ = make_backend(dopt, cuda);
  Backend& be = *r->backend_;
  r->model_ = open_gpen_model(c.model, be, c.precision);
  // The detector on the same kind of device (its own backend: own stream, own arena).
  DeviceOptions det_opt = dopt;
  det_opt.kind = is_device_backend(be) ? DeviceKind::cuda : DeviceKind::cpu;
  r->detector_ = std::make_unique<RetinaFaceDetector>(c.detector, make_backend(det_opt, cuda));
  // On GPEN's backend, so that it can run in GPEN's arena (parsing and restoring take turns).
  const std::string mask = mask_kind(c);
  if (mask == "parse") r->parser_ = std::make_unique<ParseNetModel>(c.parser, be);
  RestoreOptions opt = photo_steps(c);
  opt.parser = r->parser_.get();
  // After the models are on the device: the default budget counts what is left there.
  RestorePlan& p = r->plan_;
  p.budget_given = c.memory_budget.has_value();
  p.budget_bytes = p.budget_given ? *c.memory_budget : default_memory_budget(be, r->model_->device_weights_bytes());
  BudgetRequest req;
  req.budget = p.budget_bytes;
  req.batch = c.batch;
  req.batch_cap = c.batch_cap;
  req.plan.arena_budget = c.arena_budget;
  req.plan.bands = c.bands;
  req.sr = !c.sr.empty();
  p.split = split_budget(r->model_->config(), be, req);
  opt.batch = p.split.batch;
  opt.plan = p.split.plan;
  // The batch is a limit: GPEN is planned for the faces the photos have, up to it (or at it).
  opt.grow_batch = !c.plan_at_limit;
  if (r->parser_ && c.plan_at_limit) {
    // The rectangle-mask steps beside the parser's, both at the limit so that neither re-plans
    // the GPEN they share; first, as the steps with the parser re-plan its arena for ParseNet.
    RestoreOptions rect = opt;
    rect.parser = nullptr;
    r->rect_faces_ = std::make_unique<FaceRestorer>(*r->model_, *r->detector_, rect);
  }
  r->faces_ = std::make_unique<FaceRestorer>(*r->model_, *r->detector_, opt);
  if (!c.sr.empty()) {
    r->sr_ = open_sr_model(c.sr, be, c.precision);
    r->sr_settings_.tile = c.sr_tile;
    r->sr_settings_.budget = p.split.sr_budget;
    p.sr_model = r->sr_->config().describe();
    p.sr_tile = c.sr_tile;
  }
  p.device = be.name();
  p.precision = precision_name(r->model_->precision());
  p.size = r->model_->size();
  p.pipeline_on_device = r->faces_->on_device();
  p.detector_device = r->detector_->device();
  p.mask = mask;
  if (ParseNetModel* parser = r->parser_.get()) {
    p.parser_arena_bytes = parser->plan().arena_bytes;
    p.parser_workspace_bytes = parser->plan().workspace_bytes;
    p.parser_weights_bytes = parser->weights_bytes();
    p.parser_in_generator_arena = parser->uses_shared_memory();
  }
  return r;
}

std::unique_ptr<Restorer> Restorer::open_low_memory(const RestoreConfig& c) {
  std::unique_ptr<Restorer> r(new Restorer);
  r->config_ = c;
  r->apply_threads();
  // GPEN and the detector on low-memory CPU backends: weights read where the files are mapped.
  r->backend_ = make_cpu_backend(low_memory_cpu_options());
  r->model_ = open_gpen_model(c.model, *r->backend_, c.precision);
  r->detector_ = std::make_unique<RetinaFaceDetector>(c.detector, make_cpu_backend(low_memory_cpu_options()));
  RestoreOptions opt = photo_steps(c);
  opt.batch = std::max(c.batch, 1);
  opt.memory_budget = *c.memory_budget;
  opt.keep_faces = c.keep_faces;
  r->faces_ = std::make_unique<FaceRestorer>(*r->model_, *r->detector_, opt);
  RestorePlan& p = r->plan_;
  p.budget_given = true;
  p.budget_bytes = *c.memory_budget;
  p.split.batch = opt.batch;  // GPEN's plan comes with the first photo (memory_json)
  p.device = r->backend_->name();
  p.precision = precision_name(r->model_->precision());
  p.size = r->model_->size();
  p.detector_device = r->detector_->device();
  p.mask = "rect";
  p.low_memory = true;
  return r;
}

Restorer::~Restorer() = default;

GpenModel& Restorer::model() {
  GPEN_CHECK(model_, std::string("this Restorer runs ") + face_flow_name(flow_) + ", not GPEN");
  return *model_;
}

FaceRestorer& Restorer::rect_faces() {
  if (!parser_) return *faces_;
  GPEN_CHECK(rect_faces_, "the rectangle mask beside a face parser needs RestoreConfig::plan_at_limit "
                          "(steps that grow GPEN's batch cannot share it)");
  return *rect_faces_;
}

void Restorer::apply_threads() const {
  // OpenMP's thread count is per calling thread: set on the thread that runs the engine.
  if (config_.threads > 0) omp_set_num_threads(config_.threads);
}

nlohmann::json Restorer::memory_json() const {
  if (facexlib_faces_) return facexlib_memory_json();
  if (model_->batch() < 1) return {{"device", backend_->name()}, {"low_memory", low_memory_json()}};  // nothing run yet
  const MemoryPlan& plan = model_->plan();  // the plan of the batch the photos needed
  return {{"device", backend_->name()},
          {"low_memory", low_memory_json()},
          {"precision", precision_name(model_->precision())},
          {"gpen_batch", faces_->batch()},
          {"gpen_batch_limit", plan_.split.batch},
          {"weights_bytes", plan.weights_bytes},
          {"arena_bytes", plan.arena_bytes},
          {"workspace_bytes", plan.workspace_bytes},
          // In the generator's arena when it fits there (FaceRestorer lends it): no extra memory.
          {"detector_arena_bytes", detector_->arena_capacity()},
          {"detector_in_generator_arena", detector_->uses_shared_memory()},
          // The paste mask, and the face parser's memory when it is the parsing one.
          {"mask", plan_.mask},
          {"parsenet_arena_bytes", parser_ ? parser_->plan().arena_bytes : 0},
          {"parsenet_workspace_bytes", parser_ ? parser_->plan().workspace_bytes : 0},
          {"parsenet_weights_bytes", parser_ ? parser_->weights_bytes() : 0},
          {"parsenet_in_generator_arena", parser_ && parser_->uses_shared_memory()},
          // GPEN's arena as allocated: its plan's, or ParseNet's when that is larger (shared in turns).
          {"shared_arena_bytes", model_->arena_bytes()},
          // Device pipeline: the photo, paste canvas, detection candidates, mask and one batch of
          // crops in one buffer, sized by the largest photo (0 on the host).
          {"pipeline_on_device", faces_->on_device()},
          {"pipeline_buffer_bytes", faces_->device_buffer_bytes()}};
}

nlohmann::json Restorer::plan_photo(int width, int height) {
  GPEN_CHECK(config_.low_memory, "a photo's account is planned in the low-memory mode (a memory budget)");
  apply_threads();
  faces_->plan_call({width, height});
  return low_memory_json();
}

nlohmann::json Restorer::low_memory_json() const {
  if (!config_.low_memory) return nullptr;
  const BudgetUse& u = faces_->budget_use();
  return {{"budget_bytes", plan_.budget_bytes},
          {"gpen_weights_resident_bytes", u.gpen_weights},
          {"gpen_weights_file_bytes", model_->budget_fit().weights.total_bytes},
          {"detector_weights_bytes", u.detector_weights},
          {"arena_bytes", u.arena},
          {"workspace_bytes", u.workspace},
          {"images_bytes", u.images},
          {"pipeline_buffer_bytes", u.buffer},
          {"faces_kept_bytes", u.faces},
          {"planned_bytes", u.total()},
          {"gpen_bands", model_->budget_fit().banding.bands},
          {"gpen_fits", u.fits}};
}

int Restorer::sr_tile(int width, int height, std::string* why) {
  GPEN_CHECK(sr_, "sr_tile: no super-resolution model is configured");
  return resolve_sr_tile(sr_settings_, *sr_, width, height, why);
}

Image Restorer::super_resolved(ImageView photo, const std::function<void(int, int)>& progress, SrReport* report,
                               std::string* why) {
  SrOptions so;
  so.tile = resolve_sr_tile(sr_settings_, *sr_, photo.width, photo.height, why);
  so.progress = progress;
  return gpen::super_resolve(*sr_, photo, so, report);
}

RestoreResult Restorer::restore(ImageView photo, const std::function<void(int, int)>& sr_progress) {
  apply_threads();
  RestoreResult r;
  if (facexlib_faces_) {
    static_cast<PhotoResult&>(r) = facexlib_faces_->process(photo, sr_ ? &r.sr_report : nullptr);
    r.sr = sr_ != nullptr;
    if (r.sr)
      r.sr_tile_reason = plan_.sr_tile == "0" ? "untiled, as asked (--sr-tile 0)"
                                               : "tile " + plan_.sr_tile + " (the scripts' --bg_tile unless --sr-tile)";
    return r;
  }
  if (!sr_) {
    static_cast<PhotoResult&>(r) = faces_->process(photo);
    return r;
  }
  // The official order: SR of the photo; the photo resized (bilinear, 8-bit) to the SR size;
  // detection, alignment, GPEN and paste on that; composite onto the SR background.
  const Image bg = super_resolved(photo, sr_progress, &r.sr_report, &r.sr_tile_reason);
  const Image up = resize_bilinear(photo, bg.width, bg.height);
  static_cast<PhotoResult&>(r) = faces_->process(up, bg);
  r.sr = true;
  return r;
}

std::vector<RestoreResult> Restorer::restore(std::span<const ImageView> photos, const RestoreCall& call,
                                             const FaceAdjust& adjust) {
  apply_threads();
  std::vector<RestoreResult> out(photos.size());
  if (facexlib_faces_) {
    GPEN_CHECK(!adjust, std::string(face_flow_name(flow_)) +
                            "'s flow takes the detector's landmarks as they are (no landmark smoothing)");
    for (size_t i = 0; i < photos.size(); ++i) {
      static_cast<PhotoResult&>(out[i]) = facexlib_faces_->process(photos[i], sr_ ? &out[i].sr_report : nullptr);
      out[i].sr = sr_ != nullptr;
    }
    return out;
  }
  FaceRestorer& steps = call.rect_mask ? rect_faces() : *faces_;
  std::vector<PhotoResult> done;
  if (!sr_ || !call.sr) {
    done = steps.process(photos, {}, adjust);
  } else {
    std::vector<Image> bgs, ups;
    for (size_t i = 0; i < photos.size(); ++i) {
      bgs.push_back(super_resolved(photos[i], {}, &out[i].sr_report, &out[i].sr_tile_reason));
      ups.push_back(resize_bilinear(photos[i], bgs.back().width, bgs.back().height));
      out[i].sr = true;
    }
    const std::vector<ImageView> up_views(ups.begin(), ups.end()), bg_views(bgs.begin(), bgs.end());
    done = steps.process(up_views, bg_views, adjust);
  }
  for (size_t i = 0; i < photos.size(); ++i) static_cast<PhotoResult&>(out[i]) = std::move(done[i]);
  return out;
}

Image Restorer::restore_aligned(ImageView face, const RestoreCall& call) {
  apply_threads();
  if (facexlib_faces_) return facexlib_faces_->restore_aligned(face);  // has_aligned=True
  const int S = model_->size();
  std::vector<float> x(static_cast<size_t>(S) * S * 3), y(x.size());
  face_to_model(face, S, x.data());
  // The low-memory mode: GPEN fitted beside the face, its model-space copies and the result.
  if (config_.low_memory) faces_->fit_budget(face.bgr.size() + (x.size() + y.size()) * sizeof(float) + x.size());
  if (model_->batch() < 1) model_->prepare(1);
  model_->run(1, x.data(), y.data());  // inside the arena planned for the photos' batch
  Image out = model_to_face(y.data(), S);
  if (sr_ && call.sr) out = super_resolve(out, true);  // the official aligned flow with use_sr
  return out;
}

Image Restorer::super_resolve(ImageView image, bool aligned) {
  GPEN_CHECK(sr_, "super_resolve: no super-resolution model is configured");
  if (!aligned) return super_resolved(image, {}, nullptr, nullptr);
  SrSettings s = sr_settings_;
  s.budget = plan_.budget_given ? plan_.budget_bytes : 0;
  SrOptions so;
  so.tile = resolve_sr_tile(s, *sr_, image.width, image.height, nullptr);
  return gpen::super_resolve(*sr_, image, so);
}

}  // namespace gpen
