// Image decode/encode with stb_image (compiled here, static, only the formats the engine accepts)
// and OpenCV-compatible bilinear resizing.
//
// stb_image decodes damaged files leniently: it reads zeros past the end of a truncated JPEG or
// BMP and returns an image. The container checks below (segment walk to an end-of-image marker,
// PNG chunk walk to IEND, BMP pixel array inside the file) turn those cases into errors first.
#include "engine/photo/image.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "engine/core/error.h"
#include "kernels/cpu/linear_taps.h"

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
#define STBI_ONLY_JPEG
#define STBI_ONLY_PNG
#define STBI_ONLY_BMP
#define STBI_MAX_DIMENSIONS (1 << 16)
#include <stb_image.h>
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBI_WRITE_NO_STDIO
#include <stb_image_write.h>
#pragma GCC diagnostic pop

namespace gpen {

namespace {

enum class Format { jpeg, png, bmp, unknown };

Format sniff(const uint8_t* d, size_t n) {
  if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return Format::jpeg;
  static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  if (n >= 8 && std::memcmp(d, png_sig, 8) == 0) return Format::png;
  if (n >= 2 && d[0] == 'B' && d[1] == 'M') return Format::bmp;
  return Format::unknown;
}

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }
uint32_t le32(const uint8_t* p) { return uint32_t(p[3]) << 24 | uint32_t(p[2]) << 16 | uint32_t(p[1]) << 8 | p[0]; }
uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[1] << 8 | p[0]); }

// stb_image 2.27 builds Huffman tables without checking that a DHT table declares at most 256
// codes, and writes past its arrays when one does: every table is checked here first.
void check_dht(const uint8_t* p, size_t len, const std::string& name) {
  while (len > 0) {
    GPEN_CHECK(len >= 17, name + ": corrupt JPEG (short Huffman table)");
    size_t codes = 0;
    for (int i = 1; i <= 16; ++i) codes += p[i];
    GPEN_CHECK(codes <= 256, name + ": corrupt JPEG (Huffman table with " + std::to_string(codes) + " codes)");
    GPEN_CHECK(17 + codes <= len, name + ": corrupt JPEG (Huffman table runs past its segment)");
    p += 17 + codes;
    len -= 17 + codes;
  }
}

// Walks every marker segment (validating Huffman tables, also those between the scans of a
// progressive file) and skips entropy-coded data, up to the end-of-image marker: stb would
// otherwise decode a truncated file from zeros it reads past the end. Inside entropy-coded data
// 0xFF is always followed by 0x00 (stuffing), a restart marker or more 0xFF fill, so any other
// FF xx there is a real marker.
void check_jpeg(const uint8_t* d, size_t n, const std::string& name) {
  size_t i = 2;
  bool scanned = false;
  for (;;) {
    GPEN_CHECK(i < n, name + (scanned ? ": truncated JPEG (no end-of-image marker)"
                                      : ": truncated JPEG (ends before the image data)"));
    GPEN_CHECK(d[i] == 0xFF, name + ": corrupt JPEG (no marker at byte " + std::to_string(i) + ")");
    while (i < n && d[i] == 0xFF) ++i;  // fill bytes
    GPEN_CHECK(i < n, name + ": truncated JPEG (no end-of-image marker)");
    const uint8_t m = d[i++];
    if (m == 0xD9) {
      GPEN_CHECK(scanned, name + ": corrupt JPEG (end of image before any scan)");
      return;
    }
    if (m == 0xD8 || (m >= 0xD0 && m <= 0xD7) || m == 0x01) continue;  // no length
    GPEN_CHECK(i + 2 <= n, name + ": truncated JPEG (segment runs past the end of the file)");
    const size_t len = static_cast<size_t>(d[i]) << 8 | d[i + 1];
    GPEN_CHECK(len >= 2 && i + len <= n, name + ": truncated JPEG (segment runs past the end of the file)");
    if (m == 0xC4) check_dht(d + i + 2, len - 2, name);
    i += len;
    if (m != 0xDA) continue;
    scanned = true;
    for (;;) {  // entropy-coded data up to the next real marker
      while (i < n && d[i] != 0xFF) ++i;
      GPEN_CHECK(i + 1 < n, name + ": truncated JPEG (no end-of-image marker)");
      const uint8_t next = d[i + 1];
      if (next == 0x00 || (next >= 0xD0 && next <= 0xD7)) {
        i += 2;
      } else if (next == 0xFF) {
        ++i;
      } else {
        break;
      }
    }
  }
}

void check_png(const uint8_t* d, size_t n, const std::string& name) {
  size_t i = 8;
  for (;;) {
    GPEN_CHECK(i + 8 <= n, name + ": truncated PNG (no IEND chunk)");
    const uint64_t len = be32(d + i);
    GPEN_CHECK(len <= 0x7FFFFFFFu && i + 12 + len <= n, name + ": truncated PNG (a chunk runs past the end of the file)");
    if (std::memcmp(d + i + 4, "IEND", 4) == 0) return;
    i += static_cast<size_t>(12 + len);
  }
}

// Uncompressed BMPs must hold every row; stb would read zeros past the end.
void check_bmp(const uint8_t* d, size_t n, const std::string& name) {
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
  const uint64_t stride = (static_cast<uint64_t>(w) * static_cast<uint64_t>(bpp) + 31) / 32 * 4;
  const uint64_t need = static_cast<uint64_t>(off) + stride * static_cast<uint64_t>(h < 0 ? -h : h);
  GPEN_CHECK(need <= n, name + ": truncated BMP (pixel data ends " + std::to_string(need - n) + " bytes early)");
}

const char* format_name(Format f) {
  switch (f) {
    case Format::jpeg: return "JPEG";
    case Format::png: return "PNG";
    case Format::bmp: return "BMP";
    default: return "image";
  }
}

std::string lower_ext(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string e = path.substr(dot + 1);
  for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e;
}

}  // namespace

Image decode_image(const uint8_t* data, size_t size, const std::string& name) {
  GPEN_CHECK(size > 0, name + ": empty file");
  const Format f = sniff(data, size);
  GPEN_CHECK(f != Format::unknown, name + ": unsupported image format (expected JPEG, PNG or BMP)");
  GPEN_CHECK(size <= static_cast<size_t>(INT32_MAX), name + ": file too large");
  if (f == Format::jpeg) check_jpeg(data, size, name);
  if (f == Format::png) check_png(data, size, name);
  if (f == Format::bmp) check_bmp(data, size, name);
  int w = 0, h = 0, comp = 0;
  const int len = static_cast<int>(size);
  if (!stbi_info_from_memory(data, len, &w, &h, &comp))
    throw Error(name + ": corrupt " + format_name(f) + " (" + stbi_failure_reason() + ")");
  GPEN_CHECK(w > 0 && h > 0 && w <= kMaxImageSide && h <= kMaxImageSide &&
                 int64_t{w} * h <= kMaxImagePixels,
             name + ": image size " + std::to_string(w) + "x" + std::to_string(h) + " is out of range");
  std::unique_ptr<stbi_uc, void (*)(void*)> px(stbi_load_from_memory(data, len, &w, &h, &comp, 3), stbi_image_free);
  if (!px) throw Error(name + ": corrupt " + format_name(f) + " (" + stbi_failure_reason() + ")");
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

Image read_image(const std::string& path) {
  std::error_code ec;
  GPEN_CHECK(std::filesystem::exists(path, ec), path + ": no such file");
  GPEN_CHECK(std::filesystem::is_regular_file(path, ec), path + ": not a regular file");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  GPEN_CHECK(in, path + ": cannot open (" + std::strerror(errno) + ")");
  const std::streamoff end = in.tellg();
  GPEN_CHECK(end >= 0, path + ": cannot read");
  // Even a 134 Mpixel BMP is under 512 MiB; anything larger is not an image we accept.
  GPEN_CHECK(end <= (std::streamoff{1} << 29), path + ": file too large for an image");
  std::vector<uint8_t> buf(static_cast<size_t>(end));
  in.seekg(0);
  if (!buf.empty()) in.read(reinterpret_cast<char*>(buf.data()), end);
  GPEN_CHECK(in, path + ": read error");
  return decode_image(buf.data(), buf.size(), path);
}

void write_image(const std::string& path, const Image& img, int quality) {
  GPEN_CHECK(img.width > 0 && img.height > 0 && img.bgr.size() == img.pixels() * 3,
             path + ": cannot write an empty or malformed image");
  const std::string ext = lower_ext(path);
  const bool png = ext == "png", jpg = ext == "jpg" || ext == "jpeg";
  GPEN_CHECK(png || jpg, path + ": unsupported output format '" + ext + "' (use .png, .jpg or .jpeg)");
  std::vector<uint8_t> rgb(img.bgr.size());
  for (size_t i = 0; i < img.pixels(); ++i) {
    rgb[3 * i] = img.bgr[3 * i + 2];
    rgb[3 * i + 1] = img.bgr[3 * i + 1];
    rgb[3 * i + 2] = img.bgr[3 * i];
  }
  std::vector<uint8_t> bytes;
  auto sink = [](void* ctx, void* data, int n) {
    if (n <= 0) return;
    auto* v = static_cast<std::vector<uint8_t>*>(ctx);
    const size_t old = v->size();
    v->resize(old + static_cast<size_t>(n));
    std::memcpy(v->data() + old, data, static_cast<size_t>(n));
  };
  const int ok = png ? stbi_write_png_to_func(sink, &bytes, img.width, img.height, 3, rgb.data(), img.width * 3)
                     : stbi_write_jpg_to_func(sink, &bytes, img.width, img.height, 3, rgb.data(),
                                              std::clamp(quality, 1, 100));
  GPEN_CHECK(ok && !bytes.empty(), path + ": encoding failed");

  std::string tmp = path + ".tmpXXXXXX";
  const int fd = mkstemp(tmp.data());
  GPEN_CHECK(fd >= 0, path + ": cannot create a temporary file beside it (" + std::strerror(errno) + ")");
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(path + ": write failed (" + std::strerror(e) + ")");
    }
    done += static_cast<size_t>(w);
  }
  // mkstemp creates 0600; an output image gets the usual permissions.
  const mode_t um = ::umask(0);
  ::umask(um);
  ::fchmod(fd, 0666 & ~um);
  if (::close(fd) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    throw Error(path + ": cannot write (" + std::strerror(e) + ")");
  }
}

// ---------------------------------------------------------------------------------- resize

// cv2.resize on x86-64 sums its taps with separate multiplies and adds; with -mfma GCC would fuse
// them and move a result by an ulp (and the CUDA twin, which never fuses, would disagree).
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

void resize_bilinear_f32(const float* src, int sw, int sh, int cn, float* dst, int dw, int dh, double fx, double fy) {
  GPEN_CHECK(sw > 0 && sh > 0 && dw > 0 && dh > 0 && cn > 0, "resize: empty image");
  const std::vector<LinearTap> tx = linear_taps(sw, dw, fx > 0 ? fx : static_cast<double>(dw) / sw);
  const std::vector<LinearTap> ty = linear_taps(sh, dh, fy > 0 ? fy : static_cast<double>(dh) / sh);
  const size_t row = static_cast<size_t>(dw) * static_cast<size_t>(cn);
  // Horizontal pass of each needed source row, then the vertical blend, as OpenCV orders it.
  std::vector<float> h0(row), h1(row);
  int have0 = -1, have1 = -1;
  auto hpass = [&](int y, float* out) {
    const float* s = src + static_cast<size_t>(y) * static_cast<size_t>(sw) * static_cast<size_t>(cn);
    for (int x = 0; x < dw; ++x) {
      const LinearTap& t = tx[static_cast<size_t>(x)];
      for (int c = 0; c < cn; ++c)
        out[static_cast<size_t>(x) * cn + c] = s[static_cast<size_t>(t.i0) * cn + c] * t.a0 +
                                               s[static_cast<size_t>(t.i1) * cn + c] * t.a1;
    }
  };
  for (int y = 0; y < dh; ++y) {
    const LinearTap& t = ty[static_cast<size_t>(y)];
    if (have0 != t.i0) {
      if (have1 == t.i0) {
        std::swap(h0, h1);
        std::swap(have0, have1);
      } else {
        hpass(t.i0, h0.data());
        have0 = t.i0;
      }
    }
    if (have1 != t.i1) {
      hpass(t.i1, h1.data());
      have1 = t.i1;
    }
    float* d = dst + static_cast<size_t>(y) * row;
    for (size_t i = 0; i < row; ++i) d[i] = h0[i] * t.a0 + h1[i] * t.a1;
  }
}

Image resize_bilinear(const Image& src, int dw, int dh) {
  GPEN_CHECK(src.width > 0 && src.height > 0 && src.bgr.size() == src.pixels() * 3, "resize: empty image");
  GPEN_CHECK(dw > 0 && dh > 0 && dw <= kMaxImageSide && dh <= kMaxImageSide &&
                 int64_t{dw} * dh <= kMaxImagePixels,
             "resize: target size " + std::to_string(dw) + "x" + std::to_string(dh) + " is out of range");
  const int sw = src.width, sh = src.height, cn = 3;
  const std::vector<LinearTap> tx = linear_taps(sw, dw, static_cast<double>(dw) / sw);
  const std::vector<LinearTap> ty = linear_taps(sh, dh, static_cast<double>(dh) / sh);
  // OpenCV's 8-bit path: weights as 11-bit fixed point, horizontal sums in int, and the vertical
  // blend of its SIMD kernel: ((b0 * (r0 >> 4)) >> 16) + ((b1 * (r1 >> 4)) >> 16), rounded by 2 bits.
  auto fix = [](float a) { return static_cast<int>(std::lrint(a * 2048.0f)); };
  Image out;
  out.width = dw;
  out.height = dh;
  out.bgr.resize(out.pixels() * 3);
  const size_t row = static_cast<size_t>(dw) * cn;
  std::vector<int> h0(row), h1(row);
  auto hpass = [&](int y, int* o) {
    const uint8_t* s = src.bgr.data() + static_cast<size_t>(y) * static_cast<size_t>(sw) * cn;
    for (int x = 0; x < dw; ++x) {
      const LinearTap& t = tx[static_cast<size_t>(x)];
      const int a0 = fix(t.a0), a1 = fix(t.a1);
      for (int c = 0; c < cn; ++c)
        o[static_cast<size_t>(x) * cn + c] = s[static_cast<size_t>(t.i0) * cn + c] * a0 + s[static_cast<size_t>(t.i1) * cn + c] * a1;
    }
  };
  for (int y = 0; y < dh; ++y) {
    const LinearTap& t = ty[static_cast<size_t>(y)];
    hpass(t.i0, h0.data());
    hpass(t.i1, h1.data());
    const int b0 = fix(t.a0), b1 = fix(t.a1);
    uint8_t* d = out.bgr.data() + static_cast<size_t>(y) * row;
    for (size_t i = 0; i < row; ++i) {
      const int v = (((b0 * (h0[i] >> 4)) >> 16) + ((b1 * (h1[i] >> 4)) >> 16) + 2) >> 2;
      d[i] = static_cast<uint8_t>(std::clamp(v, 0, 255));
    }
  }
  return out;
}

}  // namespace gpen
