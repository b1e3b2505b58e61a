#include "engine/video/cv2_convert.h"

#include <cstring>

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "engine/core/error.h"

namespace gpen::video {
namespace {

// Whether every plane's buffer holds `rows` rows from its data pointer on: the decoders allocate
// their pictures at the aligned coded size, so cv2's reading of the coded height stays inside them;
// a frame whose buffers are shorter is converted at its own size instead of being read past its end.
bool holds_rows(const AVFrame* f, int rows) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(static_cast<AVPixelFormat>(f->format));
  if (!d) return false;
  const int planes = (d->flags & AV_PIX_FMT_FLAG_PAL) ? 1 : 4;
  for (int p = 0; p < planes && f->data[p]; ++p) {
    if (f->linesize[p] <= 0) return false;
    const AVBufferRef* b = av_frame_get_plane_buffer(const_cast<AVFrame*>(f), p);
    if (!b) return false;
    const bool chroma = (p == 1 || p == 2) && !(d->flags & AV_PIX_FMT_FLAG_RGB);
    const int r = chroma ? AV_CEIL_RSHIFT(rows, d->log2_chroma_h) : rows;
    if (f->data[p] < b->data || f->data[p] + size_t(f->linesize[p]) * size_t(r) > b->data + b->size) return false;
  }
  return true;
}

}  // namespace

void Cv2Converter::convert(const AVFrame* f, int coded_w, int coded_h, int out_w, int out_h, Image& out) {
  int w = coded_w, h = coded_h;
  if (w < f->width || h < f->height || w < out_w || h < out_h || !holds_rows(f, h)) {
    w = f->width;
    h = f->height;
  }
  GPEN_CHECK(out_w <= w && out_h <= h, "a frame of " + std::to_string(f->width) + "x" + std::to_string(f->height) +
                                           " in a video of " + std::to_string(out_w) + "x" + std::to_string(out_h));
  if (!sws_ || w != width_ || h != height_ || f->format != format_) {
    const auto src = static_cast<AVPixelFormat>(f->format);
    sws_.reset(sws_getContext(w, h, src, w, h, AV_PIX_FMT_BGR24, SWS_BICUBIC, nullptr, nullptr, nullptr));
    const char* name = av_get_pix_fmt_name(src);
    GPEN_CHECK(sws_, std::string("frames in pixel format ") + (name ? name : "unknown") +
                         ", which libswscale cannot convert to BGR");
    rgb_.reset(av_frame_alloc());
    rgb_->format = AV_PIX_FMT_BGR24;
    rgb_->width = w;
    rgb_->height = h;
    GPEN_CHECK(av_frame_get_buffer(rgb_.get(), 32) == 0, "out of memory for a frame of " + std::to_string(w) + "x" +
                                                             std::to_string(h));
    width_ = w;
    height_ = h;
    format_ = f->format;
  }
  sws_scale(sws_.get(), f->data, f->linesize, 0, h, rgb_->data, rgb_->linesize);
  out.width = out_w;
  out.height = out_h;
  out.bgr.resize(size_t(out_w) * out_h * 3);
  for (int y = 0; y < out_h; ++y)
    std::memcpy(out.bgr.data() + size_t(y) * out_w * 3, rgb_->data[0] + size_t(y) * rgb_->linesize[0], size_t(out_w) * 3);
}

}  // namespace gpen::video
