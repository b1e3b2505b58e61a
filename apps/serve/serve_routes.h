#pragma once
// The routes of `gpen serve` (API v1, docs/openapi.yaml), apart from any HTTP library: a request
// is decided on its headers first (404, 405, 401, 413 by Content-Length, 503 when not ready or
// when the queue is full), so that a refused body is never read, and then answered with its body.
// The HTTP side (apps/serve/serve_http.cpp) only moves bytes; the libFuzzer target
// tests/fuzz/fuzz_serve.cpp drives this file directly.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "apps/serve/serve_admission.h"
#include "apps/serve/serve_metrics.h"
#include "apps/serve/service.h"

namespace gpen::serve {

struct Reply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};
// {"error": message} with this status (and Retry-After: 1 on a 503).
Reply json_error(int status, const std::string& message);

// What is known of a request once its headers are read.
struct Head {
  std::string method;
  std::string target;         // path and query, as sent
  std::string authorization;  // the Authorization header, "" when absent
  std::optional<uint64_t> content_length;  // absent: chunked, or no body
};

// A target split into its path and its query's name=value pairs, percent-decoded ('+' is a
// space in the query). Throws BadRequest on a malformed escape.
struct Target {
  std::string path;
  std::vector<std::pair<std::string, std::string>> query;
};
Target parse_target(std::string_view target);

class BadRequest : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Equality of a presented secret and the key whose time does not depend on where they differ.
bool secret_equal(std::string_view presented, std::string_view key);

struct RouterOptions {
  std::string api_key;        // "": the /v1 routes need no Authorization
  size_t max_body = size_t{32} << 20;
  int64_t max_pixels = 24'000'000;
  int queue = 64;
};

enum class Route { page, healthz, readyz, metrics, plan, restore, detect };

// A request the headers let through. The engine routes hold a queue slot until it is destroyed
// (after the answer is written).
struct Accepted {
  Route route;
  bool body = false;     // POST: read the body, then handle()
  bool engine = false;   // runs on a request thread (it waits for the engine), not the I/O thread
  Admission::Ticket ticket;
};

class Router {
 public:
  Router(RestoreService& service, Metrics& metrics, const RouterOptions& opt);
  // The paths requests are counted under in /metrics (anything else is "other").
  static const std::vector<std::string>& route_labels();
  static std::string route_label(std::string_view target);

  std::variant<Reply, Accepted> accept(const Head& head);
  // The answer to an accepted request; never throws.
  Reply handle(const Accepted& a, const Head& head, std::string_view body);

  const RouterOptions& options() const { return opt_; }
  Gauges gauges() const;

 private:
  Reply restore(const Target& t, std::string_view body);
  Reply detect(const Target& t, std::string_view body);
  Reply answer(const Accepted& a, const Head& head, std::string_view body);

  RestoreService& service_;
  Metrics& metrics_;
  RouterOptions opt_;
  Admission admission_;
};

}  // namespace gpen::serve
