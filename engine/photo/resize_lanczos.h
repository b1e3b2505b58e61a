#pragma once
// cv2.resize(img, (w, h), interpolation=cv2.INTER_LANCZOS4) of an 8-bit BGR image, bit-exact with
// OpenCV 4: per destination column and row, the source position (dx + 0.5) * scale - 0.5 in float,
// its 8 Lanczos weights (interpolateLanczos4, float, normalised) scaled by 2048 and rounded to
// short; source columns and rows clamped to the image; the horizontal pass in int, the vertical one
// in int with (s + 2^21) >> 22, saturated. facexlib's background when GFPGAN's flow upscales.
#include "engine/core/image.h"

namespace gpen {

// gpen::Error for an empty source or a destination size outside the image limits.
Image resize_lanczos4(ImageView src, int dst_w, int dst_h);

}  // namespace gpen
