#include "apps/serve/serve_batcher.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace gpen::serve {

FaceBatcher::FaceBatcher(const BatcherOptions& opt, RunBatch run, std::function<void(int)> on_batch)
    : opt_(opt), run_(std::move(run)), on_batch_(std::move(on_batch)) {
  if (opt_.max_batch < 1 || opt_.max_depth < 1 || opt_.in_floats == 0 || opt_.out_floats == 0 || !run_)
    throw std::invalid_argument("FaceBatcher: max_batch, max_depth, the face sizes and the run must be set");
  in_.assign(opt_.in_floats * static_cast<size_t>(opt_.max_batch), 0.0f);
  out_.assign(opt_.out_floats * static_cast<size_t>(opt_.max_batch), 0.0f);
  thread_ = std::thread([this] { loop(); });
}

FaceBatcher::~FaceBatcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  thread_.join();
  // Callers still inside run() are leaving it; they touch this object until they have.
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [&] { return callers_ == 0; });
}

int FaceBatcher::depth() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(queue_.size());
}

void FaceBatcher::run(int n, const float* in, float* out) {
  if (n <= 0) return;
  Group group;
  group.remaining = n;
  {
    std::unique_lock lock(mu_);
    if (stop_) throw QueueFull("the server is stopping");
    if (!queue_.empty() && static_cast<int>(queue_.size()) + n > opt_.max_depth)
      throw QueueFull("the face queue is full (" + std::to_string(queue_.size()) + " of " +
                      std::to_string(opt_.max_depth) + " waiting)");
    const auto now = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i)
      queue_.push_back({in + static_cast<size_t>(i) * opt_.in_floats, out + static_cast<size_t>(i) * opt_.out_floats,
                        &group, now});
    ++callers_;
  }
  work_cv_.notify_one();
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [&] { return group.remaining == 0; });
  if (--callers_ == 0) done_cv_.notify_all();
  if (group.error) std::rethrow_exception(group.error);
}

void FaceBatcher::loop() {
  std::vector<Job> batch;
  batch.reserve(static_cast<size_t>(opt_.max_batch));
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    // The oldest face waits at most max_wait for others to share its batch; stopping runs at once.
    const auto deadline = queue_.front().queued + opt_.max_wait;
    work_cv_.wait_until(lock, deadline,
                        [&] { return stop_ || static_cast<int>(queue_.size()) >= opt_.max_batch; });
    const int n = std::min<int>(opt_.max_batch, static_cast<int>(queue_.size()));
    batch.assign(queue_.begin(), queue_.begin() + n);
    queue_.erase(queue_.begin(), queue_.begin() + n);
    lock.unlock();

    std::exception_ptr error;
    try {
      for (int i = 0; i < n; ++i)
        std::memcpy(in_.data() + static_cast<size_t>(i) * opt_.in_floats, batch[i].in, opt_.in_floats * sizeof(float));
      run_(n, in_.data(), out_.data());
      for (int i = 0; i < n; ++i)
        std::memcpy(batch[i].out, out_.data() + static_cast<size_t>(i) * opt_.out_floats, opt_.out_floats * sizeof(float));
      if (on_batch_) on_batch_(n);
    } catch (...) {
      error = std::current_exception();
    }

    lock.lock();
    for (const Job& j : batch) {
      if (error && !j.group->error) j.group->error = error;
      --j.group->remaining;
    }
    done_cv_.notify_all();
  }
}

}  // namespace gpen::serve
