#pragma once
// RestoreService on the engine's FaceRestorer (engine/photo/pipeline.h), set up as `gpen restore`
// sets it up, so that answers equal the CLI's outputs byte for byte. Every engine call runs on one
// engine thread (one OpenMP team; the engine's objects are not thread-safe); the request threads
// decode and encode around it. A photo's faces run in GPEN batches of their own (FaceRestorer
// restores one photo at a time); aligned crops of concurrent requests share GPEN batches through
// the FaceBatcher. GPEN's batch and arena are planned once, at start, from the memory budget, and
// warmed (GPEN at the full batch, the detector at its largest input), so memory does not grow
// with load.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "apps/restore_common.h"
#include "apps/serve/serve_batcher.h"
#include "apps/serve/service.h"

namespace gpen {
class GpenModel;
class RetinaFaceDetector;
class ParseNetModel;
class RrdbModel;
class FaceRestorer;
class Backend;
}  // namespace gpen

namespace gpen::serve {

struct EngineOptions {
  cli::restore_detail::RestoreArgs args;  // model, detector, parse, sr_model, device, precision
  std::string memory_budget;              // "" : as `gpen restore` (half the free RAM, 80% of a GPU's)
  std::chrono::microseconds batch_wait{5000};  // FaceBatcher: the wait for a batch to fill
  int batch_depth = 64;                        // FaceBatcher: faces waiting at most
  std::function<void(int)> on_batch;           // hears every GPEN batch's size (metrics)
};

class FaceRestorerService : public RestoreService {
 public:
  // Starts loading on the engine thread; ready() once loaded and warmed.
  explicit FaceRestorerService(const EngineOptions& opt);
  ~FaceRestorerService() override;
  // Blocks until loaded; rethrows what failed.
  void wait_loaded();

  ServiceInfo info() const override;
  bool ready() const override;
  RestoreResult restore(const Image& photo, const RestoreRequest& request) override;
  std::vector<Face> detect(const Image& photo) override;
  nlohmann::json plan() const override;
  MemoryFigures memory() const override;

 private:
  void load();
  void warm_up();
  // RealESRNet on an image (on the engine thread), the tile as `gpen restore --sr` chooses it.
  Image super_resolved(ImageView img, bool aligned);
  int batch_depth() const override;
  // Runs f on the engine thread and waits for its result (or exception).
  template <class F>
  auto on_engine(F f) -> decltype(f());
  void loop();

  EngineOptions opt_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<GpenModel> model_;
  std::unique_ptr<RetinaFaceDetector> detector_;
  std::unique_ptr<ParseNetModel> parser_;
  std::unique_ptr<RrdbModel> sr_;
  size_t sr_budget_ = 0;
  std::unique_ptr<FaceRestorer> restorer_;       // the default mask: parse with --parse, else rect
  std::unique_ptr<FaceRestorer> rect_restorer_;  // mask=rect beside a parser
  std::unique_ptr<FaceBatcher> batcher_;          // aligned crops
  ServiceInfo info_;
  nlohmann::json plan_;
  MemoryFigures memory_;
  std::shared_future<void> loaded_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  std::atomic<bool> ready_{false};
  std::thread thread_;
};

}  // namespace gpen::serve
