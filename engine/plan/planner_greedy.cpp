// Order-then-gap strategies: buffers are taken in some order and each goes into a gap left by
// the already placed buffers it shares a step with. "greedy-size" and "greedy-breadth" are the
// two TensorFlow Lite orderings; "best-fit" and "exact" (engine/plan/planner_best_fit.cpp) try
// several orderings and search further. The decoder and the orderings:
// engine/plan/planner_greedy_internal.h.
#include "engine/plan/planner_greedy_internal.h"

namespace gpen::planner_detail {
namespace {

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

}  // namespace

std::unique_ptr<PlanStrategy> make_greedy_size() { return std::make_unique<GreedySizeStrategy>(); }
std::unique_ptr<PlanStrategy> make_greedy_breadth() { return std::make_unique<GreedyBreadthStrategy>(); }

}  // namespace gpen::planner_detail
