#include "apps/serve/serve_routes.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstdio>

#include "apps/detect_json.h"
#include "apps/serve/serve_batcher.h"
#include "apps/serve/serve_page.h"
#include "engine/core/error.h"
#include "engine/photo/image.h"

namespace gpen::serve {

namespace {

// The routing table: path, method, whether it is under /v1 (authenticated), and whether it runs on
// the engine (a queue slot, a request thread).
struct RouteRow {
  const char* path;
  const char* method;
  Route route;
  bool v1;
  bool engine;
};
constexpr std::array<RouteRow, 7> kRoutes = {{
    {"/", "GET", Route::page, false, false},
    {"/healthz", "GET", Route::healthz, false, false},
    {"/readyz", "GET", Route::readyz, false, false},
    {"/metrics", "GET", Route::metrics, false, false},
    {"/v1/plan", "GET", Route::plan, true, false},
    {"/v1/restore", "POST", Route::restore, true, true},
    {"/v1/detect", "POST", Route::detect, true, true},
}};

const RouteRow* find_route(std::string_view path) {
  for (const RouteRow& r : kRoutes)
    if (path == r.path) return &r;
  return nullptr;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      const int hi = i + 2 < s.size() ? hex_value(s[i + 1]) : -1;
      const int lo = i + 2 < s.size() ? hex_value(s[i + 2]) : -1;
      if (hi < 0 || lo < 0) throw BadRequest("malformed percent-escape in the request target");
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += plus_is_space && s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

Reply json_reply(int status, const nlohmann::json& j) {
  Reply r;
  r.status = status;
  // Messages may quote a request's bytes (a path, a parameter): invalid UTF-8 becomes U+FFFD.
  r.body = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

// The query of /v1/restore: each parameter at most once, each value from its list or range.
struct RestoreQuery {
  std::string format;  // "" = the input's
  int quality = 95;    // `gpen restore --jpeg-quality`'s default
  RestoreRequest request;
};

bool flag(const std::string& name, const std::string& v) {
  if (v == "1" || v == "true") return true;
  if (v == "0" || v == "false") return false;
  throw BadRequest(name + "=" + v + ": expected 0 or 1");
}

void check_once(const Target& t) {
  for (size_t i = 0; i < t.query.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (t.query[i].first == t.query[j].first) throw BadRequest("'" + t.query[i].first + "' is given twice");
}

RestoreQuery restore_query(const Target& t, const ServiceInfo& info) {
  check_once(t);
  RestoreQuery q;
  for (const auto& [k, v] : t.query) {
    if (k == "format") {
      if (v != "jpg" && v != "jpeg" && v != "png" && v != "webp")
        throw BadRequest("format=" + v + ": expected jpg, png or webp");
      q.format = v;
    } else if (k == "quality") {
      int n = 0;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || end != v.data() + v.size() || n < 1 || n > 100)
        throw BadRequest("quality=" + v + ": expected an integer from 1 to 100");
      q.quality = n;
    } else if ((k == "mask" || k == "sr") && info.model != "GPEN") {
      // The facexlib flows (GFPGAN, CodeFormer, RestoreFormer) paste by the mask chosen at start and have no
      // background super-resolution.
      throw BadRequest(k + " is an option of GPEN models; this server runs a " + info.model + " model");
    } else if (k == "mask") {
      if (v != "rect" && v != "parse") throw BadRequest("mask=" + v + ": expected rect or parse");
      q.request.mask = v;
    } else if (k == "aligned") {
      q.request.aligned = flag(k, v);
    } else if (k == "sr") {
      q.request.sr = flag(k, v);
    } else {
      throw BadRequest("unknown parameter '" + k + "' (format, quality, mask, aligned, sr)");
    }
  }
  if (q.request.mask == "parse" && !info.parser)
    throw BadRequest("mask=parse needs the face parser: start gpen serve with --parse PARSENET.gpw");
  if (q.request.sr && !info.sr) throw BadRequest("sr=1 needs RealESRNet: start gpen serve with --sr REALESRNET.gpw");
  if (q.request.aligned && !q.request.mask.empty())
    throw BadRequest("mask chooses how faces are pasted into photos; aligned=1 pastes nothing");
  return q;
}

std::string content_type_of(const std::string& format) {
  if (format == "png") return "image/png";
  if (format == "webp") return "image/webp";
  return "image/jpeg";
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Reply json_error(int status, const std::string& message) {
  Reply r = json_reply(status, {{"error", message}});
  if (status == 503) r.headers.emplace_back("Retry-After", "1");
  if (status == 401) r.headers.emplace_back("WWW-Authenticate", "Bearer");
  return r;
}

Target parse_target(std::string_view target) {
  Target t;
  const size_t q = target.find('?');
  t.path = percent_decode(target.substr(0, q), false);
  if (q == std::string_view::npos) return t;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    t.query.emplace_back(percent_decode(pair.substr(0, eq), true),
                         eq == std::string_view::npos ? std::string() : percent_decode(pair.substr(eq + 1), true));
  }
  return t;
}

bool secret_equal(std::string_view presented, std::string_view key) {
  if (key.empty()) return false;
  // Runs over the whole presented value whatever matches: the time says nothing of the key.
  unsigned char diff = presented.size() != key.size();
  for (size_t i = 0; i < presented.size(); ++i)
    diff |= static_cast<unsigned char>(presented[i] ^ key[i % key.size()]);
  return diff == 0;
}

Router::Router(RestoreService& service, Metrics& metrics, const RouterOptions& opt)
    : service_(service), metrics_(metrics), opt_(opt), admission_(opt.queue) {}

const std::vector<std::string>& Router::route_labels() {
  static const std::vector<std::string> labels = [] {
    std::vector<std::string> v;
    for (const RouteRow& r : kRoutes) v.emplace_back(r.path);
    return v;
  }();
  return labels;
}

std::string Router::route_label(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  const RouteRow* r = find_route(path);
  return r ? r->path : "other";
}

Gauges Router::gauges() const {
  Gauges g;
  g.queue_depth = admission_.depth();
  g.queue_limit = admission_.limit();
  g.ready = service_.ready();
  if (g.ready) {
    g.batch_limit = service_.info().batch_limit;
    g.batch_queue_depth = service_.batch_depth();
    const MemoryFigures m = service_.memory();
    g.weights_bytes = m.weights_bytes;
    g.arena_bytes = m.arena_bytes;
    g.workspace_bytes = m.workspace_bytes;
  }
  g.resident_bytes = resident_bytes();
  return g;
}

std::variant<Reply, Accepted> Router::accept(const Head& head) {
  Target t;
  try {
    t = parse_target(head.target);
  } catch (const BadRequest& e) {
    return json_error(400, e.what());
  }
  const RouteRow* row = find_route(t.path);
  if (!row) return json_error(404, "no route " + t.path + " (see docs/openapi.yaml)");
  if (head.method != row->method) {
    Reply r = json_error(405, head.method + " " + row->path + ": the method is " + row->method);
    r.headers.emplace_back("Allow", row->method);
    return r;
  }
  if (row->v1 && !opt_.api_key.empty()) {
    constexpr std::string_view kBearer = "Bearer ";
    const std::string& a = head.authorization;
    if (a.size() < kBearer.size() || a.compare(0, kBearer.size(), kBearer) != 0 ||
        !secret_equal(std::string_view(a).substr(kBearer.size()), opt_.api_key))
      return json_error(401, "this route needs Authorization: Bearer <the key of --api-key-file>");
  }
  if (row->v1 && !service_.ready()) return json_error(503, "the models are still loading");
  Accepted acc{row->route, row->engine, row->engine, {}};
  if (head.content_length && *head.content_length > opt_.max_body)
    return json_error(413, "the body is " + std::to_string(*head.content_length) + " bytes, more than the " +
                               std::to_string(opt_.max_body) + " of --max-body");
  if (row->engine) {
    acc.ticket = admission_.try_enter();
    if (!acc.ticket)
      return json_error(503, "the request queue is full (" + std::to_string(admission_.limit()) + " requests)");
  }
  return acc;
}

Reply Router::handle(const Accepted& a, const Head& head, std::string_view body) {
  try {
    return answer(a, head, body);
  } catch (const BadRequest& e) {
    return json_error(400, e.what());
  } catch (const QueueFull& e) {
    return json_error(503, e.what());
  } catch (const std::exception& e) {
    return json_error(500, e.what());
  }
}

Reply Router::answer(const Accepted& a, const Head& head, std::string_view body) {
  const Target t = parse_target(head.target);
  if (a.route != Route::restore) check_once(t);
  if (a.route != Route::restore && !t.query.empty())
    throw BadRequest("unknown parameter '" + t.query.front().first + "' (this route takes none)");
  switch (a.route) {
    case Route::page: {
      Reply r;
      r.content_type = "text/html; charset=utf-8";
      r.body = std::string(kServePage);
      return r;
    }
    case Route::healthz:
      return json_reply(200, {{"status", "alive"}});
    case Route::readyz:
      return service_.ready() ? json_reply(200, {{"status", "ready"}}) : json_reply(503, {{"status", "loading"}});
    case Route::metrics: {
      Reply r;
      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
      r.body = metrics_.render(gauges());
      return r;
    }
    case Route::plan:
      return json_reply(200, service_.plan());
    case Route::restore:
      return restore(t, body);
    case Route::detect:
      return detect(t, body);
  }
  return json_error(500, "unhandled route");
}

namespace {

Image decode_body(std::string_view body, int64_t max_pixels, ImageMeta* meta) {
  ReadOptions ro;
  ro.max_pixels = max_pixels;
  try {
    return decode_image(reinterpret_cast<const uint8_t*>(body.data()), body.size(), "image", ro, meta);
  } catch (const Error& e) {
    throw BadRequest(e.what());
  }
}

}  // namespace

Reply Router::restore(const Target& t, std::string_view body) {
  const auto t0 = std::chrono::steady_clock::now();
  const RestoreQuery q = restore_query(t, service_.info());
  ImageMeta meta;
  const Image photo = decode_body(body, opt_.max_pixels, &meta);
  std::string format = q.format.empty() ? image_format(reinterpret_cast<const uint8_t*>(body.data()), body.size())
                                        : q.format;
  if (format == "bmp") format = "png";  // as `gpen restore` names a BMP's output
  const RestoreResult r = service_.restore(photo, q.request);
  metrics_.faces(r.faces_found, r.faces_restored);
  // `gpen restore` keeps a photo's EXIF and ICC; an aligned crop is written without them.
  const std::vector<uint8_t> bytes = encode_image(format, r.image, q.quality, q.request.aligned ? nullptr : &meta);
  Reply out;
  out.content_type = content_type_of(format);
  out.body.assign(bytes.begin(), bytes.end());
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.1f", ms_since(t0));
  out.headers = {{"X-Faces-Found", std::to_string(r.faces_found)},
                 {"X-Faces-Restored", std::to_string(r.faces_restored)},
                 {"X-Timing-Ms", ms}};
  return out;
}

Reply Router::detect(const Target&, std::string_view body) {
  const Image photo = decode_body(body, opt_.max_pixels, nullptr);
  const std::vector<Face> faces = service_.detect(photo);
  // `gpen detect --json` names the file; a request has none: "-", as for standard input.
  Reply r;
  r.body = cli::detect_json("-", photo.width, photo.height, faces).dump();
  return r;
}

}  // namespace gpen::serve
