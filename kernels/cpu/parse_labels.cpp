// Per-pixel argmax over the class channels and the keep / drop mask (kernels/cpu/parse_labels.h).
#include "kernels/cpu/parse_labels.h"

#include <cmath>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"

namespace gpen::cpu {

void parse_labels(const TensorView& logits, uint8_t* labels, uint8_t* mask, uint32_t drop) {
  detail::check_f32(logits, "parse_labels", "logits");
  detail::check_rank(logits, 4, "parse_labels", "logits");
  const int64_t N = logits.dim(0), H = logits.dim(1), W = logits.dim(2), C = logits.dim(3);
  GPEN_CHECK(C >= 1 && C <= 32, "parse_labels: " + std::to_string(C) + " classes (expected 1..32)");
  const int64_t pixels = N * H * W;
  const int T = pixels * C >= detail::kParallelMinElements ? num_threads() : 1;
  const int64_t cs = logits.stride(3);
#pragma omp parallel for num_threads(T) if (T > 1) schedule(static)
  for (int64_t i = 0; i < pixels; ++i) {
    const int64_t n = i / (H * W), y = (i / W) % H, x = i % W;
    const float* v = logits.f32() + n * logits.stride(0) + y * logits.stride(1) + x * logits.stride(2);
    int best = 0;
    float bv = v[0];
    if (!std::isnan(bv))
      for (int c = 1; c < C; ++c) {
        const float t = v[c * cs];
        if (std::isnan(t)) {
          best = c;
          break;
        }
        if (t > bv) {  // strictly greater: the first maximum stays
          bv = t;
          best = c;
        }
      }
    if (labels) labels[i] = static_cast<uint8_t>(best);
    if (mask) mask[i] = (drop >> best) & 1u ? 0 : 255;
  }
}

}  // namespace gpen::cpu
