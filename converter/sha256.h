#pragma once
// SHA-256 (FIPS 180-4), streamed, so `gpen fetch` can check a downloaded checkpoint against a
// published or pinned sum without a crypto library.
#include <cstddef>
#include <cstdint>
#include <string>

namespace gpen {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  std::string hex();  // finishes the hash; the object must not be updated afterwards

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t fill_ = 0;
  uint64_t total_ = 0;
};

// Lower-case hex SHA-256 of a file's bytes. Throws gpen::Error naming the file when unreadable.
std::string sha256_file(const std::string& path);

}  // namespace gpen
