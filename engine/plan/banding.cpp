#include "engine/plan/banding.h"

#include <algorithm>
#include <map>

#include "engine/plan/banding_carry.h"
#include "engine/plan/banding_rows.h"
#include "engine/plan/memory_plan.h"

namespace gpen {

using namespace banding_detail;

namespace {

std::vector<int64_t> even_boundaries(int64_t h, int n) {
  std::vector<int64_t> b(n + 1);
  for (int i = 0; i <= n; ++i) b[i] = h * i / n;
  return b;
}

// The band copies of a region's nodes, appended to `out`. Every tensor the region reads from
// outside (the graph input, the global part's tensors, kept features) is read as a view of the
// rows the band needs.
void emit_region(Graph& g, const Region& reg, std::vector<Node>& out, const std::string& tag) {
  const auto nodes = g.nodes();  // the original nodes (g's list is replaced later)
  const int nb = static_cast<int>(reg.bounds.size()) - 1;
  const int64_t main_rows = rows_of(g, reg.main);
  std::vector<char> is_output(g.tensors().size(), 0);
  for (int t : reg.outputs) is_output[t] = 1;
  for (int b = 0; b < nb; ++b) {
    // Backward: the rows every tensor of the region must provide in this band.
    std::map<int, Range> need;
    for (int t : reg.outputs) {
      const int64_t h = rows_of(g, t);
      need[t].hull({reg.bounds[b] * h / main_rows, reg.bounds[b + 1] * h / main_rows});
    }
    std::map<int, OpBand> band;
    for (auto it = reg.nodes.rbegin(); it != reg.nodes.rend(); ++it) {
      const Node& n = nodes[*it];
      const Range o = need[n.outputs[0]];
      if (o.empty()) continue;
      OpBand ob = map_rows(n, rows_of(g, n.inputs[0]), o);
      for (const SpatialInput& si : spatial_inputs(n)) {
        const int t = n.inputs[si.index];
        if (t >= 0) need[t].hull(si.residual ? ob.computed : ob.in);
      }
      band[*it] = std::move(ob);
    }
    // Forward: the band's ops on views of rows. local: tensor -> (band tensor, its rows).
    std::map<int, std::pair<int, Range>> local;
    auto view = [&](int t, const Range& r) {
      auto it = local.find(t);
      const int id = it == local.end() ? t : it->second.first;
      const Range have = it == local.end() ? Range{0, rows_of(g, t)} : it->second.second;
      GPEN_CHECK(have.contains(r), "banding: band " + std::to_string(b) + " lacks rows of " + g.tensor(t).name);
      if (have == r) return id;
      return g.slice_rows(id, r.a - have.a, r.rows());
    };
    for (int i : reg.nodes) {
      auto bi = band.find(i);
      if (bi == band.end()) continue;
      const OpBand& ob = bi->second;
      Node c = nodes[i];
      c.name += tag + std::to_string(b);
      c.params = ob.params;
      // Kernels whose blocking depends on the output height decide it for the whole op's.
      const int full_rows = static_cast<int>(rows_of(g, nodes[i].outputs[0]));
      if (auto* cp = std::get_if<Conv2dParams>(&c.params); cp && cp->split_rows == 0) cp->split_rows = full_rows;
      if (auto* mp = std::get_if<ModConvParams>(&c.params); mp && mp->split_rows == 0) mp->split_rows = full_rows;
      for (const SpatialInput& si : spatial_inputs(c)) {
        int& t = c.inputs[si.index];
        if (t >= 0) t = view(t, si.residual ? ob.computed : ob.in);
      }
      const int t = nodes[i].outputs[0];
      if (is_output[t]) {
        GPEN_CHECK(ob.exact, "banding: " + nodes[i].name + " writes a whole tensor but computes halo rows");
        c.outputs = {g.slice_rows(t, ob.computed.a, ob.computed.rows())};
      } else {
        const TensorDesc& d = g.tensor(t);
        Shape s = d.shape;
        s[1] = ob.computed.rows();
        c.outputs = {g.new_intermediate(d.name + tag + std::to_string(b), d.dtype, s)};
        local[t] = {c.outputs[0], ob.computed};
      }
      
      out.push_back(std::move(c));
    }
  }
}

struct Structure {
  int first_dense = -1;
  std::vector<int> producer;               // per tensor
  std::vector<std::vector<int>> consumers;  // per tensor, node indices
};

Structure analyse(const Graph& g) {
  Structure s;
  const auto& nodes = g.nodes();
  s.producer.assign(g.tensors().size(), -1);
  s.consumers.assign(g.tensors().size(), {});
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    if (s.first_dense < 0 && std::holds_alternative<DenseParams>(nodes[i].params)) s.first_dense = i;
    for (int t : nodes[i].outputs) s.producer[t] = i;
    for (int t : nodes[i].inputs)
      if (t >= 0) s.consumers[t].push_back(i);
  }
  GPEN_CHECK(s.first_dense >= 0, "banding: the graph has no dense (style) part to split encoder and decoder");
  return s;
}

}  // namespace

// Outputs of other ranks (GFPGAN's style code) come from the global part and stay as they are.
int64_t banding_output_rows(const Graph& g) {
  std::vector<int> maps;
  for (int t : g.outputs())
    if (g.tensor(t).shape.rank == 4) maps.push_back(t);
  GPEN_CHECK(maps.size() == 1, "banding: the graph must have one NHWC output");
  return rows_of(g, maps[0]);
}

std::vector<int> banding_resolutions(const Graph& g) {
  std::vector<int> r;
  for (int64_t v = banding_output_rows(g) / 2; v >= 8; v /= 2) r.push_back(static_cast<int>(v));
  return r;
}

BandingResult apply_banding(Graph& g, const BandingSpec& spec, bool allow_inplace) {
  BandingResult res;
  res.flops_before = graph_flops(g);
  res.lower_bound_before = liveness_lower_bound(g, allow_inplace);
  const int64_t S = banding_output_rows(g);
  const int R = spec.band_res;
  const int keep = spec.keep_res > 0 ? spec.keep_res : R;
  GPEN_CHECK(R >= 4 && R < S && (R & (R - 1)) == 0,
             "banding: band resolution " + std::to_string(R) + " must be a power of two from 4 to " +
                 std::to_string(S / 2));
  GPEN_CHECK(keep >= R && keep <= S, "banding: kept resolution " + std::to_string(keep) + " outside [" +
                                         std::to_string(R) + ", " + std::to_string(S) + "]");
  std::vector<int64_t> bounds = spec.boundaries;
  if (bounds.empty()) {
    GPEN_CHECK(spec.bands >= 1 && spec.bands <= S, "banding: " + std::to_string(spec.bands) + " bands for " +
                                                       std::to_string(S) + " output rows");
    bounds = even_boundaries(S, spec.bands);
  }
  GPEN_CHECK(bounds.size() >= 2 && bounds.front() == 0 && bounds.back() == S,
             "banding: band boundaries must run from 0 to the output height " + std::to_string(S));
  for (size_t i = 1; i < bounds.size(); ++i)
    GPEN_CHECK(bounds[i] > bounds[i - 1], "banding: band boundaries must increase");
  const int nb = static_cast<int>(bounds.size()) - 1;

  const Structure st = analyse(g);
  const auto& nodes = g.nodes();
  const int nn = static_cast<int>(nodes.size());
  std::vector<char> in_a(nn, 0), in_b(nn, 0);
  for (int i = 0; i < nn; ++i) {
    if (!bandable(nodes[i])) continue;
    if (i < st.first_dense) in_a[i] = rows_of(g, nodes[i].inputs[0]) > R && rows_of(g, nodes[i].outputs[0]) >= R;
    else in_b[i] = rows_of(g, nodes[i].outputs[0]) >= 2 * R;  // the transposed conv from R on
  }
  // Encoder features the banded decoder reads: kept whole, or recomputed inside its bands.
  std::vector<char> kept(g.tensors().size(), 0), recompute(nn, 0);
  std::vector<int> stack;
  for (int i = 0; i < nn; ++i) {
    if (!in_b[i]) continue;
    for (const SpatialInput& si : spatial_inputs(nodes[i])) {
      const int t = nodes[i].inputs[si.index];
      if (t >= 0 && st.producer[t] >= 0 && in_a[st.producer[t]]) stack.push_back(t);
    }
  }
  while (!stack.empty()) {
    const int t = stack.back();
    stack.pop_back();
    const int p = st.producer[t];
    if (rows_of(g, t) <= keep) {
      kept[t] = 1;
      continue;
    }
    if (recompute[p]) continue;
    recompute[p] = 1;
    for (const SpatialInput& si : spatial_inputs(nodes[p])) {
      const int u = nodes[p].inputs[si.index];
      if (u >= 0 && st.producer[u] >= 0 && in_a[st.producer[u]]) stack.push_back(u);
    }
  }
  Region A, B;
  int first_a = -1, last_b = -1;
  for (int i = 0; i < nn; ++i) {
    if (in_a[i]) {
      A.nodes.push_back(i);
      if (first_a < 0) first_a = i;
    }
    if (recompute[i]) B.nodes.push_back(i);
  }
  for (int i = 0; i < nn; ++i)
    if (in_b[i]) B.nodes.push_back(i), last_b = i;
  GPEN_CHECK(first_a >= 0 && last_b >= 0, "banding: no encoder or decoder stage above " + std::to_string(R));
  // Region outputs, and no tensor of a region read where the region does not provide it.
  for (int i : A.nodes) {
    const int t = nodes[i].outputs[0];
    bool out = kept[t] != 0;
    for (int c : st.consumers[t]) {
      if (in_a[c]) continue;
      if (in_b[c] || recompute[c]) {
        GPEN_CHECK(kept[t] || recompute[i], "banding: " + g.tensor(t).name + " neither kept nor recomputed");
      } else {
        out = true;
      }
    }
    if (g.tensor(t).is_output) out = true;
    if (out) A.outputs.push_back(t);
    if (rows_of(g, t) == R && out) A.main = t;
  }
  GPEN_CHECK(A.main >= 0, "banding: no encoder feature at " + std::to_string(R) + "x" + std::to_string(R));
  for (int i : B.nodes) {
    const int t = nodes[i].outputs[0];
    for (int c : st.consumers[t])
      GPEN_CHECK(in_b[c] || recompute[c] || (in_a[i] && in_a[c]),
                 "banding: " + g.tensor(t).name + " is read outside the banded decoder (by " + nodes[c].name +
                     "): banding takes graphs shaped as GPEN's and GFPGAN's");
    if (g.tensor(t).is_output) B.outputs.push_back(t), B.main = t;
  }
  GPEN_CHECK(B.main >= 0 && B.outputs.size() == 1, "banding: the banded decoder must end in the graph output");
  B.bounds = bounds;
  const int nba = static_cast<int>(std::min<int64_t>(nb, R));
  A.bounds = even_boundaries(R, nba);

  std::vector<Node> out_nodes, band_a, band_b;
  if (spec.carry) {
    const CarryStats ca = emit_region_carried(g, A, band_a, "@a", spec.stage_rows);
    const CarryStats cb = emit_region_carried(g, B, band_b, "@b", spec.stage_rows);
    res.carried = true;
    res.stage_rows = spec.stage_rows;
    res.carry_bytes = std::max(ca.max_carry_bytes, cb.max_carry_bytes);
    res.carried_rows = ca.carried;
    for (const auto& [name, rows] : cb.carried) res.carried_rows[name] = std::max(res.carried_rows[name], rows);
  } else {
    emit_region(g, A, band_a, "@a");
    emit_region(g, B, band_b, "@b");
  }
  const std::vector<Node> orig = g.nodes();
  for (int i = 0; i < nn; ++i) {
    if (i == first_a) out_nodes.insert(out_nodes.end(), band_a.begin(), band_a.end());
    if (i == last_b) out_nodes.insert(out_nodes.end(), band_b.begin(), band_b.end());
    if (in_a[i] || in_b[i]) continue;
    out_nodes.push_back(orig[i]);
  }
  g.replace_nodes(std::move(out_nodes));

  res.applied = true;
  res.band_res = R;
  res.keep_res = keep;
  res.bands = nb;
  res.encoder_bands = nba;
  res.boundaries = bounds;
  for (int i = 0; i < nb; ++i) res.max_band_rows = std::max(res.max_band_rows, bounds[i + 1] - bounds[i]);
  for (const Node& n : g.nodes())
    if (!n.outputs.empty() && g.tensor(n.outputs[0]).shape.rank == 4 && n.name.find("@b") != std::string::npos &&
        g.tensor(n.inputs[0]).shape.rank == 4 && g.tensor(n.outputs[0]).shape[2] == S)
      res.max_computed_rows = std::max(res.max_computed_rows, g.tensor(n.outputs[0]).shape[1]);
  for (size_t t = 0; t < kept.size(); ++t)
    if (kept[t] && rows_of(g, static_cast<int>(t)) > R) res.kept_bytes += g.tensor(static_cast<int>(t)).bytes();
  // The carry copies move bytes and compute nothing.
  res.flops_after = 0;
  for (const Node& n : g.nodes())
    if (!(std::holds_alternative<BiasActParams>(n.params) && n.name.find("@carry") != std::string::npos))
      res.flops_after += node_flops(g, n);
  res.lower_bound_after = liveness_lower_bound(g, allow_inplace);
  return res;
}

}  // namespace gpen
