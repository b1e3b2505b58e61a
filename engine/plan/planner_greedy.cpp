// Order-then-gap strategies: buffers are taken in some order and each goes into a gap left by
// the already placed buffers it shares a step with. "greedy-size" and "greedy-breadth" are the
// two TensorFlow Lite orderings. "best-fit" (the default) builds several placements (five
// orderings x two gap rules, and lowest-offset-first with two tie orders), proves the optimum by
// branch and bound when there are at most 12 buffers, and otherwise improves the best order by a
// short deterministic local search. "exact" is the same with a much larger search allowance.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>

#include "engine/plan/planner.h"

namespace gpen::planner_detail {
namespace {

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

int64_t span(const Item& x) { return int64_t{x.last} - x.first + 1; }

// Indices sorted by `less`, ties broken by index so that results never depend on the sort.
template <class Less>
std::vector<int> sorted_order(const std::vector<Item>& items, Less less) {
  std::vector<int> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return less(items[a], items[b]); });
  return order;
}

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

using OrderFn = std::vector<int> (*)(const std::vector<Item>&);

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

class GreedySizeStrategy final : public PlanStrategy {
 public:
  const char* name() const override { return "greedy-size"; }
  const char* description() const override {
    return "TFLite greedy by size: largest first, each into the tightest gap that fits";
  }
  Placement place(const std::vector<LiveBuffer>& buffers, size_t alignment) const override {
    std::vector<size_t> aligned = checked_aligned_sizes(buffers, alignment);
    std::vector<Item> items = nonzero_items(buffers, aligned);
    Decoder d(items);
    size_t arena = d.run(order_by_size(items), GapRule::kBest);
    return to_placement(items, buffers.size(), d.offsets(), arena);
  }
};

class GreedyBreadthStrategy final : public PlanStrategy {
 public:
  const char* name() const override { return "greedy-breadth"; }
  const char* description() const override {
    return "TFLite greedy by breadth: buffers of the most crowded steps first, tightest gap";
  }
  Placement place(const std::vector<LiveBuffer>& buffers, size_t alignment) const override {
    std::vector<size_t> aligned = checked_aligned_sizes(buffers, alignment);
    std::vector<Item> items = nonzero_items(buffers, aligned);
    Decoder d(items);
    size_t arena = d.run(order_by_breadth(items), GapRule::kBest);
    return to_placement(items, buffers.size(), d.offsets(), arena);
  }
};

// Problems up to this many nonzero buffers are also searched exactly by the default strategy.
constexpr size_t kExactMaxBuffers = 12;
constexpr long kDefaultExactNodes = 10'000;  // ~3 ms at worst
constexpr long kExactStrategyNodes = 1'000'000;  // ~0.3 s at worst
// Local search effort in decoder work units (~1-2 ns each): bounds planning time on large graphs
// while small ones get many iterations.
constexpr double kSearchWork = 1e6;
// Construction stops trying further orderings past this much work (huge crowded sets only).
constexpr double kConstructionWork = 2e6;
constexpr int kMaxSearchIters = 3000;

Placement best_fit_place(const std::vector<LiveBuffer>& buffers, size_t alignment, long exact_nodes) {
  std::vector<size_t> aligned = checked_aligned_sizes(buffers, alignment);
  std::vector<Item> items = nonzero_items(buffers, aligned);
  const size_t n = items.size();
  const size_t lb = lower_bound_bytes(buffers, alignment);
  // One buffer always sits at the bound; the search below needs two to move anything.
  if (n <= 1) return to_placement(items, buffers.size(), std::vector<size_t>(n, 0), n ? items[0].size : 0);
  Decoder d(items);

  // Orderings, built lazily: most network graphs reach the lower bound with the first one.
  const OrderFn orderings[] = {order_by_size, order_by_area, order_by_span, order_by_breadth, order_by_first};
  std::vector<int> best_order;
  GapRule best_rule = GapRule::kBest;
  size_t best = kNone;
  std::vector<size_t> best_off;
  for (OrderFn make : orderings) {
    std::vector<int> order = make(items);
    for (GapRule rule : {GapRule::kBest, GapRule::kFirst}) {
      size_t arena = d.run(order, rule);
      if (arena < best) {
        best = arena;
        best_order = order;
        best_rule = rule;
        best_off = d.offsets();
      }
      if (best == lb) break;
    }
    if (best == lb || d.work() > kConstructionWork) break;
  }

  // Lowest offset first, with two tie orders: the strongest constructions on crowded sets.
  if (best > lb && d.work() <= kConstructionWork) {
    std::vector<int> order;
    for (OrderFn prio : {order_by_span, order_by_area}) {
      size_t arena = d.run_lowest_first(prio(items), order);
      if (arena < best) {
        best = arena;
        best_order = order;
        best_rule = GapRule::kFirst;
        best_off = d.offsets();
      }
      if (best == lb || d.work() > kConstructionWork) break;
    }
  }

  Placement p = to_placement(items, buffers.size(), best_off, best);
  if (best == lb) return p;
  // Tiny problems: prove the optimum instead of searching for it.
  if (n <= kExactMaxBuffers && exact_nodes > 0 && exact_search(buffers, aligned, p, exact_nodes)) return p;

  // Local search on the order: move a buffer that touches the top of the arena (or, less often,
  // any buffer) earlier and re-place from there on; keep the new order when the arena does not
  // grow. Sideways moves let the search drift across plateaus.
  const double budget = d.work() + kSearchWork;
  std::mt19937_64 rng(0x9e3779b97f4a7c15ull ^ n);
  std::vector<int> cur_order = best_order, cand;
  std::vector<size_t> cur_off = best_off;
  size_t cur = best;
  std::vector<int> pos(n), top;
  for (int it = 0; it < kMaxSearchIters && best > lb && d.work() < budget; ++it) {
    for (size_t k = 0; k < n; ++k) pos[cur_order[k]] = static_cast<int>(k);
    top.clear();
    for (size_t i = 0; i < n; ++i)
      if (cur_off[i] + items[i].size == cur) top.push_back(static_cast<int>(i));
    cand = cur_order;
    int victim = (rng() % 4 != 0 && !top.empty()) ? top[rng() % top.size()] : static_cast<int>(rng() % n);
    size_t from = static_cast<size_t>(pos[victim]), to = 0;
    if (from == 0) {
      std::swap(cand[0], cand[1 + rng() % (n - 1)]);
    } else {
      to = rng() % from;
      cand.erase(cand.begin() + static_cast<std::ptrdiff_t>(from));
      cand.insert(cand.begin() + static_cast<std::ptrdiff_t>(to), victim);
    }
    d.set_offsets(cur_off);
    size_t arena = d.run(cand, best_rule, to);
    if (arena <= cur) {
      cur = arena;
      cur_order.swap(cand);
      cur_off = d.offsets();
      if (arena < best) {
        best = arena;
        best_off = cur_off;
      }
    }
  }
  if (best < p.arena_bytes) p = to_placement(items, buffers.size(), best_off, best);
  return p;
}

class BestFitStrategy final : public PlanStrategy {
 public:
  const char* name() const override { return "best-fit"; }
  const char* description() const override {
    return "several orderings and gap rules plus lowest-offset-first, then local search on the order; "
           "exact when <= 12 buffers";
  }
  Placement place(const std::vector<LiveBuffer>& buffers, size_t alignment) const override {
    return best_fit_place(buffers, alignment, kDefaultExactNodes);
  }
};

class ExactStrategy final : public PlanStrategy {
 public:
  const char* name() const override { return "exact"; }
  const char* description() const override {
    return "best-fit with a branch and bound run to a proven optimum when <= 12 buffers";
  }
  Placement place(const std::vector<LiveBuffer>& buffers, size_t alignment) const override {
    return best_fit_place(buffers, alignment, kExactStrategyNodes);
  }
};

}  // namespace

std::unique_ptr<PlanStrategy> make_greedy_size() { return std::make_unique<GreedySizeStrategy>(); }
std::unique_ptr<PlanStrategy> make_greedy_breadth() { return std::make_unique<GreedyBreadthStrategy>(); }
std::unique_ptr<PlanStrategy> make_best_fit() { return std::make_unique<BestFitStrategy>(); }
std::unique_ptr<PlanStrategy> make_exact() { return std::make_unique<ExactStrategy>(); }

}  // namespace gpen::planner_detail
