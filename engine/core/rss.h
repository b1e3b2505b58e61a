#pragma once
// The process's peak resident memory (getrusage), as bench, restore and the video reports give it.
#include <sys/resource.h>

namespace gpen {

inline double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;  // Linux reports KiB
}

}  // namespace gpen
