// cv2.resize with INTER_LANCZOS4 (see resize_lanczos.h).
#include "engine/photo/resize_lanczos.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

#include "engine/core/error.h"

// OpenCV's float and double steps, each rounded, none fused.
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen {

namespace {

constexpr int kCoefScale = 2048;  // INTER_RESIZE_COEF_SCALE

// interpolateLanczos4: the 8 weights of a fractional offset x, normalised in float.
void lanczos4(float x, float* c) {
  static const double s45 = 0.70710678118654752440084436210485;
  static const double cs[8][2] = {{1, 0}, {-s45, -s45}, {0, 1}, {s45, -s45}, {-1, 0}, {s45, s45}, {0, -1}, {-s45, s45}};
  if (x < FLT_EPSILON) {
    std::fill(c, c + 8, 0.0f);
    c[3] = 1.0f;
    return;
  }
  float sum = 0;
  const double y0 = -(x + 3) * M_PI * 0.25, s0 = std::sin(y0), c0 = std::cos(y0);
  for (int i = 0; i < 8; ++i) {
    const double y = -(x + 3 - i) * M_PI * 0.25;
    c[i] = static_cast<float>((cs[i][0] * s0 + cs[i][1] * c0) / (y * y));
    sum += c[i];
  }
  sum = 1.0f / sum;
  for (int i = 0; i < 8; ++i) c[i] *= sum;
}

// Per destination index: the first of the 8 source taps (before clamping) and their weights.
struct Taps {
  std::vector<int> first;
  std::vector<short> w;  // 8 per index
};

Taps taps(int src, int dst) {
  Taps t;
  t.first.resize(static_cast<size_t>(dst));
  t.w.resize(static_cast<size_t>(dst) * 8);
  const double scale = 1.0 / (static_cast<double>(dst) / src);
  for (int d = 0; d < dst; ++d) {
    float f = static_cast<float>((d + 0.5) * scale - 0.5);
    const int s = static_cast<int>(std::floor(f));
    f -= static_cast<float>(s);
    float c[8];
    lanczos4(f, c);
    t.first[static_cast<size_t>(d)] = s - 3;
    for (int k = 0; k < 8; ++k)
      t.w[static_cast<size_t>(d) * 8 + static_cast<size_t>(k)] =
          static_cast<short>(std::clamp(static_cast<int>(std::lrint(c[k] * kCoefScale)), -32768, 32767));
  }
  return t;
}

}  // namespace

Image resize_lanczos4(ImageView src, int dst_w, int dst_h) {
  GPEN_CHECK(src.width > 0 && src.height > 0 && src.bgr.size() == src.pixels() * 3, "resize: empty or malformed image");
  GPEN_CHECK(dst_w > 0 && dst_h > 0 && dst_w <= kMaxImageSide && dst_h <= kMaxImageSide &&
                 int64_t{dst_w} * dst_h <= kMaxImagePixels,
             "resize: destination size " + std::to_string(dst_w) + "x" + std::to_string(dst_h) + " is out of range");
  const int W = src.width, H = src.height;
  const Taps tx = taps(W, dst_w), ty = taps(H, dst_h);
  // The horizontal pass of every source row, in int.
  std::vector<int> rows(static_cast<size_t>(H) * static_cast<size_t>(dst_w) * 3);
#pragma omp parallel for schedule(static)
  for (int y = 0; y < H; ++y) {
    const uint8_t* s = src.bgr.data() + static_cast<size_t>(y) * W * 3;
    int* d = rows.data() + static_cast<size_t>(y) * dst_w * 3;
    for (int x = 0; x < dst_w; ++x) {
      const short* w = tx.w.data() + static_cast<size_t>(x) * 8;
      for (int c = 0; c < 3; ++c) {
        int v = 0;
        for (int k = 0; k < 8; ++k) {
          const int sx = std::clamp(tx.first[static_cast<size_t>(x)] + k, 0, W - 1);
          v += s[static_cast<size_t>(sx) * 3 + static_cast<size_t>(c)] * w[k];
        }
        d[static_cast<size_t>(x) * 3 + static_cast<size_t>(c)] = v;
      }
    }
  }
  Image out;
  out.width = dst_w;
  out.height = dst_h;
  out.bgr.resize(out.pixels() * 3);
  const size_t row = static_cast<size_t>(dst_w) * 3;
#pragma omp parallel for schedule(static)
  for (int y = 0; y < dst_h; ++y) {
    const short* w = ty.w.data() + static_cast<size_t>(y) * 8;
    const int* r[8];
    for (int k = 0; k < 8; ++k)
      r[k] = rows.data() + static_cast<size_t>(std::clamp(ty.first[static_cast<size_t>(y)] + k, 0, H - 1)) * row;
    uint8_t* d = out.bgr.data() + static_cast<size_t>(y) * row;
    for (size_t i = 0; i < row; ++i) {
      int s = r[0][i] * w[0];
      for (int k = 1; k < 8; ++k) s += r[k][i] * w[k];
      d[i] = static_cast<uint8_t>(std::clamp((s + (1 << 21)) >> 22, 0, 255));
    }
  }
  return out;
}

}  // namespace gpen
