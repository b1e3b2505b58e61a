#pragma once
// The paste-back steps on host memory, each with OpenCV's rounding (engine/photo/paste.h says what
// the official flow does with them): the small-face smoothing, the alpha blend, the accumulation
// of warped faces and masks on a canvas, and the final composite. Raw buffers, so that the photo
// pipeline's host steps (engine/runtime/pipeline_ops_cpu.h) and PasteCanvas run the same code.
// Twin: kernels/cuda/ops_pipeline.h (paste_*). Images are contiguous 8-bit BGR, masks float.
#include <cstddef>
#include <cstdint>

#include "engine/core/affine.h"

namespace gpen::cpu {

// Index i of a row or column of n pixels under OpenCV's BORDER_REFLECT_101.
inline int reflect101(int i, int n) {
  if (n == 1) return 0;
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
  return i;
}

// cv2.filter2D(img, -1, [[1,2,1],[2,4,2],[1,2,1]]/16), reflect-101 borders, rounded half to even,
// of a w x h image (in != out).
void smooth_face(const uint8_t* in, uint8_t* out, int w, int h);

// cv2.addWeighted(restored, alpha, crop, 1 - alpha, 0) of `bytes` bytes: alpha and 1 - alpha
// (computed in double) rounded to float, a * alpha + round(b * (1 - alpha)) with one rounding (OpenCV's
// FMA path), rounded half to even and saturated. `out` may be either input. The caller checks alpha.
void blend_faces(const uint8_t* restored, const uint8_t* crop, double alpha, uint8_t* out, size_t bytes);

// The canvas of a w x h photo: canvas_mask w * h floats, canvas_faces w * h * 3 bytes.
void canvas_clear(float* canvas_mask, uint8_t* canvas_faces, int w, int h);
// Warps the face_w x face_h `face` and `mask` with crop_to_image over the crop's footprint
// (bilinear, kGpenWarp) and, where the warped mask exceeds the canvas's, takes both.
void canvas_add(const uint8_t* face, const float* mask, int face_w, int face_h, const AffineTransform& crop_to_image,
                float* canvas_mask, uint8_t* canvas_faces, int w, int h);
// original * (1 - mask) + faces * mask in float32, then cv2.convertScaleAbs (absolute value,
// rounded half to even, saturated). `out` may be `original`.
void composite(const uint8_t* original, const float* canvas_mask, const uint8_t* canvas_faces, uint8_t* out, int w,
               int h);

}  // namespace gpen::cpu
