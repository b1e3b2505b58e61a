#include "engine/core/version.h"

// Defined for this file alone (CMakeLists.txt), so a new version recompiles one file.
#ifndef GPEN_VERSION
#error "GPEN_VERSION must be defined by the build (CMakeLists.txt)"
#endif

namespace gpen {

const char* version() { return GPEN_VERSION; }

}  // namespace gpen
