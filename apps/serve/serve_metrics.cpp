#include "apps/serve/serve_metrics.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace gpen::serve {

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void gauge(std::string& out, const char* name, const char* help, double v) {
  header(out, name, "gauge", help);
  out += std::string(name) + " " + num(v) + "\n";
}

}  // namespace

Metrics::Metrics(std::vector<std::string> routes)
    : routes_(std::move(routes)),
      latency_bounds_(kLatencyBuckets.begin(), kLatencyBuckets.end()),
      batch_bounds_(kBatchBuckets.begin(), kBatchBuckets.end()) {
  routes_.push_back("other");
  batches_.counts.assign(batch_bounds_.size() + 1, 0);
  for (const std::string& r : routes_) latency_[r].counts.assign(latency_bounds_.size() + 1, 0);
}

const std::string& Metrics::label(const std::string& route) const {
  auto it = std::find(routes_.begin(), routes_.end(), route);
  return it == routes_.end() ? routes_.back() : *it;
}

void Metrics::observe(Histogram& h, const std::vector<double>& bounds, double v) {
  const size_t i = static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin());
  ++h.counts[i];
  h.sum += v;
  ++h.count;
}

void Metrics::request(const std::string& route, int status, double seconds) {
  const std::string& r = label(route);
  std::lock_guard lock(mu_);
  ++requests_[{r, status}];
  observe(latency_[r], latency_bounds_, seconds);
}

void Metrics::faces(int found, int restored) {
  std::lock_guard lock(mu_);
  faces_found_ += static_cast<uint64_t>(std::max(0, found));
  faces_restored_ += static_cast<uint64_t>(std::max(0, restored));
}

void Metrics::batch(int size) {
  std::lock_guard lock(mu_);
  observe(batches_, batch_bounds_, size);
}

std::string Metrics::render(const Gauges& g) const {
  std::string out;
  std::lock_guard lock(mu_);
  header(out, "gpen_http_requests_total", "counter", "HTTP requests answered, by route and status.");
  for (const auto& [key, n] : requests_)
    out += "gpen_http_requests_total{route=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"} " +
           std::to_string(n) + "\n";
  auto histogram = [&](const std::string& name, const std::string& labels, const Histogram& h,
                       const std::vector<double>& bounds) {
    const std::string sep = labels.empty() ? "" : ",";
    uint64_t cum = 0;
    for (size_t i = 0; i < bounds.size(); ++i) {
      cum += h.counts[i];
      out += name + "_bucket{" + labels + sep + "le=\"" + num(bounds[i]) + "\"} " + std::to_string(cum) + "\n";
    }
    out += name + "_bucket{" + labels + sep + "le=\"+Inf\"} " + std::to_string(h.count) + "\n";
    const std::string braces = labels.empty() ? "" : "{" + labels + "}";
    out += name + "_sum" + braces + " " + num(h.sum) + "\n";
    out += name + "_count" + braces + " " + std::to_string(h.count) + "\n";
  };
  header(out, "gpen_http_request_duration_seconds", "histogram",
         "Time from a request's headers to its answer written, by route.");
  for (const std::string& r : routes_)
    histogram("gpen_http_request_duration_seconds", "route=\"" + r + "\"", latency_.at(r), latency_bounds_);
  header(out, "gpen_faces_found_total", "counter", "Faces the detector found in restored photos.");
  out += "gpen_faces_found_total " + std::to_string(faces_found_) + "\n";
  header(out, "gpen_faces_restored_total", "counter", "Faces GPEN restored.");
  out += "gpen_faces_restored_total " + std::to_string(faces_restored_) + "\n";
  header(out, "gpen_batch_size", "histogram", "Faces per GPEN run.");
  histogram("gpen_batch_size", "", batches_, batch_bounds_);
  gauge(out, "gpen_batch_limit", "Most faces per GPEN run, planned at start from the memory budget.", g.batch_limit);
  gauge(out, "gpen_queue_depth", "Requests admitted and not yet answered (reading, waiting or running).",
        g.queue_depth);
  gauge(out, "gpen_queue_limit", "Requests admitted at most (--queue); more are answered 503.", g.queue_limit);
  gauge(out, "gpen_batch_queue_depth", "Faces waiting for a GPEN batch.", g.batch_queue_depth);
  gauge(out, "gpen_ready", "1 once the models are loaded and warmed.", g.ready ? 1 : 0);
  gauge(out, "gpen_weights_bytes", "GPEN weights, as planned.", static_cast<double>(g.weights_bytes));
  gauge(out, "gpen_arena_bytes", "The arena every intermediate lives in, fixed at start.",
        static_cast<double>(g.arena_bytes));
  gauge(out, "gpen_workspace_bytes", "Kernel workspace, fixed at start.", static_cast<double>(g.workspace_bytes));
  gauge(out, "gpen_resident_bytes", "Resident memory of the process.", static_cast<double>(g.resident_bytes));
  return out;
}

size_t resident_bytes() {
  std::ifstream f("/proc/self/statm");
  size_t pages_total = 0, pages_resident = 0;
  if (!(f >> pages_total >> pages_resident)) return 0;
  return pages_resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace gpen::serve
