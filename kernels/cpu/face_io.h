#pragma once
// The official GPEN pre- and post-processing of a face crop, between 8-bit BGR images and the
// generator's model space (NHWC, RGB, [-1, 1]).
#include <cstdint>

#include "engine/core/image.h"

namespace gpen {

// cv2.resize to S x S (bilinear, on the 8-bit image, as the official code does) when needed,
// then x = (v / 255 - 0.5) / 0.5 in RGB order. Writes S * S * 3 floats.
void face_to_model(ImageView bgr, int size, float* nhwc_rgb);

// y * 0.5 + 0.5, RGB -> BGR, clip to [0, 1], times 255, truncation to uint8 (not rounding).
Image model_to_face(const float* nhwc_rgb, int size);
// The same into S * S * 3 bytes the caller holds.
void model_to_face(const float* nhwc_rgb, int size, uint8_t* bgr);

}  // namespace gpen
