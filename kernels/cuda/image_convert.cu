// Conversions between 8-bit BGR images and the networks' tensors: face_to_model / model_to_face
// (kernels/cpu/face_io.cpp) and the RetinaFace input (RetinaFaceDetector::detect). One thread per
// pixel (3 channels), grid-stride, 256 threads; the tensor side goes through its NHWC strides.
#include <string>

#include "kernels/cuda/pipeline.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  volatile float r = a / b;
  return r;
#endif
}

// x[f, y, x, c] = (bgr[2 - c] / 255 - 0.5) / 0.5.
template <class T>
__global__ void __launch_bounds__(kThreads)
    face_to_model_kernel(int64_t total, int size, const uint8_t* faces, int64_t face_stride, T* x, NhwcStrides xs) {
  const int64_t per = int64_t{size} * size;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t f = i / per, p = i - f * per;
    const int64_t py = p / size, px = p - py * size;
    const uint8_t* s = faces + f * face_stride + p * 3;
    T* d = x + f * xs.n + py * xs.h + px * xs.w;
    for (int c = 0; c < 3; ++c) {
      const float v = pipe::add_rn(div_rn(static_cast<float>(s[2 - c]), 255.0f), -0.5f);
      d[c * xs.c] = from_f32<T>(div_rn(v, 0.5f));
    }
  }
}

// bgr[2 - c] = trunc(clamp(y * 0.5 + 0.5, 0, 1) * 255); a NaN clamps to 0.
template <class T>
__global__ void __launch_bounds__(kThreads)
    model_to_face_kernel(int64_t total, int size, const T* y, NhwcStrides ys, uint8_t* faces, int64_t face_stride) {
  const int64_t per = int64_t{size} * size;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t f = i / per, p = i - f * per;
    const int64_t py = p / size, px = p - py * size;
    const T* s = y + f * ys.n + py * ys.h + px * ys.w;
    uint8_t* d = faces + f * face_stride + p * 3;
    for (int c = 0; c < 3; ++c) {
      const float v = pipe::add_rn(pipe::mul_rn(to_f32(s[c * ys.c]), 0.5f), 0.5f);
      d[2 - c] = static_cast<uint8_t>(pipe::mul_rn(fminf(fmaxf(v, 0.0f), 1.0f), 255.0f));
    }
  }
}

// One axis of cv2.resize INTER_LINEAR (kernels/cpu/linear_taps.cpp): source index pair and weights.
struct AxisTap {
  int i0, i1;
  float a0, a1;
};

__device__ __forceinline__ AxisTap axis_tap(int d, int src, double step) {
  float f = static_cast<float>(pipe::dadd_rn(pipe::dmul_rn(d + 0.5, step), -0.5));
  int s = static_cast<int>(floorf(f));
  f = pipe::add_rn(f, -static_cast<float>(s));
  if (s < 0) {
    s = 0;
    f = 0.0f;
  }
  if (s >= src - 1) {
    s = src - 1;
    f = 0.0f;
  }
  return {s, s + 1 < src ? s + 1 : src - 1, pipe::add_rn(1.0f, -f), f};
}

struct DetectArgs {
  int w, h, nw, nh;
  int64_t pitch;
  double step;  // 1 / scale, as linear_taps computes it
  bool resize;
  NhwcStrides xs;
};

// x = bgr (resized: horizontal blends of the two source rows, then the vertical blend) - mean.
__global__ void __launch_bounds__(kThreads) detect_input_kernel(DetectArgs a, const uint8_t* bgr, float* x) {
  const float mean[3] = {104.0f, 117.0f, 123.0f};
  const int64_t total = int64_t{a.nw} * a.nh;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int oy = static_cast<int>(i / a.nw), ox = static_cast<int>(i - int64_t{oy} * a.nw);
    float* d = x + oy * a.xs.h + ox * a.xs.w;
    if (!a.resize) {
      const uint8_t* s = bgr + oy * a.pitch + int64_t{ox} * 3;
      for (int c = 0; c < 3; ++c) d[c * a.xs.c] = pipe::add_rn(static_cast<float>(s[c]), -mean[c]);
      continue;
    }
    const AxisTap tx = axis_tap(ox, a.w, a.step), ty = axis_tap(oy, a.h, a.step);
    const uint8_t* r0 = bgr + ty.i0 * a.pitch;
    const uint8_t* r1 = bgr + ty.i1 * a.pitch;
    for (int c = 0; c < 3; ++c) {
      const float h0 = pipe::add_rn(pipe::mul_rn(static_cast<float>(r0[tx.i0 * 3 + c]), tx.a0),
                                    pipe::mul_rn(static_cast<float>(r0[tx.i1 * 3 + c]), tx.a1));
      const float h1 = pipe::add_rn(pipe::mul_rn(static_cast<float>(r1[tx.i0 * 3 + c]), tx.a0),
                                    pipe::mul_rn(static_cast<float>(r1[tx.i1 * 3 + c]), tx.a1));
      const float v = pipe::add_rn(pipe::mul_rn(h0, ty.a0), pipe::mul_rn(h1, ty.a1));
      d[c * a.xs.c] = pipe::add_rn(v, -mean[c]);
    }
  }
}

void check_faces_tensor(const TensorView& t, const char* op, const char* what) {
  GPEN_CHECK(t.rank() == 4 && t.dim(3) == 3 && t.dim(1) == t.dim(2) && t.dim(1) > 0 && t.dim(1) <= kMaxFaceSize,
             std::string(op) + ": " + what + " must be [n, S, S, 3] with 1 <= S <= " + std::to_string(kMaxFaceSize) +
                 ", got " + t.shape.str());
  GPEN_CHECK(t.data != nullptr || t.numel() == 0, std::string(op) + ": " + what + " has no data");
}

// Bytes from one S x S crop to the next: 0 means packed.
int64_t face_stride_or_packed(int64_t stride, int size, const char* op) {
  const int64_t face = int64_t{size} * size * 3;
  if (stride == 0) return face;
  GPEN_CHECK(stride >= face, std::string(op) + ": face stride is shorter than a face");
  return stride;
}

}  // namespace

void face_to_model(const uint8_t* faces, int n, int size, int64_t face_stride, const TensorView& x, Stream stream) {
  const char* op = "face_to_model";
  check_faces_tensor(x, op, "output");
  GPEN_CHECK(x.dim(0) == n && x.dim(1) == size,
             std::string(op) + ": output " + x.shape.str() + " does not hold " + std::to_string(n) + " faces of " +
                 std::to_string(size) + "x" + std::to_string(size));
  face_stride = face_stride_or_packed(face_stride, size, op);
  if (n == 0) return;
  GPEN_CHECK(faces != nullptr, std::string(op) + ": null input");
  const int64_t total = int64_t{n} * size * size;
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    GPEN_LAUNCH(grid_for(total, kThreads), kThreads, 0, stream, face_to_model_kernel<T>)(
        total, size, faces, face_stride, x.as<T>(), nhwc_strides(x));
  });
  check_launch(op);
}

void model_to_face(const TensorView& y, uint8_t* faces, int64_t face_stride, Stream stream) {
  const char* op = "model_to_face";
  check_faces_tensor(y, op, "input");
  const int n = static_cast<int>(y.dim(0)), size = static_cast<int>(y.dim(1));
  face_stride = face_stride_or_packed(face_stride, size, op);
  if (n == 0) return;
  GPEN_CHECK(faces != nullptr, std::string(op) + ": null output");
  const int64_t total = int64_t{n} * size * size;
  dispatch_float(y.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    GPEN_LAUNCH(grid_for(total, kThreads), kThreads, 0, stream, model_to_face_kernel<T>)(
        total, size, y.as<const T>(), nhwc_strides(y), faces, face_stride);
  });
  check_launch(op);
}

void detect_input(const uint8_t* bgr, int w, int h, int64_t pitch, double scale, const TensorView& x, Stream stream) {
  const char* op = "detect_input";
  if (pitch == 0) pitch = int64_t{w} * 3;
  check_warp_source(bgr, w, h, pitch, int64_t{w} * 3, op);
  GPEN_CHECK(std::isfinite(scale) && scale > 0, std::string(op) + ": scale must be positive and finite");
  GPEN_CHECK(x.dtype == DType::f32 && x.rank() == 4 && x.dim(0) == 1 && x.dim(3) == 3 && x.dim(1) > 0 && x.dim(2) > 0 &&
                 x.data != nullptr,
             std::string(op) + ": input tensor must be f32 [1, h, w, 3], got " + std::string(dtype_name(x.dtype)) + " " +
                 x.shape.str());
  DetectArgs a{};
  a.w = w;
  a.h = h;
  a.nh = static_cast<int>(x.dim(1));
  a.nw = static_cast<int>(x.dim(2));
  a.pitch = pitch;
  a.resize = scale != 1.0;
  a.step = 1.0 / scale;
  a.xs = nhwc_strides(x);
  GPEN_CHECK(a.resize || (a.nh == h && a.nw == w),
             std::string(op) + ": without resizing the tensor must be [1, " + std::to_string(h) + ", " + std::to_string(w) +
                 ", 3], got " + x.shape.str());
  const int64_t total = int64_t{a.nw} * a.nh;
  GPEN_LAUNCH(grid_for(total, kThreads), kThreads, 0, stream, detect_input_kernel)(a, bgr, x.as<float>());
  check_launch(op);
}

GPEN_CUDA_NAMESPACE_END
