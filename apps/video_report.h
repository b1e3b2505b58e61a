#pragma once
// `gpen video --report`: per video the frames, faces, speed, time per stage, peak RSS, planned
// memory, the codecs and settings chosen and the input's damage; and the one-line summaries.
#include <nlohmann/json.hpp>
#include <string>

#include "apps/restore_common.h"
#include "apps/video_restore.h"
#include "engine/video/video_pipeline.h"

namespace gpen::cli {

nlohmann::json video_report(const restore_detail::Job& job, const video::VideoReader& reader,
                            const video::VideoWriter& writer, const video::PipelineStats& stats,
                            const VideoRestorer& restorer);
// "IN: 300 frames, 57 faces, 24.1 fps -> OUT; H.264 input (h264): libx264 yuv420p, crf 18, preset medium"
std::string video_summary(const nlohmann::json& report);
// The report file: every video's report and the totals.
std::string video_report_file(const nlohmann::json& videos);

}  // namespace gpen::cli
