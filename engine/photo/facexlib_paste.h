#pragma once
// Pasting restored faces back, as facexlib's FaceRestoreHelper does after GFPGAN, and as the copy
// of it in CodeFormer's facelib does (get_inverse_affine, paste_faces_to_input_image): each face
// warped back with the inverse of its alignment (times the upscale, plus half the upscale as
// offset when above 1), its mask the warped square eroded by 2 * upscale, eroded again by a
// tenth of the face's size and Gaussian-blurred; with a face parser, facexlib replaces that mask
// (and the eroded face) by the warped parsing mask (parse_mask.h: facexlib_parse_mask), CodeFormer
// takes the smaller of the two masks. Blended over the background in numpy's types (float32;
// float64 once a float64 mask or face is involved) and truncated to 8 bits at the end.
// GPEN's paste (another mask, the max-accumulated canvas, rounding) is paste.h.
#include <memory>
#include <vector>

#include "engine/core/affine.h"
#include "engine/photo/image.h"

namespace gpen {

// cv2.invertAffineTransform(image_to_crop) * upscale, with extra_offset 0.5 * upscale added to
// the translation when upscale > 1.
AffineTransform facexlib_inverse(const AffineTransform& image_to_crop, double upscale);
// The inverse CodeFormer's paste takes for a face its face_upsampler enlarged by `upscale`:
// get_inverse_affine's matrix (cv2.invertAffineTransform * upscale) divided by the upscale again,
// then its translation times the upscale (in float64, as numpy does it in place), no extra offset.
AffineTransform facexlib_face_upsample_inverse(const AffineTransform& image_to_crop, double upscale);

// One face to paste: the restored face (S x S) and its crop -> output transform.
struct FacexlibFace {
  Image restored;
  AffineTransform crop_to_output;
  // The face-parsing mask (S x S, float64 in [0, 1], facexlib_parse_mask); null: the eroded square.
  std::shared_ptr<const std::vector<double>> parse_mask;
  // The restored face in float64 BGR (S x S x 3) where the flow made it so (CodeFormer's gray
  // photos: its color transfer), pasted instead of `restored`; null: `restored`.
  std::shared_ptr<const std::vector<double>> restored64;
};

// Whose paste_faces_to_input_image: facexlib's (GFPGAN) or CodeFormer's facelib copy (the
// parsing mask fused with the square's by the smaller value).
enum class FacexlibPaste { facexlib, codeformer };

// paste_faces_to_input_image onto `background` (the photo resized to the output size), faces in
// order, each over what the ones before left. gpen::Error for an empty background or a face
// that is not square. Values the official cast would wrap (float64 faces outside [0, 255]) are
// clamped.
Image facexlib_paste(ImageView background, const std::vector<FacexlibFace>& faces, double upscale,
                     FacexlibPaste style = FacexlibPaste::facexlib);

}  // namespace gpen
