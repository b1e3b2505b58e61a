#pragma once
// CUDA kernels of the photo pipeline around the networks: the affine warps (face crop, paste
// mask and face), the conversions between 8-bit BGR and the models' inputs / outputs, the
// RetinaFace decode, and the paste-back composite. Each is the twin of a CPU function of
// engine/ (named below) and reproduces its arithmetic; see docs/cuda.md "Pipeline kernels" for
// what is bit-exact.
//
// Conventions as kernels/cuda/ops.h: pointers are device pointers, work is queued on `stream`,
// nothing is allocated or synchronised, bad arguments throw gpen::Error before anything is
// queued, a failed launch throws gpen::Error naming the op. Images are 8-bit BGR interleaved
// (engine/photo/image.h) with a row pitch in bytes; float planes have a row pitch in elements. A pitch
// of 0 means "rows are contiguous" (width * 3 bytes, or width elements).
#include <cstdint>
#include <vector>

#include "engine/photo/align.h"
#include "kernels/cpu/detect_post.h"
#include "kernels/cpu/warp.h"
#include "kernels/cuda/ops.h"

GPEN_CUDA_NAMESPACE_BEGIN

// ---- Warps (kernels/cpu/warp.h: warp_affine_roi)

// The pixels of `roi` of cv2.warpAffine(src, m, ...) with a constant 0 border, bit-identical to
// gpen::warp_affine_roi (bilinear or bicubic). `m` maps source to destination pixels; it is
// inverted on the host exactly as the CPU does. `dst` points at destination pixel (roi.x, roi.y)
// and has rows of dst_pitch bytes (BGR) / elements (float), so the ROI can be written into a
// compact buffer (pitch roi.width * channels) or in place into a whole destination image. A full
// warp to a dst_w x dst_h image is the ROI {0, 0, dst_w, dst_h}.
void warp_affine_roi(const uint8_t* src_bgr, int src_w, int src_h, int64_t src_pitch, const AffineTransform& m,
                     PixelRect roi, uint8_t* dst, int64_t dst_pitch, WarpInterp interp, Stream stream);
void warp_affine_roi(const float* src, int src_w, int src_h, int64_t src_pitch, const AffineTransform& m,
                     PixelRect roi, float* dst, int64_t dst_pitch, WarpInterp interp, Stream stream);

// ---- Model inputs and outputs (kernels/cpu/face_io.h, engine/models/retinaface.cpp)

// face_to_model of n S x S BGR crops (face i at faces + i * face_stride bytes; 0: S * S * 3):
// (v / 255 - 0.5) / 0.5 in RGB order into x [n, S, S, 3] (f32, f16 or bf16, any strides; the
// f32 value is rounded once to 16 bits). The crop must already be S x S: the pipeline warps it
// at that size, so the CPU's resize branch is never taken and is not offered here.
void face_to_model(const uint8_t* faces, int n, int size, int64_t face_stride, const TensorView& x, Stream stream);

// model_to_face of y [n, S, S, 3] (f32, f16 or bf16, any strides): clamp(v * 0.5 + 0.5, 0, 1) *
// 255 truncated, RGB -> BGR, into n S x S crops (face i at faces + i * face_stride bytes). A NaN
// gives 0 (the CPU's cast of a NaN is undefined).
void model_to_face(const TensorView& y, uint8_t* faces, int64_t face_stride, Stream stream);

// The RetinaFace input of RetinaFaceDetector::detect: the photo as float, resized with
// cv2.resize(fx = fy = scale) (gpen::resize_bilinear_f32) when scale != 1, minus the BGR mean
// (104, 117, 123). x is [1, nh, nw, 3] f32 (any strides) with nh, nw from detect_input_scale
// (equal to h, w when scale == 1).
void detect_input(const uint8_t* bgr, int w, int h, int64_t pitch, double scale, const TensorView& x, Stream stream);

// ---- RetinaFace decode (kernels/cpu/detect_post.h)

// One prior whose face score passed the threshold, decoded (input pixels, before `scale`).
struct DetectCandidate {
  int32_t prior = 0;  // row of the head outputs
  float score = 0.0f;
  float box[4] = {};
  float landmarks[10] = {};
};

// For every prior of an h x w network input with conf[2 i + 1] > threshold: the decoded box and
// landmarks (decode_boxes / decode_landmarks; the priors are computed on the fly) appended to
// `out` through an atomic counter. loc [P, 4], conf [P, 2] (softmaxed), landms [P, 10] are
// contiguous f32 with P = retinaface_prior_count(h, w). `count` (one int32 on the device) is
// zeroed on the stream first and ends holding the number of candidates, which may exceed
// `capacity` (then only `capacity` of them, an arbitrary subset, are written: pass capacity = P to
// never lose one). The order of the candidates is not defined; detect_finish sorts them.
void detect_decode(const float* loc, const float* conf, const float* landms, int h, int w, float threshold,
                   DetectCandidate* out, int capacity, int32_t* count, Stream stream);

// Host side, after copying the candidates back: the rest of retinaface_postprocess (sort by
// descending score, later prior first on ties; top_k; greedy NMS; keep_top_k; coordinates
// divided by `scale`). NMS stays on the host: it is sequential, and only the few candidates above
// the threshold take part. gpen::Error when n exceeds the count the kernel wrote (capacity).
std::vector<Face> detect_finish(const DetectCandidate* candidates, size_t n, const DetectParams& p, float scale = 1.0f);

// ---- Paste-back (engine/photo/paste.h)

// smooth_small_face of an S x S crop (in != out).
void paste_smooth_face(const uint8_t* in, uint8_t* out, int size, Stream stream);

// blend_faces(restored, crop, alpha) of S x S crops; out may be restored or crop.
void paste_blend_faces(const uint8_t* restored, const uint8_t* crop, double alpha, uint8_t* out, int size,
                       Stream stream);

// PasteCanvas::add: warps the S x S face (BGR) and mask (float, the paste_mask) with
// crop_to_image over the footprint (warp_footprint, computed on the host) and, where the warped
// mask exceeds canvas_mask, stores both. The canvas (canvas_mask: width * height floats,
// canvas_faces: width * height * 3 bytes, contiguous) starts zeroed (paste_canvas_clear). Faces
// must be added in the CPU's order: the launches are stream-ordered, so calls in order suffice.
void paste_canvas_clear(float* canvas_mask, uint8_t* canvas_faces, int width, int height, Stream stream);
void paste_accumulate(const uint8_t* face, const float* mask, int size, const AffineTransform& crop_to_image,
                      float* canvas_mask, uint8_t* canvas_faces, int width, int height, Stream stream);

// PasteCanvas::composite: original * (1 - mask) + faces * mask, |.|, rounded half to even and
// saturated. `out` may be `original`. Images contiguous width x height BGR.
void paste_composite(const uint8_t* original, const float* canvas_mask, const uint8_t* canvas_faces, uint8_t* out,
                     int width, int height, Stream stream);

GPEN_CUDA_NAMESPACE_END
