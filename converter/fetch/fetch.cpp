#include "converter/fetch/fetch.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "converter/convert.h"
#include "engine/core/error.h"
#include "converter/fetch/curl_library.h"
#include "converter/fetch/sha256.h"
#include "engine/core/version.h"

namespace gpen::fetch {

namespace fs = std::filesystem;

namespace {

double mib(uint64_t b) { return double(b) / (1024.0 * 1024.0); }

std::string mib_str(uint64_t b) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f MiB", mib(b));
  return s;
}

bool istarts(const std::string& s, const char* prefix) {
  const size_t n = std::strlen(prefix);
  if (s.size() < n) return false;
  for (size_t i = 0; i < n; ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// State of one transfer, shared with libcurl's callbacks.
struct Attempt {
  CURL* curl = nullptr;
  FILE* f = nullptr;
  uint64_t offset = 0;        // bytes already in the file when the request was made
  bool decided = false;       // the first body bytes arrived and 200/206 was acted on
  std::string status_line;    // of the last response (redirects included)
  int64_t range_start = -1;   // from Content-Range
  uint64_t written = 0;       // body bytes of this transfer
  std::string error;          // why a callback aborted the transfer
  // progress bar
  bool progress = false;
  std::string label;
  std::chrono::steady_clock::time_point t0, last;
  bool drawn = false;
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* a = static_cast<Attempt*>(user);
  const std::string line = trim(std::string(data, size * n));
  if (istarts(line, "http/")) {  // a new response (after a redirect, the final one wins)
    a->status_line = line;
    a->range_start = -1;
  } else if (istarts(line, "content-range:")) {
    unsigned long long start = 0;
    if (std::sscanf(line.c_str() + 14, " bytes %llu-", &start) == 1) a->range_start = int64_t(start);
  }
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* a = static_cast<Attempt*>(user);
  if (!a->decided) {
    long code = 0;
    curl().easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &code);
    if (code == 206) {
      if (a->range_start != int64_t(a->offset)) {
        a->error = "the server resumed at byte " + std::to_string(a->range_start) + ", not at byte " +
                   std::to_string(a->offset) + " as asked";
        return 0;
      }
    } else if (a->offset > 0) {
      // The server ignored the Range header and sends the whole file: start the file over.
      if (std::fflush(a->f) != 0 || ftruncate(fileno(a->f), 0) != 0 || std::fseek(a->f, 0, SEEK_SET) != 0) {
        a->error = std::string("cannot restart the partial file: ") + std::strerror(errno);
        return 0;
      }
      a->offset = 0;
    }
    a->decided = true;
  }
  if (std::fwrite(data, 1, size * n, a->f) != size * n) {
    a->error = std::string("cannot write the partial file: ") + std::strerror(errno);
    return 0;
  }
  a->written += size * n;
  return size * n;
}

void draw(Attempt* a, uint64_t have, uint64_t total) {
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - a->t0).count();
  const double rate = secs > 0 ? mib(have - std::min(have, a->offset)) / secs : 0;
  a->drawn = true;
  if (total) {
    char bar[31] = {};
    const int fill = int(30.0 * double(have) / double(total));
    for (int i = 0; i < 30; ++i) bar[i] = i < fill ? '#' : '.';
    std::fprintf(stderr, "\r%-16s [%s] %3d%%  %.1f / %.1f MiB  %.1f MiB/s ", a->label.c_str(), bar,
                 int(100.0 * double(have) / double(total)), mib(have), mib(total), rate);
  } else {
    std::fprintf(stderr, "\r%-16s %.1f MiB  %.1f MiB/s ", a->label.c_str(), mib(have), rate);
  }
  std::fflush(stderr);
}

int on_progress(void* user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t, curl_off_t) {
  auto* a = static_cast<Attempt*>(user);
  const auto now = std::chrono::steady_clock::now();
  if (dltotal <= 0 && dlnow <= 0) return 0;  // no response yet
  if (a->drawn && now - a->last < std::chrono::milliseconds(200)) return 0;
  a->last = now;
  draw(a, a->offset + uint64_t(dlnow), dltotal > 0 ? a->offset + uint64_t(dltotal) : 0);
  return 0;
}

bool is_tls(CURLcode rc) {
  switch (rc) {
    case CURLE_SSL_CONNECT_ERROR: case CURLE_PEER_FAILED_VERIFICATION: case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER: case CURLE_SSL_CACERT_BADFILE: case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED: case CURLE_SSL_SHUTDOWN_FAILED: case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR: case CURLE_SSL_PINNEDPUBKEYNOTMATCH: case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CLIENTCERT: case CURLE_USE_SSL_FAILED:
      return true;
    default:
      return false;
  }
}

// A transfer that stopped partway: worth resuming with a Range request.
bool is_cut(CURLcode rc) {
  return rc == CURLE_PARTIAL_FILE || rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR || rc == CURLE_GOT_NOTHING ||
         rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_HTTP2 || rc == CURLE_HTTP2_STREAM;
}

uint64_t file_bytes(const std::string& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : uint64_t(n);
}

std::string num(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%g", v);
  return s;
}

}  // namespace

std::string model_url(const ModelInfo& m, const std::string& base) {
  if (!m.supported) throw Error(m.name + ": cannot be fetched yet: " + m.note);
  if (base.empty()) {
    if (!m.at_base) {
      std::string note = m.note;
      if (auto p = note.find("NAME"); p != std::string::npos) note.replace(p, 4, m.name);
      throw Error(m.name + ": " + note);
    }
    if (!m.url.empty()) return m.url;
    return std::string(kOfficialBase) + "/" + m.file();
  }
  if (base.rfind("http://", 0) != 0 && base.rfind("https://", 0) != 0)
    throw Error("--base-url " + base + ": not an http:// or https:// URL");
  std::string b = base;
  while (!b.empty() && b.back() == '/') b.pop_back();
  return b + "/" + m.file();
}

Transfer download(const std::string& url, const std::string& part, const Options& opt, const std::string& label) {
  const CurlLibrary& lib = curl();
  Transfer t;
  std::string last_cut;
  for (int i = 0; i < std::max(1, opt.attempts); ++i) {
    Attempt a;
    a.f = std::fopen(part.c_str(), "ab");
    if (!a.f) throw Error(part + ": cannot write: " + std::strerror(errno));
    std::fseek(a.f, 0, SEEK_END);
    a.offset = uint64_t(std::ftell(a.f));
    a.progress = opt.progress;
    a.label = label;
    a.t0 = std::chrono::steady_clock::now();
    std::unique_ptr<CURL, void (*)(CURL*)> curl(lib.easy_init(), lib.easy_cleanup);
    if (!curl) {
      std::fclose(a.f);
      throw Error("libcurl could not start a transfer");
    }
    a.curl = curl.get();
    char errbuf[CURL_ERROR_SIZE] = {};
    CURL* c = curl.get();
    lib.easy_setopt(c, CURLOPT_URL, url.c_str());
    lib.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    lib.easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    lib.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    lib.easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    lib.easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    lib.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    const std::string agent = std::string("gpen-engine/") + gpen::version();
    lib.easy_setopt(c, CURLOPT_USERAGENT, agent.c_str());
    lib.easy_setopt(c, CURLOPT_CONNECTTIMEOUT, opt.connect_timeout_s);
    lib.easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    lib.easy_setopt(c, CURLOPT_LOW_SPEED_TIME, opt.stall_timeout_s);
    lib.easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    lib.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    lib.easy_setopt(c, CURLOPT_HEADERDATA, &a);
    lib.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    lib.easy_setopt(c, CURLOPT_WRITEDATA, &a);
    // CURLOPT_RANGE rather than RESUME_FROM: libcurl then hands over a 200 (range ignored) instead of failing.
    const std::string range = std::to_string(a.offset) + "-";
    if (a.offset > 0) lib.easy_setopt(c, CURLOPT_RANGE, range.c_str());
    if (opt.progress) {
      lib.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
      lib.easy_setopt(c, CURLOPT_XFERINFODATA, &a);
      lib.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    }
    const CURLcode rc = lib.easy_perform(c);
    const bool closed = std::fclose(a.f) == 0;
    if (opt.progress && rc == CURLE_OK) draw(&a, file_bytes(part), file_bytes(part));  // the throttle may skip the end
    if (a.drawn) std::fputc('\n', stderr);
    long code = 0;
    lib.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    ++t.transfers;
    if (a.offset > 0 && a.decided) t.resumed = true;
    const std::string detail = errbuf[0] ? trim(errbuf) : lib.easy_strerror(rc);
    if (!a.error.empty()) throw Error(a.error);
    if (!closed) throw Error(part + ": cannot write: " + std::strerror(errno));
    if (rc == CURLE_OK) {
      t.bytes = file_bytes(part);
      return t;
    }
    if (rc == CURLE_HTTP_RETURNED_ERROR) {
      const std::string status = a.status_line.empty() ? "HTTP " + std::to_string(code) : a.status_line;
      if (code == 416 && a.offset > 0) {  // the partial file is not a prefix of this one: start over
        std::remove(part.c_str());
        continue;
      }
      if (code >= 500 && i + 1 < opt.attempts) {
        last_cut = status;
        continue;
      }
      throw Error(status);
    }
    if (is_tls(rc)) throw Error("TLS error: " + detail);
    if (rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY) throw Unreachable("cannot resolve the host: " + detail);
    if (rc == CURLE_COULDNT_CONNECT) throw Unreachable("cannot connect: " + detail);
    if (rc == CURLE_OPERATION_TIMEDOUT && code == 0 && a.written == 0) throw Unreachable("timed out: " + detail);
    if (is_cut(rc)) {
      last_cut = detail;
      continue;
    }
    throw Error(detail);
  }
  throw Error("truncated: the transfer was cut " + std::to_string(t.transfers) + " times (" + last_cut + "); got " +
              mib_str(file_bytes(part)));
}

std::string verify(const std::string& path, const ModelInfo& m, const std::string& pinned_sha, std::string* what) {
  const uint64_t size = file_bytes(path);
  if (m.size && size != m.size)
    throw Error((size < m.size ? "truncated: " : "wrong size: ") + std::to_string(size) + " bytes, " + m.file() + " has " +
                std::to_string(m.size));
  const std::string sha = sha256_file(path);
  std::string want = pinned_sha.empty() ? m.sha256 : pinned_sha;
  std::transform(want.begin(), want.end(), want.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  if (!want.empty() && sha != want) throw Error("sha256 " + sha + ", expected " + want);
  std::unique_ptr<conv::Checkpoint> ck;
  try {
    ck = conv::Checkpoint::open(path);
  } catch (const Error& e) {
    throw Error("not a complete checkpoint (truncated or corrupt): " + std::string(e.what()));
  }
  const conv::CheckpointSummary s = conv::summarize(*ck);
  const Expect& e = m.expect;
  if (s.arch != e.arch && s.arch != conv::Arch::unknown)
    throw Error("not " + m.name + ": it holds a " + conv::arch_name(s.arch) + " model " + s.config.dump() + ", expected " +
                describe(e));
  if (!s.valid) throw Error("not " + m.name + " (" + describe(e) + "): " + s.problem);
  Expect got = e;
  if (e.arch == conv::Arch::gpen) {
    got.gpen_size = s.config.value("size", 0);
    got.channel_multiplier = s.config.value("channel_multiplier", 0.0);
    got.narrow = s.config.value("narrow", 0.0);
    const bool ok = got.gpen_size == e.gpen_size && (e.channel_multiplier == 0 || got.channel_multiplier == e.channel_multiplier) &&
                    (e.narrow == 0 || got.narrow == e.narrow);
    if (!ok)
      throw Error("not " + m.name + ": it holds GPEN " + std::to_string(got.gpen_size) + "x" + std::to_string(got.gpen_size) +
                  ", channel multiplier " + num(got.channel_multiplier) + ", narrow " + num(got.narrow) + "; expected " +
                  describe(e));
  } else if (e.arch == conv::Arch::realesrnet) {
    const int sc = s.config.value("scale", 0), nb = s.config.value("num_block", 0), nf = s.config.value("num_feat", 0),
              gc = s.config.value("num_grow_ch", 0);
    if (sc != e.sr_scale || nb != 23 || nf != e.sr_feat || gc != 32)
      throw Error("not " + m.name + ": it holds RealESRNet x" + std::to_string(sc) + " with " + std::to_string(nb) +
                  " blocks, " + std::to_string(nf) + " features, " + std::to_string(gc) + " growth channels; expected " +
                  describe(e));
  } else if (e.arch == conv::Arch::gfpgan) {
    // The released clean models are all the default configuration (input_is_latent is not in
    // the shapes: the recognised config always carries the official true).
    if (s.config != conv::GfpganConfig{}.to_json())
      throw Error("not " + m.name + ": it holds GFPGAN " + s.config.dump() + ", expected " + describe(e));
  } else if (e.arch == conv::Arch::codeformer) {
    if (s.config != conv::CodeformerConfig{}.to_json())
      throw Error("not " + m.name + ": it holds CodeFormer " + s.config.dump() + ", expected " + describe(e));
  } else if (e.arch == conv::Arch::retinaface) {
    const std::string b = s.config.value("backbone", "");
    if (b != conv::backbone_name(e.backbone))
      throw Error("not " + m.name + ": it holds RetinaFace " + b + ", expected " + describe(e));
  }
  if (what) *what = describe(got);
  return sha;
}

Result fetch_model(const ModelInfo& m, const Options& opt) {
  Result r;
  r.url = model_url(m, opt.base_url);
  std::error_code ec;
  fs::create_directories(opt.dir, ec);
  if (ec) throw Error(opt.dir + ": cannot create the folder: " + ec.message());
  r.pth = (fs::path(opt.dir) / m.file()).string();
  const std::string part = r.pth + ".part", gpw = (fs::path(opt.dir) / (m.name + ".gpw")).string();
  if (fs::exists(r.pth)) {
    try {
      r.sha256 = verify(r.pth, m, opt.sha256, &r.what);
    } catch (const Error& e) {
      throw Error(r.pth + " is already there but is not usable as " + m.name + ": " + e.what() + "; delete it to fetch again");
    }
  } else {
    const uint64_t had = file_bytes(part);
    try {
      if (had > 0)
        std::fprintf(stderr, "%s: resuming %s (%s already there)\n", m.name.c_str(), part.c_str(), mib_str(had).c_str());
      const Transfer t = download(r.url, part, opt, m.name);
      r.transfers = t.transfers;
      r.resumed = t.resumed;
      r.sha256 = verify(part, m, opt.sha256, &r.what);
      fs::rename(part, r.pth);
    } catch (const Unreachable& e) {
      // Nothing was transferred: a .part an earlier run left stays for the next one.
      if (had == 0) std::remove(part.c_str());
      throw Unreachable(m.name + ": " + r.url + ": " + e.what() +
                        (had ? " (kept " + part + ", " + mib_str(had) + ", for the next run)" : std::string()));
    } catch (const std::exception& e) {
      std::remove(part.c_str());
      throw Error(m.name + ": " + r.url + ": " + e.what());
    }
    r.downloaded = true;
  }
  r.bytes = file_bytes(r.pth);
  if (opt.convert) {
    r.gpw = gpw;
    if (!fs::exists(gpw)) {
      try {
        conv::ConvertOptions co;
        co.task = model_task(m.name);  // the layout does not tell a task model from a BFR one
        conv::convert(r.pth, gpw, co);
      } catch (const std::exception& e) {
        throw Error(m.name + ": converting " + r.pth + " to " + gpw + ": " + e.what());
      }
    }
  }
  return r;
}

}  // namespace gpen::fetch
