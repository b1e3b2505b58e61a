// The placement orders of the order-then-gap strategies (engine/plan/planner_greedy_internal.h):
// by size, area, span, first step, and TFLite's greedy by breadth; and the conversions between
// the caller's buffers and the items the strategies place.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <numeric>

#include "engine/plan/planner_greedy_internal.h"

namespace gpen::planner_detail {

std::vector<Item> nonzero_items(const std::vector<LiveBuffer>& buffers, const std::vector<size_t>& aligned) {
  std::vector<Item> items;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (aligned[i] > 0) items.push_back({aligned[i], buffers[i].first, buffers[i].last, i});
  return items;
}

Placement to_placement(const std::vector<Item>& items, size_t n_buffers, const std::vector<size_t>& item_offsets,
                       size_t arena) {
  Placement p;
  p.offsets.assign(n_buffers, 0);
  for (size_t i = 0; i < items.size(); ++i) p.offsets[items[i].index] = item_offsets[i];
  p.arena_bytes = arena;
  return p;
}

namespace {

int64_t span(const Item& x) { return int64_t{x.last} - x.first + 1; }

// Indices sorted by `less`, ties broken by index so that results never depend on the sort.
template <class Less>
std::vector<int> sorted_order(const std::vector<Item>& items, Less less) {
  std::vector<int> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return less(items[a], items[b]); });
  return order;
}

}  // namespace

std::vector<int> order_by_size(const std::vector<Item>& items) {
  return sorted_order(items, [](const Item& a, const Item& b) {
    if (a.size != b.size) return a.size > b.size;
    if (span(a) != span(b)) return span(a) > span(b);
    return a.first < b.first;
  });
}

std::vector<int> order_by_area(const std::vector<Item>& items) {
  return sorted_order(items, [](const Item& a, const Item& b) {
    // Area in the (step, byte) plane; long double keeps huge size * span products ordered.
    return static_cast<long double>(a.size) * span(a) > static_cast<long double>(b.size) * span(b);
  });
}

std::vector<int> order_by_span(const std::vector<Item>& items) {
  return sorted_order(items, [](const Item& a, const Item& b) {
    return span(a) != span(b) ? span(a) > span(b) : a.size > b.size;
  });
}

std::vector<int> order_by_first(const std::vector<Item>& items) {
  return sorted_order(items, [](const Item& a, const Item& b) {
    return a.first != b.first ? a.first < b.first : a.size > b.size;
  });
}

namespace {

// Bytes live at each item's first step; the peak of the live-bytes profile is at some first step.
std::vector<size_t> load_at_starts(const std::vector<Item>& items) {
  std::vector<int> by_first = sorted_order(items, [](const Item& a, const Item& b) { return a.first < b.first; });
  std::vector<int> by_last = sorted_order(items, [](const Item& a, const Item& b) { return a.last < b.last; });
  std::vector<size_t> load(items.size());
  size_t live = 0, e = 0;
  for (size_t s = 0; s < by_first.size();) {
    int step = items[by_first[s]].first;
    while (e < by_last.size() && items[by_last[e]].last < step) live -= items[by_last[e++]].size;
    size_t s_end = s;
    while (s_end < by_first.size() && items[by_first[s_end]].first == step) live += items[by_first[s_end++]].size;
    for (; s < s_end; ++s) load[by_first[s]] = live;
  }
  return load;
}

}  // namespace

// TFLite's "greedy by breadth": the most crowded steps first, within a step the largest buffers
// first. Each buffer goes with the most crowded start step inside its lifetime, found by a range
// maximum over the start steps in time order (sparse table), so this stays n log n.
std::vector<int> order_by_breadth(const std::vector<Item>& items) {
  const size_t n = items.size();
  std::vector<size_t> load = load_at_starts(items);
  // Distinct start steps in time order with the load there; rank 0 is the most crowded.
  std::vector<int> by_first = sorted_order(items, [](const Item& a, const Item& b) { return a.first < b.first; });
  std::vector<int> step_time;
  std::vector<size_t> step_load;
  for (int i : by_first)
    if (step_time.empty() || step_time.back() != items[i].first) {
      step_time.push_back(items[i].first);
      step_load.push_back(load[i]);
    }
  const size_t steps = step_time.size();
  std::vector<int> by_load(steps);
  std::iota(by_load.begin(), by_load.end(), 0);
  std::stable_sort(by_load.begin(), by_load.end(), [&](int a, int b) { return step_load[a] > step_load[b]; });
  std::vector<int> rank(steps);
  for (size_t r = 0; r < steps; ++r) rank[by_load[r]] = static_cast<int>(r);
  // table[k][s] = min rank over steps [s, s + 2^k)
  std::vector<std::vector<int>> table{rank};
  for (size_t w = 2; w <= steps; w *= 2) {
    const std::vector<int>& prev = table.back();
    std::vector<int> next(steps - w + 1);
    for (size_t s = 0; s + w <= steps; ++s) next[s] = std::min(prev[s], prev[s + w / 2]);
    table.push_back(std::move(next));
  }
  std::vector<int> best_rank(n);
  for (size_t i = 0; i < n; ++i) {
    // Start steps inside [first, last]; the item's own first step is one, so the range is not empty.
    size_t lo = std::lower_bound(step_time.begin(), step_time.end(), items[i].first) - step_time.begin();
    size_t hi = std::upper_bound(step_time.begin(), step_time.end(), items[i].last) - step_time.begin();
    size_t k = static_cast<size_t>(std::bit_width(hi - lo) - 1);
    best_rank[i] = std::min(table[k][lo], table[k][hi - (size_t{1} << k)]);
  }
  std::vector<int> order = order_by_size(items);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return best_rank[a] < best_rank[b]; });
  return order;
}

}  // namespace gpen::planner_detail
