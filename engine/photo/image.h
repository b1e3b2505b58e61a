#pragma once
// Image files in and out (stb_image / stb_image_write) and the bilinear resize of OpenCV.
// Images are 8-bit HWC with 3 channels in BGR order, as the official GPEN code holds them after
// cv2.imread: alpha is dropped (not composited), gray is replicated, 16-bit PNG is reduced to
// its high byte.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/image.h"

namespace gpen {

// JPEG (baseline and progressive), PNG (8/16-bit, gray, RGB, RGBA, palette) and BMP. Any other
// format, a corrupt or truncated file: gpen::Error naming the path.
Image read_image(const std::string& path);
Image decode_image(const uint8_t* data, size_t size, const std::string& name);

// Writes PNG or JPEG by the extension (.png, .jpg, .jpeg; case-insensitive) through a temporary
// file renamed over `path`, so a reader never sees a half-written image.
void write_image(const std::string& path, const Image& img, int jpeg_quality = 95);

}  // namespace gpen
