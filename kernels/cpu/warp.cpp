// Bilinear and bicubic affine warps, bit-exact with cv2.warpAffine and a constant 0 border
// (OpenCV's WarpAffineInvoker + remapBilinear / remapBicubic, see warp.h for the arithmetic).
#include "kernels/cpu/warp.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <cmath>
#include <string>

#include "engine/core/error.h"

#if defined(__SSE4_1__)
#include <immintrin.h>
#endif

// OpenCV sums the float taps with separate multiplies and adds (its remap is baseline SSE2 code);
// contracting them into fused multiply-adds would change the last bit.
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen {

namespace {

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

// cv::interpolateCubic, float arithmetic in OpenCV's order.
void cubic_coeffs(float x, float* c) {
  const float A = -0.75f;
  c[0] = ((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A;
  c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
  c[2] = ((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = 1.f - c[0] - c[1] - c[2];
}

int16_t saturate_short(long v) { return static_cast<int16_t>(std::clamp<long>(v, SHRT_MIN, SHRT_MAX)); }

// initInterTab2D: the outer product of the 1-D weights per cell; the fixed-point copy is
// corrected so that each cell sums to 1 << 15. OpenCV puts the correction on the largest or
// smallest weight among rows/columns K/2 and K/2 + 1 of the cell's flat K x K block; for K = 2
// that window runs into the next (still zero) cell, which only matters for cell (0, 0), whose
// 32768 saturates to 32767. Replicated literally on a zero-initialised flat buffer.
template <int K>
void build_table(const float (*tab1)[K], float* tf, int16_t* ti) {
  for (int i = 0; i < kTabSize; ++i) {
    for (int j = 0; j < kTabSize; ++j) {
      float* f = tf + (i * kTabSize + j) * K * K;
      int16_t* t = ti + (i * kTabSize + j) * K * K;
      int isum = 0;
      for (int k1 = 0; k1 < K; ++k1) {
        const float vy = tab1[i][k1];
        for (int k2 = 0; k2 < K; ++k2) {
          const float v = vy * tab1[j][k2];
          f[k1 * K + k2] = v;
          t[k1 * K + k2] = saturate_short(std::lrintf(v * static_cast<float>(kCoefScale)));
          isum += t[k1 * K + k2];
        }
      }
      if (isum != kCoefScale) {
        const int diff = isum - kCoefScale;
        const int h = K / 2;
        int Mk1 = h, Mk2 = h, mk1 = h, mk2 = h;
        for (int k1 = h; k1 < h + 2; ++k1)
          for (int k2 = h; k2 < h + 2; ++k2) {
            if (t[k1 * K + k2] < t[mk1 * K + mk2]) {
              mk1 = k1;
              mk2 = k2;
            } else if (t[k1 * K + k2] > t[Mk1 * K + Mk2]) {
              Mk1 = k1;
              Mk2 = k2;
            }
          }
        if (diff < 0)
          t[Mk1 * K + Mk2] = static_cast<int16_t>(t[Mk1 * K + Mk2] - diff);
        else
          t[mk1 * K + mk2] = static_cast<int16_t>(t[mk1 * K + mk2] - diff);
      }
    }
  }
}

std::unique_ptr<Tables> build_tables() {
  auto t = std::make_unique<Tables>();
  const float scale = 1.f / kTabSize;
  float lin1[kTabSize][2], cub1[kTabSize][4];
  for (int i = 0; i < kTabSize; ++i) {
    const float x = static_cast<float>(i) * scale;
    lin1[i][0] = 1.f - x;
    lin1[i][1] = x;
    cubic_coeffs(x, cub1[i]);
  }
  constexpr size_t kCells = kTabSize * kTabSize;
  constexpr size_t kSlack = 16;  // the K = 2 correction window may read past the last cell
  std::vector<float> f(kCells * 16 + kSlack, 0.0f);
  std::vector<int16_t> i(kCells * 16 + kSlack, 0);
  build_table<2>(lin1, f.data(), i.data());
  std::copy_n(f.data(), kCells * 4, &t->lf[0][0]);
  std::copy_n(i.data(), kCells * 4, &t->li[0][0]);
  std::fill(f.begin(), f.end(), 0.0f);
  std::fill(i.begin(), i.end(), int16_t{0});
  build_table<4>(cub1, f.data(), i.data());
  std::copy_n(f.data(), kCells * 16, &t->cf[0][0]);
  std::copy_n(i.data(), kCells * 16, &t->ci[0][0]);
  return t;
}

const Tables& tables() {
  static const std::unique_ptr<Tables> t = build_tables();
  return *t;
}

// cvRound(double) on x86-64 (cvtsd2si): round half to even; NaN and out-of-range give INT_MIN.
int32_t cv_round(double v) {
  const double r = std::nearbyint(v);
  if (!(r >= -2147483648.0 && r <= 2147483647.0)) return INT32_MIN;
  return static_cast<int32_t>(r);
}

// OpenCV adds these in int and relies on wrap-around; unsigned arithmetic gives the same bits
// without undefined behaviour.
int32_t wrap_add(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

// Destination -> source matrix (cv2.warpAffine inverts the given matrix exactly like invert()).
struct SourceMap {
  double M[6];
};

SourceMap source_map(const AffineTransform& m) {
  const AffineTransform inv = invert(m);  // throws on singular / non-finite
  SourceMap s{};
  std::copy(inv.m.begin(), inv.m.end(), s.M);
  return s;
}

// Per-column increments (adelta, bdelta of WarpAffineInvoker) for destination columns x0..x0+n-1.
void column_deltas(const SourceMap& s, int x0, int n, std::vector<int32_t>& ad, std::vector<int32_t>& bd) {
  ad.resize(static_cast<size_t>(n));
  bd.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const int x = x0 + i;
    ad[static_cast<size_t>(i)] = cv_round(s.M[0] * x * (1 << kAbBits));
    bd[static_cast<size_t>(i)] = cv_round(s.M[3] * x * (1 << kAbBits));
  }
}

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

void check_src(int w, int h, const char* what) {
  GPEN_CHECK(w > 0 && h > 0 && w <= kMaxImageSide && h <= kMaxImageSide && int64_t{w} * h <= kMaxImagePixels,
             std::string("warp: ") + what + " size " + std::to_string(w) + "x" + std::to_string(h) + " is out of range");
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

uint8_t cast_u8(int sum) {
  return static_cast<uint8_t>(std::clamp((sum + (1 << (kCoefBits - 1))) >> kCoefBits, 0, 255));
}

// remapBilinear on 8-bit BGR: taps (ix, iy) .. (ix + 1, iy + 1), integer sums (order-free).
void linear_u8(const uint8_t* src, int sw, int sh, const SourceMap& s, PixelRect roi, uint8_t* dst) {
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
      d[0] = d[1] = d[2] = 0;
      return;
    }
    const int x0 = tap_index(t.ix, sw), x1 = tap_index(t.ix + 1, sw);
    const int y0 = tap_index(t.iy, sh), y1 = tap_index(t.iy + 1, sh);
    const uint8_t zero[3] = {0, 0, 0};
    auto px = [&](int x, int y) { return x >= 0 && y >= 0 ? src + static_cast<size_t>(y) * stride + static_cast<size_t>(x) * 3 : zero; };
    const uint8_t *v0 = px(x0, y0), *v1 = px(x1, y0), *v2 = px(x0, y1), *v3 = px(x1, y1);
    for (int c = 0; c < 3; ++c) d[c] = cast_u8(v0[c] * w[0] + v1[c] * w[1] + v2[c] * w[2] + v3[c] * w[3]);
  });
}

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

}  // namespace

void warp_affine_roi(const uint8_t* src, int sw, int sh, const AffineTransform& m, PixelRect roi, uint8_t* dst,
                     WarpInterp interp) {
  GPEN_CHECK(src != nullptr, "warp: null source");
  check_src(sw, sh, "source");
  check_roi(roi);
  if (roi.empty()) return;
  const SourceMap s = source_map(m);
  if (interp == WarpInterp::linear)
    linear_u8(src, sw, sh, s, roi, dst);
  else
    cubic_u8(src, sw, sh, s, roi, dst);
}

void warp_affine_roi(const float* src, int sw, int sh, const AffineTransform& m, PixelRect roi, float* dst,
                     WarpInterp interp) {
  GPEN_CHECK(src != nullptr, "warp: null source");
  check_src(sw, sh, "source");
  check_roi(roi);
  if (roi.empty()) return;
  const SourceMap s = source_map(m);
  if (interp == WarpInterp::linear)
    linear_f32(src, sw, sh, s, roi, dst);
  else
    cubic_f32(src, sw, sh, s, roi, dst);
}

Image warp_affine(const Image& src, const AffineTransform& m, int dst_w, int dst_h, WarpInterp interp) {
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
