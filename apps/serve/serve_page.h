#pragma once
// The page `gpen serve` answers GET / with: apps/serve/serve_page.html, embedded at build time
// (apps/serve/CMakeLists.txt), self-contained (no external URL: it works offline).
#include <string_view>

namespace gpen::serve {
extern const std::string_view kServePage;
}
