#pragma once
// Decoding, processing and encoding overlapped: the reader on its own thread, the processing step
// on the calling thread (where the engine's OpenMP and CUDA state live), the writer on its own
// thread, with a fixed pool of frames between them, allocated at the start, so that memory stays
// flat over any length: the processing step's own plan plus frames_in_flight frames. The
// processing step is handed up to max_frames() consecutive frames at once, so that it can batch
// the faces of several frames. Cancellation (the flag set, e.g. by SIGINT) stops every stage at
// its next frame; the writer is then not finished, so its temporary file goes with it.
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <utility>

#include "engine/video/video_frame.h"
#include "engine/video/video_reader.h"
#include "engine/video/video_writer.h"

namespace gpen::video {

// The processing step, e.g. face restoration.
class FrameProcessor {
 public:
  virtual ~FrameProcessor() = default;
  // The most frames one process() call takes (the batch its memory plan holds); at least 1.
  virtual int max_frames() const { return 1; }
  // The size of the frames process() hands back for frames of width x height (the writer's size).
  virtual std::pair<int, int> output_size(int width, int height) const { return {width, height}; }
  // Processes consecutive frames in display order, in place (frame->image may be replaced by an
  // image of output_size()), and sets each frame's `faces`.
  virtual void process(std::span<VideoFrame* const> frames) = 0;
};

struct PipelineProgress {
  int64_t frames = 0;        // written so far
  int64_t frames_total = 0;  // expected (0: unknown)
  int64_t faces = 0;
  double elapsed_s = 0;
};

struct PipelineOptions {
  int queue_frames = 4;  // frames that may wait between decoding and processing, and again before encoding
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(const PipelineProgress&)> progress;  // on the encoding thread, after each frame
};

struct PipelineStats {
  int64_t frames = 0, faces = 0;
  double wall_s = 0;
  // Busy time of each stage (each on its own thread, so they overlap).
  double decode_s = 0, process_s = 0, encode_s = 0;
  int frames_in_flight = 0;  // the pool: every decoded frame in memory at once, at most
  size_t frame_bytes = 0;    // one pooled frame's BGR pixels (the larger of decoded and processed)
  double fps() const { return wall_s > 0 ? double(frames) / wall_s : 0; }
  double faces_per_s() const { return wall_s > 0 ? double(faces) / wall_s : 0; }
};

// Every frame of `reader` through `processor` into `writer`, which is finished at the end.
// Rethrows the first error of any stage (the others stop), or throws Cancelled.
PipelineStats run_pipeline(VideoReader& reader, FrameProcessor& processor, VideoWriter& writer,
                           const PipelineOptions& opt = {});

}  // namespace gpen::video
