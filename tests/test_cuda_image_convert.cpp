// CUDA face_to_model / model_to_face / detect_input against kernels/cpu/face_io.cpp and the input
// preparation of RetinaFaceDetector::detect.
//  - face_to_model: the same two float divisions and one subtraction, each rounded once: exact in
//    f32; f16 / bf16 hold the f32 value rounded once, so exact against the rounded CPU value.
//  - model_to_face: exact bytes (the CPU's multiply-add may be fused by the compiler, but
//    v * 0.5 is exact, so fused or not the sum rounds the same).
//  - detect_input without resizing: exact (u8 -> float, minus an integer mean).
//  - detect_input with resizing: the kernel multiplies and adds without fusing (OpenCV's scalar
//    order); the CPU twin (engine/photo/image.cpp) is compiled with -mfma and no fp-contract pragma, so
//    GCC may fuse either product of each blend. Three blends of values <= 255, each rounding at
//    most half an ulp of 256 (2^-16) differently, give |diff| <= 1.5 * 2^-15 < 5e-5 before the
//    mean subtraction, which is exact for these magnitudes; the tolerance is 5e-5 absolute.
#include <doctest/doctest.h>

#include <cstring>

#include "engine/core/error.h"
#include "kernels/cpu/face_io.h"
#include "engine/photo/image.h"
#include "engine/models/retinaface.h"
#include "kernels/cuda/ops_pipeline.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;
using cuda_test::DeviceBuffer;

namespace {

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng() & 0xff);
  return v;
}

const DType kTypes[] = {DType::f32, DType::f16, DType::bf16};

}  // namespace

TEST_CASE("cuda face_to_model matches the CPU, f32 / f16 / bf16, dense and as a channel slice") {
  const int n = 3, S = 20;
  const auto bytes = random_bytes(size_t{n} * S * S * 3, 1);
  // Include the extremes 0 and 255 in every channel.
  std::vector<uint8_t> faces = bytes;
  faces[0] = 0;
  faces[1] = 255;
  faces[2] = 128;
  DeviceBuffer dfaces(faces.size());
  dfaces.upload(faces);
  std::vector<float> want(faces.size());
  for (int f = 0; f < n; ++f) {
    Image img;
    img.width = img.height = S;
    img.bgr.assign(faces.begin() + f * S * S * 3, faces.begin() + (f + 1) * S * S * 3);
    face_to_model(img, S, want.data() + size_t(f) * S * S * 3);
  }
  for (DType dt : kTypes) {
    CAPTURE(std::string(dtype_name(dt)));
    std::vector<float> wq = want;
    for (float& v : wq) v = cuda_test::quantize(v, dt);
    auto x = cuda_test::make_pair(Shape{n, S, S, 3}, dt, 2);
    cuda::face_to_model(dfaces.as<uint8_t>(), n, S, 0, x.dv, nullptr);
    cuda_test::check_close(x.fetch(), wq, {0, 0}, "face_to_model");

    // Channels 2..4 of a 7-channel buffer: the rest must stay as it was.
    auto xs = cuda_test::make_pair(Shape{n, S, S, 3}, dt, 3, -1.0f, 1.0f, 7, 2);
    std::vector<float> expect = xs.host;
    for (size_t p = 0; p < size_t{n} * S * S; ++p)
      for (int c = 0; c < 3; ++c) expect[p * 7 + 2 + c] = wq[p * 3 + c];
    cuda::face_to_model(dfaces.as<uint8_t>(), n, S, 0, xs.dv, nullptr);
    cuda_test::check_close(xs.fetch(), expect, {0, 0}, "face_to_model into a slice");
  }
}

TEST_CASE("cuda model_to_face matches the CPU bytes, f32 / f16 / bf16") {
  const int n = 2, S = 24;
  for (DType dt : kTypes) {
    CAPTURE(std::string(dtype_name(dt)));
    auto y = cuda_test::make_pair(Shape{n, S, S, 3}, dt, 5, -1.3f, 1.3f);
    // Exact grid points and the clamp edges.
    y.host[0] = -1.0f;
    y.host[1] = 1.0f;
    y.host[2] = 0.0f;
    y.host[3] = 1.0f / 255.0f * 2 - 1;
    y.dev.upload(cuda_test::encode(y.host, dt));
    std::vector<uint8_t> want;
    for (int f = 0; f < n; ++f) {
      const Image img = model_to_face(y.host.data() + size_t(f) * S * S * 3, S);
      want.insert(want.end(), img.bgr.begin(), img.bgr.end());
    }
    // Faces written with a stride of one face plus 5 bytes; the gaps must stay untouched.
    const int64_t stride = int64_t{S} * S * 3 + 5;
    std::vector<uint8_t> init(size_t(stride) * n, 0x77);
    DeviceBuffer dfaces(init.size());
    dfaces.upload(init);
    cuda::model_to_face(y.dv, dfaces.as<uint8_t>(), stride, nullptr);
    const auto got = dfaces.download<uint8_t>(init.size());
    size_t bad = 0;
    for (int f = 0; f < n; ++f) {
      for (int64_t i = 0; i < int64_t{S} * S * 3; ++i) bad += got[size_t(f * stride + i)] != want[size_t(f) * S * S * 3 + size_t(i)];
      for (int64_t i = int64_t{S} * S * 3; i < stride; ++i) bad += got[size_t(f * stride + i)] != 0x77;
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("cuda detect_input matches RetinaFaceDetector's preparation, with and without the shrink") {
  const int w = 61, h = 47;
  const auto img = random_bytes(size_t{w} * h * 3, 9);
  DeviceBuffer dimg(img.size());
  dimg.upload(img);
  const float mean[3] = {104, 117, 123};
  struct Case {
    int max_side, target_side;
  };
  for (Case c : {Case{0, 0}, Case{50, 30}, Case{60, 45}, Case{40, 13}}) {
    CAPTURE(c.target_side);
    int nw = 0, nh = 0;
    const double ss = detect_input_scale(w, h, c.max_side, c.target_side, &nw, &nh);
    std::vector<float> x(img.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(img[i]);
    if (ss != 1.0) {
      std::vector<float> small(size_t(nw) * nh * 3);
      resize_bilinear_f32(x.data(), w, h, 3, small.data(), nw, nh, ss, ss);
      x.swap(small);
    }
    for (size_t i = 0; i < x.size(); i += 3)
      for (int k = 0; k < 3; ++k) x[i + k] -= mean[k];
    DeviceBuffer dx(x.size() * 4);
    TensorView xv = make_view(dx.get(), DType::f32, Shape{1, nh, nw, 3});
    cuda::detect_input(dimg.as<uint8_t>(), w, h, 0, ss, xv, nullptr);
    const auto got = dx.download<float>(x.size());
    cuda_test::check_close(got, x, {ss == 1.0 ? 0.0 : 5e-5, 0}, "detect_input");
    if (ss != 1.0) {
      size_t exact = 0;
      for (size_t i = 0; i < x.size(); ++i) exact += got[i] == x[i];
      MESSAGE("detect_input scale " << ss << ": " << exact << " of " << x.size() << " values bit-equal to the CPU");
    }
  }
}

TEST_CASE("cuda image conversions reject bad arguments") {
  DeviceBuffer b(16 * 16 * 3 * 4);
  TensorView bad = make_view(b.get(), DType::f32, Shape{1, 16, 8, 3});
  CHECK_THROWS_AS(cuda::face_to_model(b.as<uint8_t>(), 1, 16, 0, bad, nullptr), Error);
  TensorView x = make_view(b.get(), DType::f32, Shape{1, 16, 16, 3});
  CHECK_THROWS_AS(cuda::face_to_model(b.as<uint8_t>(), 2, 16, 0, x, nullptr), Error);
  CHECK_THROWS_AS(cuda::face_to_model(nullptr, 1, 16, 0, x, nullptr), Error);
  CHECK_THROWS_AS(cuda::model_to_face(bad, b.as<uint8_t>(), 0, nullptr), Error);
  TensorView i32 = make_view(b.get(), DType::i32, Shape{1, 16, 16, 3});
  CHECK_THROWS_AS(cuda::model_to_face(i32, b.as<uint8_t>(), 0, nullptr), Error);
  CHECK_THROWS_AS(cuda::detect_input(b.as<uint8_t>(), 8, 8, 0, 1.0, x, nullptr), Error);  // no resize, size differs
  CHECK_THROWS_AS(cuda::detect_input(b.as<uint8_t>(), 16, 16, 0, 0.0, x, nullptr), Error);
  CHECK_THROWS_AS(cuda::detect_input(b.as<uint8_t>(), 16, 16, 0, 1.0, i32, nullptr), Error);
}
