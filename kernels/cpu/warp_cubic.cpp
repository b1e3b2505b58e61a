// Bicubic remaps (OpenCV's remapBicubic, a = -0.75) of 8-bit BGR and float images, constant 0
// border.
#include <algorithm>

#include "kernels/cpu/warp_internal.h"
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen::warp_detail {

// remapBicubic on 8-bit BGR: taps (ix - 1, iy - 1) .. (ix + 2, iy + 2).
void cubic_u8(const uint8_t* src, int sw, int sh, const SourceMap& s, PixelRect roi, uint8_t* dst) {
  const int16_t(*tab)[16] = tables().ci;
  const size_t stride = static_cast<size_t>(sw) * 3;
  const unsigned width1 = static_cast<unsigned>(std::max(sw - 3, 0)), height1 = static_cast<unsigned>(std::max(sh - 3, 0));
  warp_rows(s, roi, 3, dst, [&](Tap t, uint8_t* d) {
    const int16_t* w = tab[t.idx];
    const int sx = t.ix - 1, sy = t.iy - 1;
    if (static_cast<unsigned>(sx) < width1 && static_cast<unsigned>(sy) < height1) {
      const uint8_t* S = src + static_cast<size_t>(sy) * stride + static_cast<size_t>(sx) * 3;
      int s0 = 0, s1 = 0, s2 = 0;
      for (int i = 0; i < 4; ++i, S += stride)
        for (int j = 0; j < 4; ++j) {
          const int wv = w[i * 4 + j];
          s0 += S[j * 3] * wv;
          s1 += S[j * 3 + 1] * wv;
          s2 += S[j * 3 + 2] * wv;
        }
      d[0] = cast_u8(s0);
      d[1] = cast_u8(s1);
      d[2] = cast_u8(s2);
      return;
    }
    if (sx >= sw || sx + 4 <= 0 || sy >= sh || sy + 4 <= 0) {
      d[0] = d[1] = d[2] = 0;
      return;
    }
    // Taps outside the image hold the border value 0: they add nothing.
    int s0 = 0, s1 = 0, s2 = 0;
    for (int i = 0; i < 4; ++i) {
      const int yi = tap_index(sy + i, sh);
      if (yi < 0) continue;
      const uint8_t* S = src + static_cast<size_t>(yi) * stride;
      for (int j = 0; j < 4; ++j) {
        const int xj = tap_index(sx + j, sw);
        if (xj < 0) continue;
        const int wv = w[i * 4 + j];
        s0 += S[xj * 3] * wv;
        s1 += S[xj * 3 + 1] * wv;
        s2 += S[xj * 3 + 2] * wv;
      }
    }
    d[0] = cast_u8(s0);
    d[1] = cast_u8(s1);
    d[2] = cast_u8(s2);
  });
}

// remapBicubic on float: each row summed left to right, rows added in turn; on the border
// path, the border value times the unit weight, then each inside tap added in turn.
void cubic_f32(const float* src, int sw, int sh, const SourceMap& s, PixelRect roi, float* dst) {
  const float(*tab)[16] = tables().cf;
  const size_t stride = static_cast<size_t>(sw);
  const unsigned width1 = static_cast<unsigned>(std::max(sw - 3, 0)), height1 = static_cast<unsigned>(std::max(sh - 3, 0));
  warp_rows(s, roi, 1, dst, [&](Tap t, float* d) {
    const float* w = tab[t.idx];
    const int sx = t.ix - 1, sy = t.iy - 1;
    if (static_cast<unsigned>(sx) < width1 && static_cast<unsigned>(sy) < height1) {
      const float* S = src + static_cast<size_t>(sy) * stride + static_cast<size_t>(sx);
      float sum = S[0] * w[0] + S[1] * w[1] + S[2] * w[2] + S[3] * w[3];
      S += stride;
      sum += S[0] * w[4] + S[1] * w[5] + S[2] * w[6] + S[3] * w[7];
      S += stride;
      sum += S[0] * w[8] + S[1] * w[9] + S[2] * w[10] + S[3] * w[11];
      S += stride;
      sum += S[0] * w[12] + S[1] * w[13] + S[2] * w[14] + S[3] * w[15];
      *d = sum;
      return;
    }
    if (sx >= sw || sx + 4 <= 0 || sy >= sh || sy + 4 <= 0) {
      *d = 0.0f;
      return;
    }
    float sum = 0.0f;
    for (int i = 0; i < 4; ++i) {
      const int yi = tap_index(sy + i, sh);
      if (yi < 0) continue;
      const float* S = src + static_cast<size_t>(yi) * stride;
      for (int j = 0; j < 4; ++j) {
        const int xj = tap_index(sx + j, sw);
        if (xj >= 0) sum += (S[xj] - 0.0f) * w[i * 4 + j];
      }
    }
    *d = sum;
  });
}

}  // namespace gpen::warp_detail
