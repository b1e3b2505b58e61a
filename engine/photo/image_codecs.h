#pragma once
// The per-format decoders and encoders behind read_image/write_image (engine/photo/image.cpp). Each
// decoder checks the header's size against opt.max_pixels before allocating pixels, reports
// corrupt data as gpen::Error starting with `name`, and fills `meta` (EXIF, ICC) when given.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/photo/image.h"

namespace gpen::codec {

Image decode_jpeg(const uint8_t* data, size_t size, const std::string& name, const ReadOptions& opt, ImageMeta* meta);
Image decode_png(const uint8_t* data, size_t size, const std::string& name, const ReadOptions& opt, ImageMeta* meta);
Image decode_webp(const uint8_t* data, size_t size, const std::string& name, const ReadOptions& opt, ImageMeta* meta);
Image decode_bmp(const uint8_t* data, size_t size, const std::string& name, const ReadOptions& opt);

// `exif` here is already the bytes to write (orientation reset by the caller), may be empty.
std::vector<uint8_t> encode_jpeg(ImageView img, int quality, const std::vector<uint8_t>& exif,
                                 const std::vector<uint8_t>& icc);
std::vector<uint8_t> encode_png(ImageView img, const std::vector<uint8_t>& exif, const std::vector<uint8_t>& icc);
std::vector<uint8_t> encode_webp(ImageView img, int quality, const std::vector<uint8_t>& exif,
                                 const std::vector<uint8_t>& icc);

// Refuses a header size of 0 or over the limits (opt.max_pixels, kMaxImagePixels, kMaxImageSide).
void check_size(int64_t w, int64_t h, const std::string& name, const ReadOptions& opt);

}  // namespace gpen::codec
