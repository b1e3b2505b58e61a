#pragma once
// Pasting restored faces back onto the photo, as the official FaceEnhancement.process does after
// GPEN (no super-resolution, the rectangle mask rather than the face-parsing one). Every step
// reproduces OpenCV's arithmetic on x86-64 with AVX2/FMA (the machines the official code runs on),
// so that the composite matches the official one pixel for pixel.
#include <memory>
#include <vector>

#include "engine/photo/align.h"
#include "engine/photo/image.h"
#include "kernels/cpu/warp.h"

namespace gpen {

// One face to paste.
struct PastedFace {
  float landmarks[10] = {};  // (x, y) x 5 in photo pixels, RetinaFace order (see align.h)
  float box[4] = {};         // detection box x1, y1, x2, y2: small faces get smoothed (is_small_face)
  Image restored;            // GPEN's output, S x S
  Image crop;                // the aligned crop fed to GPEN (align_face), S x S; may be empty when alpha == 1
  // This face's own paste mask, S x S (the face-parsing one, parse_mask.h); null: the rectangle.
  std::shared_ptr<const std::vector<float>> mask;
};

// The official paste mask for an S x S crop, row-major S * S floats: 512x512 zeros, the filled
// rectangle (26,26)-(486,486) of ones, cv2.GaussianBlur 101x101 sigma 4 twice (reflect-101),
// cv2.resize to S x S (bilinear; OpenCV's 2:1 area shortcut at S = 256) when S != 512. Computed
// with OpenCV's float operation order, fused multiply-adds included. Cached per size;
// gpen::Error unless 1 <= size <= kMaxFaceSize.
std::shared_ptr<const std::vector<float>> paste_mask(int size);

// cv::getGaussianKernel(n, sigma, CV_32F) for odd n: OpenCV 4's fixed kernels for n <= 7 without
// a sigma (sigma <= 0), else computed in double (sigma <= 0: 0.3 * ((n - 1) * 0.5 - 1) + 0.8),
// normalised by 1 / (2 * sum of one half + centre), each tap rounded to float.
std::vector<float> gaussian_kernel_f32(int n, double sigma);

// cv2.GaussianBlur of a w x h float image with this (symmetric) kernel, BORDER_REFLECT_101, with
// the arithmetic of OpenCV's AVX2 separable filter: rows accumulate s = fma(x[t], k[t], s) from 0
// over the taps; columns start from fma(centre, k[r], 0) and add fma(up + down, k[r + t], s).
void gaussian_blur_f32(std::vector<float>& img, int w, int h, const std::vector<float>& k);

// cv2.resize of a 512 x 512 float mask to size x size, as paste_mask does (a copy at 512, the 2 x 2
// mean at 256, bilinear otherwise). gpen::Error for another length or a size outside 1..kMaxFaceSize.
std::vector<float> resize_paste_mask(const std::vector<float>& mask512, int size);

// The official rule for which faces get smoothed before the paste: min(box width, box height) < 100
// pixels, box = the detection's x1, y1, x2, y2. Every paste (paste_faces, FaceRestorer) asks here.
bool is_small_face(const float box[4]);

// cv2.filter2D(img, -1, [[1,2,1],[2,4,2],[1,2,1]]/16) with reflect-101 borders, rounded half to
// even: the smoothing applied to restored faces that is_small_face.
Image smooth_small_face(const Image& img);

// cv2.addWeighted(restored, alpha, crop, 1 - alpha, 0): alpha and 1 - alpha (computed in double)
// rounded to float, a * alpha + round(b * (1 - alpha)) with one rounding (OpenCV's FMA path),
// rounded half to even and saturated. gpen::Error for images of different sizes or an alpha that
// is not finite or beyond +-1e6.
Image blend_faces(const Image& restored, const Image& crop, double alpha);

// The accumulation of the official loop: per face, the warped mask and face; where the warped
// mask exceeds the accumulated mask, both take the new values.
class PasteCanvas {
 public:
  PasteCanvas(int width, int height);

  // Warps `face` and `mask` (both S x S) with crop_to_image (the official tfm_inv; warpAffine
  // inverts it again, as OpenCV does) over the footprint of the crop, bilinear like the official
  // flags=3 (kGpenWarp), and accumulates them.
  void add(const Image& face, const std::vector<float>& mask, const AffineTransform& crop_to_image);

  // original * (1 - mask) + faces * mask in float32, then cv2.convertScaleAbs (absolute value,
  // rounded half to even, saturated). `original` must have the canvas size.
  Image composite(ImageView original) const;

  const std::vector<float>& mask() const { return mask_; }  // full_mask, height * width
  const Image& faces() const { return faces_; }              // full_img

 private:
  int width_, height_;
  std::vector<float> mask_;
  Image faces_;
};

// The whole per-photo paste: for each face in the given (detection) order, the crop -> photo
// transform from its landmarks, smoothing when is_small_face, the alpha blend
// with the crop, the warped mask and face, and the final composite. Faces are assumed already
// filtered by detection score (the official code skips scores < 0.9 before restoring).
// gpen::Error for an empty photo, a size outside 1..kMaxFaceSize, a restored image that is not
// S x S, a missing crop when alpha != 1, bad landmarks or box, or an alpha that is not finite or
// beyond +-1e6.
Image paste_faces(ImageView original, const std::vector<PastedFace>& faces, int size, double alpha);

// The same with the crop -> photo transforms given, one per face (e.g. the inverse of the
// transform align_face returned); landmarks are then not used.
Image paste_faces(ImageView original, const std::vector<PastedFace>& faces,
                  const std::vector<AffineTransform>& crop_to_image, int size, double alpha);

}  // namespace gpen
