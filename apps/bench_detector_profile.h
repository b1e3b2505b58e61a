#pragma once
// gpen bench --arch retinaface --profile: the network's nodes timed alone (apps/bench_profile.h),
// plus a table by part of the detector (stem, maxpool, 1x1 / 3x3 convs by stride, FPN, SSH,
// heads, the residual relu), so kernel work starts from where the detector's time goes.
#include <nlohmann/json.hpp>

#include "engine/models/retinaface.h"
#include "engine/photo/image.h"

namespace gpen::cli {

// The photo prepared as detect() does (resized when detect_input_scale says, minus the mean),
// max(3, runs) profiled runs; the profile_summary JSON with "by_part" and each node's "part", and
// on the host the CPU peak and each conv's "path" (add_cpu_peak: the CPU conv rule's choice).
nlohmann::json detector_profile(RetinaFaceDetector& det, const Image& img, int runs, bool on_host);
// The part table, then print_profile's op table and slowest nodes.
void print_detector_profile(const nlohmann::json& s, int top);

}  // namespace gpen::cli
