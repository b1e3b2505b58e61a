#pragma once
// What every file of engine/video needs from FFmpeg's libraries: owning pointers for their
// objects, their error codes as text, and the capture of what they log (FFmpeg writes its own
// diagnostics through av_log; the video job reports them per video instead of printing them).
extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/frame.h>
#include <libswscale/swscale.h>
}

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gpen::video {

struct FrameFree {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct CodecFree {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct SwsFree {
  void operator()(SwsContext* s) const { sws_freeContext(s); }
};
using FramePtr = std::unique_ptr<AVFrame, FrameFree>;
using CodecPtr = std::unique_ptr<AVCodecContext, CodecFree>;
using SwsPtr = std::unique_ptr<SwsContext, SwsFree>;

// av_strerror's text for an FFmpeg error code ("Invalid data found when processing input").
std::string av_error_text(int err);

// A time in seconds from a timestamp and its time base (0 for AV_NOPTS_VALUE).
double seconds(int64_t ts, AVRational tb);

// The video stream cv2.VideoCapture reads: the first that is not cover art (nullptr: none).
AVStream* first_video_stream(const AVFormatContext* ic);

// Sets each colour field of a stream's parameters (range, primaries, transfer, matrix, chroma
// location) that holds no value FFmpeg names to "unspecified". Demuxers copy these fields from the
// file unchecked, and a damaged file's out-of-range value is not a value of its C++ enum type: read
// as one it is undefined behaviour, and written to an encoder it would be refused.
void drop_unnamed_color_fields(AVCodecParameters* par);

// The messages FFmpeg logs at error level or worse, kept (a count and the first few) instead of
// printed, apart for the input's side (demuxers, decoders: the input's damage) and the output's
// (muxers, encoders). One capture for the process: the video job handles one video at a time.
struct LoggedErrors {
  int64_t count = 0;
  std::vector<std::string> first;  // "[h264 @ 0x...] error while decoding MB 3 4, bytestream 1480"
};
void capture_ffmpeg_log();  // installs the capture (idempotent); the reader and writer call it
LoggedErrors take_logged_errors(bool input_side);  // what was captured since the last take, then cleared

}  // namespace gpen::video
