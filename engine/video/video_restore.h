#pragma once
// A video restored by the engine's Restorer (engine/photo/restorer.h), the setup `gpen restore`
// uses, so a restored frame is what `gpen restore` makes of that frame: the one path of `gpen
// video` and of the Python Restorer.restore_video. Consecutive frames are handed over together and
// their faces share GPEN batches up to the planned batch.
#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/photo/restorer.h"
#include "engine/video/video_pipeline.h"

namespace gpen::video {

// The processing step over a Restorer that the caller opened and keeps.
class RestoreFrames final : public FrameProcessor {
 public:
  explicit RestoreFrames(Restorer& restorer) : r_(&restorer) {}
  int max_frames() const override;
  std::pair<int, int> output_size(int width, int height) const override;
  void process(std::span<VideoFrame* const> frames) override;

  std::string describe() const;   // one line for the log: model, device, batch, memory
  nlohmann::json memory() const;  // its planned memory, for the report
  size_t planned_bytes() const;   // weights + arenas + workspace, all of it

 private:
  Restorer* r_;
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
