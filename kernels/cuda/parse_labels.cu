// Per-pixel argmax over the class channels + keep / drop mask: one thread per pixel, reading its
// C logits (19 for ParseNet). The twin of cpu::parse_labels.
#include "kernels/cuda/parse_labels.h"

#include "kernels/cuda/common.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 256;

struct LabelShape {
  int64_t n, h, w, c;
  NhwcStrides s;
  uint32_t drop;
};

__global__ void __launch_bounds__(kThreads)
    parse_labels_kernel(const LabelShape s, const float* x, uint8_t* labels, uint8_t* mask) {
  const int64_t total = s.n * s.h * s.w;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t n = i / (s.h * s.w), y = (i / s.w) % s.h, xx = i % s.w;
    const float* v = x + n * s.s.n + y * s.s.h + xx * s.s.w;
    int best = 0;
    float bv = v[0];
    if (bv == bv)  // not NaN (no fast-math here)
      for (int c = 1; c < s.c; ++c) {
        const float t = v[c * s.s.c];
        if (t != t) {
          best = c;
          break;
        }
        if (t > bv) {
          bv = t;
          best = c;
        }
      }
    if (labels) labels[i] = static_cast<uint8_t>(best);
    if (mask) mask[i] = (s.drop >> best) & 1u ? 0 : 255;
  }
}

}  // namespace

void parse_labels(const TensorView& logits, uint8_t* labels, uint8_t* mask, uint32_t drop, Stream stream) {
  check_view(logits, DType::f32, "parse_labels", "logits");
  check_rank(logits, 4, "parse_labels", "logits");
  const LabelShape s{logits.dim(0), logits.dim(1), logits.dim(2), logits.dim(3), nhwc_strides(logits), drop};
  GPEN_CHECK(s.c >= 1 && s.c <= 32, "parse_labels: " + std::to_string(s.c) + " classes (expected 1..32)");
  const int64_t pixels = s.n * s.h * s.w;
  if (pixels == 0) return;
  GPEN_LAUNCH(grid_for(pixels, kThreads), kThreads, 0, stream, parse_labels_kernel)(s, logits.as<const float>(), labels,
                                                                                    mask);
  check_launch("parse_labels");
}

GPEN_CUDA_NAMESPACE_END
