// facexlib's alignment (see facexlib_align.h).
#include "engine/photo/facexlib_align.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/photo/align.h"
#include "kernels/cpu/warp.h"

namespace gpen {

namespace {

// FaceRestoreHelper's standard five landmarks of a 512 x 512 FFHQ face.
constexpr double kTemplate512[10] = {192.98138, 239.94708, 318.90277, 240.1936, 256.63416,
                                     314.01935, 201.26117, 371.41043, 313.08905, 371.15118};
constexpr std::array<uint8_t, 3> kGrayBorder = {135, 133, 132};

}  // namespace

std::array<double, 10> facexlib_template(int size) {
  GPEN_CHECK(size >= 1 && size <= kMaxFaceSize, "face alignment: face size " + std::to_string(size) + " is out of range");
  std::array<double, 10> t{};
  const double scale = size / 512.0;
  for (int i = 0; i < 10; ++i) t[static_cast<size_t>(i)] = kTemplate512[i] * scale;
  return t;
}

namespace {

// cv::RNG: a multiply-with-carry generator; LMeDSPointSetRegistrator seeds a fresh one with
// (uint64)-1 on every call, so the subsets it draws depend only on the number of points.
struct CvRng {
  uint64_t state = ~uint64_t{0};
  uint32_t next() {
    state = static_cast<uint64_t>(static_cast<uint32_t>(state)) * 4164903690u + (state >> 32);
    return static_cast<uint32_t>(state);
  }
  int uniform(int n) { return static_cast<int>(next() % static_cast<uint32_t>(n)); }
};

// RANSACUpdateNumIters(confidence 0.99, outlier ratio 0.45, 2 points, 2000): 13.
int lmeds_iterations() {
  const double num = std::log(1.0 - 0.99), den = std::log(1.0 - std::pow(1.0 - 0.45, 2));
  return static_cast<int>(std::nearbyint(num / den));
}

}  // namespace

// Why this returns what OpenCV does. estimateAffinePartial2D rounds the points to float32, and
// with LMEDS draws 2-point subsets from a cv::RNG seeded anew on each call (so, for 5 points,
// always the same 13 draws: 6 distinct pairs, reproduced here with the same generator), fits the
// exact similarity of each, keeps the first whose median squared error (in float) is smallest,
// marks as inliers the points within sigma = 2.5 * 1.4826 * (1 + 5 / (n - 2)) * sqrt(median),
// and refines that model over the inliers with Levenberg-Marquardt. That refinement minimises a
// linear least-squares problem in (a, b, tx, ty), whose unique minimum is the least-squares
// similarity of the inliers (Umeyama with scaling): with the same inliers the results agree to
// the refinement's convergence, ~1e-10 (tests/test_gfpgan_flow.cpp checks cv2's matrices on the
// shared photos' detections).
AffineTransform estimate_partial_lmeds(const double* src_in, const double* dst_in, int n) {
  GPEN_CHECK(n >= 2, "similarity estimate: needs at least 2 point pairs, got " + std::to_string(n));
  std::vector<double> src(static_cast<size_t>(2 * n)), dst(static_cast<size_t>(2 * n));
  for (size_t i = 0; i < src.size(); ++i) {
    src[i] = static_cast<float>(src_in[i]);
    dst[i] = static_cast<float>(dst_in[i]);
  }
  if (n == 2) return similarity_transform(src.data(), dst.data(), n);
  double best_median = std::numeric_limits<double>::infinity();
  std::vector<float> best_err, err(static_cast<size_t>(n)), sorted(static_cast<size_t>(n));
  CvRng rng;
  const int iters = lmeds_iterations();
  for (int it = 0; it < iters; ++it) {
    const int i = rng.uniform(n);
    int j = rng.uniform(n);
    while (j == i) j = rng.uniform(n);
    const double sx = src[2 * j] - src[2 * i], sy = src[2 * j + 1] - src[2 * i + 1];
    const double dx = dst[2 * j] - dst[2 * i], dy = dst[2 * j + 1] - dst[2 * i + 1];
    const double den = sx * sx + sy * sy;
    if (!(den > 0.0)) continue;
    // The exact similarity of the pair: x' = a x - b y + tx, y' = b x + a y + ty.
    const double a = (sx * dx + sy * dy) / den, b = (sx * dy - sy * dx) / den;
    const double tx = dst[2 * i] - (a * src[2 * i] - b * src[2 * i + 1]);
    const double ty = dst[2 * i + 1] - (b * src[2 * i] + a * src[2 * i + 1]);
    // OpenCV's computeError: the model rounded to float, squared distances in float.
    const float fa = static_cast<float>(a), fb = static_cast<float>(b), ftx = static_cast<float>(tx),
                fty = static_cast<float>(ty);
    for (int k = 0; k < n; ++k) {
      const float x = static_cast<float>(src[2 * k]), y = static_cast<float>(src[2 * k + 1]);
      const float ex = fa * x - fb * y + ftx - static_cast<float>(dst[2 * k]);
      const float ey = fb * x + fa * y + fty - static_cast<float>(dst[2 * k + 1]);
      err[static_cast<size_t>(k)] = ex * ex + ey * ey;
    }
    sorted = err;
    std::nth_element(sorted.begin(), sorted.begin() + n / 2, sorted.end());
    const double median = sorted[static_cast<size_t>(n / 2)];
    if (median < best_median) {
      best_median = median;
      best_err = err;
    }
  }
  GPEN_CHECK(std::isfinite(best_median), "similarity estimate: the landmarks all coincide");
  const double sigma = std::max(2.5 * 1.4826 * (1.0 + 5.0 / (n - 2)) * std::sqrt(best_median), 0.001);
  const float thresh = static_cast<float>(sigma * sigma);
  std::vector<double> s, d;
  for (int k = 0; k < n; ++k)
    if (best_err[static_cast<size_t>(k)] <= thresh) {
      s.insert(s.end(), {src[2 * k], src[2 * k + 1]});
      d.insert(d.end(), {dst[2 * k], dst[2 * k + 1]});
    }
  return similarity_transform(s.data(), d.data(), static_cast<int>(s.size() / 2));
}

AffineTransform facexlib_face_transform(const float landmarks[10], int size) {
  const std::array<double, 10> t = facexlib_template(size);
  double src[10];
  for (int i = 0; i < 10; ++i) src[i] = landmarks[i];
  return estimate_partial_lmeds(src, t.data(), 5);
}

Image facexlib_align_face(ImageView img, const AffineTransform& image_to_crop, int size) {
  GPEN_CHECK(img.width > 0 && img.height > 0 && img.bgr.size() == img.pixels() * 3,
             "face alignment: empty or malformed image");
  return warp_affine_linear(img, image_to_crop, size, size, kGrayBorder);
}

}  // namespace gpen
