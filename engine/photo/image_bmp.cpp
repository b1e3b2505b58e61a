// BMP through stb_image (only its BMP decoder is compiled): OpenCV and stb read the formats
// photos come in as BMP (24/32-bit, 8-bit palette) to the same pixels, and BMP is rare enough
// that a second library is not worth it. stb reads zeros past the end of a truncated file, so the
// pixel array is checked to lie inside the file first.
#include <memory>

#include "engine/core/error.h"
#include "engine/photo/image_codecs.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wdouble-promotion"
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_STDIO
#define STBI_ONLY_BMP
#define STBI_MAX_DIMENSIONS (1 << 16)
#include <stb_image.h>
#pragma GCC diagnostic pop

namespace gpen::codec {

namespace {

uint32_t le32(const uint8_t* p) { return uint32_t(p[3]) << 24 | uint32_t(p[2]) << 16 | uint32_t(p[1]) << 8 | p[0]; }
uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[1] << 8 | p[0]); }

// Uncompressed BMPs must hold every row; stb would read zeros past the end.
void check_bmp(const uint8_t* d, size_t n, const std::string& name, const ReadOptions& opt) {
  GPEN_CHECK(n >= 26, name + ": truncated BMP header");
  const uint32_t off = le32(d + 10), hsize = le32(d + 14);
  int64_t w = 0, h = 0;
  int bpp = 0;
  uint32_t compression = 0;
  if (hsize == 12) {
    w = le16(d + 18);
    h = le16(d + 20);
    bpp = le16(d + 24);
  } else {
    GPEN_CHECK(n >= 34, name + ": truncated BMP header");
    w = static_cast<int32_t>(le32(d + 18));
    h = static_cast<int32_t>(le32(d + 22));
    bpp = le16(d + 28);
    compression = le32(d + 30);
  }
  if (compression != 0 && compression != 3 && compression != 6) return;  // RLE etc.: stb reports it
  GPEN_CHECK(w > 0 && h != 0 && bpp > 0, name + ": corrupt BMP header");
  check_size(w, h < 0 ? -h : h, name, opt);
  const uint64_t stride = (static_cast<uint64_t>(w) * static_cast<uint64_t>(bpp) + 31) / 32 * 4;
  const uint64_t need = static_cast<uint64_t>(off) + stride * static_cast<uint64_t>(h < 0 ? -h : h);
  GPEN_CHECK(need <= n, name + ": truncated BMP (pixel data ends " + std::to_string(need - n) + " bytes early)");
}

}  // namespace

Image decode_bmp(const uint8_t* data, size_t size, const std::string& name, const ReadOptions& opt) {
  check_bmp(data, size, name, opt);
  GPEN_CHECK(size <= static_cast<size_t>(INT32_MAX), name + ": file too large");
  const int len = static_cast<int>(size);
  int w = 0, h = 0, comp = 0;
  if (!stbi_info_from_memory(data, len, &w, &h, &comp)) throw Error(name + ": corrupt BMP (" + stbi_failure_reason() + ")");
  check_size(w, h, name, opt);
  std::unique_ptr<stbi_uc, void (*)(void*)> px(stbi_load_from_memory(data, len, &w, &h, &comp, 3), stbi_image_free);
  if (!px) throw Error(name + ": corrupt BMP (" + stbi_failure_reason() + ")");
  Image img;
  img.width = w;
  img.height = h;
  img.bgr.resize(img.pixels() * 3);
  const stbi_uc* s = px.get();
  for (size_t i = 0; i < img.pixels(); ++i) {
    img.bgr[3 * i] = s[3 * i + 2];
    img.bgr[3 * i + 1] = s[3 * i + 1];
    img.bgr[3 * i + 2] = s[3 * i];
  }
  return img;
}

}  // namespace gpen::codec
