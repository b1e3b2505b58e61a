#pragma once
// RestoreService on the engine's Restorer (engine/photo/restorer.h), opened as `gpen restore`
// opens it, so that answers equal the CLI's outputs byte for byte. Every engine call runs on one
// engine thread (one OpenMP team; the engine's objects are not thread-safe); the request threads
// decode and encode around it. Photos of concurrent requests share GPEN batches: the engine
// thread takes the photos waiting with the same options (up to the batch limit, the first having
// waited at most the batch wait) and restores them in one Restorer::restore call. Aligned crops of
// concurrent requests share GPEN batches through the FaceBatcher. GPEN's batch and arena are
// planned once, at start, at the batch limit the memory budget allows (plan_at_limit), and warmed
// (GPEN at the full batch, the detector at its largest input), so memory does not grow with load.
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
#include <vector>

#include "apps/restore_common.h"
#include "apps/serve/serve_batcher.h"
#include "apps/serve/service.h"
#include "engine/photo/restorer.h"

namespace gpen::serve {

struct EngineOptions {
  // model, detector, parse, sr_model, device, precision, vram_budget ("": as `gpen restore`)
  cli::restore_detail::RestoreArgs args;
  std::chrono::microseconds batch_wait{5000};  // the wait of a photo or crop for others to share its batch
  int batch_depth = 64;                        // FaceBatcher: faces waiting at most
  std::function<void(int)> on_batch;           // hears every GPEN batch's size (metrics)
};

class RestorerService : public RestoreService {
 public:
  // Starts loading on the engine thread; ready() once loaded and warmed.
  explicit RestorerService(const EngineOptions& opt);
  ~RestorerService() override;
  // Blocks until loaded; rethrows what failed.
  void wait_loaded();

  ServiceInfo info() const override;
  bool ready() const override;
  RestoreResult restore(const Image& photo, const RestoreRequest& request) override;
  std::vector<Face> detect(const Image& photo) override;
  nlohmann::json plan() const override;
  MemoryFigures memory() const override;

 private:
  // A photo waiting for the engine thread, with the options that decide which others it may share
  // a Restorer::restore call with.
  struct PhotoJob {
    const Image* photo = nullptr;
    RestoreCall call;
    std::chrono::steady_clock::time_point queued;
    std::promise<RestoreResult> done;
  };
  void load();
  void warm_up();
  // The /metrics figures from what the engine holds now (on the engine thread).
  void update_memory();
  int batch_depth() const override;
  // Runs f on the engine thread and waits for its result (or exception).
  template <class F>
  auto on_engine(F f) -> decltype(f());
  void loop();
  // The waiting photos that share the first one's options, up to the batch limit (mu_ held).
  std::vector<PhotoJob*> take_photo_group();
  void restore_photos(const std::vector<PhotoJob*>& group);

  EngineOptions opt_;
  std::unique_ptr<Restorer> restorer_;
  std::unique_ptr<FaceBatcher> batcher_;  // aligned crops
  ServiceInfo info_;
  nlohmann::json plan_;
  MemoryFigures memory_;
  std::shared_future<void> loaded_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::deque<PhotoJob*> photos_;
  bool stop_ = false;
  std::atomic<bool> ready_{false};
  std::thread thread_;
};

}  // namespace gpen::serve
