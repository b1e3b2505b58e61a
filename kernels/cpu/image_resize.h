#pragma once
// The bilinear resizes of OpenCV the pipeline needs: the detector's input (float) and a face
// crop that is not yet S x S (8-bit). CPU twins of the resize in kernels/cuda/image_convert.cu.
#include <cstdint>

#include "engine/core/image.h"

namespace gpen {

// cv2.resize(..., INTER_LINEAR) of an HWC float image with `channels` channels. With
// scale_x/scale_y > 0 the source step is 1/scale as cv2 uses with fx/fy (dst size given
// separately), else src/dst. Source x = (dx + 0.5) * step - 0.5, clamped at the borders.
void resize_bilinear_f32(const float* src, int sw, int sh, int channels, float* dst, int dw, int dh,
                         double scale_x = 0.0, double scale_y = 0.0);
// The same reading 8-bit pixels as the floats they convert to exactly (no float copy of the source).
void resize_bilinear_f32(const uint8_t* src, int sw, int sh, int channels, float* dst, int dw, int dh,
                         double scale_x = 0.0, double scale_y = 0.0);
// The same on 8-bit images with OpenCV's fixed-point arithmetic (11-bit weights); scale_x/scale_y
// as above (cv2.resize(img, (0, 0), fx=f, fy=f) maps with f, not with the rounded size's ratio).
Image resize_bilinear(ImageView src, int dw, int dh, double scale_x = 0.0, double scale_y = 0.0);

}  // namespace gpen
