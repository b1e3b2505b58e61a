// EXIF orientation: found by walking IFD0 of the TIFF structure with every offset bounds-checked
// (the bytes come from untrusted files), applied with the flips and transpose of OpenCV.
#include "engine/photo/exif.h"

#include <cstddef>

namespace gpen::exif {

namespace {

// Byte offset of the value field of IFD0's orientation entry (type SHORT), or 0 when none.
size_t find_orientation(const std::vector<uint8_t>& t, bool& big_endian) {
  if (t.size() < 8) return 0;
  if (t[0] == 'I' && t[1] == 'I') {
    big_endian = false;
  } else if (t[0] == 'M' && t[1] == 'M') {
    big_endian = true;
  } else {
    return 0;
  }
  auto u16 = [&](size_t p) -> uint32_t { return big_endian ? uint32_t(t[p]) << 8 | t[p + 1] : uint32_t(t[p + 1]) << 8 | t[p]; };
  auto u32 = [&](size_t p) -> uint32_t { return big_endian ? u16(p) << 16 | u16(p + 2) : u16(p + 2) << 16 | u16(p); };
  if (u16(2) != 42) return 0;
  const size_t ifd = u32(4);
  if (ifd < 8 || ifd + 2 > t.size()) return 0;
  const size_t n = u16(ifd);
  for (size_t k = 0; k < n; ++k) {
    const size_t e = ifd + 2 + 12 * k;
    if (e + 12 > t.size()) return 0;
    if (u16(e) == 0x0112) return u16(e + 2) == 3 ? e + 8 : 0;
  }
  return 0;
}

}  // namespace

int orientation(const std::vector<uint8_t>& tiff) {
  bool be = false;
  const size_t p = find_orientation(tiff, be);
  if (p == 0) return 1;
  const int v = be ? tiff[p] << 8 | tiff[p + 1] : tiff[p + 1] << 8 | tiff[p];
  return v >= 1 && v <= 8 ? v : 1;
}

std::vector<uint8_t> with_orientation_reset(const std::vector<uint8_t>& tiff) {
  std::vector<uint8_t> out = tiff;
  bool be = false;
  const size_t p = find_orientation(out, be);
  if (p != 0) {
    out[p] = be ? 0 : 1;
    out[p + 1] = be ? 1 : 0;
  }
  return out;
}

Image apply_orientation(const Image& img, int o) {
  if (o < 2 || o > 8) return img;
  const bool transpose = o >= 5;
  // After the (optional) transpose, OpenCV flips: 2/6 horizontally, 4/8 vertically, 3/7 both.
  const bool flip_h = o == 2 || o == 3 || o == 6 || o == 7;
  const bool flip_v = o == 3 || o == 4 || o == 7 || o == 8;
  Image out;
  out.width = transpose ? img.height : img.width;
  out.height = transpose ? img.width : img.height;
  out.bgr.resize(img.bgr.size());
  const size_t sw = static_cast<size_t>(img.width);
  for (int r = 0; r < out.height; ++r) {
    const int r0 = flip_v ? out.height - 1 - r : r;
    uint8_t* d = out.bgr.data() + static_cast<size_t>(r) * static_cast<size_t>(out.width) * 3;
    for (int c = 0; c < out.width; ++c) {
      const int c0 = flip_h ? out.width - 1 - c : c;
      const size_t sy = static_cast<size_t>(transpose ? c0 : r0), sx = static_cast<size_t>(transpose ? r0 : c0);
      const uint8_t* s = img.bgr.data() + (sy * sw + sx) * 3;
      d[3 * c] = s[0];
      d[3 * c + 1] = s[1];
      d[3 * c + 2] = s[2];
    }
  }
  return out;
}

}  // namespace gpen::exif
