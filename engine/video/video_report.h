#pragma once
// The report of a restored video (`gpen video --report`, Restorer.restore_video in Python): the
// frames, faces, speed, time per stage, peak RSS, planned memory, the codecs and settings chosen
// and the input's damage; and the one-line summaries.
#include <nlohmann/json.hpp>
#include <string>

#include "engine/video/video_pipeline.h"
#include "engine/video/video_restore.h"

namespace gpen::video {

nlohmann::json video_report(const std::string& input, const std::string& output, const VideoReader& reader,
                            const VideoWriter& writer, const PipelineStats& stats, const RestoreFrames& restorer);
// "IN: 300 frames, 57 faces, 24.1 fps -> OUT; H.264 input (h264): libx264 yuv420p, crf 18, preset medium"
std::string video_summary(const nlohmann::json& report);
// The report file: every video's report and the totals.
std::string video_report_file(const nlohmann::json& videos);

}  // namespace gpen::video
