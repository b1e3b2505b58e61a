#pragma once
// The process's peak resident memory (getrusage), as bench and restore report it.
#include <sys/resource.h>

namespace gpen::cli {

inline double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;  // Linux reports KiB
}

}  // namespace gpen::cli
