// The paste-back of engine/photo/paste.cpp on the device: small-face smoothing, the alpha blend, the
// per-face accumulation of the warped mask and face (PasteCanvas::add) and the final composite.
// One thread per pixel, grid-stride, 256 threads. Every step is bit-identical to the CPU: the
// smoothing is integer arithmetic, the blend one FMA as the CPU's std::fma, the warps those of
// warp.cu, the composite unfused float multiplies and adds.
//
// Order: PasteCanvas::add compares each face's warped mask with what the faces before it left,
// so faces must be accumulated one after another; their launches are ordered by the stream.
// Within one face every pixel is independent (a thread reads and writes only its own pixel).
// The paste mask itself (paste_mask: two 101-tap Gaussian blurs of a 512 x 512 image, then a
// resize) is computed once per crop size on the host and uploaded by the caller.
#include <string>

#include "kernels/cuda/pipeline.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ int reflect101(int i, int n) {
  if (n == 1) return 0;
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
  return i;
}

// cv2.filter2D([[1,2,1],[2,4,2],[1,2,1]] / 16), reflect-101, rounded half to even, in integers.
__global__ void __launch_bounds__(kThreads) smooth_kernel(int size, const uint8_t* in, uint8_t* out) {
  const int64_t total = int64_t{size} * size;
  const int64_t row = int64_t{size} * 3;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int y = static_cast<int>(i / size), x = static_cast<int>(i - int64_t{y} * size);
    const uint8_t* r0 = in + reflect101(y - 1, size) * row;
    const uint8_t* r1 = in + y * row;
    const uint8_t* r2 = in + reflect101(y + 1, size) * row;
    const int xl = reflect101(x - 1, size) * 3, xm = x * 3, xr = reflect101(x + 1, size) * 3;
    for (int c = 0; c < 3; ++c) {
      auto col = [&](int j) { return r0[j] + 2 * r1[j] + r2[j]; };
      const int sum = col(xl + c) + 2 * col(xm + c) + col(xr + c);
      const int q = sum >> 4, r = sum & 15;
      out[y * row + xm + c] = static_cast<uint8_t>(q + ((r + (q & 1)) > 8));
    }
  }
}

// cv2.addWeighted: round_sat(fma(restored, a, crop * b)).
__global__ void __launch_bounds__(kThreads)
    blend_kernel(int64_t total, const uint8_t* restored, const uint8_t* crop, float a, float b, uint8_t* out) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const float v = __fmaf_rn(static_cast<float>(restored[i]), a, pipe::mul_rn(static_cast<float>(crop[i]), b));
    out[i] = pipe::round_sat_u8(v);
  }
}

// PasteCanvas::add over the footprint a.rx.. : where the warped mask exceeds the canvas mask,
// both the mask and the warped face pixel are stored. The face is warped only there.
__global__ void __launch_bounds__(kThreads)
    accumulate_kernel(pipe::WarpArgs a, const uint8_t* face, const float* mask, int size, float* canvas_mask,
                      uint8_t* canvas_faces) {
  const int64_t total = int64_t{a.rw} * a.rh;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int r = static_cast<int>(i / a.rw), c = static_cast<int>(i - int64_t{r} * a.rw);
    const int x = a.rx + c, y = a.ry + r;
    const float m = pipe::warp_pixel_linear_f32(a, mask, size, x, y);
    const int64_t p = int64_t{y} * a.dst_pitch + x;
    if (pipe::add_rn(m, -canvas_mask[p]) > 0.0f) {  // numpy: mask = tmp_mask - full_mask; mask > 0
      canvas_mask[p] = m;
      pipe::warp_pixel_linear_u8(a, face, int64_t{size} * 3, x, y, canvas_faces + p * 3);
    }
  }
}

// original * (1 - m) + face * m, |.|, round half to even, saturate; m == 0 keeps the photo.
__global__ void __launch_bounds__(kThreads)
    composite_kernel(int64_t total, const uint8_t* original, const float* canvas_mask, const uint8_t* canvas_faces,
                     uint8_t* out) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const float m = canvas_mask[i];
    const uint8_t* o = original + i * 3;
    uint8_t* d = out + i * 3;
    if (m == 0.0f) {
      if (d != o)
        for (int c = 0; c < 3; ++c) d[c] = o[c];
      continue;
    }
    const uint8_t* f = canvas_faces + i * 3;
    const float keep = pipe::add_rn(1.0f, -m);
    uint8_t v[3];
    for (int c = 0; c < 3; ++c)
      v[c] = pipe::round_sat_u8(fabsf(pipe::add_rn(pipe::mul_rn(static_cast<float>(o[c]), keep),
                                                    pipe::mul_rn(static_cast<float>(f[c]), m))));
    for (int c = 0; c < 3; ++c) d[c] = v[c];
  }
}

void check_face_size(int size, const char* op) {
  GPEN_CHECK(size >= 1 && size <= kMaxFaceSize,
             std::string(op) + ": crop size " + std::to_string(size) + " is outside 1.." + std::to_string(kMaxFaceSize));
}

void check_canvas(int width, int height, const char* op) {
  GPEN_CHECK(width > 0 && height > 0 && width <= kMaxImageSide && height <= kMaxImageSide &&
                 int64_t{width} * height <= kMaxImagePixels,
             std::string(op) + ": canvas size " + std::to_string(width) + "x" + std::to_string(height) +
                 " is out of range");
}

// Larger |alpha| could overflow float and give inf - inf (as engine/photo/paste.cpp).
constexpr double kMaxAlpha = 1e6;

}  // namespace

void paste_smooth_face(const uint8_t* in, uint8_t* out, int size, Stream stream) {
  const char* op = "paste_smooth_face";
  check_face_size(size, op);
  GPEN_CHECK(in != nullptr && out != nullptr, std::string(op) + ": null image");
  GPEN_CHECK(in != out, std::string(op) + ": cannot smooth in place");
  const int64_t total = int64_t{size} * size;
  GPEN_LAUNCH(grid_for(total, kThreads), kThreads, 0, stream, smooth_kernel)(size, in, out);
  check_launch(op);
}

void paste_blend_faces(const uint8_t* restored, const uint8_t* crop, double alpha, uint8_t* out, int size,
                       Stream stream) {
  const char* op = "paste_blend_faces";
  check_face_size(size, op);
  GPEN_CHECK(restored != nullptr && crop != nullptr && out != nullptr, std::string(op) + ": null image");
  GPEN_CHECK(std::isfinite(alpha) && std::fabs(alpha) <= kMaxAlpha, std::string(op) + ": alpha is not finite or too large");
  const float a = static_cast<float>(alpha), b = static_cast<float>(1.0 - alpha);
  const int64_t total = int64_t{size} * size * 3;
  GPEN_LAUNCH(grid_for(total, kThreads), kThreads, 0, stream, blend_kernel)(total, restored, crop, a, b, out);
  check_launch(op);
}

void paste_canvas_clear(float* canvas_mask, uint8_t* canvas_faces, int width, int height, Stream stream) {
  const char* op = "paste_canvas_clear";
  check_canvas(width, height, op);
  GPEN_CHECK(canvas_mask != nullptr && canvas_faces != nullptr, std::string(op) + ": null canvas");
  const size_t n = static_cast<size_t>(width) * static_cast<size_t>(height);
  cudaError_t e = cudaMemsetAsync(canvas_mask, 0, n * sizeof(float), stream);
  if (e == cudaSuccess) e = cudaMemsetAsync(canvas_faces, 0, n * 3, stream);
  if (e != cudaSuccess) throw Error(std::string("CUDA ") + op + ": " + cudaGetErrorString(e));
}

void paste_accumulate(const uint8_t* face, const float* mask, int size, const AffineTransform& crop_to_image,
                      float* canvas_mask, uint8_t* canvas_faces, int width, int height, Stream stream) {
  const char* op = "paste_accumulate";
  check_face_size(size, op);
  check_canvas(width, height, op);
  GPEN_CHECK(face != nullptr && mask != nullptr, std::string(op) + ": null face or mask");
  GPEN_CHECK(canvas_mask != nullptr && canvas_faces != nullptr, std::string(op) + ": null canvas");
  const PixelRect fp = warp_footprint(crop_to_image, size, size, width, height);  // throws on a bad matrix
  if (fp.empty()) return;
  const pipe::WarpArgs a = make_warp_args(crop_to_image, size, size, fp, width);
  GPEN_LAUNCH(grid_for(int64_t{fp.width} * fp.height, kThreads), kThreads, 0, stream, accumulate_kernel)(
      a, face, mask, size, canvas_mask, canvas_faces);
  check_launch(op);
}

void paste_composite(const uint8_t* original, const float* canvas_mask, const uint8_t* canvas_faces, uint8_t* out,
                     int width, int height, Stream stream) {
  const char* op = "paste_composite";
  check_canvas(width, height, op);
  GPEN_CHECK(original != nullptr && canvas_mask != nullptr && canvas_faces != nullptr && out != nullptr,
             std::string(op) + ": null image or canvas");
  const int64_t total = int64_t{width} * height;
  GPEN_LAUNCH(grid_for(total, kThreads), kThreads, 0, stream, composite_kernel)(total, original, canvas_mask,
                                                                               canvas_faces, out);
  check_launch(op);
}

GPEN_CUDA_NAMESPACE_END
