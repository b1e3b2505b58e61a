// facexlib's paste-back (see facexlib_paste.h).
#include "engine/photo/facexlib_paste.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "engine/core/error.h"
#include "engine/photo/paste.h"
#include "kernels/cpu/warp.h"

// numpy's float32 arithmetic: each product and sum rounded, never fused.
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen {

namespace {

// cv2.erode of a w x h float image with a k x k square of ones (k = 0: OpenCV's default 3 x 3),
// anchor at k / 2, the border never eroding (morphologyDefaultBorderValue).
std::vector<float> erode(const std::vector<float>& src, int w, int h, int k) {
  if (k <= 0) k = 3;
  const int a = k / 2;
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> rows(src.size()), out(src.size());
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      float m = inf;
      for (int i = std::max(x - a, 0); i <= std::min(x - a + k - 1, w - 1); ++i)
        m = std::min(m, src[static_cast<size_t>(y) * w + i]);
      rows[static_cast<size_t>(y) * w + x] = m;
    }
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      float m = inf;
      for (int j = std::max(y - a, 0); j <= std::min(y - a + k - 1, h - 1); ++j)
        m = std::min(m, rows[static_cast<size_t>(j) * w + x]);
      out[static_cast<size_t>(y) * w + x] = m;
    }
  return out;
}

PixelRect grown(PixelRect r, int by, int w, int h) {
  const int x0 = std::max(r.x - by, 0), y0 = std::max(r.y - by, 0);
  const int x1 = std::min(r.x + r.width + by, w), y1 = std::min(r.y + r.height + by, h);
  return {x0, y0, x1 - x0, y1 - y0};
}

}  // namespace

AffineTransform facexlib_inverse(const AffineTransform& image_to_crop, double upscale) {
  AffineTransform inv = invert(image_to_crop);
  for (double& v : inv.m) v *= upscale;
  if (upscale > 1) {
    inv.m[2] += 0.5 * upscale;
    inv.m[5] += 0.5 * upscale;
  }
  return inv;
}

AffineTransform facexlib_face_upsample_inverse(const AffineTransform& image_to_crop, double upscale) {
  AffineTransform inv = invert(image_to_crop);
  for (double& v : inv.m) v = v * upscale / upscale;  // not always v: x * 3 / 3 may round
  inv.m[2] *= upscale;
  inv.m[5] *= upscale;
  return inv;
}

Image facexlib_paste(ImageView background, const std::vector<FacexlibFace>& faces, double upscale,
                     FacexlibPaste style) {
  GPEN_CHECK(background.width > 0 && background.height > 0 && background.bgr.size() == background.pixels() * 3,
             "paste: empty or malformed background");
  const int W = background.width, H = background.height;
  // The running result (numpy's upsample_img): 8-bit values, then float32 ones after the first
  // float32 face, float64 ones once a float64 mask or face took part (acc_f64).
  std::vector<double> acc(background.bgr.begin(), background.bgr.end());
  bool acc_f64 = false;
  const int erode1 = static_cast<int>(2 * upscale);
  for (const FacexlibFace& f : faces) {
    const Image& face = f.restored;
    GPEN_CHECK(face.width > 0 && face.width == face.height && face.bgr.size() == face.pixels() * 3,
               "paste: the restored face must be a square BGR image");
    const int S = face.width;
    const size_t SS = static_cast<size_t>(S) * static_cast<size_t>(S);
    GPEN_CHECK(!f.parse_mask || f.parse_mask->size() == SS, "paste: the parsing mask must be S x S");
    GPEN_CHECK(!f.restored64 || f.restored64->size() == SS * 3, "paste: the float64 face must be S x S x 3");
    const PixelRect fp = warp_footprint(f.crop_to_output, S, S, W, H);
    if (fp.empty()) continue;
    // Everything below is zero outside the footprint; a margin keeps the erosions' and the
    // blur's windows on zeros wherever the whole-photo computation would see them.
    const PixelRect roi = grown(fp, 8, W, H);
    const int rw = roi.width, rh = roi.height;
    const size_t n = static_cast<size_t>(rw) * static_cast<size_t>(rh);
    // inv_restored: 8-bit, or float64 for a float64 face.
    const bool face_f64 = f.restored64 != nullptr;
    std::vector<double> inv_restored(n * 3);
    if (face_f64) {
      warp_affine_roi(f.restored64->data(), S, S, 3, f.crop_to_output, roi, inv_restored.data());
    } else {
      std::vector<uint8_t> u8(n * 3);
      warp_affine_roi(face.bgr.data(), S, S, f.crop_to_output, roi, u8.data(), WarpInterp::linear);
      std::copy(u8.begin(), u8.end(), inv_restored.begin());
    }
    // The mask and the face it weighs, as doubles holding values of their numpy type.
    std::vector<double> soft(n), pasted(n * 3);
    bool mask_f64 = false, pasted_f64 = face_f64;
    const bool parse = f.parse_mask != nullptr;
    if (!parse || style == FacexlibPaste::codeformer) {
      const std::vector<float> ones(SS, 1.0f);
      std::vector<float> inv_mask(n);
      warp_affine_roi(ones.data(), S, S, f.crop_to_output, roi, inv_mask.data(), WarpInterp::linear);
      const std::vector<float> inv_mask_erosion = erode(inv_mask, rw, rh, erode1);
      double area = 0.0;  // numpy sums float32 pairwise; the face's width / 20 is what is used
      for (float v : inv_mask_erosion) area += v;
      for (size_t i = 0; i < n; ++i)
        for (size_t c = 0; c < 3; ++c) {
          const double v = inv_restored[i * 3 + c];
          pasted[i * 3 + c] = face_f64 ? static_cast<double>(inv_mask_erosion[i]) * v
                                       : static_cast<double>(inv_mask_erosion[i] * static_cast<float>(v));
        }
      const int w_edge = static_cast<int>(std::sqrt(area)) / 20;
      std::vector<float> center = erode(inv_mask_erosion, rw, rh, 2 * w_edge);
      const int ksize = 2 * w_edge + 1;
      if (ksize > 1) gaussian_blur_f32(center, rw, rh, gaussian_kernel_f32(ksize, 0));
      std::copy(center.begin(), center.end(), soft.begin());
    }
    if (parse) {
      // cv2.warpAffine(parse_mask, inverse_affine, (w_up, h_up), flags=3): bilinear, float64.
      std::vector<double> inv_parse(n);
      warp_affine_roi(f.parse_mask->data(), S, S, 1, f.crop_to_output, roi, inv_parse.data());
      if (style == FacexlibPaste::codeformer) {
        // fuse_mask = parse < square: the smaller of the two, as float64.
        for (size_t i = 0; i < n; ++i) soft[i] = std::min(inv_parse[i], soft[i]);
      } else {
        soft = std::move(inv_parse);
        pasted = inv_restored;  // pasted_face = inv_restored
      }
      mask_f64 = true;
    }
    // upsample_img = inv_soft_mask * pasted_face + (1 - inv_soft_mask) * upsample_img, each
    // product and the sum in the type numpy gives it.
    const bool front_f64 = mask_f64 || pasted_f64, back_f64 = mask_f64 || acc_f64, sum_f64 = front_f64 || back_f64;
    for (int y = 0; y < rh; ++y)
      for (int x = 0; x < rw; ++x) {
        const size_t i = static_cast<size_t>(y) * rw + x;
        double* a = acc.data() + (static_cast<size_t>(roi.y + y) * W + static_cast<size_t>(roi.x + x)) * 3;
        const double m = soft[i];
        const double keep = mask_f64 ? 1.0 - m : static_cast<double>(1.0f - static_cast<float>(m));
        for (size_t c = 0; c < 3; ++c) {
          const double p = pasted[i * 3 + c];
          const double front = front_f64 ? m * p : static_cast<double>(static_cast<float>(m) * static_cast<float>(p));
          const double back = back_f64 ? keep * a[c] : static_cast<double>(static_cast<float>(keep) * static_cast<float>(a[c]));
          a[c] = sum_f64 ? front + back : static_cast<double>(static_cast<float>(front) + static_cast<float>(back));
        }
      }
    acc_f64 = acc_f64 || sum_f64;
  }
  Image out;
  out.width = W;
  out.height = H;
  out.bgr.resize(acc.size());
  // astype(uint8): truncation.
  for (size_t i = 0; i < acc.size(); ++i) out.bgr[i] = static_cast<uint8_t>(std::clamp(acc[i], 0.0, 255.0));
  return out;
}

}  // namespace gpen
