#pragma once
// The engine's version, as written once in the top CMakeLists.txt (project(... VERSION ...)):
// `gpen --version`, the .gpw producer field, fetch's User-Agent and the Python package's
// __version__ all read it here (tests/check_version.py checks that they agree).
namespace gpen {

// "MAJOR.MINOR.PATCH".
const char* version();

}  // namespace gpen
