#pragma once
// cv2.warpAffine(src, m, (dst_w, dst_h), flags=INTER_LINEAR or INTER_CUBIC) with BORDER_CONSTANT
// 0, bit-exact with OpenCV 4.x (x86-64) for 8-bit BGR images and for float 1-channel images.
//
// How OpenCV computes it, reproduced here: the matrix (source -> destination) is inverted in
// double; each destination pixel's source position is rounded to 1/1024 (cvRound), then to a
// 1/32 sub-pixel cell (INTER_TAB_SIZE = 32); the 2x2 bilinear or 4x4 bicubic (a = -0.75) weights
// of that cell come from a table, 15-bit fixed point for 8-bit images (INTER_REMAP_COEF_BITS,
// rounded sum, then saturated) and float for float images (summed in OpenCV's order, no fused
// multiply-add). Source taps outside the image contribute the border value 0.
//
// Which one GPEN uses: the official code calls warpAffine(..., flags=3) for the crop, the mask
// and the paste-back. 3 is cv2.INTER_AREA (INTER_CUBIC is 2), and warpAffine treats INTER_AREA
// as INTER_LINEAR, so the official pipeline is bilinear: kGpenWarp.
#include <array>
#include <cstdint>
#include <vector>

#include "engine/core/affine.h"
#include "engine/core/image.h"

namespace gpen {

enum class WarpInterp { linear, cubic };

// The interpolation of the official GPEN pipeline (flags=3, see above).
constexpr WarpInterp kGpenWarp = WarpInterp::linear;

struct PixelRect {
  int x = 0, y = 0, width = 0, height = 0;
  bool empty() const { return width <= 0 || height <= 0; }
};

// Full warps. `m` maps source pixel coordinates to destination ones, as cv2.warpAffine without
// WARP_INVERSE_MAP. gpen::Error for an empty or malformed source, a destination size outside
// 1..kMaxImageSide / kMaxImagePixels, or a singular or non-finite matrix.
Image warp_affine(ImageView src, const AffineTransform& m, int dst_w, int dst_h, WarpInterp interp);
std::vector<float> warp_affine(const float* src, int src_w, int src_h, const AffineTransform& m, int dst_w,
                               int dst_h, WarpInterp interp);
// The bilinear 8-bit warp with BORDER_CONSTANT of another value: taps outside the source read
// `border` (BGR), destination pixels none of whose taps touch the source are `border`.
Image warp_affine_linear(ImageView src, const AffineTransform& m, int dst_w, int dst_h,
                         const std::array<uint8_t, 3>& border);

// The rectangle of the dst_w x dst_h destination outside which the warp is exactly 0 (clipped to
// the destination; empty when the source lands entirely outside it), for either interpolation.
// Pasting a face back onto a photo only has to compute this rectangle.
PixelRect warp_footprint(const AffineTransform& m, int src_w, int src_h, int dst_w, int dst_h);

// The pixels of `roi` (any rectangle inside the destination) of the same warp, identical to the
// corresponding pixels of the full result, written to dst with rows of roi.width * channels
// elements (3 for BGR, 1 for float). Rows are spread over OpenMP threads.
void warp_affine_roi(const uint8_t* src_bgr, int src_w, int src_h, const AffineTransform& m, PixelRect roi,
                     uint8_t* dst, WarpInterp interp);
void warp_affine_roi(const float* src, int src_w, int src_h, const AffineTransform& m, PixelRect roi, float* dst,
                     WarpInterp interp);
// Bilinear only, on float64 images of 1 or 3 interleaved channels (facexlib's paste warps its
// float64 parsing mask and, for gray photos, CodeFormer's float64 faces): OpenCV's float weights,
// the taps summed in double in the same order.
void warp_affine_roi(const double* src, int src_w, int src_h, int channels, const AffineTransform& m, PixelRect roi,
                     double* dst);

}  // namespace gpen
