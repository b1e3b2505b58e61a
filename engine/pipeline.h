#pragma once
// The job users come for: detect, align, restore, paste back (the official FaceEnhancement.process
// without super-resolution), one photo at a time, with all faces of a photo going through GPEN in
// batches whose size comes from the memory plan, never from trial and error.
#include <string>
#include <vector>

#include "engine/image.h"
#include "engine/models/gpen_model.h"
#include "engine/models/retinaface.h"

namespace gpen {

struct RestoreOptions {
  DetectOptions detect;
  float min_score = 0.9f;  // faces below are left untouched (official: score < 0.9 skipped)
  double alpha = 1.0;      // restored * alpha + crop * (1 - alpha)
  int batch = 1;           // faces per GPEN run (see choose_batch)
  bool share_arena = true; // the detector runs in GPEN's arena (same device): max, not sum
};

struct StageTimes {
  double decode_ms = 0, detect_ms = 0, align_ms = 0, restore_ms = 0, paste_ms = 0, encode_ms = 0;
};

struct PhotoResult {
  Image image;                  // the composite
  std::vector<Face> faces;      // every detection
  int restored = 0;             // faces restored and pasted
  std::vector<Image> restored_faces;  // GPEN outputs, S x S, in detection order
  StageTimes times;
};

// The largest batch (<= cap) whose planned GPEN total (weights + arena + workspace) fits
// `budget_bytes`; at least 1. Throws when even one face does not fit.
int choose_batch(const GpenConfig& c, Backend& backend, size_t budget_bytes, int cap);

class FaceRestorer {
 public:
  FaceRestorer(GpenModel& gpen, RetinaFaceDetector& detector, const RestoreOptions& opt);
  PhotoResult process(const Image& photo);

 private:
  GpenModel& gpen_;
  RetinaFaceDetector& det_;
  RestoreOptions opt_;
  std::vector<float> in_, out_;  // one batch, reused across photos
};

}  // namespace gpen
