// Bilinear remaps (OpenCV's remapBilinear) of 8-bit BGR (constant border of any value) and float
// images (constant 0 border).
#include <algorithm>
#include <cstring>

#if defined(__SSE4_1__)
#include <immintrin.h>
#endif

#include "kernels/cpu/warp_internal.h"
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen::warp_detail {

// remapBilinear on 8-bit BGR: taps (ix, iy) .. (ix + 1, iy + 1), integer sums (order-free).
void linear_u8(const uint8_t* src, int sw, int sh, const SourceMap& s, PixelRect roi, uint8_t* dst,
               const uint8_t border[3]) {
  const int16_t(*tab)[4] = tables().li;
  const size_t stride = static_cast<size_t>(sw) * 3;
  const unsigned width1 = static_cast<unsigned>(std::max(sw - 1, 0)), height1 = static_cast<unsigned>(std::max(sh - 1, 0));
  warp_rows(s, roi, 3, dst, [&](Tap t, uint8_t* d) {
    const int16_t* w = tab[t.idx];
    if (static_cast<unsigned>(t.ix) < width1 && static_cast<unsigned>(t.iy) < height1) {
      const uint8_t* S = src + static_cast<size_t>(t.iy) * stride + static_cast<size_t>(t.ix) * 3;
#if defined(__SSE4_1__)
      // The same integer sums four lanes at a time: (B0 B1 G0 G1 R0 R1) x (w0 w1 ...) per row.
      // Two pixels are 6 bytes; assemble them in a register (an 8-byte load could run past the
      // image, a copy through memory stalls store forwarding).
      auto load6 = [](const uint8_t* p) {
        uint32_t lo;
        uint16_t hi;
        std::memcpy(&lo, p, 4);
        std::memcpy(&hi, p + 4, 2);
        return static_cast<uint64_t>(lo) | static_cast<uint64_t>(hi) << 32;
      };
      const uint64_t a = load6(S), b = load6(S + stride);
      const __m128i order = _mm_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
      const __m128i p0 = _mm_shuffle_epi8(_mm_cvtsi64_si128(static_cast<long long>(a)), order);
      const __m128i p1 = _mm_shuffle_epi8(_mm_cvtsi64_si128(static_cast<long long>(b)), order);
      const __m128i w01 = _mm_set1_epi32(static_cast<int>(static_cast<uint16_t>(w[0]) | static_cast<uint32_t>(static_cast<uint16_t>(w[1])) << 16));
      const __m128i w23 = _mm_set1_epi32(static_cast<int>(static_cast<uint16_t>(w[2]) | static_cast<uint32_t>(static_cast<uint16_t>(w[3])) << 16));
      __m128i sum = _mm_add_epi32(_mm_madd_epi16(p0, w01), _mm_madd_epi16(p1, w23));
      sum = _mm_srai_epi32(_mm_add_epi32(sum, _mm_set1_epi32(1 << (kCoefBits - 1))), kCoefBits);
      const __m128i packed = _mm_packus_epi16(_mm_packs_epi32(sum, sum), sum);
      const uint32_t bgr = static_cast<uint32_t>(_mm_cvtsi128_si32(packed));
      d[0] = static_cast<uint8_t>(bgr);
      d[1] = static_cast<uint8_t>(bgr >> 8);
      d[2] = static_cast<uint8_t>(bgr >> 16);
#else
      for (int c = 0; c < 3; ++c)
        d[c] = cast_u8(S[c] * w[0] + S[c + 3] * w[1] + S[stride + c] * w[2] + S[stride + c + 3] * w[3]);
#endif
      return;
    }
    if (t.ix >= sw || t.ix + 1 < 0 || t.iy >= sh || t.iy + 1 < 0) {
      d[0] = border[0];
      d[1] = border[1];
      d[2] = border[2];
      return;
    }
    const int x0 = tap_index(t.ix, sw), x1 = tap_index(t.ix + 1, sw);
    const int y0 = tap_index(t.iy, sh), y1 = tap_index(t.iy + 1, sh);
    auto px = [&](int x, int y) { return x >= 0 && y >= 0 ? src + static_cast<size_t>(y) * stride + static_cast<size_t>(x) * 3 : border; };
    const uint8_t *v0 = px(x0, y0), *v1 = px(x1, y0), *v2 = px(x0, y1), *v3 = px(x1, y1);
    for (int c = 0; c < 3; ++c) d[c] = cast_u8(v0[c] * w[0] + v1[c] * w[1] + v2[c] * w[2] + v3[c] * w[3]);
  });
}

// remapBilinear on float: ((v0 w0 + v1 w1) + v2 w2) + v3 w3, outside taps valued 0.
void linear_f32(const float* src, int sw, int sh, const SourceMap& s, PixelRect roi, float* dst) {
  const float(*tab)[4] = tables().lf;
  const size_t stride = static_cast<size_t>(sw);
  const unsigned width1 = static_cast<unsigned>(std::max(sw - 1, 0)), height1 = static_cast<unsigned>(std::max(sh - 1, 0));
  warp_rows(s, roi, 1, dst, [&](Tap t, float* d) {
    const float* w = tab[t.idx];
    if (static_cast<unsigned>(t.ix) < width1 && static_cast<unsigned>(t.iy) < height1) {
      const float* S = src + static_cast<size_t>(t.iy) * stride + static_cast<size_t>(t.ix);
      *d = S[0] * w[0] + S[1] * w[1] + S[stride] * w[2] + S[stride + 1] * w[3];
      return;
    }
    if (t.ix >= sw || t.ix + 1 < 0 || t.iy >= sh || t.iy + 1 < 0) {
      *d = 0.0f;
      return;
    }
    const int x0 = tap_index(t.ix, sw), x1 = tap_index(t.ix + 1, sw);
    const int y0 = tap_index(t.iy, sh), y1 = tap_index(t.iy + 1, sh);
    auto px = [&](int x, int y) { return x >= 0 && y >= 0 ? src[static_cast<size_t>(y) * stride + static_cast<size_t>(x)] : 0.0f; };
    *d = px(x0, y0) * w[0] + px(x1, y0) * w[1] + px(x0, y1) * w[2] + px(x1, y1) * w[3];
  });
}

// remapBilinear on float64 (1 or 3 channels): the float weights widened, the same order.
void linear_f64(const double* src, int sw, int sh, int cn, const SourceMap& s, PixelRect roi, double* dst) {
  const float(*tab)[4] = tables().lf;
  const size_t c3 = static_cast<size_t>(cn), stride = static_cast<size_t>(sw) * c3;
  const unsigned width1 = static_cast<unsigned>(std::max(sw - 1, 0)), height1 = static_cast<unsigned>(std::max(sh - 1, 0));
  static constexpr double kZero[3] = {0.0, 0.0, 0.0};
  warp_rows(s, roi, cn, dst, [&](Tap t, double* d) {
    const float* w = tab[t.idx];
    const double w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
    if (static_cast<unsigned>(t.ix) < width1 && static_cast<unsigned>(t.iy) < height1) {
      const double* S = src + static_cast<size_t>(t.iy) * stride + static_cast<size_t>(t.ix) * c3;
      for (size_t c = 0; c < c3; ++c) d[c] = S[c] * w0 + S[c + c3] * w1 + S[stride + c] * w2 + S[stride + c + c3] * w3;
      return;
    }
    if (t.ix >= sw || t.ix + 1 < 0 || t.iy >= sh || t.iy + 1 < 0) {
      for (size_t c = 0; c < c3; ++c) d[c] = 0.0;
      return;
    }
    const int x0 = tap_index(t.ix, sw), x1 = tap_index(t.ix + 1, sw);
    const int y0 = tap_index(t.iy, sh), y1 = tap_index(t.iy + 1, sh);
    auto px = [&](int x, int y) {
      return x >= 0 && y >= 0 ? src + static_cast<size_t>(y) * stride + static_cast<size_t>(x) * c3 : kZero;
    };
    const double *v0 = px(x0, y0), *v1 = px(x1, y0), *v2 = px(x0, y1), *v3 = px(x1, y1);
    for (size_t c = 0; c < c3; ++c) d[c] = v0[c] * w0 + v1[c] * w1 + v2[c] * w2 + v3[c] * w3;
  });
}

}  // namespace gpen::warp_detail
