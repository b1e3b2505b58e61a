#pragma once
// Image files in and out (stb_image / stb_image_write) and the bilinear resize of OpenCV.
// Images are 8-bit HWC with 3 channels in BGR order, as the official GPEN code holds them after
// cv2.imread: alpha is dropped (not composited), gray is replicated, 16-bit PNG is reduced to
// its high byte.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpen {

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> bgr;  // height * width * 3
  size_t pixels() const { return static_cast<size_t>(width) * static_cast<size_t>(height); }
};

// Largest image accepted (pixels) and side: bounds the memory an untrusted file can make us allocate.
constexpr int64_t kMaxImagePixels = int64_t{1} << 27;  // 134 M pixels (~400 MB as BGR)
constexpr int kMaxImageSide = 1 << 16;

// JPEG (baseline and progressive), PNG (8/16-bit, gray, RGB, RGBA, palette) and BMP. Any other
// format, a corrupt or truncated file: gpen::Error naming the path.
Image read_image(const std::string& path);
Image decode_image(const uint8_t* data, size_t size, const std::string& name);

// Writes PNG or JPEG by the extension (.png, .jpg, .jpeg; case-insensitive) through a temporary
// file renamed over `path`, so a reader never sees a half-written image.
void write_image(const std::string& path, const Image& img, int jpeg_quality = 95);

// cv2.resize(..., INTER_LINEAR) of an HWC float image with `channels` channels. With
// scale_x/scale_y > 0 the source step is 1/scale as cv2 uses with fx/fy (dst size given
// separately), else src/dst. Source x = (dx + 0.5) * step - 0.5, clamped at the borders.
void resize_bilinear_f32(const float* src, int sw, int sh, int channels, float* dst, int dw, int dh,
                         double scale_x = 0.0, double scale_y = 0.0);
// The same on 8-bit images with OpenCV's fixed-point arithmetic (11-bit weights).
Image resize_bilinear(const Image& src, int dw, int dh);

}  // namespace gpen
