#pragma once
// The 2x3 affine maps every layer passes around (face alignment, warps, paste-back and their
// CUDA twins), and their exact inverse.
#include <array>

namespace gpen {

// A 2x3 affine map in OpenCV's layout: x' = m[0] x + m[1] y + m[2], y' = m[3] x + m[4] y + m[5].
struct AffineTransform {
  std::array<double, 6> m{1.0, 0.0, 0.0, 0.0, 1.0, 0.0};

  void apply(double x, double y, double* ox, double* oy) const {
    *ox = m[0] * x + m[1] * y + m[2];
    *oy = m[3] * x + m[4] * y + m[5];
  }
};

// Whether all six entries are finite.
bool all_finite(const AffineTransform& t);

// The exact inverse, computed with the arithmetic of cv2.invertAffineTransform / warpAffine.
// gpen::Error when the matrix is singular or not finite.
AffineTransform invert(const AffineTransform& t);

}  // namespace gpen
