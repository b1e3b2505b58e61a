#include "kernels/cpu/detect_input.h"

#include <cstddef>

#include "kernels/cpu/image_resize.h"

namespace gpen::cpu {

void detect_input(const uint8_t* bgr, int w, int h, double scale, int nw, int nh, float* x) {
  // As GPEN's detect(): the float image resized (when needed), then the mean subtracted.
  size_t n = static_cast<size_t>(w) * static_cast<size_t>(h) * 3;
  if (scale != 1.0) {
    resize_bilinear_f32(bgr, w, h, 3, x, nw, nh, scale, scale);
    n = static_cast<size_t>(nw) * static_cast<size_t>(nh) * 3;
  } else {
    for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(bgr[i]);
  }
  for (size_t i = 0; i < n; i += 3)
    for (int c = 0; c < 3; ++c) x[i + c] -= kRetinaFaceMeanBgr[c];
}

}  // namespace gpen::cpu
