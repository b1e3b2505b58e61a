#pragma once
// Internal to the order-then-gap strategies (engine/plan/planner_greedy.cpp, planner_best_fit.cpp):
// the items they place, the decoder that places them in a given order, and the orderings
// (engine/plan/planner_orders.cpp). Callers use make_strategy() (engine/plan/planner.h).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "engine/plan/planner.h"

namespace gpen::planner_detail {

constexpr size_t kNone = std::numeric_limits<size_t>::max();

// A buffer with a nonzero aligned size; zero-sized buffers take offset 0 and no part in planning.
struct Item {
  size_t size;
  int first, last;
  size_t index;  // into the caller's buffer list
};

enum class GapRule {
  kBest,   // the tightest gap that fits (TFLite); the top of the stack when none does
  kFirst,  // the lowest gap that fits
};

// Places items one at a time in a given order, each into a gap between the placed items it shares
// a step with. Those neighbours must be listed by offset; two ways, picked once per problem:
// - sparse (network graphs, short lifetimes): gather them from the item's conflict list, built
//   once, and sort them; a pass costs about n * degree * log(degree).
// - dense (long lifetimes, most placed items are neighbours): scan all placed items, kept in a
//   vector sorted by offset, skipping those live at other steps; a pass costs about n^2 / 2.
class Decoder {
 public:
  explicit Decoder(const std::vector<Item>& items) : items_(items), off_(items.size(), 0), placed_(items.size(), 0) {
    const size_t n = items.size();
    // Degrees by binary search: j meets i unless it ends before i starts or starts after i ends.
    std::vector<int> firsts(n), lasts(n);
    for (size_t i = 0; i < n; ++i) firsts[i] = items[i].first, lasts[i] = items[i].last;
    std::sort(firsts.begin(), firsts.end());
    std::sort(lasts.begin(), lasts.end());
    size_t edges = 0;
    for (const Item& x : items) {
      size_t start_before_end = std::upper_bound(firsts.begin(), firsts.end(), x.last) - firsts.begin();
      size_t end_before_start = std::lower_bound(lasts.begin(), lasts.end(), x.first) - lasts.begin();
      edges += start_before_end - end_before_start - 1;
    }
    // Sparse when the average degree is below n / 16, and the lists stay a modest allocation.
    sparse_ = 16 * edges < n * n && edges <= 8'000'000;
    if (sparse_) build_conflict_lists();
    slots_.reserve(n);
  }

  // Places order[from..] after order[..from), which keep the offsets currently in offsets() (the
  // local search re-places only the suffix it changed). Returns the arena.
  size_t run(const std::vector<int>& order, GapRule rule, size_t from = 0) {
    std::fill(placed_.begin(), placed_.end(), 0);
    slots_.clear();
    size_t arena = 0;
    for (size_t k = 0; k < from; ++k) {
      int i = order[k];
      placed_[i] = 1;
      arena = std::max(arena, off_[i] + items_[i].size);
      if (!sparse_) slots_.push_back({off_[i], off_[i] + items_[i].size, items_[i].first, items_[i].last});
    }
    std::sort(slots_.begin(), slots_.end(), [](const Slot& a, const Slot& b) { return a.off < b.off; });
    for (size_t k = from; k < order.size(); ++k) {
      int i = order[k];
      size_t at = find(i, rule);
      commit(i, at);
      arena = std::max(arena, at + items_[i].size);
    }
    return arena;
  }

  // Lowest offset first: repeatedly places, among all unplaced items, the one that can go lowest,
  // ties going to the earlier item in `priority`. Fills `order` with the placement order; decoding
  // it with GapRule::kFirst reproduces the placement. Returns the arena.
  size_t run_lowest_first(const std::vector<int>& priority, std::vector<int>& order) {
    const size_t n = items_.size();
    std::fill(placed_.begin(), placed_.end(), 0);
    slots_.clear();
    order.clear();
    std::vector<int> rank(n), open(priority);
    for (size_t k = 0; k < n; ++k) rank[priority[k]] = static_cast<int>(k);
    std::vector<size_t> lowest(n, 0);
    size_t arena = 0;
    while (!open.empty()) {
      size_t pick = 0;
      for (size_t k = 1; k < open.size(); ++k) {
        int a = open[k], b = open[pick];
        if (lowest[a] < lowest[b] || (lowest[a] == lowest[b] && rank[a] < rank[b])) pick = k;
      }
      int x = open[pick];
      open.erase(open.begin() + static_cast<std::ptrdiff_t>(pick));
      const size_t at = lowest[x], end = at + items_[x].size;
      commit(x, at);
      order.push_back(x);
      arena = std::max(arena, end);
      work_ += open.size();
      // Only the open items that x now blocks move up.
      for (int y : open) {
        const Item& it = items_[y];
        if (it.last < items_[x].first || it.first > items_[x].last) continue;
        if (lowest[y] < end && at < lowest[y] + it.size) lowest[y] = find_first_above(y, lowest[y], x);
      }
    }
    return arena;
  }

  const std::vector<size_t>& offsets() const { return off_; }
  void set_offsets(const std::vector<size_t>& off) { off_ = off; }
  // Neighbours and placed items visited so far: the unit of the search budget.
  double work() const { return static_cast<double>(work_); }

 private:
  struct Slot {
    size_t off, end;
    int first, last;
  };

  void build_conflict_lists() {
    const size_t n = items_.size();
    std::vector<int> by_first(n);
    std::iota(by_first.begin(), by_first.end(), 0);
    std::stable_sort(by_first.begin(), by_first.end(), [&](int a, int b) { return items_[a].first < items_[b].first; });
    std::vector<std::pair<int, int>> edges;
    for (size_t u = 0; u < n; ++u)
      for (size_t v = u + 1; v < n && items_[by_first[v]].first <= items_[by_first[u]].last; ++v)
        edges.push_back({by_first[u], by_first[v]});
    start_.assign(n + 1, 0);
    for (auto [i, j] : edges) ++start_[i + 1], ++start_[j + 1];
    for (size_t i = 0; i < n; ++i) start_[i + 1] += start_[i];
    adj_.resize(start_[n]);
    std::vector<size_t> fill(start_.begin(), start_.end() - 1);
    for (auto [i, j] : edges) adj_[fill[i]++] = j, adj_[fill[j]++] = i;
  }

  size_t find(int i, GapRule rule) { return sparse_ ? find_sparse(i, rule) : find_dense(i, rule); }

  void commit(int i, size_t at) {
    off_[i] = at;
    placed_[i] = 1;
    if (!sparse_) {
      Slot slot{at, at + items_[i].size, items_[i].first, items_[i].last};
      slots_.insert(std::upper_bound(slots_.begin(), slots_.end(), at,
                                     [](size_t o, const Slot& s) { return o < s.off; }),
                    slot);
    }
  }

  // First fit for open item y, which fitted at `floor` until x was placed over it. Every other
  // placed neighbour of y below `floor` ends at or under it (else y would have moved up
  // earlier), so the scan starts at `floor`, with x the only item that may reach across it.
  size_t find_first_above(int y, size_t floor, int x) {
    const Item& it = items_[y];
    size_t cur = std::max(floor, off_[x] < floor ? off_[x] + items_[x].size : floor);
    if (sparse_) {
      below_.clear();
      for (size_t e = start_[y]; e < start_[y + 1]; ++e) {
        int j = adj_[e];
        if (placed_[j] && off_[j] >= floor) below_.push_back({off_[j], off_[j] + items_[j].size});
      }
      std::sort(below_.begin(), below_.end());
      work_ += start_[y + 1] - start_[y] + 4 * below_.size();
      for (auto [off, end] : below_) {
        if (off >= cur + it.size) return cur;
        cur = std::max(cur, end);
      }
      return cur;
    }
    auto s = std::lower_bound(slots_.begin(), slots_.end(), floor, [](const Slot& a, size_t o) { return a.off < o; });
    work_ += static_cast<size_t>(slots_.end() - s);
    for (; s != slots_.end(); ++s) {
      bool live = s->last >= it.first && s->first <= it.last;
      if (live && s->off >= cur + it.size) return cur;
      cur = live ? std::max(cur, s->end) : cur;
    }
    return cur;
  }

  size_t find_sparse(int i, GapRule rule) {
    const size_t size = items_[i].size;
    below_.clear();
    for (size_t e = start_[i]; e < start_[i + 1]; ++e) {
      int j = adj_[e];
      if (placed_[j]) below_.push_back({off_[j], off_[j] + items_[j].size});
    }
    std::sort(below_.begin(), below_.end());
    work_ += start_[i + 1] - start_[i] + 4 * below_.size();
    size_t cur = 0, best = kNone, best_waste = kNone;
    for (auto [off, end] : below_) {
      if (off >= cur + size && off - cur - size < best_waste) {
        best = cur;
        best_waste = off - cur - size;
        if (rule == GapRule::kFirst || best_waste == 0) break;
      }
      cur = std::max(cur, end);
    }
    return best == kNone ? cur : best;
  }

  size_t find_dense(int i, GapRule rule) {
    const Item& x = items_[i];
    const bool first_fit = rule == GapRule::kFirst;
    size_t cur = 0, best = kNone, best_waste = kNone;
    work_ += slots_.size();
    // Branch-free body: whether a slot shares a step with x is noise to the branch predictor.
    for (const Slot& s : slots_) {
      bool live = (s.last >= x.first) & (s.first <= x.last);
      bool fits = live & (s.off >= cur + x.size);
      size_t waste = s.off - cur - x.size;
      bool better = fits & (waste < best_waste);
      best = better ? cur : best;
      best_waste = better ? waste : best_waste;
      size_t raised = std::max(cur, s.end);
      cur = live ? raised : cur;
      if ((first_fit & (best != kNone)) | (best_waste == 0)) break;
    }
    return best == kNone ? cur : best;
  }

  const std::vector<Item>& items_;
  bool sparse_ = false;
  std::vector<size_t> start_;  // conflict lists (sparse): adj_[start_[i] .. start_[i + 1])
  std::vector<int> adj_;
  std::vector<size_t> off_;
  std::vector<char> placed_;
  std::vector<Slot> slots_;  // placed items by offset (dense)
  std::vector<std::pair<size_t, size_t>> below_;
  size_t work_ = 0;
};

std::vector<Item> nonzero_items(const std::vector<LiveBuffer>& buffers, const std::vector<size_t>& aligned);
Placement to_placement(const std::vector<Item>& items, size_t n_buffers, const std::vector<size_t>& item_offsets,
                       size_t arena);

// Placement orders: indices into the items, ties broken by index.
std::vector<int> order_by_size(const std::vector<Item>& items);
std::vector<int> order_by_area(const std::vector<Item>& items);
std::vector<int> order_by_span(const std::vector<Item>& items);
std::vector<int> order_by_first(const std::vector<Item>& items);
// TFLite's "greedy by breadth" (see planner_orders.cpp).
std::vector<int> order_by_breadth(const std::vector<Item>& items);

using OrderFn = std::vector<int> (*)(const std::vector<Item>&);

}  // namespace gpen::planner_detail
