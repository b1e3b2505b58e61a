#pragma once
// Decoded frames to 8-bit BGR exactly as cv2.VideoCapture gives them (OpenCV 4.6's FFmpeg backend,
// cap_ffmpeg_impl.hpp, on the same libswscale): one SwsContext from the decoder's coded size to
// the same size in BGR24 with SWS_BICUBIC and libswscale's default colourspace (BT.601
// coefficients; limited range unless the pixel format is a full-range "yuvj" one), fed the
// coded height of rows, into a 32-byte-aligned buffer whose top-left stream-sized corner is the
// frame. The rows below the visible ones matter: with 4:2:0 chroma the last visible rows are
// interpolated from chroma rows that only the coded height reaches. The context is made for the
// first frame and kept, as cv2 keeps it (a frame of another format or size makes a new one).
#include <cstdint>

#include "engine/core/image.h"
#include "engine/video/av_util.h"

namespace gpen::video {

class Cv2Converter {
 public:
  // `coded_w` x `coded_h`: the decoder's coded size; `out_w` x `out_h`: the stream's size (what
  // cv2 returns). `out` is resized to out_w x out_h x 3 (its capacity reused).
  void convert(const AVFrame* f, int coded_w, int coded_h, int out_w, int out_h, Image& out);

 private:
  SwsPtr sws_;
  FramePtr rgb_;
  int width_ = 0, height_ = 0, format_ = -1;
};

}  // namespace gpen::video
