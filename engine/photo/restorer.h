#pragma once
// The restore job set up once, for every front end: `gpen restore`, the Python Restorer, and what
// runs photos or frames from code (video, serving). Restorer::open takes a RestoreConfig (model
// files, device, precision, memory budget, photo options), opens the models, splits the budget
// (restore_plan.h: GPEN's batch, banded before smaller, RealESRNet's share), places the face
// parser and the detector in GPEN's arena where they fit, and reports what it decided as a
// RestorePlan. Its restore methods run decoded images (8-bit BGR in memory, no files): one photo,
// several photos whose faces share GPEN batches (frames of a video), or aligned face crops.
//
// Thread-compatible, not thread-safe: one thread at a time uses a Restorer (its models, arenas and
// buffers are reused from call to call). Serve several threads with one Restorer per thread, or
// serialise the calls (the Python binding holds a mutex). Calls may come from any thread; with
// RestoreConfig::threads each call sets that thread's OpenMP thread count first.
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/models/gpen_model.h"
#include "engine/models/parsenet.h"
#include "engine/models/retinaface.h"
#include "engine/models/rrdbnet.h"
#include "engine/photo/face_flow.h"
#include "engine/photo/pipeline.h"
#include "engine/photo/restore_plan.h"
#include "engine/photo/super_resolution.h"
#include "engine/runtime/device.h"

namespace gpen {

class GfpganModel;       // engine/models/gfpgan.h
class CodeformerModel;   // engine/models/codeformer.h
class FacexlibRestorer;  // engine/photo/facexlib_flow.h
struct FacexlibNet;      // engine/photo/facexlib_flow.h

struct RestoreConfig {
  // Converted models (.gpw).
  std::string model;     // GPEN, GFPGAN, CodeFormer or RestoreFormer (required): the file's arch picks the flow (face_flow.h)
  std::string detector;  // RetinaFace (required)
  std::string parser;    // ParseNet: paste through the face-parsing mask ("": none)
  std::string mask;      // "rect" or "parse"; "": parse when a parser is given, else rect
  std::string sr;        // RealESRNet: super-resolve the background first ("": none)
  std::string sr_tile = "auto";  // "auto" (from the budget), "0" (untiled) or a tile size
  // Where and how precisely. GPEN's flow: the detector runs on the same kind of device, always
  // fp32. The facexlib flows: the network and ParseNet on the device only with cuda (automatic
  // keeps them on the CPU), ParseNet in fp32, the detector and the photo steps on the host.
  DeviceKind device = DeviceKind::automatic;
  bool cuda_graphs = true;
  // "fp32", "fp16", "bf16". GPEN and RealESRNet: "" is fp32 on the CPU, fp16 on a device. The
  // facexlib networks: "" is fp32 everywhere; 16 bits with cuda only.
  std::string precision;
  // Memory. The budget covers GPEN's weights, arena and workspace (with SR: GPEN's batch from half
  // of it, RealESRNet's tile from what GPEN's plan leaves); default: default_memory_budget.
  std::optional<size_t> memory_budget;
  int batch = 0;            // most faces per GPEN run; 0: the largest the budget fits (up to batch_cap)
  int batch_cap = 16;
  size_t arena_budget = 0;  // run GPEN banded under this arena (0: only when the budget needs it)
  int bands = 0;            // run GPEN with exactly this many bands (0: as the arena budget says)
  // The CPU's low-memory mode (GPEN: docs/memory.md "Low-memory CPU mode"): memory_budget is then
  // what a photo may take at its peak, everything planned counted (GPEN's weights resident, its
  // arena the detector shares, workspace, the detector's weights, the photo, the composite, the
  // paste canvases); GPEN runs one face at a time unless `batch` says more, banded to what is left.
  bool low_memory = false;
  // Keep each restored face crop in the results (RestoreResult::restored_faces).
  bool keep_faces = true;
  // The photo steps.
  double alpha = 1.0;       // the blend (--blend): restored * alpha + aligned crop * (1 - alpha), both flows
  // The facexlib flows only (GFPGAN, CodeFormer, RestoreFormer: facexlib_flow.h): the output at upscale x the
  // photo's size, and only the face nearest the photo's centre.
  int upscale = 1;
  bool only_center_face = false;
  float fidelity = 0.5f;    // CodeFormer's w in [0, 1] (inference_codeformer.py's default 0.5)
  // CodeFormer only, with `sr`: the restored faces upsampled by the background upsampler before
  // the paste (inference_codeformer.py --face_upsample).
  bool face_upsample = false;
  float threshold = 0.0f;   // detection score threshold (faces below are left alone); 0: the flow's (GPEN 0.9, GFPGAN 0.97, CodeFormer 0.8)
  int det_max_side = -1;    // shrink photos whose longer side exceeds N to N for detection (-1: > 1500 -> 1000; 0: never)
  int threads = 0;          // OpenMP threads of each call (0: as the calling thread has it)
  // GPEN planned at the batch limit when opened (a service whose memory must not grow with
  // load); false: planned for the faces the photos have, growing up to the limit.
  bool plan_at_limit = false;
};

// Choices one restore call may make within what the Restorer opened (a service's per-request
// options): the rectangle mask although a face parser is configured (with plan_at_limit), no
// background super-resolution although it is configured.
struct RestoreCall {
  bool rect_mask = false;
  bool sr = true;
  bool operator==(const RestoreCall&) const = default;
};

// Refuses a configuration that cannot work, before anything is opened (a missing detector, mask
// parse without a parser, an alpha outside [0, 1], ...), with a message naming the option.
void check_config(const RestoreConfig& c);
// The low-memory mode's planning options (photos and aligned crops alike): a budget given, the
// CPU, no banding asked for (the fit chooses it). check_config adds the photo flow's own.
void check_low_memory(const RestoreConfig& c);
// The same for the flow the model file runs: options of the other model kind refused, naming the
// option and the kind (restorer_facexlib.cpp holds the rule table).
void check_config(const RestoreConfig& c, FaceFlow flow);
// RestoreConfig::threshold, or the flow's own when it is 0.
float detection_threshold(const RestoreConfig& c, FaceFlow flow);
// The paste mask the configuration asks for: "parse" or "rect".
std::string mask_kind(const RestoreConfig& c);
// GPEN on `backend` at `precision` ("": fp32 on the CPU, fp16 on a device).
std::unique_ptr<GpenModel> open_gpen_model(const std::string& path, Backend& backend, const std::string& precision);

// What Restorer::open decided: device, budget split, GPEN's plan at the batch limit, where the
// face parser and the detector run, the background super-resolution's budget.
struct RestorePlan {
  std::string device, precision;
  int size = 0;                    // GPEN's face size
  size_t budget_bytes = 0;         // the memory budget
  bool budget_given = false;       // as configured (else default_memory_budget)
  BudgetSplit split;               // GPEN's batch limit, banding, plan at that batch; SR budget
  bool pipeline_on_device = false; // the photo steps run on the device (FaceRestorer::on_device)
  // The detector: its device, and whether it runs in GPEN's arena (re-decided as photos come in:
  // Restorer::memory_json says how it ran).
  std::string detector_device;
  std::string mask;                // "rect" or "parse"
  // The face parser (mask "parse"): its plan at 512 x 512, and whether it runs in GPEN's arena.
  size_t parser_arena_bytes = 0, parser_workspace_bytes = 0, parser_weights_bytes = 0;
  bool parser_in_generator_arena = false;
  // Background super-resolution: its model and the tile setting (auto: per photo from sr_budget).
  std::string sr_model;
  std::string sr_tile;
  bool low_memory = false;         // RestoreConfig::low_memory: GPEN's plan comes with the first photo
};
// The plan as JSON (the `plan` object of `gpen restore --report`, the Python Restorer's .plan).
nlohmann::json to_json(const RestorePlan& p);

// One photo's result, with the background super-resolution when configured.
struct RestoreResult : PhotoResult {
  bool sr = false;
  SrReport sr_report;
  std::string sr_tile_reason;
};

class Restorer {
 public:
  // Opens the models and decides the plan (check_config first). gpen::Error naming the file or
  // the option at fault.
  static std::unique_ptr<Restorer> open(const RestoreConfig& config) { return open(config, native_cuda()); }
  // The same on the CUDA build `cuda` provides for device cuda or auto (engine/runtime/device.h's
  // make_backend): the host emulator's in the CUDA tests, which run the whole setup without a GPU.
  static std::unique_ptr<Restorer> open(const RestoreConfig& config, const CudaProvider* cuda);
  ~Restorer();
  Restorer(const Restorer&) = delete;
  Restorer& operator=(const Restorer&) = delete;

  const RestoreConfig& config() const { return config_; }
  const RestorePlan& plan() const { return plan_; }
  // The memory as it is now (`gpen restore --report`'s `memory`, without the process's peak RSS):
  // GPEN's batch as planned for the photos so far and its limit, GPEN's plan, the detector's and
  // the parser's arenas and whether they run in GPEN's, the device pipeline's buffer.
  nlohmann::json memory_json() const;

  // Detection, alignment, GPEN, paste-back of one decoded photo; with SR configured the official
  // order: SR of the photo, the photo resized (bilinear, 8-bit) to the SR size, the faces
  // restored on that and composited onto the SR background. `sr_progress(done, total)` is called
  // after each SR tile.
  RestoreResult restore(ImageView photo, const std::function<void(int, int)>& sr_progress = {});
  // Several photos (frames of a video): each as restore() gives it alone, their faces restored in
  // shared GPEN batches up to the planned batch. `adjust`, when set, sees each photo's detections
  // (photos in order) before alignment and may change their landmarks (FaceAdjust, pipeline.h).
  std::vector<RestoreResult> restore(std::span<const ImageView> photos, const RestoreCall& call = {},
                                     const FaceAdjust& adjust = {});
  // An aligned face crop of any size, resized to the model's input as `gpen restore --aligned`
  // does; with SR, the restored face super-resolved (the official aligned flow). With GFPGAN or
  // CodeFormer: their has_aligned=True, blended by RestoreConfig::alpha (facexlib_flow.h).
  Image restore_aligned(ImageView face, const RestoreCall& call = {});
  // RealESRNet on an image (SR configured), its tile as the restore methods choose it: for a
  // photo's background from the budget GPEN's plan leaves; for a restored face crop (`aligned`)
  // from the whole budget, untiled when none was given (as `gpen restore --aligned --sr`).
  Image super_resolve(ImageView image, bool aligned);
  // The SR tile (and why) a width x height photo gets; 0: untiled. Needs SR configured.
  int sr_tile(int width, int height, std::string* why = nullptr);

  // Which flow the model file runs; with GFPGAN, CodeFormer or RestoreFormer the GPEN accessors below throw.
  FaceFlow flow() const { return flow_; }
  GfpganModel* gfpgan_model();
  CodeformerModel* codeformer_model();
  FacexlibRestorer* facexlib() { return facexlib_faces_.get(); }
  GpenModel& model();
  RetinaFaceDetector& detector() { return *detector_; }
  ParseNetModel* parser() { return parser_.get(); }
  RrdbModel* sr_model() { return sr_.get(); }
  Backend& backend() { return *backend_; }
  FaceRestorer& faces() { return *faces_; }
  // The photo steps with the rectangle mask (RestoreCall::rect_mask): faces() without a parser;
  // with one, steps of their own, made at open with plan_at_limit (gpen::Error without it).
  FaceRestorer& rect_faces();
  // The low-memory mode (RestoreConfig::low_memory): the account a photo of this size will get
  // (memory_json()'s `low_memory`), GPEN fitted for it; nothing detected or restored. gpen::Error
  // naming the figures when the photo cannot fit, as restoring it would.
  nlohmann::json plan_photo(int width, int height);

 private:
  Restorer() = default;
  void apply_threads() const;
  static std::unique_ptr<Restorer> open_facexlib(const RestoreConfig& config, FaceFlow flow, const CudaProvider* cuda);
  static std::unique_ptr<Restorer> open_low_memory(const RestoreConfig& config);
  nlohmann::json low_memory_json() const;  // the last photo's account (null outside the low-memory mode)
  nlohmann::json facexlib_memory_json() const;
  Image super_resolved(ImageView photo, const std::function<void(int, int)>& progress, SrReport* report,
                       std::string* why);
  RestoreConfig config_;
  FaceFlow flow_ = FaceFlow::gpen;
  RestorePlan plan_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Backend> host_backend_;  // the facexlib flows' background upsampler on a device run
  std::unique_ptr<GpenModel> model_;
  std::unique_ptr<RetinaFaceDetector> detector_;
  std::unique_ptr<ParseNetModel> parser_;  // before faces_, which points at it
  std::unique_ptr<RrdbModel> sr_;
  SrSettings sr_settings_;
  std::unique_ptr<FaceRestorer> faces_;
  std::unique_ptr<FaceRestorer> rect_faces_;  // with a parser and plan_at_limit: the rectangle mask's steps
  // The facexlib flows (instead of model_ and faces_): GFPGAN's or CodeFormer's network.
  std::unique_ptr<FacexlibNet> net_;
  std::unique_ptr<FacexlibRestorer> facexlib_faces_;
};

}  // namespace gpen
