#include "weights/json_parse.h"

#include "engine/core/error.h"

namespace gpen {

nlohmann::json parse_untrusted_json(const char* data, size_t size, const std::string& what, int max_depth) {
  using J = nlohmann::json;
  J::parser_callback_t limit = [&](int depth, J::parse_event_t, J&) -> bool {
    if (depth > max_depth) throw Error(what + ": JSON nested deeper than " + std::to_string(max_depth) + " levels");
    return true;
  };
  try {
    return J::parse(data, data + size, limit, /*allow_exceptions=*/true);
  } catch (const J::exception& e) {
    std::string msg = e.what();
    if (msg.size() > 160) msg = msg.substr(0, 160) + "...";
    throw Error(what + ": malformed JSON: " + msg);
  }
}

}  // namespace gpen
