// Restorer with a GFPGAN model: the options each flow takes (one table), and the setup of
// GFPGAN's flow (gfpgan_flow.h) on the CPU backend.
#include <string>

#include "engine/core/error.h"
#include "engine/photo/restorer.h"

#include "engine/models/gfpgan.h"
#include "engine/photo/gfpgan_flow.h"

namespace gpen {

namespace {

// Options only one flow takes: set for the other flow's model, they are refused.
struct FlowOption {
  const char* option;
  FaceFlow flow;
  bool (*set)(const RestoreConfig&);
};
constexpr FlowOption kFlowOptions[] = {
    {"--sr (background super-resolution)", FaceFlow::gpen, [](const RestoreConfig& c) { return !c.sr.empty(); }},
    {"--device cuda", FaceFlow::gpen, [](const RestoreConfig& c) { return c.device == DeviceKind::cuda; }},
    {"--precision", FaceFlow::gpen,
     [](const RestoreConfig& c) { return !c.precision.empty() && c.precision != "fp32"; }},
    {"--vram-budget", FaceFlow::gpen, [](const RestoreConfig& c) { return c.memory_budget.has_value(); }},
    {"--batch", FaceFlow::gpen, [](const RestoreConfig& c) { return c.batch != 0; }},
    {"--arena-budget", FaceFlow::gpen, [](const RestoreConfig& c) { return c.arena_budget != 0; }},
    {"--bands", FaceFlow::gpen, [](const RestoreConfig& c) { return c.bands != 0; }},
    {"--det-max-side", FaceFlow::gpen, [](const RestoreConfig& c) { return c.det_max_side >= 0; }},
    {"--parse / --mask parse (GFPGAN's face-parsing paste is not available yet)", FaceFlow::gpen,
     [](const RestoreConfig& c) { return mask_kind(c) == "parse"; }},
    {"--upscale", FaceFlow::gfpgan, [](const RestoreConfig& c) { return c.upscale != 1; }},
    {"--only-center-face", FaceFlow::gfpgan, [](const RestoreConfig& c) { return c.only_center_face; }},
};

}  // namespace

void check_config(const RestoreConfig& c, FaceFlow flow) {
  for (const FlowOption& o : kFlowOptions)
    if (o.flow != flow && o.set(c))
      throw Error(std::string(o.option) + " is an option of " + face_flow_name(o.flow) + " models; " + c.model +
                  " is a " + face_flow_name(flow) + " model");
  GPEN_CHECK(c.upscale >= 1 && c.upscale <= 8, "upscale must be in 1..8");
}

float detection_threshold(const RestoreConfig& c, FaceFlow flow) {
  if (c.threshold > 0) return c.threshold;
  return flow == FaceFlow::gfpgan ? GfpganFlowOptions{}.threshold : 0.9f;
}

std::unique_ptr<Restorer> Restorer::open_gfpgan(const RestoreConfig& c) {
  std::unique_ptr<Restorer> r(new Restorer);
  r->config_ = c;
  r->apply_threads();
  // GFPGAN's own ops have CPU kernels only: the network and the detector run on the CPU.
  r->backend_ = make_cpu_backend();
  r->gfpgan_ = std::make_unique<GfpganModel>(c.model, *r->backend_);
  r->detector_ = std::make_unique<RetinaFaceDetector>(c.detector);
  GfpganFlowOptions o;
  o.threshold = detection_threshold(c, FaceFlow::gfpgan);
  o.only_center_face = c.only_center_face;
  o.upscale = c.upscale;
  o.blend = c.alpha;
  r->gfpgan_faces_ = std::make_unique<GfpganRestorer>(*r->gfpgan_, *r->detector_, o);
  RestorePlan& p = r->plan_;
  p.device = r->backend_->name();
  p.precision = "fp32";
  p.size = r->gfpgan_->config().out_size;
  p.split.batch = 1;
  p.detector_device = r->detector_->device();
  p.mask = "rect";
  return r;
}

nlohmann::json Restorer::gfpgan_memory_json() const {
  // The keys of GPEN's memory_json where they apply, so that a report reads the same for both
  // kinds: GFPGAN's arena is its own (nothing shares it), its flow runs on the host.
  const MemoryPlan& plan = gfpgan_->plan_for(1);
  return {{"device", backend_->name()},
          {"precision", "fp32"},
          {"model", "gfpgan"},
          {"batch", 1},
          {"batch_limit", 1},
          {"weights_bytes", gfpgan_->weights_bytes()},
          {"arena_bytes", plan.arena_bytes},
          {"workspace_bytes", plan.workspace_bytes},
          // Planned for each photo at its own size (facexlib detects on the photo as it is): the
          // capacity of the largest photo so far.
          {"detector_arena_bytes", detector_->arena_capacity()},
          {"detector_in_generator_arena", false},
          {"mask", plan_.mask},
          {"parsenet_arena_bytes", 0},
          {"parsenet_workspace_bytes", 0},
          {"parsenet_weights_bytes", 0},
          {"parsenet_in_generator_arena", false},
          {"shared_arena_bytes", plan.arena_bytes},
          {"pipeline_on_device", false},
          {"pipeline_buffer_bytes", 0}};
}

}  // namespace gpen
