#pragma once
// CUDA twin of cpu::parse_labels (kernels/cpu/parse_labels.h): same rule (first maximum, NaN wins),
// bit-identical outputs. logits [N, H, W, C] f32 on the device (any strides, C <= 32); labels and
// mask are device buffers of N * H * W bytes (either may be nullptr).
#include <cstdint>

#include "kernels/cpu/parse_labels.h"
#include "kernels/cuda/ops.h"

GPEN_CUDA_NAMESPACE_BEGIN

void parse_labels(const TensorView& logits, uint8_t* labels, uint8_t* mask, uint32_t drop, Stream stream);

GPEN_CUDA_NAMESPACE_END
