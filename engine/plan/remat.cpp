#include "engine/plan/remat.h"

#include <algorithm>

#include "engine/plan/memory_plan.h"

namespace gpen {

namespace {

// The graph with node `producer` duplicated right before node `late[0]`, whose output `t` the
// nodes in `late` (ascending) read from the copy instead.
Graph with_copy(const Graph& g, int producer, int t, const std::vector<int>& late) {
  Graph h = g;
  const TensorDesc& d = g.tensor(t);
  int t2 = h.new_intermediate(d.name + ".remat", d.dtype, d.shape);
  std::vector<Node> nodes = h.nodes();
  Node copy = nodes[producer];
  copy.name += ".remat";
  copy.outputs = {t2};
  for (int u : late)
    for (int& in : nodes[u].inputs)
      if (in == t) in = t2;
  nodes.insert(nodes.begin() + late.front(), std::move(copy));
  h.replace_nodes(std::move(nodes));
  return h;
}

}  // namespace

RematResult rematerialize(Graph& g, bool allow_inplace, double max_flops) {
  RematResult r;
  r.lower_bound_before = r.lower_bound_after = liveness_lower_bound(g, allow_inplace);
  for (int round = 0; round < 16; ++round) {
    const int nt = static_cast<int>(g.tensors().size());
    const auto& nodes = g.nodes();
    std::vector<int> producer(nt, -1), writers(nt, 0);
    std::vector<std::vector<int>> uses(nt);
    std::vector<char> viewed(nt, 0);
    for (int t = 0; t < nt; ++t)
      if (g.tensor(t).kind == TensorKind::View) viewed[g.tensor(t).base] = 1;
    for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
      for (int t : nodes[i].outputs) {
        ++writers[g.root_of(t)];
        producer[t] = i;
      }
      for (int t : nodes[i].inputs)
        if (t >= 0 && (uses[t].empty() || uses[t].back() != i)) uses[t].push_back(i);
    }
    struct Best {
      double score = 0;
      Graph graph;
      size_t lb = 0;
      double flops = 0;
      std::string name;
    } best;
    bool found = false;
    for (int t = 0; t < nt; ++t) {
      const TensorDesc& d = g.tensor(t);
      // Only a root written once by a single-output op, read directly (no views), not an output.
      if (d.kind != TensorKind::Intermediate || d.is_output || viewed[t] || writers[t] != 1 || producer[t] < 0) continue;
      const Node& p = nodes[producer[t]];
      if (p.outputs.size() != 1 || uses[t].size() < 2) continue;
      // Inputs cheap to keep: together at most half the tensor (weights cost nothing).
      size_t keep = 0;
      for (int in : p.inputs)
        if (in >= 0 && g.tensor(g.root_of(in)).kind != TensorKind::Weight) keep += g.tensor(in).bytes();
      if (2 * keep > d.bytes()) continue;
      const double f = node_flops(g, p);
      if (r.flops_added + f > max_flops) continue;
      const std::vector<int>& u = uses[t];
      for (size_t k = 1; k < u.size(); ++k) {
        if (u[k] - u[k - 1] < 2) continue;  // nothing runs in between: nothing to gain
        std::vector<int> late(u.begin() + static_cast<std::ptrdiff_t>(k), u.end());
        Graph h = with_copy(g, producer[t], t, late);
        size_t lb = liveness_lower_bound(h, allow_inplace);
        if (lb >= r.lower_bound_after) continue;
        double score = double(r.lower_bound_after - lb) / std::max(f, 1.0);
        if (!found || score > best.score) {
          found = true;
          best.score = score;
          best.graph = std::move(h);
          best.lb = lb;
          best.flops = f;
          best.name = d.name;
        }
      }
    }
    if (!found) break;
    g = std::move(best.graph);
    r.lower_bound_after = best.lb;
    r.flops_added += best.flops;
    r.recomputed.push_back(best.name);
  }
  return r;
}

}  // namespace gpen
