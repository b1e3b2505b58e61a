#pragma once
// The official GPEN tasks besides face enhancement, in aligned mode: what FaceColorization,
// FaceInpainting and Segmentation2Face do around FaceGAN.process on the whole input image
// (../shared/reference/gpen-semantics.md, "Colorization", "Inpainting", "Seg2Face").
// Pre-processing turns an 8-bit BGR image into the generator input (NHWC RGB, in_size square);
// post-processing turns the raw output (out_size square) into the 8-bit result.
#include <string>

#include "engine/core/image.h"

namespace gpen {

enum class GpenTask { enhance, colorize, inpaint, seg2face };
GpenTask parse_task(const std::string& s);  // "enhance", "colorize", "inpaint", "seg2face"
const char* task_name(GpenTask t);
// The official model the task was released with ("GPEN-Colorization-1024", ...).
const char* task_official_model(GpenTask t);

// enhance, colorize, inpaint: cv2.resize to S x S (bilinear, 8-bit) then (v/255 - 0.5)/0.5.
// seg2face (is_norm=False): the same resize, then v/255 only. Writes S * S * 3 floats.
void task_to_model(GpenTask t, const Image& bgr, int size, float* nhwc_rgb);

// enhance, inpaint: y*0.5+0.5, clip, *255, truncation (kernels/cpu/face_io.h model_to_face).
// seg2face: clip(y, 0, 1) * 255 truncated. colorize: as enhance, then, only when the input is not
// out_size x out_size, colorize_luma(input, out).
Image task_from_model(GpenTask t, const Image& input, const float* nhwc_rgb, int out_size);

// FaceColorization.post_process: `out` resized to the input's size (cv2 bilinear, 8-bit), the
// Y of cv2 BGR2YUV(input) replacing the Y of BGR2YUV(out), then YUV2BGR.
Image colorize_luma(const Image& input, const Image& out);

// cv2.cvtColor COLOR_BGR2YUV / COLOR_YUV2BGR on 8-bit images, bit-exact (14-bit fixed point,
// checked against OpenCV 4.6 on all 2^24 inputs: tests/reference/check_yuv_fixed_point.py).
Image bgr_to_yuv(const Image& bgr);
Image yuv_to_bgr(const Image& yuv);

}  // namespace gpen
