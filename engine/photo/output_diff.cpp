#include "engine/photo/output_diff.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/error.h"
#include "kernels/cpu/face_io.h"

namespace gpen {

OutputDiff compare_outputs(const float* a, const float* b, int faces, int size) {
  GPEN_CHECK(faces > 0 && size > 0, "compare_outputs: faces and size must be positive");
  OutputDiff d;
  const size_t per_face = static_cast<size_t>(size) * size * 3;
  d.values = per_face * static_cast<size_t>(faces);
  double scale = 0;
  for (size_t i = 0; i < d.values; ++i) {
    GPEN_CHECK(std::isfinite(b[i]), "compare_outputs: the reference output holds a non-finite value");
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
    if (!std::isfinite(a[i])) {
      ++d.nonfinite;
      continue;
    }
    d.max_abs = std::max(d.max_abs, std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  }
  // An all-zero reference has no scale: any difference is then "infinitely" relative.
  d.max_rel = scale > 0 ? d.max_abs / scale : (d.max_abs > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  if (d.nonfinite > 0) {
    // model_to_face cannot convert NaN (float -> uint8 of NaN is undefined), and a face with
    // NaN in it has no meaningful PSNR anyway.
    d.mse_8bit = d.psnr_8bit = std::numeric_limits<double>::quiet_NaN();
    return d;
  }
  double sum_sq = 0;
  for (int f = 0; f < faces; ++f) {
    const Image fa = model_to_face(a + per_face * f, size);
    const Image fb = model_to_face(b + per_face * f, size);
    for (size_t i = 0; i < per_face; ++i) {
      const int diff = std::abs(static_cast<int>(fa.bgr[i]) - static_cast<int>(fb.bgr[i]));
      sum_sq += static_cast<double>(diff) * diff;
      d.max_diff_8bit = std::max(d.max_diff_8bit, diff);
      d.differing_8bit += diff != 0;
    }
  }
  d.mse_8bit = sum_sq / static_cast<double>(d.values);
  d.psnr_8bit = d.mse_8bit > 0 ? 10.0 * std::log10(255.0 * 255.0 / d.mse_8bit) : std::numeric_limits<double>::infinity();
  return d;
}

}  // namespace gpen
