#pragma once
#include <stdexcept>
#include <string>

namespace gpen {

// Every user-facing failure is an Error with a one-line message that names the file or the
// value at fault; the CLI prints it and exits non-zero.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

#define GPEN_CHECK(cond, msg)                                   \
  do {                                                          \
    if (!(cond)) throw ::gpen::Error(std::string(msg));         \
  } while (0)

}  // namespace gpen
