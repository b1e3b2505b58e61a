#pragma once
// The processing step of `gpen video`: the faces of every frame restored by the engine's Restorer
// (engine/photo/restorer.h), the setup `gpen restore` uses, so a restored frame is what `gpen
// restore` makes of that frame. Consecutive frames are handed over together and their faces share
// GPEN batches up to the planned batch.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "apps/restore_common.h"
#include "engine/video/video_pipeline.h"

namespace gpen::cli {

class VideoRestorer : public video::FrameProcessor {
 public:
  virtual std::string describe() const = 0;     // one line for the log: model, device, batch, memory
  virtual nlohmann::json memory() const = 0;    // its planned memory, for the report
  virtual size_t planned_bytes() const = 0;     // weights + arenas + workspace, all of it
  // Before each video's first frame: the face tracks of the previous video end.
  virtual void start_video() = 0;
  // `--smooth`: null when off, else the window and the landmark jitter of the video so far.
  virtual nlohmann::json smoothing() const = 0;
};

// Opens the models `a` names (-m, -d, --parse, --sr, --device, --precision, --vram-budget, ...).
// `smooth` > 0: faces tracked from frame to frame, their landmarks averaged over that many frames
// before alignment (engine/photo/face_tracks.h; 1 tracks and measures, landmarks as detected);
// 0: every frame on its own, as `gpen restore`.
std::unique_ptr<VideoRestorer> make_restore_processor(const restore_detail::RestoreArgs& a, int smooth = 0);

}  // namespace gpen::cli
