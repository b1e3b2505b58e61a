// The photo pipeline's steps for the CUDA backend: thin host code that queues the kernels of
// ops_pipeline.h on the backend's stream. The one wait is detect_faces', which brings the
// decoded candidates back so that the sequential NMS runs on the host over a few of them.
#include "engine/runtime/cuda/pipeline_ops.h"

#include <algorithm>
#include <string>

#include "engine/core/error.h"
#include "kernels/cpu/warp.h"
#include "kernels/cuda/compat.h"
#include "kernels/cuda/ops_pipeline.h"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

void check_cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  throw Error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}

// The candidate counter sits first, padded so the list after it stays aligned.
constexpr size_t kCounterBytes = 64;

class CudaPipelineOps final : public PipelineOps {
 public:
  explicit CudaPipelineOps(Stream s) : s_(s) {}

  void detect_input(const uint8_t* bgr, int w, int h, double scale, const TensorView& x) override {
    cuda::detect_input(bgr, w, h, 0, scale, x, s_);
  }
  size_t detect_scratch_bytes(int h, int w) const override {
    return kCounterBytes + retinaface_prior_count(h, w) * sizeof(DetectCandidate);
  }
  std::vector<Face> detect_faces(const float* loc, const float* conf, const float* landms, int h, int w,
                                 const DetectParams& p, float scale, void* scratch) override {
    const size_t capacity = retinaface_prior_count(h, w);
    auto* count = static_cast<int32_t*>(scratch);
    auto* list = reinterpret_cast<DetectCandidate*>(static_cast<uint8_t*>(scratch) + kCounterBytes);
    cuda::detect_decode(loc, conf, landms, h, w, p.threshold, list, static_cast<int>(capacity), count, s_);
    int32_t n = 0;
    check_cuda(cudaMemcpyAsync(&n, count, sizeof n, cudaMemcpyDeviceToHost, s_), "detection count download");
    check_cuda(cudaStreamSynchronize(s_), "detection count download");
    // capacity = every prior, so the counter never exceeds it.
    const size_t got = std::min(static_cast<size_t>(std::max(n, 0)), capacity);
    std::vector<DetectCandidate> host(got);
    if (got) {
      check_cuda(cudaMemcpyAsync(host.data(), list, got * sizeof(DetectCandidate), cudaMemcpyDeviceToHost, s_),
                 "detection candidates download");
      check_cuda(cudaStreamSynchronize(s_), "detection candidates download");
    }
    return detect_finish(host.data(), got, p, scale);
  }

  void warp_face(const uint8_t* photo, int w, int h, const AffineTransform& m, int size, uint8_t* crop) override {
    warp_affine_roi(photo, w, h, 0, m, PixelRect{0, 0, size, size}, crop, 0, kGpenWarp, s_);
  }
  void face_to_model(const uint8_t* faces, int n, int size, const TensorView& x) override {
    cuda::face_to_model(faces, n, size, 0, x, s_);
  }
  void model_to_face(const TensorView& y, uint8_t* faces) override { cuda::model_to_face(y, faces, 0, s_); }

  void smooth_face(const uint8_t* in, uint8_t* out, int size) override { paste_smooth_face(in, out, size, s_); }
  void blend_faces(const uint8_t* restored, const uint8_t* crop, double alpha, uint8_t* out, int size) override {
    paste_blend_faces(restored, crop, alpha, out, size, s_);
  }
  void canvas_clear(float* mask, uint8_t* faces, int w, int h) override { paste_canvas_clear(mask, faces, w, h, s_); }
  void canvas_add(const uint8_t* face, const float* mask, int size, const AffineTransform& crop_to_image,
                  float* canvas_mask, uint8_t* canvas_faces, int w, int h) override {
    paste_accumulate(face, mask, size, crop_to_image, canvas_mask, canvas_faces, w, h, s_);
  }
  void composite(const uint8_t* original, const float* canvas_mask, const uint8_t* canvas_faces, uint8_t* out, int w,
                 int h) override {
    paste_composite(original, canvas_mask, canvas_faces, out, w, h, s_);
  }

 private:
  Stream s_;
};

}  // namespace

std::unique_ptr<PipelineOps> make_pipeline_ops(Stream stream) { return std::make_unique<CudaPipelineOps>(stream); }

GPEN_CUDA_NAMESPACE_END
