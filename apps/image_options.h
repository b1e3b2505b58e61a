#pragma once
// The photo-reading options that restore and detect share.
#include <CLI/CLI.hpp>
#include <cstdint>

#include "engine/photo/image.h"

namespace gpen::cli {

inline void add_image_read_options(CLI::App& sub, int64_t& max_pixels, bool& ignore_orientation) {
  sub.add_option("--max-pixels", max_pixels,
                 "Refuse images of more pixels than this, read from the file's header before decoding (default admits "
                 "a 100-megapixel photo)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, kMaxImagePixels));
  sub.add_flag("--ignore-orientation", ignore_orientation,
               "Use the pixels as stored, not rotated upright by the EXIF orientation as cv2.imread does");
}

inline ReadOptions read_options(int64_t max_pixels, bool ignore_orientation) {
  ReadOptions o;
  o.max_pixels = max_pixels;
  o.apply_orientation = !ignore_orientation;
  return o;
}

}  // namespace gpen::cli
