// The routes of `gpen serve` (apps/serve/serve_routes.h) on a fake engine, without a socket: what
// is decided on the headers alone (404, 405, 401, 413, 503, and that nothing else is), the
// query's parsing and checks, bad images answered 400 with the decoder's message, the answers'
// headers and formats, the metrics' text format, and the page being self-contained.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <variant>

#include "apps/serve/serve_metrics.h"
#include "apps/serve/serve_page.h"
#include "apps/serve/serve_routes.h"
#include "engine/photo/image.h"

using namespace gpen;
using namespace gpen::serve;

namespace {

struct FakeService : RestoreService {
  bool is_ready = true;
  bool parser = false;
  std::string model = "GPEN";
  int restores = 0;
  RestoreRequest last;
  ServiceInfo info() const override {
    ServiceInfo i;
    i.device = "cpu";
    i.precision = "fp32";
    i.size = 32;
    i.batch_limit = 2;
    i.parser = parser;
    i.model = model;
    return i;
  }
  bool ready() const override { return is_ready; }
  RestoreResult restore(const Image& photo, const RestoreRequest& r) override {
    ++restores;
    last = r;
    RestoreResult out;
    out.image = photo;
    for (auto& v : out.image.bgr) v = static_cast<uint8_t>(255 - v);
    out.faces_found = 2;
    out.faces_restored = 1;
    return out;
  }
  std::vector<Face> detect(const Image&) override {
    Face f;
    f.box = {1, 2, 3, 4};
    f.score = 0.5f;
    return {f};
  }
  nlohmann::json plan() const override { return {{"device", "cpu"}, {"batch_limit", 2}}; }
  MemoryFigures memory() const override { return {100, 200, 300}; }
  int batch_depth() const override { return 0; }
};

Image gradient(int w, int h) {
  Image img;
  img.width = w;
  img.height = h;
  img.bgr.resize(img.pixels() * 3);
  for (size_t i = 0; i < img.bgr.size(); ++i) img.bgr[i] = static_cast<uint8_t>(i * 7);
  return img;
}

std::string bytes_of(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

struct Fixture {
  FakeService service;
  Metrics metrics{Router::route_labels()};
  RouterOptions opt;
  std::unique_ptr<Router> router;
  explicit Fixture(RouterOptions o = {}) : opt(std::move(o)) {
    router = std::make_unique<Router>(service, metrics, opt);
  }
  // The whole exchange: the headers' decision, then the answer with the body.
  Reply call(const std::string& method, const std::string& target, const std::string& body = "",
             const std::string& auth = "") {
    Head h{method, target, auth, body.empty() && method == "GET" ? std::nullopt : std::optional<uint64_t>(body.size())};
    auto d = router->accept(h);
    if (auto* r = std::get_if<Reply>(&d)) return *r;
    return router->handle(std::get<Accepted>(d), h, body);
  }
};

std::string error_of(const Reply& r) {
  REQUIRE(r.content_type == "application/json");
  const auto j = nlohmann::json::parse(r.body);
  REQUIRE(j.contains("error"));
  return j["error"].get<std::string>();
}

std::string header(const Reply& r, const std::string& name) {
  for (const auto& [k, v] : r.headers)
    if (k == name) return v;
  return "";
}

}  // namespace

TEST_CASE("serve routes: targets are split and percent-decoded, malformed escapes refused") {
  Target t = parse_target("/v1/restore?format=png&quality=90&&mask=r%65ct&x=a+b");
  CHECK(t.path == "/v1/restore");
  REQUIRE(t.query.size() == 4);
  CHECK(t.query[0] == std::pair<std::string, std::string>{"format", "png"});
  CHECK(t.query[2].second == "rect");
  CHECK(t.query[3].second == "a b");
  CHECK(parse_target("/healthz").query.empty());
  CHECK(parse_target("/a%2Fb").path == "/a/b");
  CHECK_THROWS_AS(parse_target("/x?a=%4"), BadRequest);
  CHECK_THROWS_AS(parse_target("/x?a=%zz"), BadRequest);
  CHECK_THROWS_AS(parse_target("/x%"), BadRequest);
}

TEST_CASE("serve routes: unknown paths 404, other methods 405 with Allow") {
  Fixture f;
  CHECK(f.call("GET", "/nope").status == 404);
  CHECK(f.call("GET", "/v1/restore/").status == 404);
  const Reply r = f.call("GET", "/v1/restore");
  CHECK(r.status == 405);
  CHECK(header(r, "Allow") == "POST");
  CHECK(f.call("DELETE", "/healthz").status == 405);
  CHECK(f.call("POST", "/metrics", "x").status == 405);
  CHECK(error_of(f.call("PUT", "/")).find("GET") != std::string::npos);
  // A path that is not UTF-8 is quoted in valid JSON (found by fuzz_serve).
  const Reply bad = f.call("GET", "/%90x");
  CHECK(bad.status == 404);
  CHECK(error_of(bad).find("\xEF\xBF\xBDx") != std::string::npos);
}

TEST_CASE("serve routes: with an API key every /v1 route needs it, the others do not") {
  RouterOptions o;
  o.api_key = "s3cret-key";
  Fixture f(o);
  for (const char* t : {"/v1/plan"}) {
    const Reply no = f.call("GET", t);
    CHECK(no.status == 401);
    CHECK(header(no, "WWW-Authenticate") == "Bearer");
    CHECK(f.call("GET", t, "", "Bearer wrong").status == 401);
    CHECK(f.call("GET", t, "", "Bearer s3cret-key ").status == 401);
    CHECK(f.call("GET", t, "", "Bearer s3cret-ke").status == 401);
    CHECK(f.call("GET", t, "", "bearer s3cret-key").status == 401);
    CHECK(f.call("GET", t, "", "s3cret-key").status == 401);
    CHECK(f.call("GET", t, "", "Bearer s3cret-key").status == 200);
  }
  const std::string png = bytes_of(encode_image("png", gradient(8, 8)));
  CHECK(f.call("POST", "/v1/restore", png).status == 401);
  CHECK(f.call("POST", "/v1/detect", png).status == 401);
  CHECK(f.service.restores == 0);
  CHECK(f.call("POST", "/v1/restore", png, "Bearer s3cret-key").status == 200);
  CHECK(f.call("GET", "/healthz").status == 200);
  CHECK(f.call("GET", "/metrics").status == 200);
  CHECK(f.call("GET", "/").status == 200);
}

TEST_CASE("serve routes: secrets compare equal only when they are") {
  CHECK(secret_equal("abc", "abc"));
  CHECK_FALSE(secret_equal("abd", "abc"));
  CHECK_FALSE(secret_equal("ab", "abc"));
  CHECK_FALSE(secret_equal("abcabc", "abc"));
  CHECK_FALSE(secret_equal("", "abc"));
  CHECK_FALSE(secret_equal("", ""));
}

TEST_CASE("serve routes: a body over --max-body is refused on its Content-Length") {
  RouterOptions o;
  o.max_body = 1000;
  Fixture f(o);
  Head h{"POST", "/v1/restore", "", 1001};
  auto d = f.router->accept(h);
  REQUIRE(std::holds_alternative<Reply>(d));
  CHECK(std::get<Reply>(d).status == 413);
  h.content_length = 1000;
  CHECK(std::holds_alternative<Accepted>(f.router->accept(h)));
}

TEST_CASE("serve routes: not ready, or the queue full: 503 with Retry-After") {
  RouterOptions o;
  o.queue = 2;
  Fixture f(o);
  f.service.is_ready = false;
  CHECK(f.call("GET", "/readyz").status == 503);
  CHECK(f.call("GET", "/healthz").status == 200);
  const Reply loading = f.call("POST", "/v1/restore", "x");
  CHECK(loading.status == 503);
  CHECK(header(loading, "Retry-After") == "1");
  f.service.is_ready = true;
  CHECK(f.call("GET", "/readyz").status == 200);

  Head h{"POST", "/v1/restore", "", 10};
  auto a = f.router->accept(h), b = f.router->accept(h);
  REQUIRE(std::holds_alternative<Accepted>(a));
  REQUIRE(std::holds_alternative<Accepted>(b));
  CHECK(f.router->gauges().queue_depth == 2);
  auto c = f.router->accept(h);
  REQUIRE(std::holds_alternative<Reply>(c));
  CHECK(std::get<Reply>(c).status == 503);
  CHECK(header(std::get<Reply>(c), "Retry-After") == "1");
  // The cheap routes take no slot.
  CHECK(f.call("GET", "/v1/plan").status == 200);
  a = Reply{};
  CHECK(std::holds_alternative<Accepted>(f.router->accept(h)));  // a slot is free again (and released at once)
  CHECK(f.router->gauges().queue_depth == 1);
}

TEST_CASE("serve routes: bad images are 400 with the decoder's message") {
  Fixture f;
  const std::string png = bytes_of(encode_image("png", gradient(16, 12)));
  struct Case {
    std::string body, words;
  };
  for (const Case& c : {Case{"", "empty"}, Case{"hello, not an image", "unsupported image format"},
                        Case{png.substr(0, png.size() / 2), "PNG"}}) {
    for (const char* route : {"/v1/restore", "/v1/detect"}) {
      const Reply r = f.call("POST", route, c.body);
      CHECK(r.status == 400);
      CHECK_MESSAGE(error_of(r).find(c.words) != std::string::npos, error_of(r));
      CHECK(error_of(r).rfind("image: ", 0) == 0);
    }
  }
  // A PNG header claiming 60000 x 60000: refused from the header, before any pixel memory.
  Image small = gradient(4, 4);
  std::string huge = bytes_of(encode_image("png", small));
  const unsigned char side[4] = {0x00, 0x00, 0xEA, 0x60};  // 60000, big-endian, in IHDR
  for (int k = 0; k < 4; ++k) huge[16 + k] = static_cast<char>(side[k]), huge[20 + k] = static_cast<char>(side[k]);
  // IHDR's CRC (over its type and data, bytes 12..28) made right again: libpng checks it first.
  uint32_t crc = 0xFFFFFFFFu;
  for (int i = 12; i < 29; ++i) {
    crc ^= static_cast<uint8_t>(huge[i]);
    for (int b = 0; b < 8; ++b) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  crc ^= 0xFFFFFFFFu;
  for (int k = 0; k < 4; ++k) huge[29 + k] = static_cast<char>((crc >> (24 - 8 * k)) & 0xFF);
  const Reply r = f.call("POST", "/v1/restore", huge);
  CHECK(r.status == 400);
  CHECK(error_of(r).find("pixels") != std::string::npos);
  CHECK(f.service.restores == 0);
}

TEST_CASE("serve routes: the query of /v1/restore is checked, each parameter once") {
  Fixture f;
  const std::string png = bytes_of(encode_image("png", gradient(8, 8)));
  for (const char* q : {"?format=gif", "?quality=0", "?quality=101", "?quality=9x", "?mask=blur", "?aligned=2",
                        "?sr=yes", "?fromat=png", "?format=png&format=jpg", "?mask=parse", "?sr=1",
                        "?aligned=1&mask=rect"}) {
    const Reply r = f.call("POST", std::string("/v1/restore") + q, png);
    CHECK_MESSAGE(r.status == 400, q);
  }
  CHECK(f.service.restores == 0);
  CHECK(f.call("POST", "/v1/detect?format=png", png).status == 400);
  CHECK(f.call("GET", "/healthz?x=1").status == 400);
  f.service.parser = true;
  CHECK(f.call("POST", "/v1/restore?mask=parse", png).status == 200);
  CHECK(f.service.last.mask == "parse");
  CHECK(f.call("POST", "/v1/restore?aligned=1", png).status == 200);
  CHECK(f.service.last.aligned);
}

TEST_CASE("serve routes: with a GFPGAN model, GPEN's mask and sr are 400 naming the option") {
  Fixture f;
  f.service.model = "GFPGAN";
  f.service.parser = true;  // even so: GFPGAN's flow has its own paste mask
  const std::string png = bytes_of(encode_image("png", gradient(8, 8)));
  for (const std::string q : {"mask=rect", "mask=parse", "sr=0", "sr=1", "aligned=1&mask=rect"}) {
    const Reply r = f.call("POST", "/v1/restore?" + q, png);
    CHECK_MESSAGE(r.status == 400, q);
    const std::string name = q.find("sr") != std::string::npos ? "sr" : "mask";
    CHECK_MESSAGE(r.body.find(name + " is an option of GPEN models; this server runs a GFPGAN model") !=
                      std::string::npos,
                  q << ": " << r.body);
  }
  CHECK(f.service.restores == 0);
  CHECK(f.call("POST", "/v1/restore?aligned=1&format=png", png).status == 200);
  CHECK(f.service.last.aligned);
}

TEST_CASE("serve routes: restore answers the input's format unless asked, with the face counts") {
  Fixture f;
  const Image photo = gradient(20, 10);
  const std::string png = bytes_of(encode_image("png", photo));
  Reply r = f.call("POST", "/v1/restore", png);
  REQUIRE(r.status == 200);
  CHECK(r.content_type == "image/png");
  CHECK(header(r, "X-Faces-Found") == "2");
  CHECK(header(r, "X-Faces-Restored") == "1");
  CHECK(!header(r, "X-Timing-Ms").empty());
  const Image back = decode_image(reinterpret_cast<const uint8_t*>(r.body.data()), r.body.size(), "answer");
  REQUIRE(back.width == 20);
  CHECK(back.bgr[5] == 255 - photo.bgr[5]);
  const std::string jpg = bytes_of(encode_image("jpg", photo));
  CHECK(f.call("POST", "/v1/restore", jpg).content_type == "image/jpeg");
  r = f.call("POST", "/v1/restore?format=webp", jpg);
  CHECK(r.content_type == "image/webp");
  CHECK(image_format(reinterpret_cast<const uint8_t*>(r.body.data()), r.body.size()) == "webp");
  // The quality reaches the encoder: a lower one makes a smaller JPEG of the same photo.
  const Image big = gradient(64, 64);
  const std::string big_png = bytes_of(encode_image("png", big));
  CHECK(f.call("POST", "/v1/restore?format=jpg&quality=20", big_png).body.size() <
        f.call("POST", "/v1/restore?format=jpg&quality=95", big_png).body.size());
  // A BMP is answered as PNG, as `gpen restore` names its output.
  Image bmp_img = gradient(4, 4);
  std::string bmp = "BM";
  bmp.resize(54 + 4 * 4 * 3 + 16, '\0');
  auto put32 = [&](size_t at, uint32_t v) {
    for (int k = 0; k < 4; ++k) bmp[at + k] = static_cast<char>((v >> (8 * k)) & 0xFF);
  };
  put32(2, static_cast<uint32_t>(bmp.size()));
  put32(10, 54);
  put32(14, 40);
  put32(18, 4);
  put32(22, 4);
  bmp[26] = 1;
  bmp[28] = 24;
  (void)bmp_img;
  CHECK(f.call("POST", "/v1/restore", bmp).content_type == "image/png");
}

TEST_CASE("serve routes: detect answers `gpen detect --json`'s object") {
  Fixture f;
  const std::string png = bytes_of(encode_image("png", gradient(16, 12)));
  const Reply r = f.call("POST", "/v1/detect", png);
  REQUIRE(r.status == 200);
  CHECK(r.body == R"({"image":"-","width":16,"height":12,"faces":[{"box":[1.0,2.0,3.0,4.0],"score":0.5,)"
                  R"("landmarks":[0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0]}]})");
}

TEST_CASE("serve routes: /metrics is Prometheus text with every series the issue names") {
  Fixture f;
  f.metrics.request("/v1/restore", 200, 0.2);
  f.metrics.request("/v1/restore", 400, 0.001);
  f.metrics.request("/made/up", 404, 0.001);
  f.metrics.batch(2);
  f.metrics.faces(3, 2);
  const Reply r = f.call("GET", "/metrics");
  REQUIRE(r.status == 200);
  CHECK(r.content_type.rfind("text/plain; version=0.0.4", 0) == 0);
  const std::string& t = r.body;
  for (const char* s :
       {"gpen_http_requests_total{route=\"/v1/restore\",status=\"200\"} 1",
        "gpen_http_requests_total{route=\"other\",status=\"404\"} 1",
        "gpen_http_request_duration_seconds_bucket{route=\"/v1/restore\",le=\"0.25\"} 2",
        "gpen_http_request_duration_seconds_bucket{route=\"/v1/restore\",le=\"+Inf\"} 2",
        "gpen_http_request_duration_seconds_count{route=\"/v1/restore\"} 2", "gpen_faces_found_total 3",
        "gpen_faces_restored_total 2", "gpen_batch_size_bucket{le=\"1\"} 0", "gpen_batch_size_bucket{le=\"2\"} 1",
        "gpen_batch_size_count 1", "gpen_queue_depth 0", "gpen_queue_limit 64", "gpen_weights_bytes 100",
        "gpen_arena_bytes 200", "gpen_workspace_bytes 300", "gpen_batch_limit 2", "gpen_ready 1",
        "gpen_resident_bytes "})
    CHECK_MESSAGE(t.find(s) != std::string::npos, s);
  // Every line: a comment (# HELP / # TYPE) or name{labels} value.
  const std::regex sample(R"(^[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? [-+0-9.eInf]+$)");
  std::istringstream lines(t);
  std::string line;
  int samples = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) continue;
    CHECK_MESSAGE(std::regex_match(line, sample), line);
    ++samples;
  }
  CHECK(samples > 40);
}

TEST_CASE("serve routes: the page is self-contained") {
  Fixture f;
  const Reply r = f.call("GET", "/");
  REQUIRE(r.status == 200);
  CHECK(r.content_type == "text/html; charset=utf-8");
  CHECK(r.body == std::string(kServePage));
  CHECK(r.body.find("<html") != std::string::npos);
  CHECK(r.body.find("id=\"file\"") != std::string::npos);
  // No external URL of any kind: it works offline.
  CHECK(r.body.find("http:") == std::string::npos);
  CHECK(r.body.find("https:") == std::string::npos);
  CHECK(r.body.find("src=\"//") == std::string::npos);
  CHECK(r.body.find("@import") == std::string::npos);
}
