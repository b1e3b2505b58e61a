#pragma once
// The official GFPGANv1Clean state dict of a configuration filled with synthetic weights, as a
// Checkpoint that `convert` turns into a .gpw: what `gpen bench --arch gfpgan` times without a
// download, and the random-weight models the tests run the GFPGAN flows with.
#include <cstdint>
#include <string>
#include <vector>

#include "converter/synthetic_checkpoint.h"

namespace gpen::conv {

// Element i of tensor `name`: splitmix64 of (fnv1a64(name) ^ seed) + (i + 1) * golden, its top 24
// bits as v in [-1, 1) (exact in float), scaled by the tensor's role so activations stay O(1).
// tests/reference/export_gfpgan_onnx.py (synthetic_values) draws the same bits for the official
// network: change both or neither.
void synthetic_gfpgan_values(const std::string& name, const std::vector<int64_t>& shape, uint32_t seed, float* out);

class SyntheticGfpganCheckpoint final : public SyntheticCheckpoint {
 public:
  SyntheticGfpganCheckpoint(const GfpganConfig& c, uint32_t seed);
  void read_raw(const SourceTensor& t, void* dst) const override;

 private:
  uint32_t seed_;
};

}  // namespace gpen::conv
