#include "converter/synthetic_checkpoint.h"

namespace gpen::conv {

uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001B3ull;
  return h;
}

SyntheticCheckpoint::SyntheticCheckpoint(const std::vector<TensorSpec>& layout, const std::string& name) {
  format_ = "synthetic";
  name_ = name;
  for (const TensorSpec& s : layout) {
    SourceTensor t;
    t.name = s.name;
    t.shape = s.shape;
    t.numel = 1;
    for (int64_t d : s.shape) t.numel *= static_cast<uint64_t>(d);
    t.nbytes = t.numel * 4;
    tensors_.push_back(std::move(t));
  }
  index_tensors();
}

}  // namespace gpen::conv
