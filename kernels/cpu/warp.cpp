// Bilinear and bicubic affine warps, bit-exact with cv2.warpAffine and a constant 0 border
// (OpenCV's WarpAffineInvoker + remapBilinear / remapBicubic, see warp.h for the arithmetic): the
// source map, the footprint and the entry points. The tables: warp_tables.cpp; the remaps:
// warp_linear.cpp, warp_cubic.cpp.
#include "kernels/cpu/warp.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/core/error.h"
#include "kernels/cpu/warp_internal.h"

// OpenCV sums the float taps with separate multiplies and adds (its remap is baseline SSE2 code);
// contracting them into fused multiply-adds would change the last bit.
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen {

namespace warp_detail {

SourceMap source_map(const AffineTransform& m) {
  const AffineTransform inv = invert(m);  // throws on singular / non-finite
  SourceMap s{};
  std::copy(inv.m.begin(), inv.m.end(), s.M);
  return s;
}

void column_deltas(const SourceMap& s, int x0, int n, std::vector<int32_t>& ad, std::vector<int32_t>& bd) {
  ad.resize(static_cast<size_t>(n));
  bd.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const int x = x0 + i;
    ad[static_cast<size_t>(i)] = cv_round(s.M[0] * x * (1 << kAbBits));
    bd[static_cast<size_t>(i)] = cv_round(s.M[3] * x * (1 << kAbBits));
  }
}

}  // namespace warp_detail

using warp_detail::cubic_f32;
using warp_detail::cubic_u8;
using warp_detail::linear_f32;
using warp_detail::linear_u8;
using warp_detail::source_map;
using warp_detail::SourceMap;

namespace {

void check_src(int w, int h, const char* what) {
  GPEN_CHECK(w > 0 && h > 0 && w <= kMaxImageSide && h <= kMaxImageSide && int64_t{w} * h <= kMaxImagePixels,
             std::string("warp: ") + what + " size " + std::to_string(w) + "x" + std::to_string(h) + " is out of range");
}

void check_roi(PixelRect roi) {
  GPEN_CHECK(roi.x >= 0 && roi.y >= 0 && roi.width >= 0 && roi.height >= 0 && roi.width <= kMaxImageSide &&
                 roi.height <= kMaxImageSide && roi.x <= kMaxImageSide && roi.y <= kMaxImageSide,
             "warp: destination rectangle is out of range");
}

}  // namespace

PixelRect warp_footprint(const AffineTransform& m, int src_w, int src_h, int dst_w, int dst_h) {
  check_src(src_w, src_h, "source");
  check_src(dst_w, dst_h, "destination");
  const SourceMap s = source_map(m);
  const PixelRect full{0, 0, dst_w, dst_h};
  // Far from the image, OpenCV's 32-bit position arithmetic overflows and wraps; only restrict
  // the rectangle where every position stays well inside the int range.
  const double lim = 1 << 20;
  for (int cx : {0, dst_w - 1})
    for (int cy : {0, dst_h - 1}) {
      const double a = std::abs(s.M[0] * cx) + std::abs(s.M[1] * cy + s.M[2]);
      const double b = std::abs(s.M[3] * cx) + std::abs(s.M[4] * cy + s.M[5]);
      if (!(a < lim && b < lim)) return full;
    }
  // A pixel is non-zero only when its 4x4 taps touch the image: source position in about
  // [-2, size + 1). Map the source box [-4, size + 3] (a margin of ~2 pixels over the rounding
  // to 1/32) forward and take its bounding box, padded.
  double x0 = 1e300, y0 = 1e300, x1 = -1e300, y1 = -1e300;
  for (double u : {-4.0, src_w + 3.0})
    for (double v : {-4.0, src_h + 3.0}) {
      double x, y;
      m.apply(u, v, &x, &y);
      x0 = std::min(x0, x);
      x1 = std::max(x1, x);
      y0 = std::min(y0, y);
      y1 = std::max(y1, y);
    }
  const double bx0 = std::max(std::floor(x0) - 2, 0.0), by0 = std::max(std::floor(y0) - 2, 0.0);
  const double bx1 = std::min(std::ceil(x1) + 2, dst_w - 1.0), by1 = std::min(std::ceil(y1) + 2, dst_h - 1.0);
  if (!(bx0 <= bx1 && by0 <= by1)) return {};
  return {static_cast<int>(bx0), static_cast<int>(by0), static_cast<int>(bx1 - bx0) + 1,
          static_cast<int>(by1 - by0) + 1};
}

namespace {

// The checks and the source map both element types share; the per-type inner loops differ.
template <class T>
void warp_roi_any(const T* src, int sw, int sh, const AffineTransform& m, PixelRect roi, T* dst, WarpInterp interp,
                  const uint8_t border[3] = nullptr) {
  static constexpr uint8_t kZero[3] = {0, 0, 0};
  GPEN_CHECK(src != nullptr, "warp: null source");
  check_src(sw, sh, "source");
  check_roi(roi);
  if (roi.empty()) return;
  const SourceMap s = source_map(m);
  const bool linear = interp == WarpInterp::linear;
  if constexpr (std::is_same_v<T, uint8_t>)
    linear ? linear_u8(src, sw, sh, s, roi, dst, border ? border : kZero) : cubic_u8(src, sw, sh, s, roi, dst);
  else
    linear ? linear_f32(src, sw, sh, s, roi, dst) : cubic_f32(src, sw, sh, s, roi, dst);
}

}  // namespace

void warp_affine_roi(const uint8_t* src, int sw, int sh, const AffineTransform& m, PixelRect roi, uint8_t* dst,
                     WarpInterp interp) {
  warp_roi_any(src, sw, sh, m, roi, dst, interp);
}

void warp_affine_roi(const float* src, int sw, int sh, const AffineTransform& m, PixelRect roi, float* dst,
                     WarpInterp interp) {
  warp_roi_any(src, sw, sh, m, roi, dst, interp);
}

void warp_affine_roi(const double* src, int sw, int sh, int channels, const AffineTransform& m, PixelRect roi,
                     double* dst) {
  GPEN_CHECK(src != nullptr, "warp: null source");
  GPEN_CHECK(channels == 1 || channels == 3, "warp: float64 images have 1 or 3 channels");
  check_src(sw, sh, "source");
  check_roi(roi);
  if (roi.empty()) return;
  warp_detail::linear_f64(src, sw, sh, channels, source_map(m), roi, dst);
}

Image warp_affine(ImageView src, const AffineTransform& m, int dst_w, int dst_h, WarpInterp interp) {
  GPEN_CHECK(src.width > 0 && src.height > 0 && src.bgr.size() == src.pixels() * 3, "warp: empty or malformed image");
  const PixelRect fp = warp_footprint(m, src.width, src.height, dst_w, dst_h);
  Image out;
  out.width = dst_w;
  out.height = dst_h;
  out.bgr.assign(out.pixels() * 3, 0);
  if (fp.empty()) return out;
  std::vector<uint8_t> part(static_cast<size_t>(fp.width) * static_cast<size_t>(fp.height) * 3);
  warp_affine_roi(src.bgr.data(), src.width, src.height, m, fp, part.data(), interp);
  const size_t row = static_cast<size_t>(fp.width) * 3;
  for (int r = 0; r < fp.height; ++r)
    std::copy_n(part.data() + static_cast<size_t>(r) * row, row,
                out.bgr.data() + (static_cast<size_t>(fp.y + r) * static_cast<size_t>(dst_w) + static_cast<size_t>(fp.x)) * 3);
  return out;
}

Image warp_affine_linear(ImageView src, const AffineTransform& m, int dst_w, int dst_h,
                         const std::array<uint8_t, 3>& border) {
  GPEN_CHECK(src.width > 0 && src.height > 0 && src.bgr.size() == src.pixels() * 3, "warp: empty or malformed image");
  const PixelRect fp = warp_footprint(m, src.width, src.height, dst_w, dst_h);
  Image out;
  out.width = dst_w;
  out.height = dst_h;
  out.bgr.resize(out.pixels() * 3);
  for (size_t i = 0; i < out.pixels(); ++i) std::copy(border.begin(), border.end(), out.bgr.begin() + static_cast<std::ptrdiff_t>(i * 3));
  if (fp.empty()) return out;
  std::vector<uint8_t> part(static_cast<size_t>(fp.width) * static_cast<size_t>(fp.height) * 3);
  warp_roi_any(src.bgr.data(), src.width, src.height, m, fp, part.data(), WarpInterp::linear, border.data());
  const size_t row = static_cast<size_t>(fp.width) * 3;
  for (int r = 0; r < fp.height; ++r)
    std::copy_n(part.data() + static_cast<size_t>(r) * row, row,
                out.bgr.data() + (static_cast<size_t>(fp.y + r) * static_cast<size_t>(dst_w) + static_cast<size_t>(fp.x)) * 3);
  return out;
}

std::vector<float> warp_affine(const float* src, int src_w, int src_h, const AffineTransform& m, int dst_w, int dst_h,
                               WarpInterp interp) {
  GPEN_CHECK(src != nullptr, "warp: null source");
  const PixelRect fp = warp_footprint(m, src_w, src_h, dst_w, dst_h);
  std::vector<float> out(static_cast<size_t>(dst_w) * static_cast<size_t>(dst_h), 0.0f);
  if (fp.empty()) return out;
  std::vector<float> part(static_cast<size_t>(fp.width) * static_cast<size_t>(fp.height));
  warp_affine_roi(src, src_w, src_h, m, fp, part.data(), interp);
  for (int r = 0; r < fp.height; ++r)
    std::copy_n(part.data() + static_cast<size_t>(r) * static_cast<size_t>(fp.width), static_cast<size_t>(fp.width),
                out.data() + static_cast<size_t>(fp.y + r) * static_cast<size_t>(dst_w) + static_cast<size_t>(fp.x));
  return out;
}

}  // namespace gpen
