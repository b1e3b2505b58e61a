// The paste-back steps on host memory (kernels/cpu/paste.h), each with OpenCV's rounding.
#include "kernels/cpu/paste.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/warp.h"

// The float steps below follow OpenCV's operation order exactly: fused multiply-adds only where
// OpenCV's AVX2 code has them (written as std::fma), never introduced by the compiler.
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen::cpu {

namespace {

// saturate_cast<uchar>(float): round half to even, then clamp. Callers pass finite values; the
// clamp comes first so that the conversion to int is always defined.
inline uint8_t round_sat_u8(float v) {
  const int i = static_cast<int>(std::nearbyint(std::clamp(v, -1.0f, 256.0f)));
  return static_cast<uint8_t>(std::clamp(i, 0, 255));
}

}  // namespace

void smooth_face(const uint8_t* in, uint8_t* out, int w, int h) {
  const size_t row = static_cast<size_t>(w) * 3;
  // OpenCV sums the power-of-two weights in float exactly and rounds half to even: in integers,
  // q = sum / 16 rounded to nearest, ties to even.
  auto round16 = [](int sum) {
    const int q = sum >> 4, r = sum & 15;
    return static_cast<uint8_t>(q + ((r + (q & 1)) > 8));
  };
  for (int y = 0; y < h; ++y) {
    const uint8_t* r0 = in + static_cast<size_t>(reflect101(y - 1, h)) * row;
    const uint8_t* r1 = in + static_cast<size_t>(y) * row;
    const uint8_t* r2 = in + static_cast<size_t>(reflect101(y + 1, h)) * row;
    uint8_t* d = out + static_cast<size_t>(y) * row;
    // Vertical [1, 2, 1] first (exact in int), then horizontal on the column sums.
    auto col = [&](size_t j) { return r0[j] + 2 * r1[j] + r2[j]; };
    for (size_t j = 3; j + 3 < row; ++j) d[j] = round16(col(j - 3) + 2 * col(j) + col(j + 3));
    for (int x : {0, w - 1}) {
      const size_t xl = static_cast<size_t>(reflect101(x - 1, w)) * 3, xm = static_cast<size_t>(x) * 3,
                   xr = static_cast<size_t>(reflect101(x + 1, w)) * 3;
      for (size_t c = 0; c < 3; ++c) d[xm + c] = round16(col(xl + c) + 2 * col(xm + c) + col(xr + c));
    }
  }
}

void blend_faces(const uint8_t* restored, const uint8_t* crop, double alpha, uint8_t* out, size_t bytes) {
  const float a = static_cast<float>(alpha), b = static_cast<float>(1.0 - alpha);
  for (size_t i = 0; i < bytes; ++i)
    out[i] = round_sat_u8(std::fma(static_cast<float>(restored[i]), a, static_cast<float>(crop[i]) * b));
}

void canvas_clear(float* canvas_mask, uint8_t* canvas_faces, int w, int h) {
  const size_t n = static_cast<size_t>(w) * static_cast<size_t>(h);
  std::fill_n(canvas_mask, n, 0.0f);
  std::fill_n(canvas_faces, n * 3, uint8_t{0});
}

void canvas_add(const uint8_t* face, const float* mask, int face_w, int face_h, const AffineTransform& crop_to_image,
                float* canvas_mask, uint8_t* canvas_faces, int w, int h) {
  const PixelRect fp = warp_footprint(crop_to_image, face_w, face_h, w, h);
  if (fp.empty()) return;
  const size_t n = static_cast<size_t>(fp.width) * static_cast<size_t>(fp.height);
  std::vector<float> wm(n);
  std::vector<uint8_t> wf(n * 3);
  warp_affine_roi(mask, face_w, face_h, crop_to_image, fp, wm.data(), kGpenWarp);
  warp_affine_roi(face, face_w, face_h, crop_to_image, fp, wf.data(), kGpenWarp);
  for (int r = 0; r < fp.height; ++r) {
    const size_t row = static_cast<size_t>(fp.y + r) * static_cast<size_t>(w) + static_cast<size_t>(fp.x);
    float* fm = canvas_mask + row;
    uint8_t* ff = canvas_faces + row * 3;
    const float* m = wm.data() + static_cast<size_t>(r) * static_cast<size_t>(fp.width);
    const uint8_t* f = wf.data() + static_cast<size_t>(r) * static_cast<size_t>(fp.width) * 3;
    for (int x = 0; x < fp.width; ++x) {
      // numpy: mask = tmp_mask - full_mask; take where mask > 0.
      if (m[x] - fm[x] > 0.0f) {
        fm[x] = m[x];
        std::copy_n(f + x * 3, 3, ff + x * 3);
      }
    }
  }
}

void composite(const uint8_t* original, const float* canvas_mask, const uint8_t* canvas_faces, uint8_t* out, int w,
               int h) {
  const int64_t n = int64_t{w} * h;
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    const float m = canvas_mask[i];
    const uint8_t* o = original + i * 3;
    uint8_t* d = out + i * 3;
    if (m == 0.0f) {  // img * 1 + 0 * 0: the photo pixel exactly
      d[0] = o[0];
      d[1] = o[1];
      d[2] = o[2];
      continue;
    }
    const uint8_t* f = canvas_faces + i * 3;
    const float keep = 1.0f - m;
    for (int c = 0; c < 3; ++c) {
      const float v = static_cast<float>(o[c]) * keep + static_cast<float>(f[c]) * m;
      d[c] = round_sat_u8(std::fabs(v));
    }
  }
}

}  // namespace gpen::cpu
