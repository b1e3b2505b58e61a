#pragma once
// The steps of the photo pipeline around the two networks, on the memory where a backend keeps its
// tensors: a device backend's on its stream (DeviceBackend::pipeline_ops; CUDA:
// engine/runtime/cuda/pipeline_ops.cu over kernels/cuda/ops_pipeline.h), and the host's
// (cpu_pipeline_ops, engine/runtime/pipeline_ops_cpu.cpp over the CPU functions themselves), so
// FaceRestorer runs one flow on either. Each device step is the twin of the host function named
// below and reproduces its arithmetic (docs/cuda.md "Pipeline kernels" says where it is bit-exact).
// Pointers are memory of that backend; images are contiguous 8-bit BGR. The device steps allocate
// nothing; only detect_faces waits for the device.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/core/affine.h"
#include "kernels/cpu/detect_post.h"
#include "engine/core/tensor.h"

namespace gpen {

class Backend;

class PipelineOps {
 public:
  virtual ~PipelineOps() = default;

  // RetinaFaceDetector::detect's network input: the photo as float, resized by `scale`
  // (detect_input_scale) when it is not 1, minus the BGR mean. x: [1, nh, nw, 3] f32.
  virtual void detect_input(const uint8_t* bgr, int w, int h, double scale, const TensorView& x) = 0;
  // Device scratch detect_faces needs for an h x w network input (every prior may be a candidate).
  virtual size_t detect_scratch_bytes(int h, int w) const = 0;
  // retinaface_postprocess of the head outputs (loc [P, 4], conf [P, 2], landms [P, 10], f32):
  // the priors above the threshold are decoded on the device, copied back (the one wait), and
  // sorted, NMS'd and scaled on the host.
  virtual std::vector<Face> detect_faces(const float* loc, const float* conf, const float* landms, int h, int w,
                                         const DetectParams& p, float scale, void* scratch) = 0;

  // align_face: the S x S crop of the photo under `photo_to_crop` (face_transform), kGpenWarp.
  virtual void warp_face(const uint8_t* photo, int w, int h, const AffineTransform& photo_to_crop, int size,
                         uint8_t* crop) = 0;
  // face_to_model / model_to_face of n S x S crops (contiguous, one after another) and the
  // generator's input / output [n, S, S, 3] in its precision.
  virtual void face_to_model(const uint8_t* faces, int n, int size, const TensorView& x) = 0;
  virtual void model_to_face(const TensorView& y, uint8_t* faces) = 0;

  // smooth_small_face and blend_faces of S x S crops (blend: out may be restored or crop).
  virtual void smooth_face(const uint8_t* in, uint8_t* out, int size) = 0;
  virtual void blend_faces(const uint8_t* restored, const uint8_t* crop, double alpha, uint8_t* out, int size) = 0;
  // PasteCanvas on a w x h photo: canvas_mask w * h floats, canvas_faces w * h * 3 bytes; faces
  // added in detection order; the composite may be written over `original`.
  virtual void canvas_clear(float* canvas_mask, uint8_t* canvas_faces, int w, int h) = 0;
  virtual void canvas_add(const uint8_t* face, const float* mask, int size, const AffineTransform& crop_to_image,
                          float* canvas_mask, uint8_t* canvas_faces, int w, int h) = 0;
  virtual void composite(const uint8_t* original, const float* canvas_mask, const uint8_t* canvas_faces, uint8_t* out,
                         int w, int h) = 0;
};

// The steps on host memory: stateless, one object for every thread.
PipelineOps& cpu_pipeline_ops();
// The steps on the memory `backend` holds: the host's for a host backend, the device's for a device
// backend (nullptr when it has none).
PipelineOps* pipeline_ops_of(Backend& backend);

}  // namespace gpen
