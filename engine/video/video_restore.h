#pragma once
// A video restored by the engine's Restorer (engine/photo/restorer.h), the setup `gpen restore`
// uses, so a restored frame is what `gpen restore` makes of that frame: the one path of `gpen
// video` and of the Python Restorer.restore_video. Consecutive frames are handed over together and
// their faces share GPEN batches up to the planned batch.
#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "engine/photo/face_tracks.h"
#include "engine/photo/restorer.h"
#include "engine/video/video_pipeline.h"

namespace gpen::video {

// The processing step over a Restorer that the caller opened and keeps. `smooth` > 0 (`gpen video
// --smooth`): faces tracked from frame to frame, their landmarks averaged over that many frames
// before alignment (engine/photo/face_tracks.h; 1 tracks and measures, landmarks as detected); 0:
// every frame on its own, as `gpen restore`.
class RestoreFrames final : public FrameProcessor {
 public:
  explicit RestoreFrames(Restorer& restorer, int smooth = 0);
  int max_frames() const override;
  std::pair<int, int> output_size(int width, int height) const override;
  void process(std::span<VideoFrame* const> frames) override;

  std::string describe() const;   // one line for the log: model, device, batch, memory
  nlohmann::json memory() const;  // its planned memory, for the report
  size_t planned_bytes() const;   // weights + arenas + workspace, all of it
  // Before a video's first frame: the face tracks of the previous video end.
  void start_video();
  // Null when not smoothing, else the window and the landmark jitter of the video so far.
  nlohmann::json smoothing() const;

 private:
  Restorer* r_;
  std::optional<FaceTracks> tracks_;
};

struct VideoJob {
  std::string input, output;
  VideoReadOptions read;  // the cut (start, duration), orientation, --max-pixels
  EncodeSettings encode;  // --codec, --pix-fmt, --crf, --preset
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(const PipelineProgress&)> progress;  // on the encoding thread
  // Called with the temporary name once the output is being written (a watchdog that may end
  // the process removes it), and with "" when the output is complete.
  std::function<void(const std::string&)> writing;
};

// Reads, restores and writes one video; returns its report (video_report.h). Throws gpen::Error
// (nothing written) or Cancelled.
nlohmann::json restore_video(RestoreFrames& restorer, const VideoJob& job);

}  // namespace gpen::video
