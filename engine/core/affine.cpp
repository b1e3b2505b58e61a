// The inverse of an affine map, with the arithmetic of cv2.invertAffineTransform / warpAffine.
#include "engine/core/affine.h"

#include <cmath>

#include "engine/core/error.h"

// OpenCV's inverse is plain multiply-then-add; a fused multiply-add here would change the last
// bit of the matrix and, through warpAffine's 1/1024 rounding, occasionally a pixel.
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen {

bool all_finite(const AffineTransform& t) {
  for (double v : t.m)
    if (!std::isfinite(v)) return false;
  return true;
}

AffineTransform invert(const AffineTransform& t) {
  GPEN_CHECK(all_finite(t), "affine transform: matrix has a non-finite entry");
  const double* M = t.m.data();
  double D = M[0] * M[4] - M[1] * M[3];
  GPEN_CHECK(D != 0.0 && std::isfinite(1.0 / D), "affine transform: matrix is singular");
  D = 1.0 / D;
  // The statement order of OpenCV's warpAffine, so that the result is bit-identical.
  AffineTransform r;
  double* R = r.m.data();
  R[0] = M[4] * D;
  R[1] = M[1] * -D;
  R[3] = M[3] * -D;
  R[4] = M[0] * D;
  R[2] = -R[0] * M[2] - R[1] * M[5];
  R[5] = -R[3] * M[2] - R[4] * M[5];
  GPEN_CHECK(all_finite(r), "affine transform: inverse is not finite");
  return r;
}

}  // namespace gpen
