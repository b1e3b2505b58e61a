#pragma once
// The HTTP/1.1 side of `gpen serve`, on Boost.Beast (docs/serving.md says why): one I/O thread
// reads requests and writes answers; the engine routes run on `request_threads` threads. What it
// enforces, each in one place: headers of at most 16 KiB; a request's headers and body must
// arrive within `read_timeout` of its first byte (408); a kept-alive connection with no request is
// closed after `idle_timeout`; at most `max_connections` connections (more are answered 503); a
// body is read only once the router has accepted the request on its headers, and never beyond
// --max-body (413, also for chunked bodies); a connection whose body was left unread is closed.
// stop() (SIGTERM, SIGINT) stops accepting, lets in-flight requests finish, and run() returns.
#include <chrono>
#include <memory>
#include <string>

#include "apps/serve/serve_metrics.h"
#include "apps/serve/serve_routes.h"

namespace gpen::serve {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (port() says which)
  std::chrono::milliseconds read_timeout{30000};
  std::chrono::milliseconds idle_timeout{5000};
  int request_threads = 4;
  int max_connections = 256;
};

class HttpServer {
 public:
  // Binds and listens (gpen::Error naming the address when that fails); serves from run().
  HttpServer(Router& router, Metrics& metrics, const HttpOptions& opt);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  int port() const;
  // Serves on the calling thread until stop() or SIGTERM/SIGINT, then finishes what is in flight.
  void run();
  // From any thread.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpen::serve
