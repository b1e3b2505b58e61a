#pragma once
// The /metrics of `gpen serve`, in Prometheus' text exposition format (version 0.0.4): requests by
// route and status, a latency histogram per route, faces found and restored, GPEN batch sizes,
// the request queue, the engine's planned bytes and the process's resident bytes. Counters are
// updated from any thread; the label sets are fixed (routes are the known paths or "other"), so
// the metrics' own memory does not grow with traffic.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace gpen::serve {

// Values read when /metrics is asked for.
struct Gauges {
  int queue_depth = 0;
  int queue_limit = 0;
  int batch_queue_depth = 0;  // faces waiting for a GPEN batch
  int batch_limit = 0;
  bool ready = false;
  size_t weights_bytes = 0, arena_bytes = 0, workspace_bytes = 0;
  size_t resident_bytes = 0;
};

class Metrics {
 public:
  // Upper bounds of the latency buckets, in seconds.
  static constexpr std::array<double, 14> kLatencyBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                             1,     2.5,  5,     10,   30,  60,  120};
  // Upper bounds of the batch size buckets (GPEN's batch limit is at most 16).
  static constexpr std::array<double, 5> kBatchBuckets = {1, 2, 4, 8, 16};
  // `routes`: the label values requests are counted under (anything else is "other").
  explicit Metrics(std::vector<std::string> routes);
  void request(const std::string& route, int status, double seconds);
  void faces(int found, int restored);
  void batch(int size);
  std::string render(const Gauges& g) const;

 private:
  struct Histogram {
    std::vector<uint64_t> counts;  // per bucket, not cumulative; the last is +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  static void observe(Histogram& h, const std::vector<double>& bounds, double v);
  const std::string& label(const std::string& route) const;

  std::vector<std::string> routes_;
  std::vector<double> latency_bounds_, batch_bounds_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;  // (route, status) -> count
  std::map<std::string, Histogram> latency_;
  Histogram batches_;
  uint64_t faces_found_ = 0, faces_restored_ = 0;
};

// The process's resident set now (/proc/self/statm), 0 where that cannot be read.
size_t resident_bytes();

}  // namespace gpen::serve
