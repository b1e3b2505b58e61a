#pragma once
// A long video restored in segments on several workers and joined without re-encoding at the
// joins (python3 -m gpen_engine.ray_restore, docs/video.md): the segments start at keyframes, so
// each decodes on its own to the frames a single run decodes; each is restored by restore_video
// with its timestamps kept on the whole run's clock (VideoReadOptions::run_start_s) and without
// the other streams; join_segments then copies the segments' video packets as they are and the
// input's other streams as a single run copies them, through the same writer. The joined file
// holds the frames, timestamps and other streams of a single run; the video packets themselves
// may differ near the joins, where each segment's encoder started afresh (a new GOP, FFV1's
// context states reset), decoding to the same frames with a lossless encoder.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/video/video_reader.h"

namespace gpen::video {

// The times, in the seconds of VideoReadOptions::start_s, at which a cut begins exactly at each
// keyframe of the video stream after its first: a quarter of a time-base tick before the
// keyframe's timestamp, so that no rounding moves a cut onto a neighbouring frame. Reads the
// packets only (no decoding). gpen::Error naming the file when FFmpeg cannot open it.
std::vector<double> keyframe_cuts(const std::string& path);

// Joins `segments` (in order; restored from `source` with the same run_start_s as `run`'s
// start_s and other_streams off) into `output`: their video packets copied, the other streams of
// `source` within the cut `run` describes copied as restore_video copies them. Written under a
// temporary name and renamed at the end. Returns the video packets written. gpen::Error naming
// the file at fault.
int64_t join_segments(const std::string& source, const std::vector<std::string>& segments,
                      const std::string& output, const VideoReadOptions& run);

}  // namespace gpen::video
