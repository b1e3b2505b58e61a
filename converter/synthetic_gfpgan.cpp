#include "converter/synthetic_gfpgan.h"

#include <cmath>
#include <cstring>

namespace gpen::conv {

void synthetic_gfpgan_values(const std::string& name, const std::vector<int64_t>& shape, uint32_t seed, float* out) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  const uint64_t base = fnv1a64(name) ^ seed;
  auto ends = [&name](const char* suf) {
    const size_t k = std::strlen(suf);
    return name.size() >= k && name.compare(name.size() - k, k, suf) == 0;
  };
  float scale = 1.0f, offset = 0.0f;
  if (ends("modulation.bias")) {
    scale = 0.125f, offset = 1.0f;
  } else if (name.find(".noises.") != std::string::npos || ends("constant_input.weight")) {
  } else if (ends(".weight") && n == 1) {  // StyleConv noise strength
    scale = 0.125f, offset = 0.25f;
  } else if (ends(".bias")) {
    scale = 0.125f;
  } else if (shape.size() >= 2) {
    const int64_t fan_in = shape.size() == 5 ? n / (shape[0] * shape[1]) : n / shape[0];
    scale = static_cast<float>(std::sqrt(3.0 / static_cast<double>(fan_in)));
  }
  for (int64_t i = 0; i < n; ++i) {
    uint64_t z = base + static_cast<uint64_t>(i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const float v = static_cast<float>(static_cast<int64_t>(z >> 40) - (int64_t{1} << 23)) / 8388608.0f;
    // Scales of 1/8 are exact, so v * scale + offset rounds once, fused or not, as NumPy's.
    out[i] = offset == 0.0f ? v * scale : offset + v * scale;
  }
}

SyntheticGfpganCheckpoint::SyntheticGfpganCheckpoint(const GfpganConfig& c, uint32_t seed)
    : SyntheticCheckpoint(gfpgan_layout(c), "synthetic GFPGANv1Clean weights (seed " + std::to_string(seed) + ")"),
      seed_(seed) {}

void SyntheticGfpganCheckpoint::read_raw(const SourceTensor& t, void* dst) const {
  synthetic_gfpgan_values(t.name, t.shape, seed_, static_cast<float*>(dst));
}

}  // namespace gpen::conv
