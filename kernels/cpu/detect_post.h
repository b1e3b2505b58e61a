#pragma once
// RetinaFace post-processing on the host: priors for any input size, decoding of the box and
// landmark regressions, score threshold, sort, greedy NMS and top-k, reproducing the float32
// arithmetic of the official PyTorch/NumPy code (../shared/reference/gpen-semantics.md).
#include <array>
#include <cstddef>
#include <vector>

namespace gpen {

// One detection in the pixel coordinates of the image the caller passes back to (see `scale`).
struct Face {
  std::array<float, 4> box{};         // x1, y1, x2, y2
  float score = 0.0f;                 // softmax face probability
  std::array<float, 10> landmarks{};  // x1, y1, ..., x5, y5: left eye, right eye, nose, mouth left, mouth right
};

struct DetectParams {
  float threshold = 0.9f;  // keep score > threshold
  float nms = 0.4f;        // suppress IoU > nms
  int top_k = 5000;        // candidates kept before NMS
  int keep_top_k = 750;    // detections kept after NMS
};

// (cx, cy, sx, sy) normalised by the input width/height, computed in double and rounded to float
// as the official PriorBox. Order: level (steps 8, 16, 32), row, column, min size.
struct Prior {
  float cx, cy, sx, sy;
};
// Number of priors (= head rows) of an h x w input: 2 per cell of each level's ceil(h/s) x ceil(w/s).
size_t retinaface_prior_count(int h, int w);
std::vector<Prior> retinaface_priors(int h, int w);

// Decoded boxes (x1, y1, x2, y2) and landmarks of every prior, in input pixels.
void decode_boxes(const float* loc, const std::vector<Prior>& priors, int h, int w, float* boxes);
void decode_landmarks(const float* landms, const std::vector<Prior>& priors, int h, int w, float* out);

// py_cpu_nms: greedy over rows already sorted by descending score, areas (x2-x1+1)(y2-y1+1);
// returns the kept row indices. boxes holds n rows of x1, y1, x2, y2.
std::vector<int> nms_plus1(const float* boxes, size_t n, float iou_threshold);

// Head outputs of one image (loc [P,4], conf [P,2] softmaxed, landms [P,10]) of an h x w network
// input -> detections sorted by score, with every coordinate divided by `scale` (the factor the
// input was resized by), i.e. in the pixels of the original image.
std::vector<Face> retinaface_postprocess(const float* loc, const float* conf, const float* landms, int h, int w,
                                         const DetectParams& p, float scale = 1.0f);

}  // namespace gpen
