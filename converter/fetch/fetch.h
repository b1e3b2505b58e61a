#pragma once
// Downloads a checkpoint over HTTP(S) with libcurl (loaded when needed: curl_library.h) and
// checks that it is the model it claims to be before it gets its final name. While it downloads,
// the file is DIR/NAME.pth.part: a cut connection is resumed with a Range request (and a .part
// left by a killed run is resumed by the next one); a download that fails or is not the expected
// model is deleted, and the error names the URL and the reason (HTTP status, TLS or connection
// error, truncated, wrong model).
#include <cstdint>
#include <string>

#include "engine/core/error.h"
#include "converter/fetch/fetch_models.h"

namespace gpen::fetch {

// The server could not be reached at all (host not resolved, connection refused or timed out):
// the other models of the same base URL would fail the same way.
class Unreachable : public Error {
 public:
  using Error::Error;
};

struct Options {
  std::string dir = "models";
  std::string base_url;        // "" = kOfficialBase; a model is fetched as BASE/NAME.pth
  std::string sha256;          // pins the file's sum ("" = the table's, if any)
  bool convert = false;        // also write DIR/NAME.gpw
  bool progress = false;       // progress bar on stderr
  long connect_timeout_s = 20;
  long stall_timeout_s = 60;   // a transfer below 1 KiB/s for this long is cut (and resumed)
  int attempts = 5;            // transfers per model, resumed from where the previous one stopped
};

struct Result {
  std::string url;
  std::string pth;             // DIR/NAME.pth
  std::string gpw;             // DIR/NAME.gpw when converted, else ""
  bool downloaded = false;     // false: a valid DIR/NAME.pth was already there
  bool resumed = false;        // some bytes came from a Range request
  int transfers = 0;
  uint64_t bytes = 0;
  std::string sha256;
  std::string what;            // the recognised model, e.g. "GPEN 512x512, channel multiplier 2, narrow 1"
};

// Fetches, verifies and (with opt.convert) converts one model. Throws gpen::Error, after removing
// everything it wrote, when any step fails (Unreachable when the server was not reached; then a
// .part left by an earlier run is kept for the next one).
Result fetch_model(const ModelInfo& m, const Options& opt);

// Checks that `path` is model `m`: size and sha256 when known (`pinned_sha` overrides the table),
// then the converter's recognition of architecture, configuration and every tensor shape.
// Returns the file's sha256; throws gpen::Error with the reason otherwise.
std::string verify(const std::string& path, const ModelInfo& m, const std::string& pinned_sha, std::string* what = nullptr);

// The URL `m` is fetched from with base `base` ("" = official); throws when there is none.
std::string model_url(const ModelInfo& m, const std::string& base);

// One download into `part` (appended to when it already holds bytes). Public for the tests.
struct Transfer {
  uint64_t bytes = 0;   // final size of `part`
  bool resumed = false;
  int transfers = 0;
};
Transfer download(const std::string& url, const std::string& part, const Options& opt, const std::string& label);

}  // namespace gpen::fetch
