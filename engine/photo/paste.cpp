// Paste-back of restored faces: the official rectangle mask, small-face smoothing, alpha blend,
// mask accumulation and the final composite, each with OpenCV's rounding (see paste.h).
#include "engine/photo/paste.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <string>

#include "engine/core/error.h"
#include "kernels/cpu/linear_taps.h"
#include "kernels/cpu/paste.h"

// The float steps below follow OpenCV's operation order exactly: fused multiply-adds only where
// OpenCV's AVX2 code has them (written as std::fma), never introduced by the compiler.
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen {

namespace {

using cpu::reflect101;

constexpr int kBase = 512;          // the official mask is drawn at 512 x 512
constexpr int kRectLo = 26, kRectHi = 486;
constexpr int kKsize = 101;
constexpr double kSigma = 4.0;

}  // namespace

std::vector<float> gaussian_kernel_f32(int n, double sigma) {
  GPEN_CHECK(n >= 1 && n % 2 == 1, "gaussian kernel: size " + std::to_string(n) + " must be odd");
  // getGaussianKernel's fixed kernels of sizes up to 7 when no sigma is given.
  static const std::vector<std::vector<float>> small = {
      {1.0f}, {0.25f, 0.5f, 0.25f}, {0.0625f, 0.25f, 0.375f, 0.25f, 0.0625f},
      {0.03125f, 0.109375f, 0.21875f, 0.28125f, 0.21875f, 0.109375f, 0.03125f}};
  if (n <= 7 && sigma <= 0) return small[static_cast<size_t>(n / 2)];
  const double sig = sigma > 0 ? sigma : n * 0.15 + 0.35;
  const int half = (n - 1) / 2;
  const double scale2x = -0.125 / (sig * sig);  // x below is twice the offset
  std::vector<double> values(static_cast<size_t>(half));
  double sum = 0.0;
  for (int i = 0, x = 1 - n; i < half; ++i, x += 2) {
    values[static_cast<size_t>(i)] = std::exp(static_cast<double>(x * x) * scale2x);
    sum += values[static_cast<size_t>(i)];
  }
  sum *= 2.0;
  sum += 1.0;
  const double mul = 1.0 / sum;
  std::vector<float> k(static_cast<size_t>(n));
  for (int i = 0; i < half; ++i)
    k[static_cast<size_t>(i)] = k[static_cast<size_t>(n - 1 - i)] = static_cast<float>(values[static_cast<size_t>(i)] * mul);
  k[static_cast<size_t>(half)] = static_cast<float>(mul);
  return k;
}

void gaussian_blur_f32(std::vector<float>& img, int w, int h, const std::vector<float>& k) {
  const int ks = static_cast<int>(k.size()), r = ks / 2;
  std::vector<float> rows(img.size());
  std::vector<float> padded(static_cast<size_t>(w + 2 * r));
  for (int y = 0; y < h; ++y) {
    const float* src = img.data() + static_cast<size_t>(y) * w;
    for (int j = 0; j < w + 2 * r; ++j) padded[static_cast<size_t>(j)] = src[reflect101(j - r, w)];
    float* s = rows.data() + static_cast<size_t>(y) * w;
    std::fill(s, s + w, 0.0f);
    for (int t = 0; t < ks; ++t) {
      const float kt = k[static_cast<size_t>(t)];
      const float* p = padded.data() + t;
      for (int x = 0; x < w; ++x) s[x] = std::fma(p[x], kt, s[x]);
    }
  }
  for (int y = 0; y < h; ++y) {
    float* s = img.data() + static_cast<size_t>(y) * w;
    const float* c = rows.data() + static_cast<size_t>(y) * w;
    const float k0 = k[static_cast<size_t>(r)];
    for (int x = 0; x < w; ++x) s[x] = std::fma(c[x], k0, 0.0f);
    for (int t = 1; t <= r; ++t) {
      const float* up = rows.data() + static_cast<size_t>(reflect101(y - t, h)) * w;
      const float* dn = rows.data() + static_cast<size_t>(reflect101(y + t, h)) * w;
      const float kt = k[static_cast<size_t>(r + t)];
      for (int x = 0; x < w; ++x) s[x] = std::fma(dn[x] + up[x], kt, s[x]);
    }
  }
}

namespace {

std::vector<float> base_mask() {
  std::vector<float> m(static_cast<size_t>(kBase) * kBase, 0.0f);
  // cv2.rectangle(..., thickness=-1, LINE_AA) on a float image fills the closed rectangle with
  // no anti-aliased fringe (OpenCV only anti-aliases 8-bit images).
  for (int y = kRectLo; y <= kRectHi; ++y)
    std::fill(m.begin() + y * kBase + kRectLo, m.begin() + y * kBase + kRectHi + 1, 1.0f);
  const std::vector<float> k = gaussian_kernel_f32(kKsize, kSigma);
  gaussian_blur_f32(m, kBase, kBase, k);
  gaussian_blur_f32(m, kBase, kBase, k);
  return m;
}

std::vector<float> resize_mask(const std::vector<float>& g, int size) {
  const size_t S = static_cast<size_t>(size);
  std::vector<float> out(S * S);
  if (size == kBase) return g;
  if (size * 2 == kBase) {
    // OpenCV turns an exact 2:1 INTER_LINEAR downscale into its fast INTER_AREA path.
    for (size_t y = 0; y < S; ++y)
      for (size_t x = 0; x < S; ++x) {
        const float* r0 = g.data() + 2 * y * kBase + 2 * x;
        const float* r1 = r0 + kBase;
        out[y * S + x] = ((r0[0] + r0[1]) + (r1[0] + r1[1])) * 0.25f;
      }
    return out;
  }
  // Horizontal pass of each source row, then the vertical blend (both multiply, multiply, add).
  const std::vector<LinearTap> t = linear_taps(kBase, size, static_cast<double>(size) / kBase);
  std::vector<float> h(static_cast<size_t>(kBase) * S);
  for (size_t y = 0; y < static_cast<size_t>(kBase); ++y)
    for (size_t x = 0; x < S; ++x) {
      const LinearTap& a = t[x];
      const float* r = g.data() + y * kBase;
      h[y * S + x] = r[a.i0] * a.a0 + r[a.i1] * a.a1;
    }
  for (size_t y = 0; y < S; ++y) {
    const LinearTap& b = t[y];
    const float* h0 = h.data() + static_cast<size_t>(b.i0) * S;
    const float* h1 = h.data() + static_cast<size_t>(b.i1) * S;
    for (size_t x = 0; x < S; ++x) out[y * S + x] = h0[x] * b.a0 + h1[x] * b.a1;
  }
  return out;
}

void check_image(ImageView img, const std::string& what) {
  GPEN_CHECK(img.width > 0 && img.height > 0 && img.width <= kMaxImageSide && img.height <= kMaxImageSide &&
                 img.bgr.size() == img.pixels() * 3,
             what + ": empty or malformed image");
}

// Larger |alpha| could overflow float and give inf - inf; GPEN uses 0..1.
constexpr double kMaxAlpha = 1e6;

}  // namespace

std::shared_ptr<const std::vector<float>> paste_mask(int size) {
  GPEN_CHECK(size >= 1 && size <= kMaxFaceSize,
             "paste mask: crop size " + std::to_string(size) + " is outside 1.." + std::to_string(kMaxFaceSize));
  static std::mutex mu;
  static std::shared_ptr<const std::vector<float>> base;
  static std::map<int, std::shared_ptr<const std::vector<float>>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(size);
  if (it != cache.end()) return it->second;
  if (!base) base = std::make_shared<const std::vector<float>>(base_mask());
  auto m = std::make_shared<const std::vector<float>>(resize_mask(*base, size));
  // A handful of sizes at most in one process; bound it anyway.
  if (cache.size() >= 8) cache.erase(cache.begin());
  cache.emplace(size, m);
  return m;
}

std::vector<float> resize_paste_mask(const std::vector<float>& mask512, int size) {
  GPEN_CHECK(size >= 1 && size <= kMaxFaceSize,
             "paste mask: crop size " + std::to_string(size) + " is outside 1.." + std::to_string(kMaxFaceSize));
  GPEN_CHECK(mask512.size() == static_cast<size_t>(kBase) * kBase, "paste mask: the mask to resize must be 512 x 512");
  return resize_mask(mask512, size);
}

bool is_small_face(const float box[4]) { return std::min(box[3] - box[1], box[2] - box[0]) < 100; }

Image smooth_small_face(const Image& img) {
  check_image(img, "face smoothing");
  Image out{img.width, img.height, std::vector<uint8_t>(img.bgr.size())};
  cpu::smooth_face(img.bgr.data(), out.bgr.data(), img.width, img.height);
  return out;
}

Image blend_faces(const Image& restored, const Image& crop, double alpha) {
  check_image(restored, "face blend");
  check_image(crop, "face blend");
  GPEN_CHECK(restored.width == crop.width && restored.height == crop.height,
             "face blend: restored face is " + std::to_string(restored.width) + "x" + std::to_string(restored.height) +
                 " but the crop is " + std::to_string(crop.width) + "x" + std::to_string(crop.height));
  GPEN_CHECK(std::isfinite(alpha) && std::fabs(alpha) <= kMaxAlpha, "face blend: alpha is not finite or too large");
  Image out{restored.width, restored.height, std::vector<uint8_t>(restored.bgr.size())};
  cpu::blend_faces(restored.bgr.data(), crop.bgr.data(), alpha, out.bgr.data(), out.bgr.size());
  return out;
}

PasteCanvas::PasteCanvas(int width, int height) : width_(width), height_(height) {
  GPEN_CHECK(width > 0 && height > 0 && width <= kMaxImageSide && height <= kMaxImageSide &&
                 int64_t{width} * height <= kMaxImagePixels,
             "paste: canvas size " + std::to_string(width) + "x" + std::to_string(height) + " is out of range");
  mask_.assign(static_cast<size_t>(width) * static_cast<size_t>(height), 0.0f);
  faces_.width = width;
  faces_.height = height;
  faces_.bgr.assign(mask_.size() * 3, 0);
}

void PasteCanvas::add(const Image& face, const std::vector<float>& mask, const AffineTransform& crop_to_image) {
  check_image(face, "paste");
  GPEN_CHECK(mask.size() == face.pixels(), "paste: mask size does not match the face (" + std::to_string(face.width) +
                                               "x" + std::to_string(face.height) + ")");
  cpu::canvas_add(face.bgr.data(), mask.data(), face.width, face.height, crop_to_image, mask_.data(),
                  faces_.bgr.data(), width_, height_);
}

Image PasteCanvas::composite(ImageView original) const {
  check_image(original, "paste");
  GPEN_CHECK(original.width == width_ && original.height == height_,
             "paste: photo is " + std::to_string(original.width) + "x" + std::to_string(original.height) +
                 " but the canvas is " + std::to_string(width_) + "x" + std::to_string(height_));
  Image out{width_, height_, std::vector<uint8_t>(original.bgr.size())};
  cpu::composite(original.bgr.data(), mask_.data(), faces_.bgr.data(), out.bgr.data(), width_, height_);
  return out;
}

Image paste_faces(ImageView original, const std::vector<PastedFace>& faces,
                  const std::vector<AffineTransform>& crop_to_image, int size, double alpha) {
  check_image(original, "paste");
  GPEN_CHECK(faces.size() == crop_to_image.size(), "paste: " + std::to_string(faces.size()) + " faces but " +
                                                       std::to_string(crop_to_image.size()) + " transforms");
  GPEN_CHECK(std::isfinite(alpha) && std::fabs(alpha) <= kMaxAlpha, "paste: alpha is not finite or too large");
  const std::shared_ptr<const std::vector<float>> mask = paste_mask(size);
  PasteCanvas canvas(original.width, original.height);
  for (size_t i = 0; i < faces.size(); ++i) {
    const PastedFace& f = faces[i];
    const std::string which = "paste: face " + std::to_string(i);
    GPEN_CHECK(f.restored.width == size && f.restored.height == size && f.restored.bgr.size() == f.restored.pixels() * 3,
               which + ": restored image is " + std::to_string(f.restored.width) + "x" +
                   std::to_string(f.restored.height) + ", expected " + std::to_string(size) + "x" + std::to_string(size));
    for (float v : f.box) GPEN_CHECK(std::isfinite(v), which + ": box is not finite");
    const Image* ef = &f.restored;
    Image smoothed, blended;
    if (is_small_face(f.box)) {
      smoothed = smooth_small_face(*ef);
      ef = &smoothed;
    }
    // addWeighted with alpha 1 and beta 0 returns its first input exactly.
    if (alpha != 1.0) {
      GPEN_CHECK(f.crop.width == size && f.crop.height == size,
                 which + ": the crop must be " + std::to_string(size) + "x" + std::to_string(size) + " when alpha != 1");
      blended = blend_faces(*ef, f.crop, alpha);
      ef = &blended;
    }
    if (f.mask) GPEN_CHECK(f.mask->size() == f.restored.pixels(), which + ": its paste mask is not " +
                                                                     std::to_string(size) + "x" + std::to_string(size));
    canvas.add(*ef, f.mask ? *f.mask : *mask, crop_to_image[i]);
  }
  return canvas.composite(original);
}

Image paste_faces(ImageView original, const std::vector<PastedFace>& faces, int size, double alpha) {
  std::vector<AffineTransform> inv;
  inv.reserve(faces.size());
  for (const PastedFace& f : faces) inv.push_back(invert(face_transform(f.landmarks, size)));
  return paste_faces(original, faces, inv, size, alpha);
}

}  // namespace gpen
