#pragma once
// Writes .gpw files. Tensors are declared first (name, dtype, shape, and either a copy of their
// data or a callback that fills them), then write() lays them out, streams them to a temporary
// file next to the target one tensor at a time (memory: the largest tensor) and renames it into
// place, so a failure never leaves a partial output file.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/tensor.h"

namespace gpen {

class GpwWriter {
 public:
  // Fills exactly `bytes` bytes at dst (256-byte aligned) with the tensor's data.
  using Filler = std::function<void(void* dst, size_t bytes)>;
  // Called after each tensor with bytes written so far and the total file size.
  using Progress = std::function<void(uint64_t done, uint64_t total)>;

  GpwWriter(std::string arch, nlohmann::json config);

  // The dtype recorded as "storage_dtype" in the header (what --dtype asked for). Default f32.
  void set_storage_dtype(DType dt) { storage_dtype_ = dt; }
  // Extra header fields (e.g. "source"); must not clash with the format's own keys.
  void set_meta(const std::string& key, nlohmann::json value);

  void add(const std::string& name, DType dtype, const Shape& shape, Filler fill);
  // Copies `data` (dense, numel * dtype_size bytes) now.
  void add_copy(const std::string& name, DType dtype, const Shape& shape, const void* data);
  // Copies a float tensor, converting to `dtype` (f32, f16 or bf16).
  void add_f32(const std::string& name, DType dtype, const Shape& shape, const float* data);

  size_t size() const { return tensors_.size(); }
  int64_t parameter_count() const;  // sum of numel over the declared tensors
  uint64_t file_bytes() const;  // total size write() will produce

  void write(const std::string& path, const Progress& progress = nullptr) const;

 private:
  struct Pending {
    std::string name;
    DType dtype;
    Shape shape;
    uint64_t bytes;
    Filler fill;
  };
  std::string header_text() const;
  std::string arch_;
  nlohmann::json config_;
  nlohmann::json meta_ = nlohmann::json::object();
  DType storage_dtype_ = DType::f32;
  std::vector<Pending> tensors_;
};

// Stores float values as `dtype` (f32, f16 or bf16) at dst.
void store_f32_as(DType dtype, const float* src, size_t n, void* dst);

}  // namespace gpen
