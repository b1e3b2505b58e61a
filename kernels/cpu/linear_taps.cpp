#include "kernels/cpu/linear_taps.h"

#include <algorithm>
#include <cmath>

// OpenCV computes the source coordinate with a separate multiply and subtract; a fused
// multiply-add would move it by an ulp and, near .5, flip which tap a pixel takes.
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen {

std::vector<LinearTap> linear_taps(int src, int dst, double inv_scale) {
  const double scale = 1.0 / inv_scale;
  std::vector<LinearTap> taps(static_cast<size_t>(dst));
  for (int d = 0; d < dst; ++d) {
    float f = static_cast<float>((d + 0.5) * scale - 0.5);
    int s = static_cast<int>(std::floor(f));
    f -= static_cast<float>(s);
    if (s < 0) {
      s = 0;
      f = 0.0f;
    }
    if (s >= src - 1) {
      s = src - 1;
      f = 0.0f;
    }
    taps[static_cast<size_t>(d)] = {s, std::min(s + 1, src - 1), 1.0f - f, f};
  }
  return taps;
}

std::vector<LinearTap> linear_taps_rows(int src, int dst, double inv_scale) {
  const double scale = 1.0 / inv_scale;
  std::vector<LinearTap> taps(static_cast<size_t>(dst));
  for (int d = 0; d < dst; ++d) {
    float f = static_cast<float>((d + 0.5) * scale - 0.5);
    const int s = static_cast<int>(std::floor(f));
    f -= static_cast<float>(s);
    taps[static_cast<size_t>(d)] = {std::clamp(s, 0, src - 1), std::clamp(s + 1, 0, src - 1), 1.0f - f, f};
  }
  return taps;
}

}  // namespace gpen
