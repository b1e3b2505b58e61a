#pragma once
// Internal to the CPU warps (kernels/cpu/warp*.cpp): OpenCV's fixed-point constants, the weight
// tables (warp_tables.cpp), the destination -> source position arithmetic and the row loop the
// four remaps (warp_linear.cpp, warp_cubic.cpp) run their pixel kernels in.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/warp.h"

// The position arithmetic below must round as OpenCV's does (see engine/core/no_fp_contract.h);
// every file including this header also includes that one last.
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen::warp_detail {

constexpr int kInterBits = 5;                 // INTER_BITS
constexpr int kTabSize = 1 << kInterBits;     // INTER_TAB_SIZE: 1/32 pixel cells
constexpr int kAbBits = 10;                   // AB_BITS: positions rounded to 1/1024 first
constexpr int kRoundDelta = (1 << kAbBits) / kTabSize / 2;
constexpr int kCoefBits = 15;                 // INTER_REMAP_COEF_BITS
constexpr int kCoefScale = 1 << kCoefBits;

// Per 1/32 x 1/32 cell, the weights of the 2x2 (linear) or 4x4 (cubic) taps, row-major.
struct Tables {
  float lf[kTabSize * kTabSize][4];
  int16_t li[kTabSize * kTabSize][4];
  float cf[kTabSize * kTabSize][16];
  int16_t ci[kTabSize * kTabSize][16];
};

// The tables, built once on first use.
const Tables& tables();

inline int16_t saturate_short(long v) { return static_cast<int16_t>(std::clamp<long>(v, SHRT_MIN, SHRT_MAX)); }

// cvRound(double) on x86-64 (cvtsd2si): round half to even; NaN and out-of-range give INT_MIN.
inline int32_t cv_round(double v) {
  const double r = std::nearbyint(v);
  if (!(r >= -2147483648.0 && r <= 2147483647.0)) return INT32_MIN;
  return static_cast<int32_t>(r);
}

// OpenCV adds these in int and relies on wrap-around; unsigned arithmetic gives the same bits
// without undefined behaviour.
inline int32_t wrap_add(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

// Destination -> source matrix (cv2.warpAffine inverts the given matrix exactly like invert()).
struct SourceMap {
  double M[6];
};

SourceMap source_map(const AffineTransform& m);
// Per-column increments (adelta, bdelta of WarpAffineInvoker) for destination columns x0..x0+n-1.
void column_deltas(const SourceMap& s, int x0, int n, std::vector<int32_t>& ad, std::vector<int32_t>& bd);

// Integer source position (floor, in pixels) and sub-pixel table index of one destination pixel.
struct Tap {
  int ix, iy, idx;
};

inline Tap source_tap(int32_t X0, int32_t Y0, int32_t ad, int32_t bd) {
  const int32_t X = wrap_add(X0, ad) >> (kAbBits - kInterBits);
  const int32_t Y = wrap_add(Y0, bd) >> (kAbBits - kInterBits);
  const int ix = saturate_short(X >> kInterBits), iy = saturate_short(Y >> kInterBits);
  return {ix, iy, (Y & (kTabSize - 1)) * kTabSize + (X & (kTabSize - 1))};
}

template <class Pixel, class Kernel>
void warp_rows(const SourceMap& s, PixelRect roi, int channels, Pixel* dst, Kernel kernel) {
  std::vector<int32_t> ad, bd;
  column_deltas(s, roi.x, roi.width, ad, bd);
  const int64_t work = int64_t{roi.width} * roi.height;
#pragma omp parallel for schedule(static) if (work > 32768)
  for (int r = 0; r < roi.height; ++r) {
    const int y = roi.y + r;
    const int32_t X0 = wrap_add(cv_round((s.M[1] * y + s.M[2]) * (1 << kAbBits)), kRoundDelta);
    const int32_t Y0 = wrap_add(cv_round((s.M[4] * y + s.M[5]) * (1 << kAbBits)), kRoundDelta);
    Pixel* out = dst + static_cast<size_t>(r) * static_cast<size_t>(roi.width) * static_cast<size_t>(channels);
    for (int c = 0; c < roi.width; ++c)
      kernel(source_tap(X0, Y0, ad[static_cast<size_t>(c)], bd[static_cast<size_t>(c)]),
             out + static_cast<size_t>(c) * static_cast<size_t>(channels));
  }
}

// Border taps of remapBicubic with BORDER_CONSTANT: index or -1.
inline int tap_index(int v, int n) { return v >= 0 && v < n ? v : -1; }

inline uint8_t cast_u8(int sum) {
  return static_cast<uint8_t>(std::clamp((sum + (1 << (kCoefBits - 1))) >> kCoefBits, 0, 255));
}

// The remaps of the pixels of `roi` (warp_linear.cpp, warp_cubic.cpp).
// `border`: the BGR value of taps outside the source (BORDER_CONSTANT's borderValue).
void linear_u8(const uint8_t* src, int sw, int sh, const SourceMap& s, PixelRect roi, uint8_t* dst,
               const uint8_t border[3]);
void cubic_u8(const uint8_t* src, int sw, int sh, const SourceMap& s, PixelRect roi, uint8_t* dst);
void linear_f32(const float* src, int sw, int sh, const SourceMap& s, PixelRect roi, float* dst);
void cubic_f32(const float* src, int sw, int sh, const SourceMap& s, PixelRect roi, float* dst);
void linear_f64(const double* src, int sw, int sh, int channels, const SourceMap& s, PixelRect roi, double* dst);

}  // namespace gpen::warp_detail
