#pragma once
// The processing step of `gpen video`: the faces of every frame restored. This is the seam where
// the engine's restoring API plugs in; until then each frame goes through FaceRestorer
// (engine/photo/pipeline.h) as one photo, so a restored frame is what `gpen restore` makes of it.
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
};

// Opens the models `a` names (-m, -d, --parse, --device, --precision, --vram-budget, ...).
std::unique_ptr<VideoRestorer> make_restore_processor(const restore_detail::RestoreArgs& a);

}  // namespace gpen::cli
