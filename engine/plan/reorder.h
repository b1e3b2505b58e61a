#pragma once
// Execution-order exploration: the graph builder's node order is one valid topological order;
// another one may keep fewer bytes alive at the peak. The pass tries greedy list schedules and a
// bounded local search, and keeps an order only when it lowers the liveness lower bound.
#include <string>
#include <vector>

#include "engine/graph/graph.h"

namespace gpen {

// Per node, the nodes that must run before it: writers of any storage it reads, and every earlier
// reader or writer of any storage it writes (views share their root's storage; weights are free).
std::vector<std::vector<int>> node_predecessors(const Graph& g);

// True when `order` is a permutation of g's nodes that runs every node after its predecessors.
bool is_valid_order(const Graph& g, const std::vector<int>& order, std::string* why = nullptr);

// g's nodes in the given order (must be valid).
void apply_order(Graph& g, const std::vector<int>& order);

struct ReorderResult {
  std::string rule = "builder";  // which order was kept
  int nodes_moved = 0;           // nodes out of builder order (all but a longest in-order run)
  size_t lower_bound_before = 0, lower_bound_after = 0;
};

ReorderResult reorder_for_memory(Graph& g, bool allow_inplace);

}  // namespace gpen
