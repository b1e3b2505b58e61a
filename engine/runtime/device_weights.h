#pragma once
// Weights on a device: every tensor in one allocation, 256-byte aligned slots, staged in one host
// buffer and uploaded with one copy (GPEN and RetinaFace both load this way).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/runtime/backend.h"

namespace gpen {

struct PackedWeights {
  void* base = nullptr;         // the one allocation (backend memory; the caller releases it)
  size_t bytes = 0;             // its size
  std::vector<size_t> offset;   // slot of blob i
};

// Lays out blobs of `sizes[i]` bytes, lets `fill(i, dst)` write blob i into its slot of the host
// staging buffer, then allocates and uploads once.
PackedWeights upload_packed(Backend& backend, const std::vector<size_t>& sizes,
                            const std::function<void(size_t, uint8_t*)>& fill);

}  // namespace gpen
