// libFuzzer target: the request handling of `gpen serve` (apps/serve/serve_routes.h) on untrusted
// requests: routing, the query's parsing and checks, authentication, the limits, and the image
// decoders and encoders behind /v1/restore and /v1/detect, on a fake engine. Input: the request line
// "METHOD TARGET", a line with the Authorization header, then the body; the first byte picks the
// server's configuration (API key, readiness, parser). Every answer must be a status in 200..599
// and every error a JSON object {"error": "..."}; a restore's 200 must be an image that decodes.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>

#include "apps/serve/serve_metrics.h"
#include "apps/serve/serve_routes.h"
#include "engine/photo/image.h"

namespace {

using namespace gpen;
using namespace gpen::serve;

struct FakeService : RestoreService {
  bool is_ready = true, parser = false;
  ServiceInfo info() const override {
    ServiceInfo i;
    i.device = "cpu";
    i.size = 32;
    i.batch_limit = 4;
    i.parser = parser;
    return i;
  }
  bool ready() const override { return is_ready; }
  RestoreResult restore(const Image& photo, const RestoreRequest&) override {
    // A corner of the photo: the encoders run on real pixels, but few of them.
    RestoreResult r;
    r.image.width = std::min(photo.width, 8);
    r.image.height = std::min(photo.height, 8);
    for (int y = 0; y < r.image.height; ++y)
      for (int x = 0; x < r.image.width * 3; ++x)
        r.image.bgr.push_back(photo.bgr[static_cast<size_t>(y) * photo.width * 3 + x]);
    r.faces_found = r.faces_restored = 1;
    return r;
  }
  std::vector<Face> detect(const Image&) override { return {Face{}}; }
  nlohmann::json plan() const override { return {{"batch_limit", 4}}; }
  MemoryFigures memory() const override { return {}; }
  int batch_depth() const override { return 0; }
};

std::string_view next_line(std::string_view& s) {
  const size_t nl = s.find('\n');
  const std::string_view line = s.substr(0, nl);
  s = nl == std::string_view::npos ? std::string_view() : s.substr(nl + 1);
  return line;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t config = data[0];
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string_view request_line = next_line(in), auth = next_line(in);
  const size_t sp = request_line.find(' ');
  Head head;
  head.method = std::string(request_line.substr(0, sp));
  head.target = sp == std::string_view::npos ? "" : std::string(request_line.substr(sp + 1));
  head.authorization = std::string(auth);
  if (!(config & 8)) head.content_length = in.size();

  static Metrics metrics(Router::route_labels());
  FakeService service;
  service.is_ready = !(config & 2);
  service.parser = config & 4;
  RouterOptions opt;
  if (config & 1) opt.api_key = "k3y";
  opt.max_body = 1 << 16;
  opt.max_pixels = 1 << 16;  // the decoders refuse larger images from their headers: fast runs
  opt.queue = 2;
  Router router(service, metrics, opt);
  (void)Router::route_label(head.target);

  auto decision = router.accept(head);
  Reply reply;
  if (auto* r = std::get_if<Reply>(&decision)) {
    reply = std::move(*r);
  } else {
    const Accepted& a = std::get<Accepted>(decision);
    if (in.size() > opt.max_body) return 0;  // the HTTP side stops reading there (413)
    reply = router.handle(a, head, in);
    if (reply.status == 200 && a.route == Route::restore) {
      const Image back = decode_image(reinterpret_cast<const uint8_t*>(reply.body.data()), reply.body.size(), "answer");
      if (back.width <= 0) __builtin_trap();
    }
  }
  if (reply.status < 200 || reply.status > 599) __builtin_trap();
  if (reply.status >= 400) {
    const auto j = nlohmann::json::parse(reply.body, nullptr, false);
    if (j.is_discarded() || !j.contains("error") || !j["error"].is_string()) __builtin_trap();
  }
  metrics.request(Router::route_label(head.target), reply.status, 0.001);
  return 0;
}
