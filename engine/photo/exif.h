#pragma once
// The one EXIF field the engine acts on, the orientation (tag 0x0112 in IFD0), read and reset in
// a TIFF structure, and its application to pixels as cv2.imread does.
#include <cstdint>
#include <vector>

#include "engine/photo/image.h"

namespace gpen::exif {

// 1..8, or 1 when the structure is malformed, has no orientation or an out-of-range value.
int orientation(const std::vector<uint8_t>& tiff);
// A copy of `tiff` with the orientation set to 1 (unchanged when it has none or is malformed).
std::vector<uint8_t> with_orientation_reset(const std::vector<uint8_t>& tiff);
// Transforms the pixels so that a photo stored with EXIF orientation `o` appears upright: 2 mirror,
// 3 rotate 180, 4 flip vertically, 5 transpose, 6 rotate 90 clockwise, 7 transverse, 8 rotate 90
// counter-clockwise (OpenCV's ApplyExifOrientation).
Image apply_orientation(const Image& img, int o);

}  // namespace gpen::exif
