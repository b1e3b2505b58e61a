#pragma once
// An official layout filled with the seeded weight rule of tests/reference/make_codeformer_fixtures.py
// (its docstring has the rule), as a Checkpoint that `convert` turns into a .gpw: the synthetic
// CodeFormer and RestoreFormer++ weights `gpen bench` times without a download, and which
// tests/reference/export_transformer_onnx.py gives the official network bit for bit.
#include <cstdint>
#include <string>
#include <vector>

#include "converter/synthetic_checkpoint.h"

namespace gpen::conv {

// Element i of tensor `name` (shape `shape`): uniform in [-1, 1) from the name and index, times a
// power-of-two scale by the tensor's role (bias 2^-4; other rank 1: 2^-3 around 1; else about
// sqrt(3 / fan_in)), so the float product is exact and fused multiply-adds change nothing.
void rule_weight_values(const std::string& name, const std::vector<int64_t>& shape, uint64_t seed, float* out);

class SyntheticRuleCheckpoint final : public SyntheticCheckpoint {
 public:
  // `layout`'s tensors, each by the rule of its name.
  SyntheticRuleCheckpoint(const std::vector<TensorSpec>& layout, uint64_t seed, const std::string& what);
  void read_raw(const SourceTensor& t, void* dst) const override;

 private:
  uint64_t seed_;
};

}  // namespace gpen::conv
