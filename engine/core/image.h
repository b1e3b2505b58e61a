#pragma once
// An 8-bit BGR image in memory (HWC, 3 channels, as the official GPEN code holds a photo after
// cv2.imread) and the size limits every layer checks against.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpen {

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> bgr;  // height * width * 3
  size_t pixels() const { return static_cast<size_t>(width) * static_cast<size_t>(height); }
};

// Largest image accepted (pixels) and side: bounds the memory an untrusted file can make us allocate.
constexpr int64_t kMaxImagePixels = int64_t{1} << 27;  // 134 M pixels (~400 MB as BGR)
constexpr int kMaxImageSide = 1 << 16;

// Largest face crop side accepted by alignment, warps and paste-back (GPEN uses 256, 512, 1024).
constexpr int kMaxFaceSize = 4096;

}  // namespace gpen
