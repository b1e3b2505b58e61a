#pragma once
// What the synthetic checkpoints share (synthetic_gfpgan.h, synthetic_rule.h): an official layout's
// tensors as float32 sources, named and hashed the same way; each subclass fills them by its rule.
#include <cstdint>
#include <string>
#include <vector>

#include "converter/checkpoint.h"
#include "converter/layouts.h"

namespace gpen::conv {

// FNV-1a (64-bit) of a tensor name: where the seeded rules start each tensor's stream.
uint64_t fnv1a64(const std::string& s);

class SyntheticCheckpoint : public Checkpoint {
 protected:
  // `layout`'s tensors, float32, format "synthetic", named `name`.
  SyntheticCheckpoint(const std::vector<TensorSpec>& layout, const std::string& name);
};

}  // namespace gpen::conv
