// Face alignment: reference points, Umeyama similarity, inverse, aligned crop.
#include "engine/photo/align.h"

// GCC 12 reports a false -Warray-bounds inside Eigen::umeyama (a 2-row block of a 3x3 matrix
// loaded as a 4-wide packet on a path never taken at run time).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Warray-bounds"
#endif
#include <Eigen/Geometry>
#include <cmath>
#include <vector>
#include <string>

#include "engine/core/error.h"
#include "kernels/cpu/warp.h"

// OpenCV's inverse is plain multiply-then-add; a fused multiply-add here would change the last
// bit of the matrix and, through warpAffine's 1/1024 rounding, occasionally a pixel.
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen {

namespace {

// The 96x112 template of align_faces.py (left eye, right eye, nose, mouth corners).
constexpr double kTemplate96x112[10] = {30.29459953, 51.69630051, 65.53179932, 51.50139999, 48.02519989,
                                        71.73660278, 33.54930115, 92.3655014,  62.72990036, 92.20410156};


}  // namespace

std::array<float, 10> reference_points(int size) {
  GPEN_CHECK(size >= 1 && size <= kMaxFaceSize,
             "face alignment: crop size " + std::to_string(size) + " is outside 1.." + std::to_string(kMaxFaceSize));
  // Same operation order as get_reference_facial_points (float64), then np.float32.
  const double scale = static_cast<double>(static_cast<float>(size)) / 168.0;
  std::array<float, 10> r{};
  for (int i = 0; i < 5; ++i) {
    const double x = (kTemplate96x112[2 * i] + 8.0) + 28.0;
    const double y = (kTemplate96x112[2 * i + 1] + 0.0) + 28.0;
    r[static_cast<size_t>(2 * i)] = static_cast<float>(x * scale);
    r[static_cast<size_t>(2 * i + 1)] = static_cast<float>(y * scale);
  }
  return r;
}

AffineTransform similarity_transform(const double* src, const double* dst, int n) {
  GPEN_CHECK(n >= 2, "similarity transform: needs at least 2 point pairs, got " + std::to_string(n));
  Eigen::Matrix<double, 2, Eigen::Dynamic> s(2, n), d(2, n);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < 2; ++k) {
      const double a = src[2 * i + k], b = dst[2 * i + k];
      GPEN_CHECK(std::isfinite(a) && std::isfinite(b),
                 "similarity transform: point " + std::to_string(i) + " is not finite");
      s(k, i) = a;
      d(k, i) = b;
    }
  }
  // Coincident source points leave the scale undefined (the official code returns NaNs).
  const Eigen::Vector2d mean = s.rowwise().mean();
  const double spread = (s.colwise() - mean).squaredNorm();
  GPEN_CHECK(spread > 0.0 && std::isfinite(spread), "similarity transform: the landmarks all coincide");
  const Eigen::Matrix3d T = Eigen::umeyama(s, d, true);
  AffineTransform t;
  t.m = {T(0, 0), T(0, 1), T(0, 2), T(1, 0), T(1, 1), T(1, 2)};
  GPEN_CHECK(all_finite(t) && t.m[0] * t.m[4] - t.m[1] * t.m[3] != 0.0,
             "similarity transform: degenerate landmarks (no invertible fit)");
  return t;
}

AffineTransform similarity_transform(const float* src, const float* dst, int n) {
  GPEN_CHECK(n >= 2, "similarity transform: needs at least 2 point pairs, got " + std::to_string(n));
  std::vector<double> s(src, src + 2 * n), d(dst, dst + 2 * n);
  return similarity_transform(s.data(), d.data(), n);
}

AffineTransform face_transform(const float landmarks[10], int size) {
  const std::array<float, 10> ref = reference_points(size);
  return similarity_transform(landmarks, ref.data(), 5);
}

Image align_face(ImageView img, const float landmarks[10], int size, AffineTransform* forward) {
  GPEN_CHECK(img.width > 0 && img.height > 0 && img.bgr.size() == img.pixels() * 3,
             "face alignment: empty or malformed image");
  const AffineTransform t = face_transform(landmarks, size);
  if (forward) *forward = t;
  return warp_affine(img, t, size, size, kGpenWarp);
}

}  // namespace gpen
