#pragma once
// What travels from the reader through the processing step to the writer: one decoded frame as
// cv2.VideoCapture.read() gives it, its timing, and the packets of the other streams (audio,
// subtitles, data) that the demuxer read on the way to it, copied to the output untouched.
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/core/image.h"

struct AVPacket;

namespace gpen::video {

struct PacketFree {
  void operator()(AVPacket* p) const;
};
using PacketPtr = std::unique_ptr<AVPacket, PacketFree>;

struct VideoFrame {
  Image image;            // 8-bit BGR, upright as cv2 shows it (unless orientation is ignored)
  int64_t index = 0;      // display order from 0
  int64_t pts = 0;        // in the video stream's time base, as decoded
  int64_t duration = 0;   // likewise (0: unknown)
  double time_s = 0;      // seconds from the first frame read
  int faces = 0;          // faces restored in it (the processing step sets this)
  bool end = false;       // no image: the stream has ended; `copied` holds the trailing packets
  std::vector<PacketPtr> copied;
};

}  // namespace gpen::video
