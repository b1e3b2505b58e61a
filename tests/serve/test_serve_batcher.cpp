// The face batcher of `gpen serve` (apps/serve/serve_batcher.h) on a fake model: faces of
// concurrent callers share batches up to the limit, a lone face waits at most max_wait, each
// caller gets its own faces' outputs, a full queue refuses (503 upstream), a failing run reaches
// every caller of its batch, and stopping runs what is queued.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "apps/serve/serve_batcher.h"

using namespace gpen::serve;
using namespace std::chrono_literals;

namespace {

constexpr size_t kIn = 3, kOut = 2;

// out[k] = 10 * in[0] + k per face: whose output landed where is visible.
struct FakeModel {
  std::mutex mu;
  std::vector<int> batches;
  std::atomic<bool> fail{false};
  // While `hold` is set, a run waits until it is cleared (a slow model).
  std::mutex hold_mu;
  std::condition_variable hold_cv;
  bool hold = false;
  std::atomic<int> started{0};

  void run(int n, const float* in, float* out) {
    started.fetch_add(1);
    {
      std::unique_lock lock(hold_mu);
      hold_cv.wait(lock, [&] { return !hold; });
    }
    {
      std::lock_guard lock(mu);
      batches.push_back(n);
    }
    if (fail) throw std::runtime_error("the model failed");
    for (int i = 0; i < n; ++i)
      for (size_t k = 0; k < kOut; ++k) out[i * kOut + k] = 10.0f * in[i * kIn] + static_cast<float>(k);
  }
  void release() {
    {
      std::lock_guard lock(hold_mu);
      hold = false;
    }
    hold_cv.notify_all();
  }
};

BatcherOptions options(int max_batch, std::chrono::microseconds wait, int depth = 64) {
  BatcherOptions o;
  o.max_batch = max_batch;
  o.max_wait = wait;
  o.max_depth = depth;
  o.in_floats = kIn;
  o.out_floats = kOut;
  return o;
}

RunBatch runner(FakeModel& m) {
  return [&m](int n, const float* in, float* out) { m.run(n, in, out); };
}

}  // namespace

TEST_CASE("batcher: concurrent faces share batches up to the limit, each caller gets its own outputs") {
  FakeModel m;
  std::vector<int> heard;
  std::mutex heard_mu;
  {
    // A long wait: batches are cut by the limit, not the clock.
    FaceBatcher b(options(4, 2s), runner(m), [&](int n) {
      std::lock_guard lock(heard_mu);
      heard.push_back(n);
    });
    std::vector<std::thread> callers;
    std::atomic<int> wrong{0};
    for (int t = 0; t < 8; ++t)
      callers.emplace_back([&, t] {
        const float in[kIn] = {static_cast<float>(t), 0, 0};
        float out[kOut] = {-1, -1};
        b.run(1, in, out);
        if (out[0] != 10.0f * t || out[1] != 10.0f * t + 1) wrong.fetch_add(1);
      });
    for (auto& c : callers) c.join();
    CHECK(wrong == 0);
  }
  CHECK(m.batches == std::vector<int>{4, 4});
  CHECK(heard == m.batches);
}

TEST_CASE("batcher: a lone face runs after max_wait, not before") {
  FakeModel m;
  FaceBatcher b(options(8, 150ms), runner(m));
  const float in[kIn] = {2, 0, 0};
  float out[kOut] = {};
  const auto t0 = std::chrono::steady_clock::now();
  b.run(1, in, out);
  const auto waited = std::chrono::steady_clock::now() - t0;
  CHECK(waited >= 150ms);
  CHECK(waited < 2s);
  CHECK(out[0] == 20.0f);
  CHECK(m.batches == std::vector<int>{1});
}

TEST_CASE("batcher: one caller's faces beyond the batch limit run in several batches") {
  FakeModel m;
  FaceBatcher b(options(3, 1ms), runner(m));
  std::vector<float> in(7 * kIn), out(7 * kOut, -1);
  for (int i = 0; i < 7; ++i) in[i * kIn] = static_cast<float>(i);
  b.run(7, in.data(), out.data());
  for (int i = 0; i < 7; ++i) CHECK(out[i * kOut] == 10.0f * i);
  CHECK(m.batches == std::vector<int>{3, 3, 1});
}

TEST_CASE("batcher: a full queue refuses new faces, an empty one takes any number") {
  FakeModel m;
  m.hold = true;
  FaceBatcher b(options(2, 0us, 3), runner(m));
  const float in[4 * kIn] = {};
  float out_a[2 * kOut], out_b[4 * kOut], out_c[kOut];
  // The first batch (2 faces) is taken and held inside the model; then 3 more wait in the queue.
  std::thread a([&] { b.run(2, in, out_a); });
  while (m.started == 0) std::this_thread::sleep_for(1ms);
  std::thread c([&] { b.run(1, in, out_c); });
  while (b.depth() < 1) std::this_thread::sleep_for(1ms);
  CHECK_THROWS_AS(b.run(3, in, out_b), QueueFull);  // 1 waiting + 3 > 3
  std::thread d([&] { b.run(2, in, out_b); });     // 1 + 2 fits
  while (b.depth() < 3) std::this_thread::sleep_for(1ms);
  CHECK_THROWS_AS(b.run(1, in, out_c), QueueFull);
  m.release();
  a.join();
  c.join();
  d.join();
  CHECK(b.depth() == 0);
  float big_out[5 * kOut];
  const float big_in[5 * kIn] = {};
  b.run(5, big_in, big_out);  // more than the depth, into an empty queue
}

TEST_CASE("batcher: a failing run reaches every caller of its batch, and the next batch runs") {
  FakeModel m;
  FaceBatcher b(options(4, 100ms), runner(m));
  m.fail = true;
  std::atomic<int> failed{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      const float in[kIn] = {};
      float out[kOut];
      try {
        b.run(1, in, out);
      } catch (const std::runtime_error&) {
        failed.fetch_add(1);
      }
    });
  for (auto& c : callers) c.join();
  CHECK(failed == 4);
  m.fail = false;
  const float in[kIn] = {1, 0, 0};
  float out[kOut];
  b.run(1, in, out);
  CHECK(out[0] == 10.0f);
}

TEST_CASE("batcher: stopping runs what is queued without waiting out max_wait") {
  FakeModel m;
  auto b = std::make_unique<FaceBatcher>(options(8, 10s), runner(m));
  float out[kOut] = {};
  std::thread caller([&] {
    const float in[kIn] = {3, 0, 0};
    b->run(1, in, out);
  });
  while (b->depth() < 1) std::this_thread::sleep_for(1ms);
  const auto t0 = std::chrono::steady_clock::now();
  b.reset();
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);
  caller.join();
  CHECK(out[0] == 30.0f);
}

TEST_CASE("batcher: refuses options that cannot work") {
  FakeModel m;
  CHECK_THROWS_AS(FaceBatcher(options(0, 1ms), runner(m)), std::invalid_argument);
  BatcherOptions o = options(2, 1ms);
  o.in_floats = 0;
  CHECK_THROWS_AS(FaceBatcher(o, runner(m)), std::invalid_argument);
}
