// cv2.warpAffine on the device, bit-identical to gpen::warp_affine_roi (kernels/cpu/warp.cpp): one
// thread per destination pixel of the ROI, grid-stride, 256 threads. Each thread recomputes
// OpenCV's per-column and per-row fixed-point terms in double (the same roundings as the CPU's
// tables) and its cell's weights (pipeline.cuh), so no table lives in device memory.
#include <string>

#include "kernels/cuda/pipeline.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 256;

template <WarpInterp I>
__global__ void __launch_bounds__(kThreads) warp_u8_kernel(pipe::WarpArgs a, const uint8_t* src, int64_t pitch, uint8_t* dst) {
  const int64_t total = int64_t{a.rw} * a.rh;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int r = static_cast<int>(i / a.rw), c = static_cast<int>(i - int64_t{r} * a.rw);
    uint8_t* d = dst + r * a.dst_pitch + int64_t{c} * 3;
    if constexpr (I == WarpInterp::linear)
      pipe::warp_pixel_linear_u8(a, src, pitch, a.rx + c, a.ry + r, d);
    else
      pipe::warp_pixel_cubic_u8(a, src, pitch, a.rx + c, a.ry + r, d);
  }
}

template <WarpInterp I>
__global__ void __launch_bounds__(kThreads) warp_f32_kernel(pipe::WarpArgs a, const float* src, int64_t pitch, float* dst) {
  const int64_t total = int64_t{a.rw} * a.rh;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int r = static_cast<int>(i / a.rw), c = static_cast<int>(i - int64_t{r} * a.rw);
    float v;
    if constexpr (I == WarpInterp::linear)
      v = pipe::warp_pixel_linear_f32(a, src, pitch, a.rx + c, a.ry + r);
    else
      v = pipe::warp_pixel_cubic_f32(a, src, pitch, a.rx + c, a.ry + r);
    dst[r * a.dst_pitch + c] = v;
  }
}

// cv::interpolateCubic (a = -0.75) in OpenCV's float order, every step rounded (no FMA).
void cubic_coeffs(float x, float* c) {
  using pipe::add_rn;
  using pipe::mul_rn;
  const float A = -0.75f;
  const float x1 = add_rn(x, 1.0f);
  c[0] = add_rn(mul_rn(add_rn(mul_rn(add_rn(mul_rn(A, x1), -(5 * A)), x1), 8 * A), x1), -(4 * A));
  c[1] = add_rn(mul_rn(mul_rn(add_rn(mul_rn(A + 2, x), -(A + 3)), x), x), 1.0f);
  const float u = add_rn(1.0f, -x);
  c[2] = add_rn(mul_rn(mul_rn(add_rn(mul_rn(A + 2, u), -(A + 3)), u), u), 1.0f);
  c[3] = add_rn(add_rn(add_rn(1.0f, -c[0]), -c[1]), -c[2]);
}

void check_roi(PixelRect roi, const char* op) {
  GPEN_CHECK(roi.x >= 0 && roi.y >= 0 && roi.width >= 0 && roi.height >= 0 && roi.width <= kMaxImageSide &&
                 roi.height <= kMaxImageSide && roi.x <= kMaxImageSide && roi.y <= kMaxImageSide,
             std::string(op) + ": destination rectangle is out of range");
}

template <class P>
void warp_roi(const P* src, int sw, int sh, int64_t src_pitch, const AffineTransform& m, PixelRect roi, P* dst,
              int64_t dst_pitch, WarpInterp interp, Stream stream) {
  constexpr bool u8 = std::is_same_v<P, uint8_t>;
  constexpr int channels = u8 ? 3 : 1;
  const char* op = u8 ? "warp_affine_roi (BGR)" : "warp_affine_roi (float)";
  if (src_pitch == 0) src_pitch = int64_t{sw} * channels;
  check_warp_source(src, sw, sh, src_pitch, int64_t{sw} * channels, op);
  check_roi(roi, op);
  if (dst_pitch == 0) dst_pitch = int64_t{roi.width} * channels;
  GPEN_CHECK(dst_pitch >= int64_t{roi.width} * channels,
             std::string(op) + ": destination pitch " + std::to_string(dst_pitch) + " is shorter than a row");
  if (roi.empty()) return;
  GPEN_CHECK(dst != nullptr, std::string(op) + ": null destination");
  const pipe::WarpArgs a = make_warp_args(m, sw, sh, roi, dst_pitch);
  const unsigned grid = grid_for(int64_t{roi.width} * roi.height, kThreads);
  if constexpr (u8) {
    if (interp == WarpInterp::linear)
      GPEN_LAUNCH(grid, kThreads, 0, stream, warp_u8_kernel<WarpInterp::linear>)(a, src, src_pitch, dst);
    else
      GPEN_LAUNCH(grid, kThreads, 0, stream, warp_u8_kernel<WarpInterp::cubic>)(a, src, src_pitch, dst);
  } else {
    if (interp == WarpInterp::linear)
      GPEN_LAUNCH(grid, kThreads, 0, stream, warp_f32_kernel<WarpInterp::linear>)(a, src, src_pitch, dst);
    else
      GPEN_LAUNCH(grid, kThreads, 0, stream, warp_f32_kernel<WarpInterp::cubic>)(a, src, src_pitch, dst);
  }
  check_launch(op);
}

}  // namespace

void check_warp_source(const void* src, int sw, int sh, int64_t pitch, int64_t min_pitch, const char* op) {
  GPEN_CHECK(src != nullptr, std::string(op) + ": null source");
  GPEN_CHECK(sw > 0 && sh > 0 && sw <= kMaxImageSide && sh <= kMaxImageSide && int64_t{sw} * sh <= kMaxImagePixels,
             std::string(op) + ": source size " + std::to_string(sw) + "x" + std::to_string(sh) + " is out of range");
  GPEN_CHECK(pitch >= min_pitch,
             std::string(op) + ": source pitch " + std::to_string(pitch) + " is shorter than a row");
}

pipe::WarpArgs make_warp_args(const AffineTransform& m, int sw, int sh, PixelRect roi, int64_t dst_pitch) {
  const AffineTransform inv = invert(m);  // throws on singular / non-finite, as the CPU
  pipe::WarpArgs a{};
  for (int i = 0; i < 6; ++i) a.M[i] = inv.m[static_cast<size_t>(i)];
  a.sw = sw;
  a.sh = sh;
  a.rx = roi.x;
  a.ry = roi.y;
  a.rw = roi.width;
  a.rh = roi.height;
  a.dst_pitch = dst_pitch;
  for (int i = 0; i < pipe::kTabSize; ++i) cubic_coeffs(static_cast<float>(i) * (1.0f / pipe::kTabSize), a.cub[i]);
  return a;
}

void warp_affine_roi(const uint8_t* src, int sw, int sh, int64_t src_pitch, const AffineTransform& m, PixelRect roi,
                     uint8_t* dst, int64_t dst_pitch, WarpInterp interp, Stream stream) {
  warp_roi(src, sw, sh, src_pitch, m, roi, dst, dst_pitch, interp, stream);
}

void warp_affine_roi(const float* src, int sw, int sh, int64_t src_pitch, const AffineTransform& m, PixelRect roi,
                     float* dst, int64_t dst_pitch, WarpInterp interp, Stream stream) {
  warp_roi(src, sw, sh, src_pitch, m, roi, dst, dst_pitch, interp, stream);
}

GPEN_CUDA_NAMESPACE_END
