#pragma once
// Demuxing and decoding through FFmpeg's libraries, frames as cv2.VideoCapture gives them: the
// first video stream (cover art aside), decoded by FFmpeg's default decoder for its codec, each
// frame converted to BGR as OpenCV 4.6 converts it (engine/video/cv2_convert.h) and turned upright
// by the stream's display matrix as cv2 does with CAP_PROP_ORIENTATION_AUTO (only rotations by
// 90, 180 and 270 degrees; flips are ignored). Packets of every other stream are handed out with
// the frames for the writer to copy. Damage is counted, not fatal: a packet the decoder rejects,
// a frame it marks corrupt, a read error that ends the file early, fewer frames than the container
// announced; the frames that do decode are still returned.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/image.h"
#include "engine/video/video_frame.h"

struct AVFormatContext;
struct AVCodecContext;

namespace gpen::video {

struct VideoReadOptions {
  bool apply_orientation = true;         // false: frames as stored (cv2 with ORIENTATION_AUTO off)
  int64_t max_pixels = kMaxImagePixels;  // refuse larger frames, from the stream's header
  double start_s = 0;                    // first frame: the first whose time is >= this
  double duration_s = -1;                // frames whose time is < start + this; negative: to the end
  int threads = 0;                       // decoder threads; 0: as cv2 (the cores, at most 16)
  // A segment of a longer run (engine/video/video_segments.h): the output's clock starts where
  // that run's does, at this time (same seconds as start_s), not at the cut's start, so that the
  // segments' packets join without touching a timestamp. Negative: the cut's own start.
  double run_start_s = -1;
  // false: the other streams are left out (a segment's, which the join copies from the input).
  bool other_streams = true;
  // Polled while reading; set, a blocked read returns and read() throws Cancelled.
  const std::atomic<bool>* cancel = nullptr;
};

struct VideoInfo {
  std::string path;
  std::string container;   // the demuxer's name ("mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm")
  std::string codec;       // the video codec's name ("h264")
  std::string pix_fmt;     // as decoded ("yuv420p10le")
  int width = 0, height = 0;                // frames as read() returns them
  int stored_width = 0, stored_height = 0;  // as coded, before the rotation
  int rotation = 0;        // degrees clockwise applied to stored frames: 0, 90, 180 or 270
  double fps = 0;          // the average frame rate (0: unknown)
  double duration_s = 0;   // the container's duration (0: unknown)
  int64_t frames_announced = 0;  // the container's frame count (0: unknown)
  int stream_index = 0;
  int time_base_num = 0, time_base_den = 1;  // of the video stream
  std::string color_range, color_primaries, color_trc, color_space;  // "unknown" when unset
};

// What went wrong while reading (all zero / empty for a clean file).
struct DecodeDamage {
  int64_t rejected_packets = 0;  // the decoder refused them
  int64_t corrupt_frames = 0;    // decoded with errors concealed (still returned)
  std::string read_error;        // the demuxer stopped before the end: FFmpeg's reason
  int64_t missing_frames = 0;    // fewer frames than the container announced (whole-file reads)
  int64_t logged_errors = 0;     // errors FFmpeg's demuxer and decoder logged (concealed damage)
  std::vector<std::string> messages;  // the first of them
  bool any() const {
    return rejected_packets || corrupt_frames || !read_error.empty() || missing_frames || logged_errors;
  }
  std::string describe() const;  // one line, e.g. "3 packets rejected by the decoder, 2 corrupt frames"
};

class VideoReader {
 public:
  // Opens `path`; a file FFmpeg cannot open, or one without a video stream it can decode:
  // gpen::Error "PATH: FFmpeg's reason".
  explicit VideoReader(const std::string& path, const VideoReadOptions& opt = {});
  // The same over bytes in memory (not copied: they must outlive the reader); `name` names it
  // in errors.
  VideoReader(const uint8_t* data, size_t size, const std::string& name, const VideoReadOptions& opt = {});
  ~VideoReader();
  VideoReader(const VideoReader&) = delete;
  VideoReader& operator=(const VideoReader&) = delete;

  const VideoInfo& info() const;
  // The next frame in display order into `frame` (its image buffer reused), with the packets of
  // the other streams read since the previous call in frame.copied (replacing what it held).
  // At the end: false, with frame.end set and the trailing packets in frame.copied.
  bool read(VideoFrame& frame);
  // Instead of read(), without decoding: the next packets of the other streams that the cut keeps
  // (those read() would hand out, in the same order), a few at a time; false at the end.
  bool read_other_streams(std::vector<PacketPtr>& packets);
  int64_t frames_read() const;
  const DecodeDamage& damage() const;

  // For the writer: the demuxer (streams, metadata, chapters) and the timestamp every stream's
  // output is shifted by (the start of a --start cut, or of the run a segment belongs to:
  // run_start_s; in AV_TIME_BASE units; 0 otherwise).
  const AVFormatContext* format() const;
  int64_t start_offset_us() const;
  bool other_streams() const;  // VideoReadOptions::other_streams

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Thrown by the reader and the pipeline when the cancel flag is set.
struct Cancelled : std::exception {
  const char* what() const noexcept override { return "cancelled"; }
};

}  // namespace gpen::video
