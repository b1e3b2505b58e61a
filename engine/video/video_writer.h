#pragma once
// The output file: the processed frames re-encoded (engine/video/encoder_choice.h) in the input's
// colour description, each at its input timestamp (a variable frame rate stays variable), turned
// back to the stored orientation so that the kept display matrix shows them upright again (in
// containers that store one: the mov/mp4 family; elsewhere they are written upright); every
// other stream (audio, subtitles, data, further video) copied packet for packet; the container's
// and the streams' metadata, dispositions, side data and chapters kept. Written under a temporary
// name beside the output and renamed by finish(): a reader never sees a partial file, and a run
// that fails or is cancelled leaves nothing behind.
#include <cstdint>
#include <memory>
#include <string>

#include "engine/video/encoder_choice.h"
#include "engine/video/video_frame.h"
#include "engine/video/video_reader.h"

namespace gpen::video {

class VideoWriter {
 public:
  // Frames given to write() are `width` x `height` (upright, as the reader returns them; other
  // sizes than the input's when the processing step scales). Throws gpen::Error naming `path` or
  // the setting at fault, before anything is written.
  VideoWriter(const VideoReader& in, const std::string& path, const EncodeSettings& settings, int width, int height);
  // A join (engine/video/video_segments.h): the video stream not encoded but copied packet for
  // packet from `encoded`, a stream this writer wrote from the same input (its parameters, side
  // data and metadata); everything else as above.
  VideoWriter(const VideoReader& in, const std::string& path, const AVStream* encoded);
  ~VideoWriter();  // without a successful finish(): the temporary file is removed
  VideoWriter(const VideoWriter&) = delete;
  VideoWriter& operator=(const VideoWriter&) = delete;

  const EncoderChoice& choice() const;
  // frame.copied's packets, then the frame itself (unless frame.end); empties frame.copied.
  void write(VideoFrame& frame);
  // A join's: an encoded packet of the video stream (timestamps in `time_base`), or a packet of
  // another stream as VideoReader::read_other_streams gives it. Both are consumed.
  void write_encoded(AVPacket* packet, AVRational time_base);
  void write_copied(AVPacket* packet);
  // Drains the encoder, finalises the container and renames the temporary file to the output.
  void finish();
  const std::string& temp_path() const;
  // What became of the input's rotation, in words (empty when it had none): kept in the display
  // matrix, or, in a container that has no place for one (Matroska, WebM), the frames written upright.
  const std::string& orientation() const;
  int64_t frames_written() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpen::video
