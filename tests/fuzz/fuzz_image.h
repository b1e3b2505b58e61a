#pragma once
// The body every image-decoder fuzz target shares: a decode either fails with gpen::Error naming
// the input or returns an image whose buffer holds width * height * 3 bytes (ASan checks every
// touch); the EXIF orientation is then applied as read_image does.
#include <cstddef>
#include <cstdint>

#include "engine/core/error.h"
#include "engine/photo/exif.h"
#include "engine/photo/image.h"
#include "engine/photo/image_codecs.h"

// decode(data, size, opt, meta) -> gpen::Image
template <class Decode>
int fuzz_image_decoder(const uint8_t* data, size_t size, Decode decode) {
  gpen::ReadOptions opt;
  // 256 x 256: a header claiming a large image is refused from the header in microseconds instead
  // of allocating and clearing megabytes of pixels first (which held the PNG target to ~200 runs a
  // second); the decoders take the same paths at any size.
  opt.max_pixels = int64_t{1} << 16;
  gpen::ImageMeta meta;
  try {
    gpen::Image img = decode(data, size, opt, &meta);
    if (img.bgr.size() != img.pixels() * 3 || img.width <= 0 || img.height <= 0) __builtin_trap();
    volatile uint8_t sink = img.bgr.front() ^ img.bgr.back();
    (void)sink;
    img = gpen::exif::apply_orientation(img, gpen::exif::orientation(meta.exif));
    (void)gpen::exif::with_orientation_reset(meta.exif);
  } catch (const gpen::Error&) {
  }
  return 0;
}
