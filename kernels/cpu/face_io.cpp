#include "kernels/cpu/face_io.h"

#include <algorithm>

#include "kernels/cpu/image_resize.h"

namespace gpen {

void face_to_model(ImageView src, int size, float* out) {
  Image resized;
  ImageView p = src;
  if (src.width != size || src.height != size) {
    resized = resize_bilinear(src, size, size);
    p = resized;
  }
  const size_t n = static_cast<size_t>(size) * size;
  for (size_t i = 0; i < n; ++i)
    for (int c = 0; c < 3; ++c)
      out[i * 3 + c] = (static_cast<float>(p.bgr[i * 3 + (2 - c)]) / 255.0f - 0.5f) / 0.5f;
}

void model_to_face(const float* in, int size, uint8_t* bgr) {
  const size_t n = static_cast<size_t>(size) * size;
  for (size_t i = 0; i < n; ++i)
    for (int c = 0; c < 3; ++c) {
      float v = std::clamp(in[i * 3 + c] * 0.5f + 0.5f, 0.0f, 1.0f) * 255.0f;
      bgr[i * 3 + (2 - c)] = static_cast<uint8_t>(v);
    }
}

Image model_to_face(const float* in, int size) {
  Image img;
  img.width = img.height = size;
  img.bgr.resize(static_cast<size_t>(size) * size * 3);
  model_to_face(in, size, img.bgr.data());
  return img;
}

}  // namespace gpen
