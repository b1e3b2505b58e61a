#pragma once
// The job users come for: detect, align, restore, paste back (the official FaceEnhancement.process
// without super-resolution), one photo at a time, with all faces of a photo going through GPEN in
// batches whose size comes from the memory plan, never from trial and error.
#include <string>
#include <vector>

#include "engine/photo/image.h"
#include "engine/models/gpen_model.h"
#include "engine/models/parsenet.h"
#include "engine/models/retinaface.h"
#include "engine/runtime/pipeline_ops.h"

namespace gpen {

struct RestoreOptions {
  DetectOptions detect;
  float min_score = 0.9f;  // faces below are left untouched (official: score < 0.9 skipped)
  double alpha = 1.0;      // restored * alpha + crop * (1 - alpha)
  int batch = 1;           // faces per GPEN run (see choose_batch)
  // Plan GPEN for min(batch, the faces of the largest photo so far) instead of `batch` at once:
  // the arena grows (re-planned, never shrinking) only when a photo has more faces, so a photo
  // with 8 faces never holds an arena planned for 16.
  bool grow_batch = false;
  bool share_arena = true; // the detector runs in GPEN's arena (same device): max, not sum
  // On a device whose backend has the pipeline steps (CUDA), the photo stays on the device from
  // upload to composite; false runs warps, conversions and paste on the host (for comparisons).
  bool device_pipeline = true;
  // The face-parsing paste mask (the official flow's default, engine/photo/parse_mask.h): each
  // face is pasted through the ParseNet mask of its raw GPEN output; nullptr: the rectangle.
  // ParseNet runs in GPEN's arena when its plan fits there. The photo steps then run on the host
  // (the device pipeline has no parsing step yet), ParseNet and GPEN on their own backends.
  ParseNetModel* parser = nullptr;
  // How GPEN is planned (graph transforms, banded execution under an arena budget).
  PlanOptions plan;
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

// The largest batch (<= cap) whose planned GPEN total (weights + arena + workspace) fits
// `budget_bytes`; at least 1. Throws when even one face does not fit.
int choose_batch(const GpenConfig& c, Backend& backend, size_t budget_bytes, int cap);

// The same, but a batch whose plain plan does not fit may fit with banded execution
// (engine/plan/banding.h): the batch is lowered only when no banding fits either. Returns the
// batch and the plan options to prepare it with (`base` plus the arena budget banding needs).
struct BatchChoice {
  int batch = 1;
  PlanOptions plan;
  bool banded = false;
};
BatchChoice choose_batch_banded(const GpenConfig& c, Backend& backend, size_t budget_bytes, int cap,
                                const PlanOptions& base = {});

class FaceRestorer {
 public:
  FaceRestorer(GpenModel& gpen, RetinaFaceDetector& detector, const RestoreOptions& opt);
  ~FaceRestorer();
  FaceRestorer(const FaceRestorer&) = delete;
  FaceRestorer& operator=(const FaceRestorer&) = delete;
  PhotoResult process(ImageView photo);
  // The same, composited onto `background` (of the photo's size) instead of the photo: the
  // official flow with super-resolution, final = img_sr * (1 - mask) + faces * mask, where the
  // photo is the bilinear upscale of the input and the background its super-resolution. Runs
  // the host steps (the device pipeline composites onto the photo it holds).
  PhotoResult process(ImageView photo, ImageView background);
  // Whether photos go through the device pipeline (see RestoreOptions::device_pipeline): both
  // models on device backends that have the pipeline steps.
  bool on_device() const { return ops_ != nullptr; }
  // Device pipeline: bytes of its one buffer (photo, paste canvas, detection candidates, paste
  // mask, one batch of crops and restored faces), sized for the largest photo seen so far.
  size_t device_buffer_bytes() const { return buffer_bytes_; }
  // The batch GPEN is planned for now (RestoreOptions::batch, or less with grow_batch).
  int batch() const { return batch_; }

 private:
  PhotoResult process_on_host(ImageView photo, const ImageView* background = nullptr);
  PhotoResult process_on_device(ImageView photo);  // engine/photo/pipeline_device.cpp
  void release_buffer() noexcept;
  void plan_batch(int batch);   // prepares GPEN for `batch` faces and lends its arena to the detector
  void grow_batch(size_t faces);  // with grow_batch: plan_batch when a photo needs a larger batch
  GpenModel& gpen_;
  RetinaFaceDetector& det_;
  RestoreOptions opt_;
  int batch_ = 0;
  std::vector<float> in_, out_;  // host path: one batch, reused across photos
  PipelineOps* ops_ = nullptr;      // GPEN's device steps (device path)
  PipelineOps* det_ops_ = nullptr;  // the detector's (its own stream)
  void* buffer_ = nullptr;
  size_t buffer_bytes_ = 0;
  int mask_size_ = 0;  // the paste mask in the buffer is for this crop size (0: none)
};

}  // namespace gpen
