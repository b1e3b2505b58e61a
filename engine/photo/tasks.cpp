#include "engine/photo/tasks.h"

#include <algorithm>

#include "engine/core/error.h"
#include "kernels/cpu/face_io.h"
#include "kernels/cpu/image_resize.h"

namespace gpen {

GpenTask parse_task(const std::string& s) {
  if (s == "enhance") return GpenTask::enhance;
  if (s == "colorize") return GpenTask::colorize;
  if (s == "inpaint") return GpenTask::inpaint;
  if (s == "seg2face") return GpenTask::seg2face;
  throw Error("unknown task '" + s + "' (expected enhance, colorize, inpaint or seg2face)");
}

const char* task_name(GpenTask t) {
  switch (t) {
    case GpenTask::colorize: return "colorize";
    case GpenTask::inpaint: return "inpaint";
    case GpenTask::seg2face: return "seg2face";
    case GpenTask::enhance: break;
  }
  return "enhance";
}

const char* task_official_model(GpenTask t) {
  switch (t) {
    case GpenTask::colorize: return "GPEN-Colorization-1024";
    case GpenTask::inpaint: return "GPEN-Inpainting-1024";
    case GpenTask::seg2face: return "GPEN-Seg2face-512";
    case GpenTask::enhance: break;
  }
  return "GPEN-BFR-512";
}

void task_to_model(GpenTask t, const Image& src, int size, float* out) {
  if (t != GpenTask::seg2face) {
    face_to_model(src, size, out);
    return;
  }
  Image resized;
  const Image* p = &src;
  if (src.width != size || src.height != size) {
    resized = resize_bilinear(src, size, size);
    p = &resized;
  }
  const size_t n = static_cast<size_t>(size) * size;
  for (size_t i = 0; i < n; ++i)
    for (int c = 0; c < 3; ++c) out[i * 3 + c] = static_cast<float>(p->bgr[i * 3 + (2 - c)]) / 255.0f;
}

Image task_from_model(GpenTask t, const Image& input, const float* y, int size) {
  if (t == GpenTask::seg2face) {
    Image img;
    img.width = img.height = size;
    const size_t n = static_cast<size_t>(size) * size;
    img.bgr.resize(n * 3);
    for (size_t i = 0; i < n; ++i)
      for (int c = 0; c < 3; ++c)
        img.bgr[i * 3 + (2 - c)] = static_cast<uint8_t>(std::clamp(y[i * 3 + c], 0.0f, 1.0f) * 255.0f);
    return img;
  }
  Image out = model_to_face(y, size);
  if (t == GpenTask::colorize && (input.width != size || input.height != size)) return colorize_luma(input, out);
  return out;
}

namespace {

// OpenCV's 14-bit fixed-point YUV coefficients: round(c * 2^14) of 0.299, 0.587, 0.114 (Y),
// 0.877 (V), 0.492 (U); inverse 1.140, -0.581, -0.395, 2.032.
constexpr int kShift = 14, kHalf = 1 << (kShift - 1), kDelta = 128 << kShift;
constexpr int kR2Y = 4899, kG2Y = 9617, kB2Y = 1868, kR2V = 14369, kB2U = 8061;
constexpr int kV2R = 18678, kV2G = -9519, kU2G = -6472, kU2B = 33292;

uint8_t sat(int v) { return static_cast<uint8_t>(std::clamp(v, 0, 255)); }
// An arithmetic right shift (floor), as OpenCV's CV_DESCALE on negative sums.
int descale(int v) { return (v + kHalf) >> kShift; }

}  // namespace

Image bgr_to_yuv(const Image& src) {
  Image d{src.width, src.height, std::vector<uint8_t>(src.bgr.size())};
  for (size_t i = 0; i < src.bgr.size(); i += 3) {
    const int b = src.bgr[i], g = src.bgr[i + 1], r = src.bgr[i + 2];
    const int y = descale(r * kR2Y + g * kG2Y + b * kB2Y);
    d.bgr[i] = sat(y);
    d.bgr[i + 1] = sat(descale((b - y) * kB2U + kDelta));
    d.bgr[i + 2] = sat(descale((r - y) * kR2V + kDelta));
  }
  return d;
}

Image yuv_to_bgr(const Image& src) {
  Image d{src.width, src.height, std::vector<uint8_t>(src.bgr.size())};
  for (size_t i = 0; i < src.bgr.size(); i += 3) {
    const int y = src.bgr[i], u = src.bgr[i + 1] - 128, v = src.bgr[i + 2] - 128;
    d.bgr[i] = sat(y + descale(u * kU2B));
    d.bgr[i + 1] = sat(y + descale(u * kU2G + v * kV2G));
    d.bgr[i + 2] = sat(y + descale(v * kV2R));
  }
  return d;
}

Image colorize_luma(const Image& input, const Image& out) {
  GPEN_CHECK(input.width > 0 && input.height > 0, "colorize: empty input image");
  const Image rs = (out.width == input.width && out.height == input.height)
                       ? out
                       : resize_bilinear(out, input.width, input.height);
  Image yuv = bgr_to_yuv(rs);
  // Only Y of the input is needed: computed per pixel rather than converting the whole image.
  for (size_t i = 0; i < yuv.bgr.size(); i += 3) {
    const int b = input.bgr[i], g = input.bgr[i + 1], r = input.bgr[i + 2];
    yuv.bgr[i] = sat(descale(r * kR2Y + g * kG2Y + b * kB2Y));
  }
  return yuv_to_bgr(yuv);
}

}  // namespace gpen
