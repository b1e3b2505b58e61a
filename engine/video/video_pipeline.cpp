#include "engine/video/video_pipeline.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/core/error.h"

namespace gpen::video {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The three hand-over points (free frames, decoded, processed) under one lock. Waits wake on
// every hand-over and at least every 50 ms to poll the cancel flag.
class Stages {
 public:
  explicit Stages(const std::atomic<bool>* cancel) : cancel_(cancel) {}

  std::deque<VideoFrame*> free, decoded, processed;

  // Waits until `ready()` holds (true) or the pipeline stops (false). Call with `lock` held.
  template <class Ready>
  bool wait(std::unique_lock<std::mutex>& lock, Ready ready) {
    for (;;) {
      if (cancel_ && cancel_->load() && !stop_) {
        stop_ = true;
        cancelled_ = true;
        cv_.notify_all();
      }
      if (stop_) return false;
      if (ready()) return true;
      cv_.wait_for(lock, std::chrono::milliseconds(50));
    }
  }
  void hand_over(std::deque<VideoFrame*>& to, VideoFrame* f) {
    std::lock_guard<std::mutex> lock(mutex);
    to.push_back(f);
    cv_.notify_all();
  }
  // The first error of any stage stops all of them.
  void fail(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!error_) error_ = e;
    stop_ = true;
    cv_.notify_all();
  }
  void rethrow() {
    if (error_) std::rethrow_exception(error_);
    if (cancelled_ || (cancel_ && cancel_->load())) throw Cancelled();
  }
  VideoFrame* pop(std::deque<VideoFrame*>& q) {
    VideoFrame* f = q.front();
    q.pop_front();
    return f;
  }
  // The next frame of `q`, waiting for one; nullptr when the pipeline stops.
  VideoFrame* take(std::deque<VideoFrame*>& q) {
    std::unique_lock<std::mutex> lock(mutex);
    return wait(lock, [&] { return !q.empty(); }) ? pop(q) : nullptr;
  }

  std::mutex mutex;

 private:
  const std::atomic<bool>* cancel_;
  std::condition_variable cv_;
  bool stop_ = false, cancelled_ = false;
  std::exception_ptr error_;
};

}  // namespace

PipelineStats run_pipeline(VideoReader& reader, FrameProcessor& processor, VideoWriter& writer,
                           const PipelineOptions& opt) {
  const auto start = Clock::now();
  const VideoInfo& info = reader.info();
  const int batch = std::max(1, processor.max_frames());
  PipelineStats st;
  st.frames_in_flight = 2 * std::max(1, opt.queue_frames) + batch + 2;
  // Each pooled frame holds the decoded frame, then the processed one (larger with super-resolution).
  const auto [out_w, out_h] = processor.output_size(info.width, info.height);
  st.frame_bytes = std::max(size_t(info.width) * size_t(info.height), size_t(out_w) * size_t(out_h)) * 3;
  std::vector<VideoFrame> pool(size_t(st.frames_in_flight));
  Stages stages(opt.cancel);
  for (auto& f : pool) {
    f.image.bgr.reserve(st.frame_bytes);
    stages.free.push_back(&f);
  }
  int64_t total = info.frames_announced;
  if (reader.start_offset_us() > 0 || total <= 0) total = 0;
  std::atomic<int64_t> faces{0};

  std::thread decode([&] {
    try {
      for (;;) {
        VideoFrame* f = stages.take(stages.free);
        if (!f) return;
        const auto t = Clock::now();
        const bool more = reader.read(*f);
        st.decode_s += since(t);
        stages.hand_over(stages.decoded, f);
        if (!more) return;
      }
    } catch (...) {
      stages.fail(std::current_exception());
    }
  });

  std::thread encode([&] {
    try {
      for (;;) {
        VideoFrame* f = stages.take(stages.processed);
        if (!f) return;
        const auto t = Clock::now();
        writer.write(*f);
        const bool end = f->end;
        if (end) writer.finish();
        st.encode_s += since(t);
        if (!end) {
          ++st.frames;
          faces += f->faces;
          if (opt.progress) opt.progress({st.frames, total, faces.load(), since(start)});
        }
        stages.hand_over(stages.free, f);
        if (end) return;
      }
    } catch (...) {
      stages.fail(std::current_exception());
    }
  });

  try {
    std::vector<VideoFrame*> run;
    for (bool end = false; !end;) {
      run.clear();
      VideoFrame* last = nullptr;
      {
        std::unique_lock<std::mutex> lock(stages.mutex);
        // A full run, or what is left before the end.
        const auto ready = [&] {
          if (int(stages.decoded.size()) >= batch) return true;
          for (const VideoFrame* f : stages.decoded)
            if (f->end) return true;
          return false;
        };
        if (!stages.wait(lock, ready)) break;
        while (int(run.size()) < batch && !stages.decoded.empty() && !last) {
          VideoFrame* f = stages.pop(stages.decoded);
          if (f->end)
            last = f;
          else
            run.push_back(f);
        }
      }
      if (!run.empty()) {
        const auto t = Clock::now();
        processor.process(run);
        st.process_s += since(t);
      }
      for (VideoFrame* f : run) stages.hand_over(stages.processed, f);
      if (last) {
        stages.hand_over(stages.processed, last);
        end = true;
      }
    }
  } catch (...) {
    stages.fail(std::current_exception());
  }
  decode.join();
  encode.join();
  stages.rethrow();
  st.faces = faces.load();
  st.wall_s = since(start);
  return st;
}

}  // namespace gpen::video
