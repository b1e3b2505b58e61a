// OpenCV's cv2.resize(INTER_LINEAR), float and 8-bit fixed point, bit-exact.
#include "kernels/cpu/image_resize.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/core/error.h"
#include "kernels/cpu/linear_taps.h"

// cv2.resize on x86-64 sums its taps with separate multiplies and adds; with -mfma GCC would fuse
// them and move a result by an ulp (and the CUDA twin, which never fuses, would disagree).
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen {

namespace {

// Source pixels are read as float: 8-bit ones convert exactly, so both sources give the same sums.
template <class T>
void resize_f32_any(const T* src, int sw, int sh, int cn, float* dst, int dw, int dh, double fx, double fy) {
  GPEN_CHECK(sw > 0 && sh > 0 && dw > 0 && dh > 0 && cn > 0, "resize: empty image");
  const std::vector<LinearTap> tx = linear_taps(sw, dw, fx > 0 ? fx : static_cast<double>(dw) / sw);
  const std::vector<LinearTap> ty = linear_taps(sh, dh, fy > 0 ? fy : static_cast<double>(dh) / sh);
  const size_t row = static_cast<size_t>(dw) * static_cast<size_t>(cn);
  // Horizontal pass of each needed source row, then the vertical blend, as OpenCV orders it.
  std::vector<float> h0(row), h1(row);
  int have0 = -1, have1 = -1;
  auto hpass = [&](int y, float* out) {
    const T* s = src + static_cast<size_t>(y) * static_cast<size_t>(sw) * static_cast<size_t>(cn);
    for (int x = 0; x < dw; ++x) {
      const LinearTap& t = tx[static_cast<size_t>(x)];
      for (int c = 0; c < cn; ++c)
        out[static_cast<size_t>(x) * cn + c] = static_cast<float>(s[static_cast<size_t>(t.i0) * cn + c]) * t.a0 +
                                               static_cast<float>(s[static_cast<size_t>(t.i1) * cn + c]) * t.a1;
    }
  };
  for (int y = 0; y < dh; ++y) {
    const LinearTap& t = ty[static_cast<size_t>(y)];
    if (have0 != t.i0) {
      if (have1 == t.i0) {
        std::swap(h0, h1);
        std::swap(have0, have1);
      } else {
        hpass(t.i0, h0.data());
        have0 = t.i0;
      }
    }
    if (have1 != t.i1) {
      hpass(t.i1, h1.data());
      have1 = t.i1;
    }
    float* d = dst + static_cast<size_t>(y) * row;
    for (size_t i = 0; i < row; ++i) d[i] = h0[i] * t.a0 + h1[i] * t.a1;
  }
}

}  // namespace

void resize_bilinear_f32(const float* src, int sw, int sh, int cn, float* dst, int dw, int dh, double fx, double fy) {
  resize_f32_any(src, sw, sh, cn, dst, dw, dh, fx, fy);
}

void resize_bilinear_f32(const uint8_t* src, int sw, int sh, int cn, float* dst, int dw, int dh, double fx,
                         double fy) {
  resize_f32_any(src, sw, sh, cn, dst, dw, dh, fx, fy);
}

Image resize_bilinear(ImageView src, int dw, int dh, double fx, double fy) {
  GPEN_CHECK(src.width > 0 && src.height > 0 && src.bgr.size() == src.pixels() * 3, "resize: empty image");
  GPEN_CHECK(dw > 0 && dh > 0 && dw <= kMaxImageSide && dh <= kMaxImageSide &&
                 int64_t{dw} * dh <= kMaxImagePixels,
             "resize: target size " + std::to_string(dw) + "x" + std::to_string(dh) + " is out of range");
  const int sw = src.width, sh = src.height, cn = 3;
  const std::vector<LinearTap> tx = linear_taps(sw, dw, fx > 0 ? fx : static_cast<double>(dw) / sw);
  const std::vector<LinearTap> ty = linear_taps_rows(sh, dh, fy > 0 ? fy : static_cast<double>(dh) / sh);
  // OpenCV's 8-bit path: weights as 11-bit fixed point, horizontal sums in int, and the vertical
  // blend of its SIMD kernel: ((b0 * (r0 >> 4)) >> 16) + ((b1 * (r1 >> 4)) >> 16), rounded by 2 bits.
  auto fix = [](float a) { return static_cast<int>(std::lrint(a * 2048.0f)); };
  Image out;
  out.width = dw;
  out.height = dh;
  out.bgr.resize(out.pixels() * 3);
  const size_t row = static_cast<size_t>(dw) * cn;
  std::vector<int> h0(row), h1(row);
  auto hpass = [&](int y, int* o) {
    const uint8_t* s = src.bgr.data() + static_cast<size_t>(y) * static_cast<size_t>(sw) * cn;
    for (int x = 0; x < dw; ++x) {
      const LinearTap& t = tx[static_cast<size_t>(x)];
      const int a0 = fix(t.a0), a1 = fix(t.a1);
      for (int c = 0; c < cn; ++c)
        o[static_cast<size_t>(x) * cn + c] = s[static_cast<size_t>(t.i0) * cn + c] * a0 + s[static_cast<size_t>(t.i1) * cn + c] * a1;
    }
  };
  for (int y = 0; y < dh; ++y) {
    const LinearTap& t = ty[static_cast<size_t>(y)];
    hpass(t.i0, h0.data());
    hpass(t.i1, h1.data());
    const int b0 = fix(t.a0), b1 = fix(t.a1);
    uint8_t* d = out.bgr.data() + static_cast<size_t>(y) * row;
    for (size_t i = 0; i < row; ++i) {
      const int v = (((b0 * (h0[i] >> 4)) >> 16) + ((b1 * (h1[i] >> 4)) >> 16) + 2) >> 2;
      d[i] = static_cast<uint8_t>(std::clamp(v, 0, 255));
    }
  }
  return out;
}

}  // namespace gpen
