#pragma once
// Dynamic batching of face jobs across requests: the faces that concurrent requests submit run
// together in one GPEN batch of at most `max_batch`; a batch starts when it is full or when its
// oldest face has waited `max_wait`. The batch buffers are allocated once, at construction, for
// `max_batch` faces (the batch the memory plan fixed), so memory does not grow with load; the
// queue holds at most `max_depth` waiting faces, beyond which a submission is refused
// (QueueFull: the request is answered 503).
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace gpen::serve {

struct BatcherOptions {
  int max_batch = 1;
  std::chrono::microseconds max_wait{5000};
  int max_depth = 64;     // faces waiting for a batch
  size_t in_floats = 0;   // one face in model space (GPEN: S * S * 3)
  size_t out_floats = 0;  // one restored face
};

// Runs n faces: `in` holds n * in_floats, `out` receives n * out_floats (GpenModel::run's shape).
using RunBatch = std::function<void(int n, const float* in, float* out)>;

class QueueFull : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class FaceBatcher {
 public:
  // `on_batch` (optional) hears the size of every batch run, on the batching thread.
  FaceBatcher(const BatcherOptions& opt, RunBatch run, std::function<void(int)> on_batch = {});
  // Runs what is queued, then stops.
  ~FaceBatcher();
  FaceBatcher(const FaceBatcher&) = delete;
  FaceBatcher& operator=(const FaceBatcher&) = delete;

  // Restores n faces (n * in_floats in, n * out_floats out, the caller's memory) in batches shared
  // with other callers; blocks until all are done. All or nothing: throws QueueFull when they do
  // not fit beside the faces already waiting (an empty queue takes any n, so a photo with more
  // faces than max_depth still runs). An exception of the run reaches every caller of that batch.
  void run(int n, const float* in, float* out);
  // Faces waiting for a batch now.
  int depth() const;

 private:
  struct Group {
    int remaining = 0;
    std::exception_ptr error;
  };
  struct Job {
    const float* in;
    float* out;
    Group* group;
    std::chrono::steady_clock::time_point queued;
  };
  void loop();

  BatcherOptions opt_;
  RunBatch run_;
  std::function<void(int)> on_batch_;
  std::vector<float> in_, out_;  // one batch, allocated once
  mutable std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Job> queue_;
  bool stop_ = false;
  int callers_ = 0;  // inside run()
  std::thread thread_;
};

}  // namespace gpen::serve
