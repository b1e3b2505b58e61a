#pragma once
// Random-access byte input for the checkpoint readers: a file read with pread (so converting a
// large checkpoint never holds it in memory) or a caller-owned memory buffer (fuzzing, tests).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gpen::conv {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // Copies [offset, offset + n) into dst; throws gpen::Error naming the source when the range
  // is not inside the input.
  virtual void read(uint64_t offset, size_t n, void* dst) const = 0;
  // Memory-backed sources expose their bytes (libzip reads them in place); files return null.
  virtual const uint8_t* memory() const { return nullptr; }
  const std::string& name() const { return name_; }
  // The path of a file source ("" for memory).
  virtual const std::string& path() const { return name_; }

 protected:
  std::string name_;
};

std::unique_ptr<ByteSource> open_file_source(const std::string& path);
// Does not copy: the buffer must outlive the source.
std::unique_ptr<ByteSource> memory_source(const uint8_t* data, size_t size, std::string name);

// Sequential reader over a ByteSource with a growing window, for the pickle interpreter: take(n)
// returns n contiguous bytes valid until the next take().
class ByteReader {
 public:
  ByteReader(const ByteSource& src, uint64_t start, uint64_t limit);
  ByteReader(const uint8_t* data, size_t size, std::string name);
  const uint8_t* take(size_t n);
  uint8_t byte() { return *take(1); }
  uint64_t position() const { return pos_; }
  bool at_end() const { return pos_ >= end_; }
  const std::string& name() const { return name_; }

 private:
  const ByteSource* src_ = nullptr;
  const uint8_t* mem_ = nullptr;
  uint64_t pos_ = 0, end_ = 0;
  std::vector<uint8_t> window_;
  uint64_t window_start_ = 0;
  std::string name_;
};

}  // namespace gpen::conv
