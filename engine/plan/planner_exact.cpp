// Exact offset assignment for small problems by branch and bound.
//
// Canonical form: push every buffer down until it rests on a buffer it shares a step with (or on
// 0); the arena never grows. In that form, listing buffers by (offset, index), each buffer's offset
// is exactly the highest end among the earlier-listed buffers it conflicts with. So a solution is a
// permutation whose implied offsets never decrease, and the search only branches over "which buffer
// comes next", never over positions.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <vector>

#include "engine/plan/planner.h"

namespace gpen::planner_detail {
namespace {

constexpr size_t kMaxExactItems = 62;  // bit masks are 64-bit

struct Search {
  size_t n = 0;
  std::vector<size_t> size;
  std::vector<uint64_t> conflict;  // per item: the items sharing a step with it (not itself)
  std::vector<uint64_t> live;      // per distinct first step: the items live there
  std::vector<size_t> off;         // current partial assignment
  std::vector<size_t> best_off;
  size_t best = 0;
  long nodes = 0, max_nodes = 0;
  bool aborted = false;

  size_t implied_offset(size_t x, uint64_t placed) const {
    size_t o = 0;
    for (uint64_t m = conflict[x] & placed; m; m &= m - 1) {
      size_t y = static_cast<size_t>(std::countr_zero(m));
      o = std::max(o, off[y] + size[y]);
    }
    return o;
  }

  // Arena lower bound for completing this node: at every step the unplaced live buffers stack
  // above the lowest of their floors.
  size_t bound(uint64_t placed, size_t lo, size_t arena, const std::array<size_t, kMaxExactItems>& floor) const {
    size_t b = arena;
    uint64_t rest = ~placed & ((1ull << n) - 1);
    for (uint64_t mask : live) {
      uint64_t r = mask & rest;
      if (!r) continue;
      size_t lowest = SIZE_MAX, sum = 0;
      for (uint64_t m = r; m; m &= m - 1) {
        size_t x = static_cast<size_t>(std::countr_zero(m));
        lowest = std::min(lowest, std::max(lo, floor[x]));
        sum += size[x];
      }
      b = std::max(b, lowest + sum);
    }
    return b;
  }

  void dfs(uint64_t placed, size_t count, size_t lo, size_t last, size_t arena) {
    if (aborted) return;
    if (++nodes > max_nodes) {
      aborted = true;
      return;
    }
    if (count == n) {
      if (arena < best) {
        best = arena;
        best_off = off;
      }
      return;
    }
    std::array<size_t, kMaxExactItems> floor{};
    struct Child {
      size_t offset;
      size_t x;
    };
    std::array<Child, kMaxExactItems> children;
    size_t n_children = 0;
    for (size_t x = 0; x < n; ++x) {
      if (placed >> x & 1) continue;
      floor[x] = implied_offset(x, placed);
      if (floor[x] > lo || (floor[x] == lo && (count == 0 || x > last)))
        if (std::max(arena, floor[x] + size[x]) < best) children[n_children++] = {floor[x], x};
    }
    if (n_children == 0 || bound(placed, lo, arena, floor) >= best) return;
    std::sort(children.begin(), children.begin() + n_children, [&](const Child& a, const Child& b) {
      return a.offset != b.offset ? a.offset < b.offset : size[a.x] > size[b.x];
    });
    for (size_t k = 0; k < n_children; ++k) {
      const Child& c = children[k];
      if (std::max(arena, c.offset + size[c.x]) >= best) continue;  // best may have improved
      off[c.x] = c.offset;
      dfs(placed | (1ull << c.x), count + 1, c.offset, c.x, std::max(arena, c.offset + size[c.x]));
      if (aborted) return;
    }
  }
};

}  // namespace

bool exact_search(const std::vector<LiveBuffer>& buffers, const std::vector<size_t>& aligned, Placement& best,
                  long max_nodes) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (aligned[i] > 0) idx.push_back(i);
  if (idx.size() > kMaxExactItems) return false;
  Search s;
  s.n = idx.size();
  s.size.resize(s.n);
  s.conflict.assign(s.n, 0);
  for (size_t a = 0; a < s.n; ++a) {
    s.size[a] = aligned[idx[a]];
    for (size_t b = 0; b < s.n; ++b) {
      const LiveBuffer &x = buffers[idx[a]], &y = buffers[idx[b]];
      if (a != b && x.first <= y.last && y.first <= x.last) s.conflict[a] |= 1ull << b;
    }
  }
  for (size_t a = 0; a < s.n; ++a) {
    uint64_t m = 0;
    int t = buffers[idx[a]].first;
    for (size_t b = 0; b < s.n; ++b)
      if (buffers[idx[b]].first <= t && t <= buffers[idx[b]].last) m |= 1ull << b;
    s.live.push_back(m);
  }
  std::sort(s.live.begin(), s.live.end());
  s.live.erase(std::unique(s.live.begin(), s.live.end()), s.live.end());
  s.off.assign(s.n, 0);
  s.best = best.arena_bytes;
  s.max_nodes = max_nodes;
  s.dfs(0, 0, 0, 0, 0);
  if (!s.best_off.empty()) {
    for (size_t a = 0; a < s.n; ++a) best.offsets[idx[a]] = s.best_off[a];
    for (size_t i = 0; i < buffers.size(); ++i)
      if (aligned[i] == 0) best.offsets[i] = 0;
    best.arena_bytes = s.best;
  }
  return !s.aborted;
}

}  // namespace gpen::planner_detail
