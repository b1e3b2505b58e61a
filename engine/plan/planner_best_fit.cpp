// "best-fit" (the default strategy) builds several placements (five orderings x two gap rules, and
// lowest-offset-first with two tie orders), proves the optimum by branch and bound when there are
// at most 12 buffers, and otherwise improves the best order by a short deterministic local search.
// "exact" is the same with a much larger search allowance. The decoder and the orderings:
// engine/plan/planner_greedy_internal.h.
#include <algorithm>
#include <cstdint>
#include <random>

#include "engine/plan/planner_greedy_internal.h"

namespace gpen::planner_detail {
namespace {

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

std::unique_ptr<PlanStrategy> make_best_fit() { return std::make_unique<BestFitStrategy>(); }
std::unique_ptr<PlanStrategy> make_exact() { return std::make_unique<ExactStrategy>(); }

}  // namespace gpen::planner_detail
