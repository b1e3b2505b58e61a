#include "converter/synthetic_rule.h"

#include <cmath>

namespace gpen::conv {

void rule_weight_values(const std::string& name, const std::vector<int64_t>& shape, uint64_t seed, float* out) {
  constexpr uint64_t G = 0x9E3779B97F4A7C15ull;
  const uint64_t base = fnv1a64(name) ^ (seed * G);
  int64_t n = 1, fan_in = 1;
  for (int64_t d : shape) n *= d;
  for (size_t d = 1; d < shape.size(); ++d) fan_in *= shape[d];
  float scale, offset = 0.0f;
  if (name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0) {
    scale = 0.0625f;
  } else if (shape.size() == 1) {
    scale = 0.125f, offset = 1.0f;
  } else {
    scale = static_cast<float>(std::exp2(std::floor(std::log2(std::sqrt(3.0 / static_cast<double>(fan_in))) + 0.5)));
  }
  for (int64_t i = 0; i < n; ++i) {
    uint64_t z = base + static_cast<uint64_t>(i + 1) * G;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const float u = static_cast<float>(z >> 40) * 0x1p-23f - 1.0f;
    out[i] = u * scale + offset;
  }
}

SyntheticRuleCheckpoint::SyntheticRuleCheckpoint(const std::vector<TensorSpec>& layout, uint64_t seed,
                                                 const std::string& what)
    : SyntheticCheckpoint(layout, "synthetic " + what + " weights (seed " + std::to_string(seed) + ")"), seed_(seed) {}

void SyntheticRuleCheckpoint::read_raw(const SourceTensor& t, void* dst) const {
  rule_weight_values(t.name, t.shape, seed_, static_cast<float*>(dst));
}

}  // namespace gpen::conv
