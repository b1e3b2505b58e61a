#pragma once
// SHA-256 of downloaded checkpoints (`gpen fetch` checks published or pinned sums), streamed,
// through OpenSSL's EVP interface.
#include <cstddef>
#include <string>

typedef struct evp_md_ctx_st EVP_MD_CTX;

namespace gpen {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t n);
  std::string hex();  // finishes the hash; the object must not be updated afterwards

 private:
  EVP_MD_CTX* ctx_;
};

// Lower-case hex SHA-256 of a file's bytes. Throws gpen::Error naming the file when unreadable.
std::string sha256_file(const std::string& path);

}  // namespace gpen
