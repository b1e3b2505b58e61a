#pragma once
// Reads the tensors of a state dict from a PyTorch checkpoint (zip format of torch >= 1.6, or
// the legacy pickle-stream format) or a safetensors file, without executing anything and without
// loading tensor data until asked. Nested checkpoints ({"g_ema": {...}}, {"state_dict": {...}},
// "params_ema"...) are searched for their dict of tensors; `module.` prefixes are stripped.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "converter/byte_source.h"
#include "converter/src_dtype.h"

namespace gpen::conv {

struct SourceTensor {
  std::string name;  // key in the state dict, without a `module.` prefix
  SrcDType dtype = SrcDType::f32;
  std::vector<int64_t> shape;
  uint64_t numel = 0;
  uint64_t nbytes = 0;
  // Where the bytes are: storage index (reader-specific) and byte offset inside it.
  uint32_t storage = 0;
  uint64_t byte_offset = 0;

  std::string shape_str() const;
};

struct OpenOptions {
  // Name of the nested dict holding the tensors (e.g. "g_ema"); empty: found automatically.
  // A dotted path ("state_dict.model") walks nested dicts. For safetensors, keeps the tensors
  // named "<key>.*" and strips that prefix.
  std::string key;
};

class Checkpoint {
 public:
  virtual ~Checkpoint() = default;

  // Opens by content (zip magic, legacy pickle, safetensors header); errors name the path.
  static std::unique_ptr<Checkpoint> open(const std::string& path, const OpenOptions& opt = {});
  // Same, over a caller-owned buffer that must outlive the Checkpoint (fuzzing, tests).
  static std::unique_ptr<Checkpoint> open_memory(const uint8_t* data, size_t size, const std::string& name,
                                                 const OpenOptions& opt = {});

  // "pytorch-zip", "pytorch-legacy" or "safetensors".
  const std::string& format() const { return format_; }
  // The nested key the tensors were found under ("" when the top level is the state dict).
  const std::string& selected_key() const { return selected_key_; }
  const std::string& name() const { return name_; }
  const std::vector<SourceTensor>& tensors() const { return tensors_; }
  const SourceTensor* find(const std::string& name) const;

  // Copies the tensor's raw little-endian bytes (t.nbytes of them) into dst.
  virtual void read_raw(const SourceTensor& t, void* dst) const = 0;
  // Reads a floating-point tensor converted to float32.
  std::vector<float> read_f32(const SourceTensor& t) const;

 protected:
  std::string format_, selected_key_, name_;
  std::vector<SourceTensor> tensors_;
  void index_tensors();

 private:
  std::vector<std::pair<std::string, size_t>> sorted_;  // name -> tensors_ index, for find()
};

}  // namespace gpen::conv
