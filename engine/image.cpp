// Image files: format sniffing, the whole-file read, the EXIF orientation, and the atomic write;
// the codecs are in image_jpeg.cpp, image_png.cpp, image_webp.cpp and image_bmp.cpp. Also the
// OpenCV-compatible bilinear resizing.
#include "engine/image.h"

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

#include "engine/error.h"
#include "engine/exif.h"
#include "engine/image_codecs.h"
#include "engine/linear_taps.h"

namespace gpen {

namespace codec {

void check_size(int64_t w, int64_t h, const std::string& name, const ReadOptions& opt) {
  GPEN_CHECK(w > 0 && h > 0, name + ": corrupt image header (size " + std::to_string(w) + "x" + std::to_string(h) + ")");
  const int64_t limit = std::min(opt.max_pixels, kMaxImagePixels);
  GPEN_CHECK(w <= kMaxImageSide && h <= kMaxImageSide && w * h <= limit,
             name + ": image of " + std::to_string(w) + "x" + std::to_string(h) + " pixels is over the limit (" +
                 std::to_string(limit) + " pixels, at most " + std::to_string(kMaxImageSide) +
                 " a side; see --max-pixels)");
}

}  // namespace codec

namespace {

enum class Format { jpeg, png, webp, bmp, unknown };

Format sniff(const uint8_t* d, size_t n) {
  if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return Format::jpeg;
  static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  if (n >= 8 && std::memcmp(d, png_sig, 8) == 0) return Format::png;
  if (n >= 12 && std::memcmp(d, "RIFF", 4) == 0 && std::memcmp(d + 8, "WEBP", 4) == 0) return Format::webp;
  if (n >= 2 && d[0] == 'B' && d[1] == 'M') return Format::bmp;
  return Format::unknown;
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

Image decode_image(const uint8_t* data, size_t size, const std::string& name, const ReadOptions& opt, ImageMeta* meta) {
  GPEN_CHECK(size > 0, name + ": empty file");
  const Format f = sniff(data, size);
  GPEN_CHECK(f != Format::unknown, name + ": unsupported image format (expected JPEG, PNG, WebP or BMP)");
  ImageMeta local;
  ImageMeta& m = meta ? *meta : local;
  m = ImageMeta{};
  Image img;
  switch (f) {
    case Format::jpeg: img = codec::decode_jpeg(data, size, name, opt, &m); break;
    case Format::png: img = codec::decode_png(data, size, name, opt, &m); break;
    case Format::webp: img = codec::decode_webp(data, size, name, opt, &m); break;
    default: img = codec::decode_bmp(data, size, name, opt); break;
  }
  if (opt.apply_orientation && m.orientation != 1) {
    img = exif::apply_orientation(img, m.orientation);
    // The pixels are upright now: an output carrying this EXIF must not be rotated again.
    m.exif = exif::with_orientation_reset(m.exif);
  }
  return img;
}

Image read_image(const std::string& path, const ReadOptions& opt, ImageMeta* meta) {
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
  return decode_image(buf.data(), buf.size(), path, opt, meta);
}

std::vector<uint8_t> encode_image(const std::string& ext_in, const Image& img, int quality, const ImageMeta* meta) {
  GPEN_CHECK(img.width > 0 && img.height > 0 && img.bgr.size() == img.pixels() * 3,
             "cannot encode an empty or malformed image");
  std::string ext = ext_in;
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::vector<uint8_t> none;
  const std::vector<uint8_t>& exif = meta ? meta->exif : none;
  const std::vector<uint8_t>& icc = meta ? meta->icc : none;
  if (ext == "jpg" || ext == "jpeg") return codec::encode_jpeg(img, std::clamp(quality, 1, 100), exif, icc);
  if (ext == "png") return codec::encode_png(img, exif, icc);
  if (ext == "webp") return codec::encode_webp(img, quality, exif, icc);
  throw Error("unsupported output format '" + ext + "' (use .jpg, .jpeg, .png or .webp)");
}

void write_image(const std::string& path, const Image& img, int quality, const ImageMeta* meta) {
  GPEN_CHECK(img.width > 0 && img.height > 0 && img.bgr.size() == img.pixels() * 3,
             path + ": cannot write an empty or malformed image");
  const std::string ext = lower_ext(path);
  GPEN_CHECK(ext == "png" || ext == "jpg" || ext == "jpeg" || ext == "webp",
             path + ": unsupported output format '" + ext + "' (use .png, .jpg, .jpeg or .webp)");
  std::vector<uint8_t> bytes;
  try {
    bytes = encode_image(ext, img, quality, meta);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  GPEN_CHECK(!bytes.empty(), path + ": encoding failed");

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
#include "engine/no_fp_contract.h"  // NOLINT: must follow the other includes

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
