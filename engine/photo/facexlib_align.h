#pragma once
// Face alignment of facexlib's FaceRestoreHelper (the photo flow of GFPGANer.enhance):
// the FFHQ five-point template of a 512 x 512 face scaled to the face size, the similarity that
// cv2.estimateAffinePartial2D(landmarks, template, method=LMEDS) returns, and the crop
// cv2.warpAffine(img, m, (S, S), borderMode=BORDER_CONSTANT, borderValue=(135, 133, 132)).
// GPEN's own alignment (another template, Umeyama on all points, black borders) is align.h.
#include <array>

#include "engine/core/affine.h"
#include "engine/core/image.h"

namespace gpen {

// FaceRestoreHelper.face_template for crop_ratio (1, 1): the 512 template * (size / 512), as
// (x, y) pairs in double. gpen::Error unless 1 <= size <= kMaxFaceSize.
std::array<double, 10> facexlib_template(int size);

// cv2.estimateAffinePartial2D(src, dst, method=cv2.LMEDS)[0] for n >= 2 point pairs ((x, y)
// interleaved, rounded to float32 as OpenCV does): the least-median-of-squares similarity over
// OpenCV's 2-point draws, its inliers refined to their least-squares similarity. gpen::Error for
// degenerate points.
AffineTransform estimate_partial_lmeds(const double* src, const double* dst, int n);

// The image -> crop transform of a face with these landmarks (RetinaFace order, (x, y) x 5).
AffineTransform facexlib_face_transform(const float landmarks[10], int size);

// The S x S crop with facexlib's gray border (BGR 135, 133, 132), bilinear.
Image facexlib_align_face(ImageView img, const AffineTransform& image_to_crop, int size);

}  // namespace gpen
