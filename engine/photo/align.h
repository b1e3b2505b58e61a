#pragma once
// Face alignment of the official GPEN pipeline (align_faces.warp_and_crop_face): the five
// reference points of an S x S crop, the Umeyama similarity (rotation, uniform scale,
// translation) from detected landmarks onto them, and the aligned crop.
//
// Landmarks are five (x, y) points in image pixels, interleaved x0, y0, x1, y1, ..., in
// RetinaFace order: left eye, right eye, nose, left mouth corner, right mouth corner. (GPEN's
// detector hands them out as x1..x5, y1..y5 and reshapes; this API takes the pairs directly.)
#include <array>

#include "engine/core/affine.h"
#include "engine/core/image.h"

namespace gpen {


// Reference points of an S x S crop as (x, y) pairs: the 96x112 template made square (x + 8),
// padded by 0.25 inside (+28 on both axes, 168x168), scaled by S / 168; rounded to float32 as
// the official code does before fitting. gpen::Error unless 1 <= size <= kMaxFaceSize.
std::array<float, 10> reference_points(int size);

// Least-squares similarity mapping src[i] onto dst[i] (n points, (x, y) interleaved), reflection
// excluded: Eigen::umeyama with scaling, which is the official _umeyama(src, dst) in double
// precision. gpen::Error for fewer than 2 points, non-finite input, coincident source points, or
// a result that is not an invertible finite matrix.
AffineTransform similarity_transform(const float* src, const float* dst, int n);
AffineTransform similarity_transform(const double* src, const double* dst, int n);

// Image -> crop transform for a face with these landmarks (the official `tfm`). Its inverse
// (invert()) maps the crop back onto the image (the official `tfm_inv`).
AffineTransform face_transform(const float landmarks[10], int size);

// The S x S aligned crop fed to GPEN: cv2.warpAffine(img, tfm, (S, S), flags=3) with constant-0
// borders, bit-exact with OpenCV for the same matrix. flags=3 is INTER_AREA, which warpAffine
// runs as INTER_LINEAR: the crop is bilinear (warp.h, kGpenWarp). The transform used is stored in
// *forward when forward is not null. gpen::Error for an empty image or bad landmarks/size.
Image align_face(ImageView img, const float landmarks[10], int size, AffineTransform* forward = nullptr);

}  // namespace gpen
