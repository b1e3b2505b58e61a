#pragma once
// Reader of .gpw flat weight files: maps the file read-only and hands out TensorViews that point
// straight into the mapping (no copy). The header is validated completely on open, so a corrupt
// or truncated file is a gpen::Error, never a crash; tensor data itself is not checksummed.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/tensor.h"

namespace gpen {

class GpwFile {
 public:
  struct Entry {
    std::string name;
    TensorView view;     // data points into the mapping: read-only memory, do not write
    uint64_t offset = 0;  // from the start of the file
    uint64_t bytes = 0;
  };

  // Maps and validates `path`.
  static GpwFile open(const std::string& path);
  // Validates a copy of `data` (fuzzing, tests); views point into the copy.
  static GpwFile from_memory(const uint8_t* data, size_t size, const std::string& name = "<memory>");
  // True when the first bytes are the .gpw magic.
  static bool has_magic(const std::string& path);

  GpwFile(GpwFile&&) noexcept;
  GpwFile& operator=(GpwFile&&) noexcept;
  ~GpwFile();

  const std::string& path() const { return path_; }
  std::string arch() const { return arch_; }                  // "gpen", "retinaface", ...
  const nlohmann::json& config() const { return config_; }     // architecture configuration
  const nlohmann::json& header() const { return header_; }     // the whole JSON header
  DType storage_dtype() const { return storage_dtype_; }       // --dtype used for weights
  uint64_t file_bytes() const { return size_; }

  const std::vector<Entry>& tensors() const { return entries_; }  // file order
  size_t size() const { return entries_.size(); }
  // nullptr when absent.
  const TensorView* find(const std::string& name) const;
  // Throws gpen::Error naming the file when absent.
  const TensorView& at(const std::string& name) const;
  // Throws unless present with this exact shape (and dtype when given).
  const TensorView& require(const std::string& name, const Shape& shape) const;

  // Lets the pages wholly inside [p, p + bytes) of the mapping go from this process (their
  // contents stay in the file): a loader that has copied a tensor elsewhere keeps the resident
  // size at one copy. Nothing for a from_memory file.
  void drop_pages(const void* p, size_t bytes) const;
  // The same for every page [p, p + bytes) touches, shared ones included: a reader done with a
  // tensor for now (the low-memory mode) lets it go whole; whatever is read again later comes back
  // from the file (the page cache) on that read.
  void release_pages(const void* p, size_t bytes) const;

  int64_t parameter_count() const;   // sum of numel over all tensors
  uint64_t tensor_bytes() const;      // sum of stored tensor bytes

 private:
  GpwFile() = default;
  void parse();

  std::string path_;
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  void* map_ = nullptr;                  // mmap'd region, or null
  std::unique_ptr<uint8_t[]> owned_;     // from_memory copy (256-aligned)
  std::string arch_;
  nlohmann::json config_, header_;
  DType storage_dtype_ = DType::f32;
  std::vector<Entry> entries_;
  std::vector<std::pair<std::string, size_t>> index_;  // sorted name -> entries_ index
};

}  // namespace gpen
