#include "engine/plan/reorder.h"

#include <algorithm>
#include <numeric>

#include "engine/plan/memory_plan.h"

namespace gpen {

namespace {

bool is_weight_root(const Graph& g, int t) { return g.tensor(g.root_of(t)).kind == TensorKind::Weight; }

// Per node: the arena roots it reads and writes (each once).
struct Touches {
  std::vector<std::vector<int>> reads, writes;
};

Touches touches(const Graph& g) {
  Touches tc;
  for (const Node& n : g.nodes()) {
    std::vector<int> r, w;
    for (int t : n.inputs)
      if (t >= 0 && !is_weight_root(g, t)) r.push_back(g.root_of(t));
    for (int t : n.outputs) w.push_back(g.root_of(t));
    for (auto* v : {&r, &w}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    tc.reads.push_back(std::move(r));
    tc.writes.push_back(std::move(w));
  }
  return tc;
}

// Liveness lower bound of g in `order` (a valid order).
size_t bound_in_order(const Graph& g, const std::vector<int>& order, bool allow_inplace) {
  Graph h = g;
  apply_order(h, order);
  return liveness_lower_bound(h, allow_inplace);
}

enum class Rule { kNet, kFreeFirst };

// List scheduling: among the ready nodes, run the one with the best memory effect (bytes it brings
// to life minus bytes whose last use it is), ties to the builder's order.
std::vector<int> greedy_order(const Graph& g, const std::vector<std::vector<int>>& preds, const Touches& tc, Rule rule) {
  const int n = static_cast<int>(g.nodes().size());
  const int nt = static_cast<int>(g.tensors().size());
  std::vector<int> remaining(nt, 0);  // unscheduled nodes touching each root
  std::vector<char> live(nt, 0), pinned(nt, 0);
  for (int t = 0; t < nt; ++t) {
    const TensorDesc& d = g.tensor(t);
    if (d.is_output) pinned[g.root_of(t)] = 1;
    if (d.kind == TensorKind::Input) live[t] = 1;
  }
  for (int i = 0; i < n; ++i) {
    std::vector<int> all = tc.reads[i];
    all.insert(all.end(), tc.writes[i].begin(), tc.writes[i].end());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    for (int r : all) ++remaining[r];
  }
  std::vector<int> waiting(n), order;
  std::vector<std::vector<int>> succs(n);
  for (int i = 0; i < n; ++i) {
    waiting[i] = static_cast<int>(preds[i].size());
    for (int p : preds[i]) succs[p].push_back(i);
  }
  std::vector<int> ready;
  for (int i = 0; i < n; ++i)
    if (waiting[i] == 0) ready.push_back(i);
  while (!ready.empty()) {
    size_t pick = 0;
    double best_key0 = 0, best_key1 = 0;
    for (size_t k = 0; k < ready.size(); ++k) {
      const int i = ready[k];
      double alloc = 0, freed = 0;
      std::vector<int> all = tc.reads[i];
      all.insert(all.end(), tc.writes[i].begin(), tc.writes[i].end());
      std::sort(all.begin(), all.end());
      all.erase(std::unique(all.begin(), all.end()), all.end());
      for (int r : all) {
        double b = static_cast<double>(g.tensor(r).bytes());
        if (!live[r]) alloc += b;
        if (remaining[r] == 1 && !pinned[r]) freed += b;
      }
      double k0 = rule == Rule::kNet ? alloc - freed : -freed;
      double k1 = rule == Rule::kNet ? 0 : alloc;
      if (k == 0 || k0 < best_key0 || (k0 == best_key0 && (k1 < best_key1 || (k1 == best_key1 && i < ready[pick])))) {
        pick = k;
        best_key0 = k0;
        best_key1 = k1;
      }
    }
    const int i = ready[pick];
    ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(pick));
    order.push_back(i);
    std::vector<int> all = tc.reads[i];
    all.insert(all.end(), tc.writes[i].begin(), tc.writes[i].end());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    for (int r : all) {
      live[r] = 1;
      --remaining[r];
    }
    for (int s : succs[i])
      if (--waiting[s] == 0) ready.push_back(s);
  }
  return order;
}

}  // namespace

std::vector<std::vector<int>> node_predecessors(const Graph& g) {
  const int n = static_cast<int>(g.nodes().size());
  const int nt = static_cast<int>(g.tensors().size());
  Touches tc = touches(g);
  std::vector<std::vector<int>> writers(nt), readers(nt), preds(n);
  for (int i = 0; i < n; ++i) {
    std::vector<int>& p = preds[i];
    for (int r : tc.reads[i]) p.insert(p.end(), writers[r].begin(), writers[r].end());
    for (int r : tc.writes[i]) {
      p.insert(p.end(), writers[r].begin(), writers[r].end());
      p.insert(p.end(), readers[r].begin(), readers[r].end());
    }
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    p.erase(std::remove(p.begin(), p.end(), i), p.end());  // an op may read and write one root
    for (int r : tc.reads[i]) readers[r].push_back(i);
    for (int r : tc.writes[i]) writers[r].push_back(i);
  }
  return preds;
}

bool is_valid_order(const Graph& g, const std::vector<int>& order, std::string* why) {
  auto fail = [&](const std::string& m) {
    if (why) *why = m;
    return false;
  };
  const int n = static_cast<int>(g.nodes().size());
  if (static_cast<int>(order.size()) != n)
    return fail("order has " + std::to_string(order.size()) + " entries for " + std::to_string(n) + " nodes");
  std::vector<int> pos(n, -1);
  for (int k = 0; k < n; ++k) {
    int i = order[k];
    if (i < 0 || i >= n || pos[i] >= 0) return fail("order is not a permutation (entry " + std::to_string(k) + ")");
    pos[i] = k;
  }
  std::vector<std::vector<int>> preds = node_predecessors(g);
  for (int i = 0; i < n; ++i)
    for (int p : preds[i])
      if (pos[p] > pos[i])
        return fail("node " + g.nodes()[i].name + " runs before its predecessor " + g.nodes()[p].name);
  return true;
}

void apply_order(Graph& g, const std::vector<int>& order) {
  std::vector<Node> nodes;
  nodes.reserve(order.size());
  for (int i : order) nodes.push_back(g.nodes()[i]);
  g.replace_nodes(std::move(nodes));
}

ReorderResult reorder_for_memory(Graph& g, bool allow_inplace) {
  ReorderResult r;
  const int n = static_cast<int>(g.nodes().size());
  r.lower_bound_before = r.lower_bound_after = liveness_lower_bound(g, allow_inplace);
  if (n < 2) return r;
  const std::vector<std::vector<int>> preds = node_predecessors(g);
  const Touches tc = touches(g);
  std::vector<int> best(n);
  std::iota(best.begin(), best.end(), 0);
  size_t best_lb = r.lower_bound_before;
  std::string best_rule = "builder";
  const std::pair<Rule, const char*> rules[] = {{Rule::kNet, "greedy-net"}, {Rule::kFreeFirst, "greedy-free"}};
  for (auto [rule, name] : rules) {
    std::vector<int> o = greedy_order(g, preds, tc, rule);
    size_t lb = bound_in_order(g, o, allow_inplace);
    if (lb < best_lb) {
      best_lb = lb;
      best = o;
      best_rule = name;
    }
  }
  // Bounded local search: move one node as late as its successors allow, or as early as its
  // predecessors allow; keep a move when the peak drops.
  std::vector<std::vector<int>> succs(n);
  for (int i = 0; i < n; ++i)
    for (int p : preds[i]) succs[p].push_back(i);
  int evaluations = 0;
  const int max_evaluations = 4 * n;
  bool improved = true, searched = false;
  while (improved && evaluations < max_evaluations) {
    improved = false;
    std::vector<int> pos(n);
    for (int k = 0; k < n && evaluations < max_evaluations; ++k) {
      for (int q = 0; q < n; ++q) pos[best[q]] = q;
      const int i = best[k];
      int lo = 0, hi = n - 1;
      for (int p : preds[i]) lo = std::max(lo, pos[p] + 1);
      for (int s : succs[i]) hi = std::min(hi, pos[s] - 1);
      for (int to : {hi, lo}) {
        if (to == k) continue;
        std::vector<int> cand = best;
        cand.erase(cand.begin() + k);
        cand.insert(cand.begin() + to, i);
        ++evaluations;
        size_t lb = bound_in_order(g, cand, allow_inplace);
        if (lb < best_lb) {
          best_lb = lb;
          best = std::move(cand);
          improved = searched = true;
          break;
        }
      }
    }
  }
  if (best_lb >= r.lower_bound_before) return r;
  r.rule = best_rule + (searched ? "+moves" : "");
  // Nodes that had to move: all but a longest run kept in builder order (longest increasing
  // subsequence), so one node moved far counts once.
  std::vector<int> tails;
  for (int i : best) {
    auto it = std::lower_bound(tails.begin(), tails.end(), i);
    if (it == tails.end()) tails.push_back(i);
    else *it = i;
  }
  r.nodes_moved = n - static_cast<int>(tails.size());
  apply_order(g, best);
  r.lower_bound_after = best_lb;
  return r;
}

}  // namespace gpen
