#pragma once
// An 8-bit BGR image in memory (HWC, 3 channels, as the official GPEN code holds a photo after
// cv2.imread) and the size limits every layer checks against.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace gpen {

// Pixels someone else owns (a numpy array handed in from Python, a caller's frame buffer), read
// in place: every step that only reads a photo takes an ImageView, so a borrowed buffer is never
// copied into an Image first. Same layout as Image (dense HWC BGR); an Image converts implicitly.
struct ImageView {
  int width = 0, height = 0;
  std::span<const uint8_t> bgr;  // height * width * 3
  size_t pixels() const { return static_cast<size_t>(width) * static_cast<size_t>(height); }
};

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> bgr;  // height * width * 3
  size_t pixels() const { return static_cast<size_t>(width) * static_cast<size_t>(height); }
  operator ImageView() const { return {width, height, {bgr.data(), bgr.size()}}; }
};

// An owning copy, for the few steps that must hand back an Image unchanged.
inline Image to_image(ImageView v) { return {v.width, v.height, {v.bgr.begin(), v.bgr.end()}}; }

// Largest image accepted (pixels) and side: bounds the memory an untrusted file can make us allocate.
constexpr int64_t kMaxImagePixels = int64_t{1} << 27;  // 134 M pixels (~400 MB as BGR)
constexpr int kMaxImageSide = 1 << 16;

// Largest face crop side accepted by alignment, warps and paste-back (GPEN uses 256, 512, 1024).
constexpr int kMaxFaceSize = 4096;

}  // namespace gpen
