// Image files: format sniffing, the whole-file read, the EXIF orientation, and the atomic write;
// the codecs are in image_jpeg.cpp, image_png.cpp, image_webp.cpp and image_bmp.cpp.
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

#include "engine/core/error.h"
#include "engine/photo/exif.h"
#include "engine/photo/image_codecs.h"

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

std::string image_format(const uint8_t* data, size_t size) {
  switch (sniff(data, size)) {
    case Format::jpeg: return "jpg";
    case Format::png: return "png";
    case Format::webp: return "webp";
    case Format::bmp: return "bmp";
    default: return "";
  }
}

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

std::vector<uint8_t> encode_image(const std::string& ext_in, ImageView img, int quality, const ImageMeta* meta) {
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

void write_image(const std::string& path, ImageView img, int quality, const ImageMeta* meta) {
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

}  // namespace gpen
