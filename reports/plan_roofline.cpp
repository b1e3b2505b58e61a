// `gpen plan --device cuda --roofline`: a paper estimate of the CUDA backend's time per run,
// without a GPU. Per node: FLOPs (node_flops), the bytes the chosen kernel's tiling moves, the
// arithmetic intensity, and the roofline bound max(FLOPs / peak, bytes / bandwidth) at H200
// figures (989 TFLOP/s dense f16/bf16 tensor cores, 67 TFLOP/s f32, 4.8 TB/s HBM3e).
//
// The traffic model of the GEMM ops (conv2d, modconv) follows their tiles: every block reads its
// A rows for the whole depth (im2col: each tap's input read again, as the cp.async / WMMA
// stagers do) and its B columns, so A is read once per column tile and B once per row tile (per
// sample and phase for modconv); plus the output write, the residual read, and under split-K the
// f32 partial sums written and read back once. The tile is the kernel family's (GPEN_CUDA_GEMM:
// mma picks per shape, cuda_tiles::choose_mma_tile; wmma: 128 x 64 modconv, 64 x 64 conv2d; f32:
// the SIMT kernels' 64 x 64), the split the backend's own (its workspace / the partial sums).
// Caches are ignored: that is the pessimistic side of the bound for the re-read operands, which
// L2 mostly serves. Other ops read each input and write each output once. The optimistic side is
// printed beside it: every tensor of a node moved once ("unique"), as with perfect reuse.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "reports/plan.h"
#include "engine/core/error.h"
#include "engine/runtime/env_options.h"
#include "kernels/cuda/mma_tiles.h"

namespace gpen::report {

namespace {

constexpr double kPeakTensor = 989e12, kPeakF32 = 67e12, kBandwidth = 4.8e12;

struct Cost {
  double flops = 0, bytes = 0;  // bytes: as the kernel's tiling moves them (caches ignored)
  double unique = 0;            // compulsory: every tensor once (plus the split-K partial sums)
  std::string tile;  // "BMxBN" for the GEMM ops, "" otherwise
  int splits = 1;
};

double tensor_bytes(const Graph& g, int t) { return t >= 0 ? static_cast<double>(g.tensor(t).bytes()) : 0.0; }

double cdiv(double a, double b) { return std::ceil(a / b); }

bool use_mma() {
  using cuda_tiles::GemmFamily;
  return cuda_gemm_family_from_env().value_or(GemmFamily::mma) == GemmFamily::mma;
}

// One GEMM slice (sample x phase, or group): rows x depth x cols, `slices` of them.
Cost gemm_cost(double rows, double depth, double cols, double slices, double elem, bool tensor, bool is_modconv,
               bool aligned, const Graph& g, const Node& n, const WorkspaceFn& ws) {
  Cost c;
  int bm = 64, bn = 64;
  if (tensor) {
    if (use_mma() && aligned) {
      const cuda_tiles::MmaTile t = cuda_tiles::choose_mma_tile(static_cast<int64_t>(rows), static_cast<int64_t>(cols),
                                                                static_cast<int64_t>(slices));
      bm = t.bm, bn = t.bn;
    } else if (is_modconv) {
      bm = 128;
    }
  }
  c.tile = std::to_string(bm) + "x" + std::to_string(bn);
  const double out_elems = static_cast<double>(g.tensor(n.outputs[0]).shape.numel());
  const size_t work = ws ? ws(g, n) : 0;
  c.splits = work > 0 ? std::max(1, static_cast<int>(work / (out_elems * 4))) : 1;
  c.bytes = slices * (rows * depth * elem * cdiv(cols, bn) + depth * cols * elem * cdiv(rows, bm));
  c.bytes += out_elems * elem;
  if (c.splits > 1) c.bytes += 2.0 * c.splits * out_elems * 4;
  return c;
}

double unique_bytes(const Graph& g, const Node& n) {
  double b = 0;
  std::vector<int> seen;
  for (int t : n.inputs)
    if (t >= 0 && std::find(seen.begin(), seen.end(), t) == seen.end()) b += tensor_bytes(g, t), seen.push_back(t);
  for (int t : n.outputs) b += tensor_bytes(g, t);
  return b;
}

Cost node_cost_tiled(const Graph& g, const Node& n, const WorkspaceFn& ws);

Cost node_cost(const Graph& g, const Node& n, const WorkspaceFn& ws) {
  Cost c = node_cost_tiled(g, n, ws);
  c.unique = unique_bytes(g, n);
  if (c.splits > 1) c.unique += 2.0 * c.splits * static_cast<double>(g.tensor(n.outputs[0]).shape.numel()) * 4;
  return c;
}

Cost node_cost_tiled(const Graph& g, const Node& n, const WorkspaceFn& ws) {
  const DType dt = g.tensor(n.outputs[0]).dtype;
  const double elem = static_cast<double>(dtype_size(dt));
  const bool tensor = dt != DType::f32;
  Cost c;
  if (const auto* p = std::get_if<Conv2dParams>(&n.params)) {
    const Shape& xs = g.tensor(n.inputs[0]).shape;
    const Shape& wsh = g.tensor(n.inputs[1]).shape;
    const Shape& ys = g.tensor(n.outputs[0]).shape;
    const double cin_g = static_cast<double>(wsh[2]), cout_g = static_cast<double>(ys[3]) / p->groups;
    const bool depthwise = wsh[2] == 1 && cout_g == 1;
    if (!depthwise) {
      const bool aligned = static_cast<int64_t>(cin_g) % 8 == 0 && static_cast<int64_t>(cout_g) % 8 == 0;
      c = gemm_cost(static_cast<double>(ys[0] * ys[1] * ys[2]), p->kh * p->kw * cin_g, cout_g, p->groups, elem, tensor,
                    false, aligned, g, n, ws);
      if (p->has_residual) c.bytes += tensor_bytes(g, n.inputs[3]);
      c.flops = node_flops(g, n);
      return c;
    }
    (void)xs;
  } else if (const auto* m = std::get_if<ModConvParams>(&n.params)) {
    const Shape& ws4 = g.tensor(n.inputs[4]).shape;  // [k, k, C, Cout]
    const Shape& ys = g.tensor(n.outputs[0]).shape;
    const double C = static_cast<double>(ws4[2]), cout = static_cast<double>(ws4[3]);
    const double phases = m->up ? 4 : 1;
    const double rows = m->up ? std::ceil(ys[1] / 2.0) * std::ceil(ys[2] / 2.0) : static_cast<double>(ys[1] * ys[2]);
    const double taps = m->up ? std::ceil(m->k / 2.0) * std::ceil(m->k / 2.0) : static_cast<double>(m->k * m->k);
    const bool aligned = static_cast<int64_t>(C) % 8 == 0 && static_cast<int64_t>(cout) % 8 == 0;
    c = gemm_cost(rows, taps * C, cout, static_cast<double>(ys[0]) * phases, elem, tensor, true, aligned, g, n, ws);
    if (m->has_residual) c.bytes += tensor_bytes(g, n.inputs[8]);
    c.flops = node_flops(g, n);
    return c;
  }
  for (int t : n.inputs) c.bytes += tensor_bytes(g, t);
  for (int t : n.outputs) c.bytes += tensor_bytes(g, t);
  c.flops = node_flops(g, n);
  return c;
}

}  // namespace

nlohmann::json roofline_report(const Graph& g, const WorkspaceFn& ws, bool print) {
  nlohmann::json nodes = nlohmann::json::array();
  double flops = 0, bytes = 0, unique = 0, t_bound = 0, t_compute = 0, t_memory = 0, t_unique = 0;
  if (print)
    std::printf("\nRoofline (H200: %.0f TFLOP/s f16/bf16 dense, %.0f TFLOP/s f32, %.1f TB/s; GEMM family %s)\n",
                kPeakTensor / 1e12, kPeakF32 / 1e12, kBandwidth / 1e12, use_mma() ? "mma" : "wmma");
  if (print)
    std::printf("  %-40s %-10s %8s %6s %10s %10s %10s %8s %10s %10s\n", "node", "op", "tile", "split", "GFLOP",
                "MB tiled", "MB unique", "FLOP/B", "bound us", "unique us");
  for (const Node& n : g.nodes()) {
    const Cost c = node_cost(g, n, ws);
    const bool tensor_op = !c.tile.empty() && g.tensor(n.outputs[0]).dtype != DType::f32;
    const double tc = c.flops / (tensor_op ? kPeakTensor : kPeakF32), tm = c.bytes / kBandwidth;
    const double t = std::max(tc, tm), tu = std::max(tc, c.unique / kBandwidth);
    flops += c.flops, bytes += c.bytes, unique += c.unique, t_bound += t, t_compute += tc, t_memory += tm;
    t_unique += tu;
    const double ai = c.bytes > 0 ? c.flops / c.bytes : 0.0;
    nodes.push_back({{"node", n.name},
                     {"op", op_name(n.params)},
                     {"tile", c.tile},
                     {"splits", c.splits},
                     {"flops", c.flops},
                     {"bytes", c.bytes},
                     {"unique_bytes", c.unique},
                     {"bound_unique_s", tu},
                     {"intensity", ai},
                     {"bound_s", t},
                     {"limit", tc >= tm ? "compute" : "memory"}});
    if (print)
      std::printf("  %-40.40s %-10.10s %8s %6d %10.3f %10.3f %10.3f %8.1f %10.2f %10.2f %s\n", n.name.c_str(),
                  op_name(n.params), c.tile.empty() ? "-" : c.tile.c_str(), c.splits, c.flops / 1e9, c.bytes / 1e6,
                  c.unique / 1e6, ai, t * 1e6, tu * 1e6, tc >= tm ? "compute" : "memory");
  }
  if (print)
    std::printf("  total: %.1f GFLOP, %.1f MB moved by the tiling (%.1f MB unique); bound %.3f ms per run with the "
                "tiled bytes at HBM bandwidth (the sum of the nodes' bounds; compute alone %.3f ms, memory alone "
                "%.3f ms), %.3f ms with every tensor read once\n",
                flops / 1e9, bytes / 1e6, unique / 1e6, t_bound * 1e3, t_compute * 1e3, t_memory * 1e3,
                t_unique * 1e3);
  return {{"peak_tensor_flops", kPeakTensor},
          {"peak_f32_flops", kPeakF32},
          {"bandwidth_bytes_per_s", kBandwidth},
          {"gemm_family", use_mma() ? "mma" : "wmma"},
          {"flops", flops},
          {"bytes", bytes},
          {"unique_bytes", unique},
          {"bound_s", t_bound},
          {"bound_unique_s", t_unique},
          {"compute_s", t_compute},
          {"nodes", nodes}};
}

}  // namespace gpen::report
