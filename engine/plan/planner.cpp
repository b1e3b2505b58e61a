// Bounds, validation and the strategy registry of the offset planner; the strategies themselves
// live in engine/planner_*.cpp.
#include "engine/plan/planner.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "engine/core/error.h"

namespace gpen {

namespace planner_detail {

std::vector<size_t> checked_aligned_sizes(const std::vector<LiveBuffer>& buffers, size_t alignment) {
  GPEN_CHECK(alignment > 0, "planner: alignment must be positive");
  constexpr size_t kMax = std::numeric_limits<size_t>::max();
  std::vector<size_t> aligned(buffers.size());
  size_t total = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const LiveBuffer& b = buffers[i];
    GPEN_CHECK(b.first <= b.last, "planner: buffer " + std::to_string(i) + " has first step " +
                                      std::to_string(b.first) + " after last step " +
                                      std::to_string(b.last));
    // Every offset and the arena stay below the sum of aligned sizes, so checking the sum
    // once rules out overflow everywhere else.
    GPEN_CHECK(b.size <= kMax - alignment && align_up(b.size, alignment) <= kMax - total,
               "planner: buffer " + std::to_string(i) + " size " + std::to_string(b.size) +
                   " overflows the arena size");
    aligned[i] = align_up(b.size, alignment);
    total += aligned[i];
  }
  return aligned;
}

namespace {

class NaiveStrategy final : public PlanStrategy {
 public:
  const char* name() const override { return "naive"; }
  const char* description() const override { return "no reuse: offsets are a prefix sum"; }
  Placement place(const std::vector<LiveBuffer>& buffers, size_t alignment) const override {
    std::vector<size_t> aligned = checked_aligned_sizes(buffers, alignment);
    Placement p;
    p.offsets.resize(buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
      p.offsets[i] = p.arena_bytes;
      p.arena_bytes += aligned[i];
    }
    return p;
  }
};

}  // namespace

std::unique_ptr<PlanStrategy> make_naive() { return std::make_unique<NaiveStrategy>(); }

}  // namespace planner_detail

size_t lower_bound_bytes(const std::vector<LiveBuffer>& buffers, size_t alignment) {
  std::vector<size_t> aligned = planner_detail::checked_aligned_sizes(buffers, alignment);
  // Sweep over interval ends: at equal steps starts come before ends because intervals are
  // inclusive, so a buffer ending at t and one starting at t are both live at t.
  struct Event {
    int step;
    int kind;  // 0 = start, 1 = end
    size_t bytes;
  };
  std::vector<Event> events;
  events.reserve(2 * buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    events.push_back({buffers[i].first, 0, aligned[i]});
    events.push_back({buffers[i].last, 1, aligned[i]});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.step != b.step ? a.step < b.step : a.kind < b.kind;
  });
  size_t live = 0, peak = 0;
  for (const Event& e : events) {
    if (e.kind == 0) {
      live += e.bytes;
      peak = std::max(peak, live);
    } else {
      live -= e.bytes;
    }
  }
  return peak;
}

size_t naive_bytes(const std::vector<LiveBuffer>& buffers, size_t alignment) {
  std::vector<size_t> aligned = planner_detail::checked_aligned_sizes(buffers, alignment);
  return std::accumulate(aligned.begin(), aligned.end(), size_t{0});
}

bool placement_valid(const std::vector<LiveBuffer>& buffers, const Placement& p, size_t alignment,
                     std::string* why) {
  auto fail = [&](const std::string& msg) {
    if (why) *why = msg;
    return false;
  };
  if (alignment == 0) return fail("alignment is zero");
  if (p.offsets.size() != buffers.size())
    return fail("placement has " + std::to_string(p.offsets.size()) + " offsets for " +
                std::to_string(buffers.size()) + " buffers");
  std::vector<size_t> aligned;
  try {
    aligned = planner_detail::checked_aligned_sizes(buffers, alignment);
  } catch (const Error& e) {
    return fail(e.what());
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    size_t off = p.offsets[i];
    if (off % alignment != 0)
      return fail("buffer " + std::to_string(i) + " offset " + std::to_string(off) +
                  " is not a multiple of " + std::to_string(alignment));
    if (off > p.arena_bytes || aligned[i] > p.arena_bytes - off)
      return fail("buffer " + std::to_string(i) + " [" + std::to_string(off) + ", +" +
                  std::to_string(aligned[i]) + ") ends past the arena of " +
                  std::to_string(p.arena_bytes) + " bytes");
  }
  // Sweep in order of first step: only buffers starting before i's last step can meet i.
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return buffers[a].first < buffers[b].first; });
  for (size_t x = 0; x < order.size(); ++x) {
    size_t i = order[x];
    if (aligned[i] == 0) continue;
    for (size_t y = x + 1; y < order.size() && buffers[order[y]].first <= buffers[i].last; ++y) {
      size_t j = order[y];
      if (aligned[j] == 0) continue;
      size_t oi = p.offsets[i], oj = p.offsets[j];
      if (oi < oj + aligned[j] && oj < oi + aligned[i])
        return fail("buffers " + std::to_string(i) + " (steps " + std::to_string(buffers[i].first) +
                    ".." + std::to_string(buffers[i].last) + ", bytes " + std::to_string(oi) + ".." +
                    std::to_string(oi + aligned[i]) + ") and " + std::to_string(j) + " (steps " +
                    std::to_string(buffers[j].first) + ".." + std::to_string(buffers[j].last) +
                    ", bytes " + std::to_string(oj) + ".." + std::to_string(oj + aligned[j]) +
                    ") are live together and overlap");
    }
  }
  return true;
}

std::vector<std::unique_ptr<PlanStrategy>> all_strategies() {
  std::vector<std::unique_ptr<PlanStrategy>> v;
  v.push_back(planner_detail::make_best_fit());  // the default: keep it first
  v.push_back(planner_detail::make_exact());
  v.push_back(planner_detail::make_greedy_breadth());
  v.push_back(planner_detail::make_greedy_size());
  v.push_back(planner_detail::make_naive());
  return v;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& s : all_strategies()) names.emplace_back(s->name());
  return names;
}

std::unique_ptr<PlanStrategy> make_strategy(std::string_view name) {
  std::string known;
  for (auto& s : all_strategies()) {
    if (name == s->name()) return std::move(s);
    known += (known.empty() ? "" : ", ") + std::string(s->name());
  }
  throw Error("unknown planner strategy '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace gpen
