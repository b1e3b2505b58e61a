#pragma once
// Image files in and out (libjpeg-turbo, libpng, libwebp; BMP through stb_image). Images are
// 8-bit HWC with 3 channels in BGR order, exactly as the official GPEN code holds them after cv2.imread(path, IMREAD_COLOR) (OpenCV 4.6 with Debian's libraries):
// alpha is dropped (not composited), gray is replicated, 16-bit PNG keeps its high byte, CMYK is
// converted as OpenCV does, and the EXIF orientation is applied.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/image.h"

namespace gpen {

// What a photo carries besides its pixels, kept so that an output keeps the input's EXIF and
// colour profile. `exif` is the TIFF structure (from "II"/"MM" on, without JPEG's "Exif\0\0").
struct ImageMeta {
  std::vector<uint8_t> exif;
  std::vector<uint8_t> icc;
  int orientation = 1;  // EXIF orientation found in the file (1..8), 1 when absent
};

struct ReadOptions {
  // Checked against the size in the file's header, before any pixel memory is allocated.
  // The default admits a 100-megapixel photo (e.g. 11648x8736); at most kMaxImagePixels.
  int64_t max_pixels = kMaxImagePixels;
  bool apply_orientation = true;  // as cv2.imread does unless IMREAD_IGNORE_ORIENTATION
};

// JPEG (baseline, progressive, arithmetic, any subsampling, gray, CMYK/YCCK), PNG (1-16 bit,
// gray, RGB, alpha, palette, interlaced), WebP (lossy, lossless, alpha) and BMP. Any other format,
// a corrupt or truncated file, one over the pixel limit: gpen::Error naming the path and the reason.
Image read_image(const std::string& path, const ReadOptions& opt = {}, ImageMeta* meta = nullptr);
Image decode_image(const uint8_t* data, size_t size, const std::string& name, const ReadOptions& opt = {},
                   ImageMeta* meta = nullptr);
// The format decode_image takes these bytes for, by their signature: "jpg", "png", "webp", "bmp",
// or "" for none of them.
std::string image_format(const uint8_t* data, size_t size);

// Writes JPEG, PNG or WebP by the extension (.jpg/.jpeg, .png, .webp; case-insensitive) through a
// temporary file renamed over `path`, so a reader never sees a half-written image. With `meta`, its
// EXIF (orientation set to 1: the pixels are upright) and ICC profile go into the file. JPEG and
// lossy WebP use `jpeg_quality`; WebP at quality 100 (the default of cv2.imwrite) is lossless.
void write_image(const std::string& path, ImageView img, int jpeg_quality = 95, const ImageMeta* meta = nullptr);
std::vector<uint8_t> encode_image(const std::string& ext, ImageView img, int jpeg_quality = 95,
                                  const ImageMeta* meta = nullptr);
}  // namespace gpen
