// Floating-point operations per node from shapes alone (graph.h node_flops), what the
// rematerialization weighs against memory.
#include <type_traits>
#include <variant>

#include "engine/graph/graph.h"
#include "engine/graph/overloaded.h"

namespace gpen {

using graph_detail::overloaded;

double node_flops(const Graph& g, const Node& n) {
  auto numel = [&](int t) { return t >= 0 ? static_cast<double>(g.tensor(t).shape.numel()) : 0.0; };
  const double out = n.outputs.empty() ? 0.0 : numel(n.outputs[0]);
  return std::visit(
      overloaded{
          [&](const Conv2dParams& c) {
            const Shape& ws = g.tensor(n.inputs[1]).shape;  // HWIO, I = Cin / groups
            return 2.0 * out * c.kh * c.kw * static_cast<double>(ws[2]);
          },
          [&](const DenseParams&) { return 2.0 * out * static_cast<double>(g.tensor(n.inputs[1]).shape[1]); },
          [&](const ModConvParams& m) {
            const Shape& ws = g.tensor(n.inputs[4]).shape;  // [k, k, Cin, Cout]
            const Shape& xs = g.tensor(n.inputs[0]).shape;
            const Shape& os = g.tensor(n.outputs[0]).shape;
            const double cc = static_cast<double>(ws[2]) * static_cast<double>(ws[3]);
            if (!m.up) return 2.0 * static_cast<double>(os[0]) * os[1] * os[2] * m.k * m.k * cc;
            // The transposed conv: every input pixel through k x k taps, H W k k products per
            // channel pair. Cropped (a band's rows), the (output row, weight row) pairs of the rows
            // it keeps whose input row exists: the whole op's count summed over its bands.
            int64_t row_taps = 0;
            for (int64_t y = m.crop_top; y < m.out_rows(xs[1]) + m.crop_top; ++y)
              for (int64_t ky = y % 2; ky < m.k; ky += 2)
                row_taps += (y - ky) >= 0 && (y - ky) / 2 < xs[1];
            return 2.0 * static_cast<double>(os[0]) * row_taps * xs[2] * m.k * cc;
          },
          [&](const UpFirDn2dParams& u) { return 2.0 * out * u.kh * u.kw / (u.up_x * u.up_y); },
          [&](const MaxPool2dParams& p) { return out * p.kh * p.kw; },
          [&](const DemodParams&) { return 2.0 * out * static_cast<double>(g.tensor(n.inputs[1]).shape[1]); },
          [&](const ResizeNearestParams&) { return 0.0; },
          [&](const PixelUnshuffleParams&) { return 0.0; },
          [&](const PadReflectParams&) { return 0.0; },
          [&](const ResizeBilinearParams&) { return 3.0 * out; },
          [&](const AttentionParams&) {
            // Four products: the in-projection (3E outputs), QK^T and PV (L each) and the out-projection.
            const Shape& xs = g.tensor(n.inputs[0]).shape;
            return 2.0 * out * (4.0 * static_cast<double>(xs[2]) + 2.0 * static_cast<double>(xs[1]));
          },
          [&](const CodeLookupParams&) { return 2.0 * numel(n.inputs[0]) * static_cast<double>(g.tensor(n.inputs[1]).shape[1]); },
          [&](const auto&) { return out; },  // elementwise and normalisations: about one per element
      },
      n.params);
}

double graph_flops(const Graph& g) {
  double f = 0;
  for (const Node& n : g.nodes()) f += node_flops(g, n);
  return f;
}

}  // namespace gpen
