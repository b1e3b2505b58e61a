#pragma once
// The work behind `gpen serve`'s routes, as the HTTP side sees it: restore a decoded photo (or an
// aligned face crop), detect faces, and the planned memory. The routes decode and encode the
// images (apps/serve/serve_routes.cpp); an implementation runs the engine and must be callable
// from several request threads at once. apps/serve/restorer_service.h implements it on the
// engine's Restorer.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/core/image.h"
#include "kernels/cpu/detect_post.h"

namespace gpen::serve {

// What a service can do, fixed at start: the routes refuse options it cannot honour (400).
struct ServiceInfo {
  std::string model = "GPEN";  // the model's kind, "GPEN", "GFPGAN" or "CodeFormer" (face_flow_name): the options it takes
  std::string device;     // "cpu", "cuda"
  std::string precision;  // the model's
  int size = 0;           // the model's input resolution
  int batch_limit = 1;    // most faces per run, from the memory budget (GFPGAN, CodeFormer, RestoreFormer: 1)
  bool parser = false;    // mask=parse possible (--parse given)
  bool sr = false;        // sr=1 possible (--sr given)
};

struct RestoreRequest {
  std::string mask;      // "rect", "parse"; "": parse when the service has a parser, as `gpen restore`
  bool aligned = false;  // the photo is an aligned face crop: GPEN on it, nothing pasted
  bool sr = false;       // super-resolve the background first (`gpen restore --sr`)
};

struct RestoreResult {
  Image image;
  int faces_found = 0;
  int faces_restored = 0;
};

// Bytes the engine holds, planned at start (the /metrics gauges).
struct MemoryFigures {
  size_t weights_bytes = 0;
  size_t arena_bytes = 0;
  size_t workspace_bytes = 0;
};

class RestoreService {
 public:
  virtual ~RestoreService() = default;
  virtual ServiceInfo info() const = 0;
  // Models loaded and warmed: the /v1 routes answer 503 before.
  virtual bool ready() const = 0;
  // gpen::Error for what the engine refuses (the message goes to the client).
  virtual RestoreResult restore(const Image& photo, const RestoreRequest& request) = 0;
  // Every detection, as `gpen detect` finds them.
  virtual std::vector<Face> detect(const Image& photo) = 0;
  // The /v1/plan body: the keys of `gpen plan --pipeline --json` for the running configuration,
  // plus "batch_limit".
  virtual nlohmann::json plan() const = 0;
  virtual MemoryFigures memory() const = 0;
  // Photos and aligned crops waiting for a GPEN batch now (the /metrics gauge).
  virtual int batch_depth() const = 0;
};

}  // namespace gpen::serve
