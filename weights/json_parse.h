#pragma once
// Parses untrusted JSON (a .gpw or safetensors header) with a nesting limit, turning every parse
// failure into a one-line gpen::Error that names `what`.
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace gpen {

nlohmann::json parse_untrusted_json(const char* data, size_t size, const std::string& what,
                                            int max_depth = 16);

}  // namespace gpen
