// The photo pipeline's steps on host memory (engine/runtime/pipeline_ops.h): each is the CPU
// function its CUDA twin reproduces, so the host and the device run FaceRestorer's one flow.
#include <string>

#include "engine/core/error.h"
#include "engine/runtime/device.h"
#include "engine/runtime/pipeline_ops.h"
#include "kernels/cpu/detect_input.h"
#include "kernels/cpu/face_io.h"
#include "kernels/cpu/paste.h"
#include "kernels/cpu/warp.h"

namespace gpen {

namespace {

float* host_floats(const TensorView& t, const char* what) {
  GPEN_CHECK(t.dtype == DType::f32 && t.contiguous(), std::string(what) + ": the host steps take contiguous f32");
  return t.f32();
}

class CpuPipelineOps final : public PipelineOps {
 public:
  void detect_input(const uint8_t* bgr, int w, int h, double scale, const TensorView& x) override {
    cpu::detect_input(bgr, w, h, scale, static_cast<int>(x.dim(2)), static_cast<int>(x.dim(1)),
                      host_floats(x, "detector input"));
  }
  size_t detect_scratch_bytes(int, int) const override { return 0; }
  std::vector<Face> detect_faces(const float* loc, const float* conf, const float* landms, int h, int w,
                                 const DetectParams& p, float scale, void*) override {
    return retinaface_postprocess(loc, conf, landms, h, w, p, scale);
  }

  void warp_face(const uint8_t* photo, int w, int h, const AffineTransform& m, int size, uint8_t* crop) override {
    // The whole crop: the pixels outside the photo's footprint come out 0, as warp_affine's.
    warp_affine_roi(photo, w, h, m, PixelRect{0, 0, size, size}, crop, kGpenWarp);
  }
  void face_to_model(const uint8_t* faces, int n, int size, const TensorView& x) override {
    const size_t face = static_cast<size_t>(size) * static_cast<size_t>(size) * 3;
    float* out = host_floats(x, "generator input");
    for (size_t i = 0; i < static_cast<size_t>(n); ++i)
      gpen::face_to_model(ImageView{size, size, {faces + i * face, face}}, size, out + i * face);
  }
  void model_to_face(const TensorView& y, uint8_t* faces) override {
    const int n = static_cast<int>(y.dim(0)), size = static_cast<int>(y.dim(1));
    const size_t face = static_cast<size_t>(size) * static_cast<size_t>(size) * 3;
    const float* in = host_floats(y, "generator output");
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) gpen::model_to_face(in + i * face, size, faces + i * face);
  }

  void smooth_face(const uint8_t* in, uint8_t* out, int size) override { cpu::smooth_face(in, out, size, size); }
  void blend_faces(const uint8_t* restored, const uint8_t* crop, double alpha, uint8_t* out, int size) override {
    cpu::blend_faces(restored, crop, alpha, out, static_cast<size_t>(size) * static_cast<size_t>(size) * 3);
  }
  void canvas_clear(float* canvas_mask, uint8_t* canvas_faces, int w, int h) override {
    cpu::canvas_clear(canvas_mask, canvas_faces, w, h);
  }
  void canvas_add(const uint8_t* face, const float* mask, int size, const AffineTransform& crop_to_image,
                  float* canvas_mask, uint8_t* canvas_faces, int w, int h) override {
    cpu::canvas_add(face, mask, size, size, crop_to_image, canvas_mask, canvas_faces, w, h);
  }
  void composite(const uint8_t* original, const float* canvas_mask, const uint8_t* canvas_faces, uint8_t* out, int w,
                 int h) override {
    cpu::composite(original, canvas_mask, canvas_faces, out, w, h);
  }
};

}  // namespace

PipelineOps& cpu_pipeline_ops() {
  static CpuPipelineOps ops;
  return ops;
}

PipelineOps* pipeline_ops_of(Backend& backend) {
  if (auto* dev = dynamic_cast<DeviceBackend*>(&backend)) return dev->pipeline_ops();
  return &cpu_pipeline_ops();
}

}  // namespace gpen
