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

// The views' bytes as they are (contiguous views: the caller names the file in its check) into one
// device allocation, uploaded once as upload_packed does, each view repointed into it: the
// detector's device load.
PackedWeights upload_views(Backend& backend, const std::vector<TensorView*>& views);

// The same layout for a backend whose memory is the host's (the CPU): one allocation of the
// backend's, which advises 2 MiB pages (GPEN streams every conv weight once a forward, and with
// 4 KiB pages each page costs a TLB walk: GPEN-256's 4x4-16x16 layers took 5-37 % less time,
// its forward about 3 %, docs/benchmarks.md), filled view by view with no staging
// copy; each view is repointed into it. `release(data, bytes)` runs once the last view reading
// `data` is copied, so the caller can let that source go and the resident size never holds much
// more than one copy. Views must be contiguous (the caller names the file in its check).
PackedWeights pack_host_weights(Backend& backend, const std::vector<TensorView*>& views,
                                const std::function<void(const void*, size_t)>& release);

}  // namespace gpen
