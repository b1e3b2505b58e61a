// PNG through libpng with the transforms of OpenCV 4.6's decoder (grfmt_png.cpp) for
// IMREAD_COLOR: 16-bit reduced to the high byte (png_set_strip_16), palette and low-depth gray
// expanded, alpha (also from tRNS) dropped without compositing, gray replicated, no gamma.
//
// libpng reports errors by longjmp to png_jmpbuf; the functions holding the setjmp keep their
// state in a Ctx owned by the caller and have no locals with destructors.
#include <png.h>

#include <csetjmp>
#include <cstring>
#include <memory>

#include "engine/core/error.h"
#include "engine/photo/exif.h"
#include "engine/photo/image_codecs.h"

namespace gpen::codec {

namespace {

constexpr uint64_t kMaxDeflateRatio = 1032;

struct Msg {
  char text[256];
  bool truncated;
};

[[noreturn]] void on_error(png_structp png, png_const_charp msg) {
  auto* m = static_cast<Msg*>(png_get_error_ptr(png));
  std::snprintf(m->text, sizeof m->text, "%s", msg);
  png_longjmp(png, 1);
}
void on_warning(png_structp, png_const_charp) {}  // ancillary problems: the chunk is skipped

struct Reader {
  const uint8_t* data;
  size_t size, pos;
  Msg* msg;
};

void read_fn(png_structp png, png_bytep out, size_t n) {
  auto* r = static_cast<Reader*>(png_get_io_ptr(png));
  if (n > r->size - r->pos) {
    r->msg->truncated = true;
    png_error(png, "the file ends early");
  }
  std::memcpy(out, r->data + r->pos, n);
  r->pos += n;
}

struct DecodeCtx {
  png_structp png = nullptr;
  png_infop info = nullptr;
  Msg msg{};
  Reader reader{};
  const std::string* name = nullptr;
  const ReadOptions* opt = nullptr;
  Image* out = nullptr;
  ImageMeta* meta = nullptr;
  std::vector<png_bytep>* rows = nullptr;
};

bool run_decode(DecodeCtx& x) {
  png_structp png = x.png;
  png_infop info = x.info;
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_read_fn(png, &x.reader, read_fn);
  png_read_info(png, info);
  const png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  check_size(w, h, *x.name, *x.opt);
  const int depth = png_get_bit_depth(png, info), type = png_get_color_type(png, info);
  // Deflate expands data at most 1032-fold, so the bytes left in the file bound the pixels it can
  // hold. A header claiming more would fail for want of image data anyway: refused before its
  // pixels are allocated and cleared, so that a few bytes cannot cost megabytes.
  const uint64_t pixel_bytes = (uint64_t{w} * h * png_get_channels(png, info) * static_cast<uint64_t>(depth) + 7) / 8;
  if (pixel_bytes > uint64_t{x.reader.size - x.reader.pos} * kMaxDeflateRatio)
    throw Error(*x.name + ": corrupt PNG (" + std::to_string(x.reader.size - x.reader.pos) +
                " bytes of image data cannot hold the " + std::to_string(w) + "x" + std::to_string(h) +
                " pixels of its header)");
  png_charp icc_name = nullptr;
  int icc_comp = 0;
  png_bytep icc = nullptr;
  png_uint_32 icc_len = 0;
  if (png_get_iCCP(png, info, &icc_name, &icc_comp, &icc, &icc_len) && icc) x.meta->icc.assign(icc, icc + icc_len);
  png_uint_32 exif_len = 0;
  png_bytep exif_data = nullptr;
  if (png_get_eXIf_1(png, info, &exif_len, &exif_data) && exif_data) {
    x.meta->exif.assign(exif_data, exif_data + exif_len);
    x.meta->orientation = exif::orientation(x.meta->exif);
  }
  if (depth == 16) png_set_strip_16(png);
  if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if ((type & PNG_COLOR_MASK_COLOR) == 0 && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  png_set_strip_alpha(png);  // also the alpha that palette expansion makes from tRNS
  if (type & PNG_COLOR_MASK_COLOR) {
    png_set_bgr(png);
  } else {
    png_set_gray_to_rgb(png);
  }
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != static_cast<size_t>(w) * 3) png_error(png, "unexpected row layout after conversion");
  Image& img = *x.out;
  img.width = static_cast<int>(w);
  img.height = static_cast<int>(h);
  img.bgr.resize(img.pixels() * 3);
  x.rows->resize(h);
  for (size_t y = 0; y < h; ++y) (*x.rows)[y] = img.bgr.data() + y * static_cast<size_t>(w) * 3;
  png_read_image(png, x.rows->data());
  png_read_end(png, nullptr);
  return true;
}

// Whether every chunk up to IEND lies inside the file. libpng allocates (and clears) a chunk's
// buffer from its length field before reading it, up to 8 MB; a file whose chunks run past its end
// fails anyway, so it is refused before a length it cannot back costs that much.
bool chunks_fit(const uint8_t* d, size_t n) {
  if (n < 8) return false;
  size_t pos = 8;  // after the signature
  while (n - pos >= 12) {
    const uint64_t len = uint64_t{d[pos]} << 24 | uint64_t{d[pos + 1]} << 16 | uint64_t{d[pos + 2]} << 8 | d[pos + 3];
    if (len + 12 > n - pos) return false;
    if (std::memcmp(d + pos + 4, "IEND", 4) == 0) return true;
    pos += static_cast<size_t>(len) + 12;
  }
  return false;
}

struct Writer {
  std::vector<uint8_t>* out;
};

void write_fn(png_structp png, png_bytep data, size_t n) {
  auto* w = static_cast<Writer*>(png_get_io_ptr(png));
  w->out->insert(w->out->end(), data, data + n);
}
void flush_fn(png_structp) {}

struct EncodeCtx {
  png_structp png = nullptr;
  png_infop info = nullptr;
  Msg msg{};
  Writer writer{};
  const ImageView* img = nullptr;
  const std::vector<uint8_t>* exif = nullptr;
  const std::vector<uint8_t>* icc = nullptr;
  std::vector<png_bytep>* rows = nullptr;
};

bool run_encode(EncodeCtx& x) {
  png_structp png = x.png;
  png_infop info = x.info;
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_write_fn(png, &x.writer, write_fn, flush_fn);
  // An ICC profile libpng finds inconsistent is then left out with a warning, not an error.
  png_set_benign_errors(png, 1);
  // cv2.imwrite's default compression (level 1: fast, somewhat larger files).
  png_set_compression_level(png, 1);
  const png_uint_32 w = static_cast<png_uint_32>(x.img->width), h = static_cast<png_uint_32>(x.img->height);
  png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (!x.icc->empty())
    png_set_iCCP(png, info, "ICC profile", PNG_COMPRESSION_TYPE_BASE, x.icc->data(), static_cast<png_uint_32>(x.icc->size()));
  if (!x.exif->empty())
    png_set_eXIf_1(png, info, static_cast<png_uint_32>(x.exif->size()), const_cast<png_bytep>(x.exif->data()));
  png_write_info(png, info);
  png_set_bgr(png);
  x.rows->resize(h);
  for (size_t y = 0; y < h; ++y) (*x.rows)[y] = const_cast<png_bytep>(x.img->bgr.data()) + y * static_cast<size_t>(w) * 3;
  png_write_image(png, x.rows->data());
  png_write_end(png, nullptr);
  return true;
}

}  // namespace

Image decode_png(const uint8_t* data, size_t size, const std::string& name, const ReadOptions& opt, ImageMeta* meta) {
  GPEN_CHECK(chunks_fit(data, size), name + ": truncated PNG (a chunk runs past the end of the file)");
  Image img;
  std::vector<png_bytep> rows;
  auto x = std::make_unique<DecodeCtx>();
  x->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &x->msg, on_error, on_warning);
  GPEN_CHECK(x->png, name + ": out of memory reading PNG");
  x->info = png_create_info_struct(x->png);
  if (!x->info) {
    png_destroy_read_struct(&x->png, nullptr, nullptr);
    throw Error(name + ": out of memory reading PNG");
  }
  // The signature was checked by the caller; libpng reads it again.
  x->reader = Reader{data, size, 0, &x->msg};
  x->name = &name;
  x->opt = &opt;
  x->out = &img;
  x->meta = meta;
  x->rows = &rows;
  bool ok = false;
  try {
    ok = run_decode(*x);
  } catch (...) {
    png_destroy_read_struct(&x->png, &x->info, nullptr);
    throw;
  }
  png_destroy_read_struct(&x->png, &x->info, nullptr);
  if (!ok) {
    *meta = ImageMeta{};
    throw Error(name + (x->msg.truncated ? ": truncated PNG (libpng: " : ": corrupt PNG (libpng: ") + x->msg.text + ")");
  }
  return img;
}

std::vector<uint8_t> encode_png(ImageView img, const std::vector<uint8_t>& exif, const std::vector<uint8_t>& icc) {
  std::vector<uint8_t> out;
  std::vector<png_bytep> rows;
  auto x = std::make_unique<EncodeCtx>();
  x->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &x->msg, on_error, on_warning);
  GPEN_CHECK(x->png, "out of memory writing PNG");
  x->info = png_create_info_struct(x->png);
  if (!x->info) {
    png_destroy_write_struct(&x->png, nullptr);
    throw Error("out of memory writing PNG");
  }
  x->writer.out = &out;
  x->img = &img;
  x->exif = &exif;
  x->icc = &icc;
  x->rows = &rows;
  const bool ok = run_encode(*x);
  png_destroy_write_struct(&x->png, &x->info);
  GPEN_CHECK(ok, std::string("PNG encoding failed (libpng: ") + x->msg.text + ")");
  return out;
}

}  // namespace gpen::codec
