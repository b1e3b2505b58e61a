// The weight tables of the warps: per 1/32 x 1/32 sub-pixel cell the 2x2 bilinear and 4x4 bicubic
// (a = -0.75) weights, float and 15-bit fixed point, built as OpenCV's initInterTab2D does.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "kernels/cpu/warp_internal.h"
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen::warp_detail {

namespace {

// cv::interpolateCubic, float arithmetic in OpenCV's order.
void cubic_coeffs(float x, float* c) {
  const float A = -0.75f;
  c[0] = ((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A;
  c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
  c[2] = ((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = 1.f - c[0] - c[1] - c[2];
}

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

}  // namespace

const Tables& tables() {
  static const std::unique_ptr<Tables> t = build_tables();
  return *t;
}

}  // namespace gpen::warp_detail
