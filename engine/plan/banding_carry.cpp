// Carried halos (line buffers) for the banding transform: see banding_carry.h and banding.h.
//
// Pass 1 walks the bands top to bottom and, inside each, the region's nodes backwards: a tensor's
// frontier after band b is the number of its rows (from the top) some band up to b needed, and
// its producer computes in band b exactly the rows between the previous frontier and the new one
// (map_rows gives the input rows that takes). The rows a consumer reads below the previous
// frontier were computed by an earlier band: they come from the carry. Pass 2 emits, per band and
// node: the op writing its rows into a band tensor, the carry-in copy of the rows above them,
// and the carry-out copy of the rows later bands still read. A modconv may run in steps of
// stage_rows of its rows rather than every band (fewer, larger calls, more rows carried).
//
// Bit-identity: every output pixel of every op is computed once, from input rows that are exact
// (new rows of the band, or carried copies of rows an earlier band computed exactly), with the
// op's own padding only at the image edges (map_rows' per-band pads), so each pixel is the same
// sum of the same products in the same order as in the whole graph. The copies are identity
// bias_act nodes: x * 1, exact in every dtype.
#include "engine/plan/banding_carry.h"

#include <algorithm>

#include "engine/plan/banding_rows.h"

namespace gpen::banding_detail {

namespace {

struct BandPlan {
  std::map<int, Range> need;     // tensor -> rows its in-region consumers read in this band
  std::map<int, OpBand> ops;     // node -> its band op (only nodes with new rows)
  std::map<int, Range> fresh;    // tensor -> rows computed for the first time in this band
};

Node copy_node(const std::string& name, int src, int dst) {
  Node n{name, BiasActParams{}, {src, -1}, {dst}};
  n.inplace_input = -1;  // the source is a view into another band's tensor
  return n;
}

}  // namespace

CarryStats emit_region_carried(Graph& g, const Region& reg, std::vector<Node>& out, const std::string& tag,
                               int stage_rows) {
  const std::vector<Node> nodes = g.nodes();
  const int nb = static_cast<int>(reg.bounds.size()) - 1;
  const int64_t main_rows = rows_of(g, reg.main);
  const size_t nt = g.tensors().size();
  std::vector<int> producer(nt, -1);
  for (int i : reg.nodes) producer[nodes[i].outputs[0]] = i;
  std::vector<char> is_output(nt, 0);
  for (int t : reg.outputs) is_output[t] = 1;

  // Pass 1: what each band computes and reads.
  std::vector<BandPlan> plan(nb);
  std::map<int, int64_t> frontier;  // after the bands so far
  for (int b = 0; b < nb; ++b) {
    BandPlan& bp = plan[b];
    std::map<int, int64_t> f = frontier;
    for (int t : reg.outputs) {
      const int64_t h = rows_of(g, t);
      f[t] = std::max(f[t], reg.bounds[b + 1] * h / main_rows);
    }
    for (auto it = reg.nodes.rbegin(); it != reg.nodes.rend(); ++it) {
      const Node& n = nodes[*it];
      const int t = n.outputs[0];
      const int64_t prev = frontier.count(t) ? frontier[t] : 0;
      int64_t cur = f.count(t) ? f[t] : 0;
      if (cur <= prev) continue;
      const auto* mp = std::get_if<ModConvParams>(&n.params);
      if (stage_rows > 0 && mp && (mp->up || mp->k > 1) && !is_output[t]) {
        cur = std::min(rows_of(g, t), std::max(cur, prev + stage_rows));
        f[t] = cur;
      }
      const Range o{prev, cur};
      OpBand ob = map_rows(n, rows_of(g, n.inputs[0]), o);
      for (const SpatialInput& si : spatial_inputs(n)) {
        const int u = n.inputs[si.index];
        if (u < 0 || producer[u] < 0) continue;
        const Range r = si.residual ? ob.computed : ob.in;
        bp.need[u].hull(r);
        f[u] = std::max(f[u], r.b);
      }
      bp.fresh[t] = o;
      bp.ops[*it] = std::move(ob);
    }
    for (const auto& [t, v] : f) frontier[t] = std::max(frontier[t], v);
  }
  // The rows of each band-local tensor that bands after b read but band b (or earlier) computed:
  // [lowest row any later band reads, frontier after b).
  std::vector<std::map<int, Range>> carry_out(nb);
  {
    std::map<int, int64_t> f, later_lo;
    std::vector<std::map<int, int64_t>> fb(nb);
    for (int b = 0; b < nb; ++b) {
      for (const auto& [t, r] : plan[b].fresh) f[t] = r.b;
      fb[b] = f;
    }
    for (int b = nb - 1; b >= 0; --b) {
      if (b + 1 < nb)
        for (const auto& [t, r] : plan[b + 1].need)
          if (!r.empty()) later_lo[t] = later_lo.count(t) ? std::min(later_lo[t], r.a) : r.a;
      for (const auto& [t, lo] : later_lo) {
        if (is_output[t] || !fb[b].count(t)) continue;
        const Range c{lo, fb[b][t]};
        if (!c.empty()) carry_out[b][t] = c;
      }
    }
  }

  // Pass 2: emit.
  CarryStats st;
  std::map<int, std::pair<int, Range>> carry;  // tensor -> (carry tensor, its rows) from the band before
  for (int b = 0; b < nb; ++b) {
    const std::string bt = tag + std::to_string(b);
    std::map<int, std::pair<int, Range>> local, next;
    auto view = [&](int t, const Range& r) {
      auto it = local.find(t);
      const int id = it == local.end() ? t : it->second.first;
      const Range have = it == local.end() ? Range{0, rows_of(g, t)} : it->second.second;
      GPEN_CHECK(have.contains(r), "banding: band " + std::to_string(b) + " lacks rows of " + g.tensor(t).name);
      if (have == r) return id;
      return g.slice_rows(id, r.a - have.a, r.rows());
    };
    size_t carry_bytes = 0;
    auto carry_on = [&](int t, int src, const Range& have) {
      auto co = carry_out[b].find(t);
      if (co == carry_out[b].end()) return;
      const Range c = co->second;
      GPEN_CHECK(have.contains(c), "banding: band " + std::to_string(b) + " cannot carry rows of " + g.tensor(t).name);
      const TensorDesc d = g.tensor(t);  // a copy: new tensors may move the list
      Shape s = d.shape;
      s[1] = c.rows();
      const int ct = g.new_intermediate(d.name + "@carry" + bt, d.dtype, s);
      st.copy_nodes.push_back(static_cast<int>(out.size()));
      out.push_back(copy_node(nodes[producer[t]].name + "@carry" + bt,
                              have == c ? src : g.slice_rows(src, c.a - have.a, c.rows()), ct));
      next[t] = {ct, c};
      carry_bytes += g.tensor(ct).bytes();
      st.carried[d.name] = std::max(st.carried[d.name], c.rows());
    };
    for (int i : reg.nodes) {
      const int t = nodes[i].outputs[0];
      auto bi = plan[b].ops.find(i);
      auto ci = carry.find(t);
      if (bi == plan[b].ops.end()) {
        // Nothing new this band: its readers take rows of the carry, which passes on as a view.
        if (ci != carry.end()) {
          local[t] = ci->second;
          auto co = carry_out[b].find(t);
          if (co != carry_out[b].end()) {
            const Range have = ci->second.second, c = co->second;
            GPEN_CHECK(have.contains(c), "banding: band " + std::to_string(b) + " cannot carry rows of " + g.tensor(t).name);
            next[t] = {have == c ? ci->second.first : g.slice_rows(ci->second.first, c.a - have.a, c.rows()), c};
          }
        }
        continue;
      }
      const OpBand& ob = bi->second;
      Node c = nodes[i];
      c.name += bt;
      c.params = ob.params;
      // Kernels whose blocking depends on the output height decide it for the whole op's.
      const int full_rows = static_cast<int>(rows_of(g, t));
      if (auto* cp = std::get_if<Conv2dParams>(&c.params); cp && cp->split_rows == 0) cp->split_rows = full_rows;
      if (auto* mp = std::get_if<ModConvParams>(&c.params); mp && mp->split_rows == 0) mp->split_rows = full_rows;
      for (const SpatialInput& si : spatial_inputs(c)) {
        int& u = c.inputs[si.index];
        if (u >= 0) u = view(u, si.residual ? ob.computed : ob.in);
      }
      if (is_output[t]) {
        GPEN_CHECK(ob.exact, "banding: " + nodes[i].name + " writes a whole tensor but computes halo rows");
        c.outputs = {g.slice_rows(t, ob.computed.a, ob.computed.rows())};
        out.push_back(std::move(c));
        continue;
      }
      Range span = ob.computed;
      if (auto n = plan[b].need.find(t); n != plan[b].need.end()) span.hull(n->second);
      if (ci != carry.end()) span.hull(ci->second.second);
      const TensorDesc d = g.tensor(t);  // a copy: new tensors may move the list
      Shape s = d.shape;
      s[1] = span.rows();
      const int tb = g.new_intermediate(d.name + bt, d.dtype, s);
      c.outputs = {span == ob.computed ? tb : g.slice_rows(tb, ob.computed.a - span.a, ob.computed.rows())};
      out.push_back(std::move(c));
      if (ci != carry.end()) {
        const Range cr = ci->second.second;
        st.copy_nodes.push_back(static_cast<int>(out.size()));
        out.push_back(copy_node(nodes[i].name + "@carry-in" + bt, ci->second.first,
                                span == cr ? tb : g.slice_rows(tb, cr.a - span.a, cr.rows())));
      }
      local[t] = {tb, span};
      carry_on(t, tb, span);
    }
    st.max_carry_bytes = std::max(st.max_carry_bytes, carry_bytes);
    carry = std::move(next);
  }
  return st;
}

}  // namespace gpen::banding_detail
