#pragma once
// RetinaFace's network input on the host (GPEN's detect()): the photo as float, resized with
// cv2.resize(fx = fy = scale) when scale != 1, minus the BGR mean. Twin: detect_input in
// kernels/cuda/ops_pipeline.h.
#include <cstdint>

namespace gpen::cpu {

constexpr float kRetinaFaceMeanBgr[3] = {104.0f, 117.0f, 123.0f};

// bgr: w x h contiguous; x: nh x nw x 3 floats (detect_input_scale's size; w x h when scale == 1).
void detect_input(const uint8_t* bgr, int w, int h, double scale, int nw, int nh, float* x);

}  // namespace gpen::cpu
