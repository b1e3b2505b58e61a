#pragma once
// The job users come for: detect, align, restore, paste back (the official FaceEnhancement.process
// without super-resolution), one photo at a time, with all faces of a photo going through GPEN in
// batches whose size comes from the memory plan, never from trial and error.
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/photo/image.h"
#include "engine/photo/restore_plan.h"
#include "engine/models/gpen_model.h"
#include "engine/models/parsenet.h"
#include "engine/models/retinaface.h"
#include "engine/runtime/pipeline_ops.h"

namespace gpen {

struct RestoreOptions {
  DetectOptions detect;
  float min_score = 0.9f;  // faces below are left untouched (official: score < 0.9 skipped)
  double alpha = 1.0;      // restored * alpha + crop * (1 - alpha)
  int batch = 1;           // faces per GPEN run (see restore_plan.h)
  // Plan GPEN for min(batch, the faces of the largest photo so far) instead of `batch` at once:
  // the arena grows (re-planned, never shrinking) only when a photo has more faces, so a photo
  // with 8 faces never holds an arena planned for 16.
  bool grow_batch = false;
  bool share_arena = true; // the detector runs in GPEN's arena (same device): max, not sum
  // On a device whose backend has the pipeline steps (CUDA), the photo stays on the device from
  // upload to composite; false runs the steps on the host (for comparisons).
  bool device_pipeline = true;
  // The face-parsing paste mask (the official flow's default, engine/photo/parse_mask.h): each
  // face is pasted through the ParseNet mask of its raw GPEN output; nullptr: the rectangle.
  // ParseNet runs in GPEN's arena when its plan fits there. The photo steps then run on the host
  // (the parser's pre- and post-processing are host functions), ParseNet and GPEN on their own
  // backends.
  ParseNetModel* parser = nullptr;
  // How GPEN is planned (graph transforms, banded execution under an arena budget).
  PlanOptions plan;
  // The CPU's low-memory mode (GPEN and the detector on low-memory CPU backends, docs/memory.md
  // "Low-memory CPU mode"): the bytes every call may hold at its peak. GPEN is fitted (plan's
  // memory_budget) to what the call leaves it after the detector's weights, the photos, their
  // results and the pipeline's buffer, when the first call comes and again, only ever smaller,
  // when a larger call comes; the arena GPEN lends the detector is grown for a detection that
  // needs more when the total still fits. A call that cannot fit is refused before it runs,
  // naming the figures. 0: no budget (GPEN planned at construction, as `plan` says).
  size_t memory_budget = 0;
  // Keep each restored face in PhotoResult::restored_faces (false: left empty; with a memory
  // budget, kept faces count in it).
  bool keep_faces = true;
};

// A photo's size, where only that matters (sizing a call before its pixels are at hand).
struct PhotoSize {
  int width = 0, height = 0;
  size_t pixels() const { return static_cast<size_t>(width) * static_cast<size_t>(height); }
};

// Where the low-memory mode's bytes went in the last call (FaceRestorer::budget_use).
struct BudgetUse {
  size_t budget = 0;
  size_t gpen_weights = 0;      // GPEN's weights resident at most at once (its fit's bound)
  size_t detector_weights = 0;  // the detector's, all resident
  size_t arena = 0;             // GPEN's arena, lent to the detector: the larger of their plans
  size_t workspace = 0;         // the same for the workspace
  size_t images = 0;            // the call's photos (and backgrounds) and the composites made
  size_t buffer = 0;            // the pipeline's buffer: paste canvases, crops, detection candidates
  size_t faces = 0;             // restored faces kept for the caller
  int fits = 0;                 // times GPEN was fitted (the first call, then each smaller fit)
  size_t total() const { return gpen_weights + detector_weights + arena + workspace + images + buffer + faces; }
};

struct StageTimes {
  double decode_ms = 0, detect_ms = 0, align_ms = 0, restore_ms = 0, paste_ms = 0, encode_ms = 0;
};

struct PhotoResult {
  Image image;                  // the composite
  std::vector<Face> faces;      // every detection
  int restored = 0;             // faces restored and pasted
  std::vector<Image> restored_faces;  // GPEN outputs, S x S, in detection order
  const char* mask = "rect";    // the paste mask used: "rect" or "parse"
  StageTimes times;
};

// Called between detection and alignment with each photo's detections (its index in the call,
// photos in order): it may change their landmarks, by which the faces are then aligned and which
// PhotoResult::faces then holds (e.g. FaceTracks smoothing a video's landmarks over frames).
using FaceAdjust = std::function<void(size_t photo, std::vector<Face>& faces)>;

// The photo pipeline: detection, alignment, GPEN in batches and the paste-back, as one flow of
// steps (engine/runtime/pipeline_ops.h) that runs on the host or, with both models on a device
// that has the steps, with the photo kept on the device from upload to composite. Its buffers are
// reused from call to call: one thread at a time (a FaceRestorer per thread, or calls serialised).
class FaceRestorer {
 public:
  FaceRestorer(GpenModel& gpen, RetinaFaceDetector& detector, const RestoreOptions& opt);
  ~FaceRestorer();
  FaceRestorer(const FaceRestorer&) = delete;
  FaceRestorer& operator=(const FaceRestorer&) = delete;
  PhotoResult process(ImageView photo);
  // The same, composited onto `background` (of the photo's size) instead of the photo: the
  // official flow with super-resolution, final = img_sr * (1 - mask) + faces * mask, where the
  // photo is the bilinear upscale of the input and the background its super-resolution.
  PhotoResult process(ImageView photo, ImageView background);
  // Several photos at once (video frames): each is detected on its own, their faces share GPEN
  // batches (up to batch(), in photo order), and each result is the one process() gives for that
  // photo alone. `backgrounds`: empty, or one per photo as above. `adjust`, when set, sees each
  // photo's detections before its faces are aligned.
  std::vector<PhotoResult> process(std::span<const ImageView> photos, std::span<const ImageView> backgrounds = {},
                                   const FaceAdjust& adjust = {});
  // Whether photos go through the device steps (see RestoreOptions::device_pipeline): both models
  // on device backends that have them, no face parser. A call with backgrounds runs on the host.
  bool on_device() const { return device_ops_ != nullptr; }
  // Device steps: bytes of their one buffer (photos, paste canvases, detection candidates, paste
  // mask, one batch of crops and restored faces), sized for the largest call so far; 0 when none.
  size_t device_buffer_bytes() const { return device_buf_.bytes; }
  // The batch GPEN is planned for now (RestoreOptions::batch, or less with grow_batch; 0 with a
  // memory budget before the first call).
  int batch() const { return batch_; }
  // With RestoreOptions::memory_budget: the last call's account (budget 0 before any call).
  const BudgetUse& budget_use() const { return budget_use_; }
  // With RestoreOptions::memory_budget: the account process() will give a photo of this size (GPEN
  // fitted for it as process() fits it), without detecting or restoring; gpen::Error naming the
  // figures when nothing fits.
  const BudgetUse& plan_call(PhotoSize photo);
  // With RestoreOptions::memory_budget: GPEN fitted for a call holding `held` bytes beside it (the
  // detector's weights are added here), for restoring aligned crops outside process().
  void fit_budget(size_t held);

 private:
  // Memory the steps work in (engine/photo/pipeline_buffer.cpp), grown only.
  struct Buffer {
    Backend* mem = nullptr;
    void* data = nullptr;
    size_t bytes = 0;
    int mask_size = 0;  // the paste mask is in the buffer for this crop size (device; 0: none)
    bool reserve(size_t need);  // true when the buffer was replaced (its contents are then gone)
    void release() noexcept;
  };
  // Where one call's steps run, and whether each network's arena is in that memory (its input
  // and output then stay there; else they go through host buffers).
  struct Steps {
    PipelineOps* ops = nullptr;      // the photo steps
    PipelineOps* det_ops = nullptr;  // the detector's
    Buffer* buf = nullptr;
    bool host = true;  // host memory: the caller's photos and the cached paste mask are read in place
    bool gpen_in_memory = true, det_in_memory = true;
  };
  Steps steps_for(bool backgrounds);
  // What a call holds beside the networks: its images, the steps' buffer and one batch of restored
  // faces, and its largest detection input (det_h x det_w, with its scratch).
  struct CallBytes {
    size_t images = 0, buffer = 0, scratch = 0;
    int det_h = 0, det_w = 0, batch = 0;
    std::string what;  // "the WxH photo" or "N photos", for errors
  };
  CallBytes call_bytes(std::span<const PhotoSize> photos, bool backgrounds, const Steps& st) const;
  void run_gpen(const Steps& st, int n, const uint8_t* crops, uint8_t* restored);
  void plan_batch(int batch);   // prepares GPEN for `batch` faces and lends its arena to the detector
  void grow_batch(size_t faces);  // with grow_batch: plan_batch when a photo needs a larger batch
  // With a memory budget (pipeline_budget.cpp): fits GPEN and the detector's arena to a call
  // holding `images`, `buffer` and `faces` bytes, whose largest detection input is det_h x det_w;
  // gpen::Error naming the figures when nothing fits.
  void fit_call(size_t images, size_t buffer, size_t faces, int det_h, int det_w, const std::string& what);
  GpenModel& gpen_;
  RetinaFaceDetector& det_;
  RestoreOptions opt_;
  int batch_ = 0;
  BudgetUse budget_use_;
  PipelineOps* device_ops_ = nullptr;  // GPEN's device steps (nullptr: the host's)
  PipelineOps* det_device_ops_ = nullptr;  // the detector's (its own stream)
  std::unique_ptr<Backend> host_mem_;  // host memory for the host steps when GPEN is on a device
  Buffer device_buf_, host_buf_;
  std::vector<float> in_, out_;  // host steps with GPEN on a device: one batch in model space
};

}  // namespace gpen
