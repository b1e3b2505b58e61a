#include "apps/serve/serve_http.h"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <csignal>
#include <optional>
#include <set>
#include <variant>

#include "engine/core/error.h"
#include "engine/core/version.h"

namespace gpen::serve {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr uint32_t kHeaderLimit = 16 * 1024;
constexpr size_t kBufferLimit = 128 * 1024;  // what is read ahead of the parser
constexpr size_t kReadChunk = 16 * 1024;
// After answering a request whose body is left unread, the connection is half-closed and what the
// client still sends is read and dropped for a moment, so that it sees the answer instead of a
// reset; then it is closed whatever remains.
constexpr auto kLingerTime = std::chrono::seconds(1);
constexpr size_t kLingerBytes = 1 << 20;

auto redirect(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One connection: its socket, and the deadline of what it is doing now (which cancels the
// socket's operations, so that a 408 can still be written).
struct Conn : std::enable_shared_from_this<Conn> {
  Conn(tcp::socket s, asio::io_context& io) : socket(std::move(s)), timer(io), work(io.get_executor()) {}
  tcp::socket socket;
  asio::steady_timer timer;
  // Keeps run() going while the session waits for a request thread.
  asio::executor_work_guard<asio::io_context::executor_type> work;
  unsigned generation = 0;
  bool timed_out = false;
  bool idle = false;

  void arm(std::chrono::milliseconds d) {
    timed_out = false;
    const unsigned gen = ++generation;
    timer.expires_after(d);
    timer.async_wait([self = shared_from_this(), gen](error_code ec) {
      if (ec || gen != self->generation) return;  // re-armed or disarmed meanwhile
      self->timed_out = true;
      error_code ignored;
      self->socket.cancel(ignored);
    });
  }
  void disarm() {
    ++generation;
    timer.cancel();
  }
};

http::response<http::string_body> to_response(const Reply& r, bool keep_alive) {
  http::response<http::string_body> res{static_cast<http::status>(r.status), 11};
  res.set(http::field::server, std::string("gpen-engine/") + gpen::version());
  res.set(http::field::content_type, r.content_type);
  for (const auto& [k, v] : r.headers) res.set(k, v);
  res.keep_alive(keep_alive);
  res.body() = r.body;
  res.prepare_payload();
  return res;
}

Head head_of(const http::request_parser<http::string_body>& p) {
  const auto& req = p.get();
  Head h;
  h.method = std::string(req.method_string());
  h.target = std::string(req.target());
  h.authorization = std::string(req[http::field::authorization]);
  if (p.content_length()) h.content_length = *p.content_length();
  return h;
}

// The answer owed for a request that could not be read, or none (the client is gone).
std::optional<Reply> read_failure(const error_code& ec, bool timed_out, std::chrono::milliseconds limit) {
  if (timed_out)
    return json_error(408, "the request did not arrive within " + std::to_string(limit.count()) + " ms");
  if (ec == http::error::body_limit) return json_error(413, "the body is larger than --max-body");
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow)
    return json_error(431, "the request's headers are larger than 16 KiB");
  if (ec == http::error::partial_message) return json_error(400, "the request ended early");
  if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::operation_aborted ||
      ec == asio::error::connection_reset || ec == asio::error::broken_pipe)
    return std::nullopt;
  return json_error(400, "malformed request: " + ec.message());
}

}  // namespace

struct HttpServer::Impl {
  Impl(Router& r, Metrics& m, const HttpOptions& o)
      : router(r), metrics(m), opt(o), acceptor(io), signals(io, SIGTERM, SIGINT),
        pool(static_cast<size_t>(std::max(1, o.request_threads))) {}

  Router& router;
  Metrics& metrics;
  HttpOptions opt;
  asio::io_context io{1};
  tcp::acceptor acceptor;
  asio::signal_set signals;
  asio::thread_pool pool;
  std::set<std::shared_ptr<Conn>> conns;
  bool draining = false;

  void stop_on_io() {
    if (draining) return;
    draining = true;
    error_code ignored;
    acceptor.close(ignored);
    signals.cancel(ignored);
    // Connections waiting for a request close now; the others after their answer.
    for (const auto& c : conns)
      if (c->idle) c->socket.cancel(ignored);
  }

  asio::awaitable<void> write(Conn& c, const Reply& r, bool keep_alive, error_code& ec) {
    auto res = to_response(r, keep_alive);
    c.arm(opt.read_timeout);  // a client that does not read its answer is dropped too
    co_await http::async_write(c.socket, res, redirect(ec));
    c.disarm();
  }

  asio::awaitable<void> linger(Conn& c) {
    error_code ec;
    c.socket.shutdown(tcp::socket::shutdown_send, ec);
    c.arm(std::chrono::duration_cast<std::chrono::milliseconds>(kLingerTime));
    std::array<char, 16 * 1024> sink;
    size_t dropped = 0;
    while (!ec && dropped < kLingerBytes) dropped += co_await c.socket.async_read_some(asio::buffer(sink), redirect(ec));
    c.disarm();
  }

  // Serves one connection's requests until it closes; returns whether its end should linger.
  asio::awaitable<bool> serve(Conn& c) {
    boost::beast::flat_buffer buffer(kBufferLimit);
    for (;;) {
      if (draining) co_return false;
      error_code ec;
      if (buffer.size() == 0) {
        c.idle = true;
        c.arm(opt.idle_timeout);
        const size_t n = co_await c.socket.async_read_some(buffer.prepare(kReadChunk), redirect(ec));
        c.idle = false;
        if (ec) co_return false;  // closed by the client, idle too long, or stopping: nothing owed
        buffer.commit(n);
      }
      const auto t0 = std::chrono::steady_clock::now();
      c.arm(opt.read_timeout);  // the whole request, headers and body, from its first byte
      http::request_parser<http::string_body> p;
      p.header_limit(kHeaderLimit);
      p.body_limit(router.options().max_body);
      co_await http::async_read_header(c.socket, buffer, p, redirect(ec));
      std::string label = "other";
      std::optional<Reply> reply;
      std::optional<Accepted> accepted;
      Head head;
      bool keep = false, unread = false;
      if (ec) {
        reply = read_failure(ec, c.timed_out, opt.read_timeout);
        unread = true;
      } else {
        head = head_of(p);
        label = Router::route_label(head.target);
        keep = p.get().keep_alive() && !draining;
        auto decision = router.accept(head);
        if (auto* r = std::get_if<Reply>(&decision)) {
          reply = std::move(*r);
          unread = !p.is_done();
        } else {
          accepted = std::move(std::get<Accepted>(decision));
          if (accepted->body && !p.is_done()) {
            if (boost::beast::iequals(p.get()[http::field::expect], "100-continue")) {
              http::response<http::empty_body> cont{http::status::continue_, 11};
              co_await http::async_write(c.socket, cont, redirect(ec));
            }
            if (!ec) co_await http::async_read(c.socket, buffer, p, redirect(ec));
            if (ec) {
              reply = read_failure(ec, c.timed_out, opt.read_timeout);
              accepted.reset();
              unread = true;
            }
          } else if (!p.is_done()) {
            unread = true;  // a body on a route that takes none: left unread
          }
        }
      }
      c.disarm();
      if (!reply && !accepted) co_return false;  // the client is gone
      if (accepted) {
        const std::string_view body = p.get().body();
        if (accepted->engine) {
          Accepted& a = *accepted;
          reply = co_await asio::co_spawn(
              pool, [&]() -> asio::awaitable<Reply> { co_return router.handle(a, head, body); }, asio::use_awaitable);
        } else {
          reply = router.handle(*accepted, head, body);
        }
      }
      if (unread || draining) keep = false;
      error_code wec;
      co_await write(c, *reply, keep, wec);
      metrics.request(label, reply->status, seconds_since(t0));
      accepted.reset();  // the queue slot, held until the answer is out
      if (wec || !keep) co_return unread && !wec;
    }
  }

  asio::awaitable<void> session(std::shared_ptr<Conn> c) {
    try {
      if (co_await serve(*c)) co_await linger(*c);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gpen serve: connection dropped: %s\n", e.what());
    }
    error_code ignored;
    c->disarm();
    c->socket.shutdown(tcp::socket::shutdown_both, ignored);
    c->socket.close(ignored);
    conns.erase(c);
  }

  asio::awaitable<void> refuse(std::shared_ptr<Conn> c) {
    error_code ec;
    co_await write(*c, json_error(503, "too many connections (" + std::to_string(opt.max_connections) + ")"), false,
                   ec);
    c->socket.shutdown(tcp::socket::shutdown_both, ec);
    c->socket.close(ec);
  }

  asio::awaitable<void> listen() {
    for (;;) {
      error_code ec;
      tcp::socket s = co_await acceptor.async_accept(redirect(ec));
      if (ec == asio::error::operation_aborted || draining) co_return;
      if (ec) {
        // Out of descriptors and the like: wait a moment rather than spin.
        asio::steady_timer t(io, std::chrono::milliseconds(50));
        co_await t.async_wait(redirect(ec));
        continue;
      }
      auto c = std::make_shared<Conn>(std::move(s), io);
      if (static_cast<int>(conns.size()) >= opt.max_connections) {
        asio::co_spawn(io, refuse(c), asio::detached);
        continue;
      }
      conns.insert(c);
      asio::co_spawn(io, session(c), asio::detached);
    }
  }
};

HttpServer::HttpServer(Router& router, Metrics& metrics, const HttpOptions& opt)
    : impl_(std::make_unique<Impl>(router, metrics, opt)) {
  error_code ec;
  const auto addr = asio::ip::make_address(opt.host, ec);
  GPEN_CHECK(!ec, "--host " + opt.host + ": not an IP address (" + ec.message() + ")");
  const tcp::endpoint ep(addr, static_cast<unsigned short>(opt.port));
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  GPEN_CHECK(!ec, "cannot listen on " + opt.host + ":" + std::to_string(opt.port) + ": " + ec.message());
}

HttpServer::~HttpServer() = default;

int HttpServer::port() const { return impl_->acceptor.local_endpoint().port(); }

void HttpServer::run() {
  Impl& s = *impl_;
  s.signals.async_wait([&s](error_code ec, int) {
    if (!ec) s.stop_on_io();
  });
  asio::co_spawn(s.io, s.listen(), asio::detached);
  s.io.run();
  s.pool.join();
}

void HttpServer::stop() {
  Impl* s = impl_.get();
  asio::post(s->io, [s] { s->stop_on_io(); });
}

}  // namespace gpen::serve
