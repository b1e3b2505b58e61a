// Restorer with a GFPGAN, CodeFormer or RestoreFormer model: the options each flow takes (one table), and the
// setup of the facexlib flows (facexlib_flow.h): the network and the face parser on the CPU backend,
// or with --device cuda on the device backend (the network in fp32, or fp16 / bf16 with
// --precision; the parser in fp32), the photo steps (detection, alignment, paste, background
// upsampling) on the host either way.
#include <string>

#include "engine/core/error.h"
#include "engine/photo/restorer.h"

#include "engine/models/codeformer.h"
#include "engine/models/gfpgan.h"
#include "engine/photo/facexlib_flow.h"
#include "engine/photo/super_resolution.h"
#include "engine/runtime/device.h"

namespace gpen {

namespace {

// Options only some flows take: set for another flow's model, they are refused.
enum FlowSet : unsigned {
  kGpen = 1u << 0,
  kGfpgan = 1u << 1,
  kCodeformer = 1u << 2,
  kRestoreformer = 1u << 3,
  kFacexlib = kGfpgan | kCodeformer | kRestoreformer
};
struct FlowOption {
  const char* option;
  unsigned flows;
  const char* models;  // how the message names the models that take it
  bool (*set)(const RestoreConfig&);
};
constexpr FlowOption kFlowOptions[] = {
    {"--memory-budget", kGpen, "GPEN", [](const RestoreConfig& c) { return c.low_memory; }},
    {"--vram-budget", kGpen, "GPEN", [](const RestoreConfig& c) { return c.memory_budget.has_value(); }},
    {"--batch", kGpen, "GPEN", [](const RestoreConfig& c) { return c.batch != 0; }},
    {"--arena-budget", kGpen, "GPEN", [](const RestoreConfig& c) { return c.arena_budget != 0; }},
    {"--bands", kGpen, "GPEN", [](const RestoreConfig& c) { return c.bands != 0; }},
    {"--det-max-side", kGpen, "GPEN", [](const RestoreConfig& c) { return c.det_max_side >= 0; }},
    {"--upscale", kFacexlib, "GFPGAN, CodeFormer and RestoreFormer", [](const RestoreConfig& c) { return c.upscale != 1; }},
    {"--only-center-face", kFacexlib, "GFPGAN, CodeFormer and RestoreFormer", [](const RestoreConfig& c) { return c.only_center_face; }},
    {"--fidelity", kCodeformer, "CodeFormer", [](const RestoreConfig& c) { return c.fidelity != 0.5f; }},
    {"--face-upsample", kCodeformer, "CodeFormer", [](const RestoreConfig& c) { return c.face_upsample; }},
};

unsigned flow_bit(FaceFlow f) { return 1u << static_cast<unsigned>(f); }

// fp32 unless --precision says otherwise (check_config has refused 16 bits on the CPU).
DType facexlib_precision(const RestoreConfig& c) { return parse_precision_flag(c.precision).value_or(DType::f32); }

}  // namespace

void check_config(const RestoreConfig& c, FaceFlow flow) {
  // The facexlib networks run fp32 unless asked (the official flows' precision), fp16 or bf16 on a
  // device only: these flows keep the network on the CPU unless --device cuda is given.
  if (flow != FaceFlow::gpen && !c.precision.empty())
    GPEN_CHECK(parse_precision(c.precision) == DType::f32 || c.device == DeviceKind::cuda,
               "--precision " + c.precision + ": the CPU backend runs " + face_flow_name(flow) +
                   " in fp32 only (use --device cuda)");
  for (const FlowOption& o : kFlowOptions)
    if (!(o.flows & flow_bit(flow)) && o.set(c))
      throw Error(std::string(o.option) + " is an option of " + o.models + " models; " + c.model + " is a " +
                  face_flow_name(flow) + " model");
  GPEN_CHECK(c.upscale >= 1 && c.upscale <= 8, "upscale must be in 1..8");
  GPEN_CHECK(c.fidelity >= 0.0f && c.fidelity <= 1.0f, "fidelity must be in [0, 1]");
  GPEN_CHECK(!c.face_upsample || !c.sr.empty(),
             "--face-upsample runs the restored faces through the background upsampler: give it with --sr "
             "REALESRGAN.gpw");
}

float detection_threshold(const RestoreConfig& c, FaceFlow flow) {
  if (c.threshold > 0) return c.threshold;
  return is_facexlib_flow(flow) ? facexlib_rules(facexlib_helper(flow)).threshold : 0.9f;
}

std::unique_ptr<Restorer> Restorer::open_facexlib(const RestoreConfig& c, FaceFlow flow, const CudaProvider* cuda) {
  std::unique_ptr<Restorer> r(new Restorer);
  r->config_ = c;
  r->flow_ = flow;
  r->apply_threads();
  // The network and the parser on the device only when asked (--device cuda; automatic keeps
  // these flows on the CPU); the detector and the background upsampler on the host.
  if (c.device == DeviceKind::cuda) {
    DeviceOptions dopt;
    dopt.kind = DeviceKind::cuda;
    dopt.cuda_graphs = c.cuda_graphs;
    r->backend_ = make_backend(dopt, cuda);
    r->host_backend_ = make_cpu_backend();
  } else {
    r->backend_ = make_cpu_backend();
  }
  Backend& host = r->host_backend_ ? *r->host_backend_ : *r->backend_;
  r->net_ = open_facexlib_net(c.model, flow, *r->backend_, c.fidelity, facexlib_precision(c));
  r->detector_ = std::make_unique<RetinaFaceDetector>(c.detector);
  if (mask_kind(c) == "parse") r->parser_ = std::make_unique<ParseNetModel>(c.parser, *r->backend_);
  FacexlibFlowOptions o;
  if (!c.sr.empty()) {
    // The background upsampler (RealESRGAN_x2plus in both scripts): tiles of the scripts' --bg_tile
    // (400) unless --sr-tile says otherwise; no memory budget picks it here.
    r->sr_ = open_sr_model(c.sr, host, "fp32");
    o.background = r->sr_.get();
    if (c.sr_tile != "auto") o.background_tile = resolve_sr_tile({c.sr_tile, 0}, *r->sr_, 1, 1, nullptr);
  }
  o.helper = facexlib_helper(flow);
  o.threshold = detection_threshold(c, flow);
  o.only_center_face = c.only_center_face;
  o.upscale = c.upscale;
  o.blend = c.alpha;
  o.face_upsample = c.face_upsample;
  r->facexlib_faces_ = std::make_unique<FacexlibRestorer>(r->net_->run, r->detector_.get(), r->parser_.get(), o);
  RestorePlan& p = r->plan_;
  p.device = r->backend_->name();
  p.precision = precision_name(facexlib_precision(c));
  p.size = kFacexlibFaceSize;
  p.split.batch = 1;
  p.detector_device = r->detector_->device();
  p.mask = mask_kind(c);
  if (r->sr_) {
    p.sr_model = r->sr_->config().describe();
    p.sr_tile = std::to_string(o.background_tile);
  }
  if (r->parser_) {
    const MemoryPlan& pp = r->parser_->plan_for(kParseSize, kParseSize);
    p.parser_arena_bytes = pp.arena_bytes;
    p.parser_workspace_bytes = pp.workspace_bytes;
    p.parser_weights_bytes = r->parser_->weights_bytes();
  }
  return r;
}

GfpganModel* Restorer::gfpgan_model() { return net_ ? net_->gfpgan.get() : nullptr; }

CodeformerModel* Restorer::codeformer_model() { return net_ ? net_->codeformer.get() : nullptr; }

nlohmann::json Restorer::facexlib_memory_json() const {
  // The keys of GPEN's memory_json where they apply, so that a report reads the same for every
  // kind: the network's arena is its own (nothing shares it), its flow runs on the host.
  const MemoryPlan& plan = net_->plan(config_.fidelity);
  const size_t weights = net_->weights_bytes();
  return {{"device", backend_->name()},
          {"precision", plan_.precision},
          {"model", face_flow_arch(flow_)},
          {"batch", 1},
          {"batch_limit", 1},
          {"weights_bytes", weights},
          {"arena_bytes", plan.arena_bytes},
          {"workspace_bytes", plan.workspace_bytes},
          // Planned for each photo at its own size (the helpers detect on the photo as it is): the
          // capacity of the largest photo so far.
          {"detector_arena_bytes", detector_->arena_capacity()},
          {"detector_in_generator_arena", false},
          {"mask", plan_.mask},
          {"parsenet_arena_bytes", plan_.parser_arena_bytes},
          {"parsenet_workspace_bytes", plan_.parser_workspace_bytes},
          {"parsenet_weights_bytes", plan_.parser_weights_bytes},
          {"parsenet_in_generator_arena", false},
          {"shared_arena_bytes", plan.arena_bytes},
          {"pipeline_on_device", false},
          {"pipeline_buffer_bytes", 0},
          // The background upsampler's weights, and its arena and workspace as the tiles so far
          // needed them.
          {"sr_bytes", sr_ ? sr_->weights_bytes() + sr_->arena_bytes() + sr_->workspace_bytes() : 0}};
}

}  // namespace gpen
