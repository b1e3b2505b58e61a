#pragma once
// Offset assignment for buffers with known lifetimes: the pure algorithmic core of the static
// memory planner, independent of graphs. Contract: every buffer gets an offset (a multiple of the
// alignment) such that two buffers whose step intervals intersect never overlap in memory, and the
// arena (max offset + aligned size) is as small as the strategy can make it.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gpen {

constexpr size_t kArenaAlignment = 256;

inline size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

struct LiveBuffer {
  size_t size = 0;  // bytes (rounded up to the alignment by the strategies)
  int first = 0;    // first step that touches it (inclusive)
  int last = 0;     // last step that touches it (inclusive)
};

struct Placement {
  std::vector<size_t> offsets;  // one per buffer
  size_t arena_bytes = 0;
};

class PlanStrategy {
 public:
  virtual ~PlanStrategy() = default;
  virtual const char* name() const = 0;
  virtual const char* description() const = 0;
  virtual Placement place(const std::vector<LiveBuffer>& buffers, size_t alignment) const = 0;
};

// The largest sum of aligned sizes live at one step: no valid placement is smaller.
size_t lower_bound_bytes(const std::vector<LiveBuffer>& buffers, size_t alignment);
// Sum of aligned sizes: what no reuse costs.
size_t naive_bytes(const std::vector<LiveBuffer>& buffers, size_t alignment);
// True when no two buffers alive at a common step overlap and all offsets are aligned; on failure
// `why` names the pair.
bool placement_valid(const std::vector<LiveBuffer>& buffers, const Placement& p, size_t alignment,
                     std::string* why = nullptr);

// Registry: "naive", "greedy-size", ... ; the first entry of all_strategies() is the default
// (the best one).
std::vector<std::unique_ptr<PlanStrategy>> all_strategies();
std::unique_ptr<PlanStrategy> make_strategy(std::string_view name);  // throws gpen::Error
std::vector<std::string> strategy_names();

// Pieces shared by the strategy files (engine/planner*.cpp); callers use make_strategy().
namespace planner_detail {
// Aligned sizes after checking the input: alignment > 0, first <= last, no overflow of their sum.
std::vector<size_t> checked_aligned_sizes(const std::vector<LiveBuffer>& buffers, size_t alignment);
// Branch and bound over canonical placements; improves `best` (a valid placement on entry) and
// returns true when it proved `best` optimal within `max_nodes`. Only for small problems.
bool exact_search(const std::vector<LiveBuffer>& buffers, const std::vector<size_t>& aligned,
                  Placement& best, long max_nodes);
std::unique_ptr<PlanStrategy> make_naive();
std::unique_ptr<PlanStrategy> make_greedy_size();
std::unique_ptr<PlanStrategy> make_greedy_breadth();
std::unique_ptr<PlanStrategy> make_best_fit();
std::unique_ptr<PlanStrategy> make_exact();
}  // namespace planner_detail

}  // namespace gpen
