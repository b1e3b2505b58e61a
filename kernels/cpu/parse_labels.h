#pragma once
// The face-parsing class map and paste mask (FaceParse.tenor2mask + MASK_COLORMAP of the official
// code): per pixel, the first channel holding the maximum logit, and 255 for the classes kept
// (skin, brows, eyes, nose, lips, hair, neck, ...), 0 for the dropped ones (background, hat,
// cloth). Twin: kernels/cuda/parse_labels.h.
#include <cstdint>

#include "engine/core/tensor.h"

namespace gpen {

// Classes MASK_COLORMAP maps to 0: 0 background, 14 hat, 18 cloth (bit c set = class c dropped).
constexpr uint32_t kParseDropClasses = (1u << 0) | (1u << 14) | (1u << 18);

namespace cpu {

// logits [N, H, W, C] f32 (any strides, 1 <= C <= 32) -> labels and mask, N * H * W bytes each,
// row-major (n, y, x); either may be nullptr. Ties go to the lowest channel; a NaN logit wins
// over every number (torch.argmax), the first NaN among several.
void parse_labels(const TensorView& logits, uint8_t* labels, uint8_t* mask, uint32_t drop = kParseDropClasses);

}  // namespace cpu
}  // namespace gpen
