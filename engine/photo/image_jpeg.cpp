// JPEG through libjpeg-turbo's libjpeg API, with the settings of OpenCV 4.6's decoder
// (grfmt_jpeg.cpp) so that pixels equal cv2.imread(IMREAD_COLOR) on the same library: default
// DCT method (ISLOW) and fancy upsampling, output straight to BGR, CMYK/YCCK read as CMYK and
// converted with OpenCV's integer formula.
//
// libjpeg reports errors through error_exit, which must not return: it longjmps back to the one
// setjmp below. The function holding it has no locals with destructors and keeps its state in a
// Ctx owned by the caller, so the jump skips no destructor and no local is read after it.
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include "engine/core/error.h"
#include "engine/photo/exif.h"
#include "engine/photo/image_codecs.h"

namespace gpen::codec {

namespace {

// Progressive files may hold any number of scans, each a full pass over the coefficients: a
// tiny hostile file can keep the decoder busy for minutes. Real encoders write about ten.
constexpr int kMaxScans = 500;

struct ErrorMgr {
  jpeg_error_mgr pub;
  jpeg_progress_mgr progress;
  std::jmp_buf jump;
  char msg[JMSG_LENGTH_MAX + 64];
  bool truncated;
};

[[noreturn]] void on_error(j_common_ptr c) {
  auto* e = reinterpret_cast<ErrorMgr*>(c->err);
  (*c->err->format_message)(c, e->msg);
  std::longjmp(e->jump, 1);
}

// Warnings are corrupt data libjpeg would decode from guesses (grey fill after a truncation,
// skipped bad Huffman codes): refused, except the ones real cameras and editors produce. (cv2.imread
// accepts them all; a restoration of grey fill helps nobody.)
void on_message(j_common_ptr c, int level) {
  if (level >= 0) return;  // trace messages
  const int code = c->err->msg_code;
  if (code == JWRN_ADOBE_XFORM || code == JWRN_JFIF_MAJOR || code == JWRN_BOGUS_ICC) return;
  // Padding before the end-of-image marker is a common camera quirk; stray bytes anywhere else
  // mean a damaged marker.
  if (code == JWRN_EXTRANEOUS_DATA && c->err->msg_parm.i[1] == 0xD9) return;
  auto* e = reinterpret_cast<ErrorMgr*>(c->err);
  e->truncated = code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER;
  (*c->err->format_message)(c, e->msg);
  std::longjmp(e->jump, 1);
}

void on_progress(j_common_ptr c) {
  if (!c->is_decompressor) return;
  auto* d = reinterpret_cast<j_decompress_ptr>(c);
  if (d->input_scan_number > kMaxScans) {
    auto* e = reinterpret_cast<ErrorMgr*>(c->err);
    std::snprintf(e->msg, sizeof e->msg, "more than %d scans", kMaxScans);
    std::longjmp(e->jump, 1);
  }
}

void init_errors(ErrorMgr& e, j_common_ptr c) {
  c->err = jpeg_std_error(&e.pub);
  e.pub.error_exit = on_error;
  e.pub.emit_message = on_message;
  e.progress.progress_monitor = on_progress;
  e.msg[0] = 0;
  e.truncated = false;
}

// OpenCV's icvCvt_CMYK2BGR_8u_C4C3R, on the (Adobe-inverted as stored) values libjpeg returns.
void cmyk_to_bgr(const uint8_t* s, uint8_t* d, size_t n) {
  for (size_t i = 0; i < n; ++i, s += 4, d += 3) {
    const int k = s[3];
    d[2] = static_cast<uint8_t>(k - ((255 - s[0]) * k >> 8));
    d[1] = static_cast<uint8_t>(k - ((255 - s[1]) * k >> 8));
    d[0] = static_cast<uint8_t>(k - ((255 - s[2]) * k >> 8));
  }
}

struct DecodeCtx {
  jpeg_decompress_struct cinfo;
  ErrorMgr err;
  const uint8_t* data;
  size_t size;
  const std::string* name;
  const ReadOptions* opt;
  Image* out;
  ImageMeta* meta;
  std::vector<uint8_t>* cmyk_row;
};

// Returns false after a libjpeg error (message in ctx.err.msg); throws gpen::Error for a size over
// the limits, which happens before libjpeg allocates anything of its own beyond the header state.
bool run_decode(DecodeCtx& x) {
  j_decompress_ptr ci = &x.cinfo;
  if (setjmp(x.err.jump)) return false;
  jpeg_mem_src(ci, x.data, static_cast<unsigned long>(x.size));
  jpeg_save_markers(ci, JPEG_APP0 + 1, 0xFFFF);
  jpeg_save_markers(ci, JPEG_APP0 + 2, 0xFFFF);
  jpeg_read_header(ci, TRUE);
  check_size(ci->image_width, ci->image_height, *x.name, *x.opt);
  // OpenCV takes the orientation from the first APP1 marker only, 6 bytes in (an XMP packet
  // first hides it); the EXIF kept for the output is the first APP1 that is one.
  bool first_app1 = true;
  for (jpeg_saved_marker_ptr m = ci->marker_list; m; m = m->next) {
    if (m->marker != JPEG_APP0 + 1 || m->data_length <= 6) continue;
    if (std::memcmp(m->data, "Exif\0\0", 6) == 0 && x.meta->exif.empty()) {
      x.meta->exif.assign(m->data + 6, m->data + m->data_length);
      if (first_app1) x.meta->orientation = exif::orientation(x.meta->exif);
    }
    first_app1 = false;
  }
  JOCTET* icc = nullptr;
  unsigned int icc_len = 0;
  if (jpeg_read_icc_profile(ci, &icc, &icc_len) && icc) {
    x.meta->icc.assign(icc, icc + icc_len);
    std::free(icc);
  }
  const bool cmyk = ci->num_components == 4;
  ci->out_color_space = cmyk ? JCS_CMYK : JCS_EXT_BGR;
  jpeg_start_decompress(ci);
  if (ci->output_components != (cmyk ? 4 : 3)) ERREXIT(ci, JERR_CONVERSION_NOTIMPL);
  Image& img = *x.out;
  img.width = static_cast<int>(ci->output_width);
  img.height = static_cast<int>(ci->output_height);
  img.bgr.resize(img.pixels() * 3);
  const size_t stride = static_cast<size_t>(img.width) * 3;
  if (cmyk) x.cmyk_row->resize(static_cast<size_t>(img.width) * 4);
  while (ci->output_scanline < ci->output_height) {
    const size_t y = ci->output_scanline;
    JSAMPROW row = cmyk ? x.cmyk_row->data() : img.bgr.data() + y * stride;
    if (jpeg_read_scanlines(ci, &row, 1) != 1) ERREXIT(ci, JERR_INPUT_EMPTY);
    if (cmyk) cmyk_to_bgr(x.cmyk_row->data(), img.bgr.data() + y * stride, static_cast<size_t>(img.width));
  }
  jpeg_finish_decompress(ci);
  return true;
}

struct EncodeCtx {
  jpeg_compress_struct cinfo;
  ErrorMgr err;
  const ImageView* img;
  int quality;
  const std::vector<uint8_t>* app1;  // "Exif\0\0" + TIFF, or empty
  const std::vector<uint8_t>* icc;
  unsigned char* buf;
  unsigned long len;
};

bool run_encode(EncodeCtx& x) {
  j_compress_ptr ci = &x.cinfo;
  if (setjmp(x.err.jump)) return false;
  jpeg_mem_dest(ci, &x.buf, &x.len);
  ci->image_width = static_cast<JDIMENSION>(x.img->width);
  ci->image_height = static_cast<JDIMENSION>(x.img->height);
  ci->input_components = 3;
  ci->in_color_space = JCS_EXT_BGR;
  // cv2.imwrite's defaults: libjpeg's (4:2:0, baseline, standard tables) at the given quality.
  jpeg_set_defaults(ci);
  jpeg_set_quality(ci, x.quality, TRUE);
  // EXIF wants its APP1 right after SOI, in place of JFIF's APP0.
  if (!x.app1->empty()) ci->write_JFIF_header = FALSE;
  jpeg_start_compress(ci, TRUE);
  if (!x.app1->empty())
    jpeg_write_marker(ci, JPEG_APP0 + 1, x.app1->data(), static_cast<unsigned int>(x.app1->size()));
  if (!x.icc->empty()) jpeg_write_icc_profile(ci, x.icc->data(), static_cast<unsigned int>(x.icc->size()));
  const size_t stride = static_cast<size_t>(x.img->width) * 3;
  while (ci->next_scanline < ci->image_height) {
    JSAMPROW row = const_cast<uint8_t*>(x.img->bgr.data()) + ci->next_scanline * stride;
    jpeg_write_scanlines(ci, &row, 1);
  }
  jpeg_finish_compress(ci);
  return true;
}

}  // namespace

Image decode_jpeg(const uint8_t* data, size_t size, const std::string& name, const ReadOptions& opt, ImageMeta* meta) {
  Image img;
  std::vector<uint8_t> cmyk_row;
  auto x = std::make_unique<DecodeCtx>();
  std::memset(&x->cinfo, 0, sizeof x->cinfo);
  init_errors(x->err, reinterpret_cast<j_common_ptr>(&x->cinfo));
  jpeg_create_decompress(&x->cinfo);
  x->cinfo.progress = &x->err.progress;  // after create, which clears everything but err
  x->data = data;
  x->size = size;
  x->name = &name;
  x->opt = &opt;
  x->out = &img;
  x->meta = meta;
  x->cmyk_row = &cmyk_row;
  bool ok = false;
  try {
    ok = run_decode(*x);
  } catch (...) {
    jpeg_destroy_decompress(&x->cinfo);
    throw;
  }
  jpeg_destroy_decompress(&x->cinfo);
  if (!ok) {
    *meta = ImageMeta{};
    throw Error(name + (x->err.truncated ? ": truncated JPEG (libjpeg: " : ": corrupt JPEG (libjpeg: ") + x->err.msg + ")");
  }
  return img;
}

std::vector<uint8_t> encode_jpeg(ImageView img, int quality, const std::vector<uint8_t>& exif,
                                 const std::vector<uint8_t>& icc) {
  auto x = std::make_unique<EncodeCtx>();
  std::memset(&x->cinfo, 0, sizeof x->cinfo);
  init_errors(x->err, reinterpret_cast<j_common_ptr>(&x->cinfo));
  jpeg_create_compress(&x->cinfo);
  x->img = &img;
  x->quality = quality;
  // A marker holds at most 65533 bytes; a larger EXIF block (rare: huge maker notes) is dropped.
  std::vector<uint8_t> app1;
  if (!exif.empty() && exif.size() + 6 <= 65533) {
    app1.resize(6 + exif.size());
    std::memcpy(app1.data(), "Exif\0\0", 6);
    std::memcpy(app1.data() + 6, exif.data(), exif.size());
  }
  x->app1 = &app1;
  x->icc = &icc;
  x->buf = nullptr;
  x->len = 0;
  const bool ok = run_encode(*x);
  jpeg_destroy_compress(&x->cinfo);
  std::vector<uint8_t> out;
  if (ok && x->buf) out.assign(x->buf, x->buf + x->len);
  std::free(x->buf);
  GPEN_CHECK(ok, std::string("JPEG encoding failed (libjpeg: ") + x->err.msg + ")");
  return out;
}

}  // namespace gpen::codec
