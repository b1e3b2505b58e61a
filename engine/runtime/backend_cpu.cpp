#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <type_traits>

#include "engine/runtime/backend.h"
#include "engine/runtime/env_options.h"
#include "kernels/cpu/conv_select.h"
#include "kernels/cpu/core_distance.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/upfirdn2d_act.h"

namespace gpen {

namespace {

const TensorView* opt(std::span<const TensorView> in, size_t i) {
  return i < in.size() && in[i].data ? &in[i] : nullptr;
}

// A node's tensor as a view without memory (its shape and strides, what the conv rule reads).
TensorView desc_view(const Graph& g, int t) {
  TensorView v;
  if (t < 0) return v;
  const TensorDesc& d = g.tensor(t);
  v.data = reinterpret_cast<void*>(uintptr_t{1});  // present (opt() tells absent inputs by null data)
  v.dtype = d.dtype, v.shape = d.shape, v.strides = d.strides;
  return v;
}

// The concatenated input channels of a modconv: x's shape with the weight's input channels.
Shape modconv_x_cat(const Shape& x, const Shape& w) {
  Shape c = x;
  c[3] = w[2];
  return c;
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const cpu::CpuOptions& o) : opts_(o) {}
  const char* name() const override { return "cpu"; }

  size_t workspace_bytes(const Graph& g, const Node& n) const override { return plan_node(g, n).workspace_bytes; }

  NodeKernel plan_node(const Graph& g, const Node& n) const override {
    NodeKernel k;
    if (std::holds_alternative<Conv2dParams>(n.params) || std::holds_alternative<ModConvParams>(n.params)) {
      std::vector<TensorView> in, out;
      for (int t : n.inputs) in.push_back(desc_view(g, t));
      for (int t : n.outputs) out.push_back(desc_view(g, t));
      k.conv = choose(n, in, out);
    }
    k.workspace_bytes = planned_workspace_bytes(g, n, k);
    return k;
  }

  size_t planned_workspace_bytes(const Graph& g, const Node& n, const NodeKernel& k) const override {
    const int threads = cpu::num_threads();
    const Shape& x = g.tensor(n.inputs[0]).shape;
    const Shape& y = g.tensor(n.outputs[0]).shape;
    if (auto* p = std::get_if<Conv2dParams>(&n.params)) return cpu::conv2d_workspace_bytes(k.conv, *p, x, y, threads);
    if (auto* p = std::get_if<UpFirDn2dParams>(&n.params)) return cpu::upfirdn2d_workspace_bytes(*p, x, y, threads);
    if (auto* p = std::get_if<ModConvParams>(&n.params))
      return cpu::modconv_workspace_bytes(k.conv, *p, modconv_x_cat(x, g.tensor(n.inputs[4]).shape), y, threads);
    if (auto* p = std::get_if<AttentionParams>(&n.params)) return cpu::attention_workspace_bytes(*p, x, threads);
    return 0;
  }

  // Advised, and the kernel's THP mode grants the advice ("always" or "madvise", not "never" nor a
  // kernel without THP).
  bool huge_pages() const override {
    static const bool thp = [] {
      std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
      std::string mode;
      std::getline(f, mode);
      return mode.find("[always]") != std::string::npos || mode.find("[madvise]") != std::string::npos;
    }();
    return advise_huge() && thp;
  }

  bool low_memory() const override { return opts_.low_memory; }

  void begin_run() override { cpu::probe_cores(opts_.far); }

  void* allocate(size_t bytes) override {
    ++allocations_;
    // Allocations of 2 MiB and more (arena, workspace) start on a 2 MiB boundary and their whole
    // 2 MiB pages are advised as transparent huge pages (kHuge says why); the tail stays in 4 KiB
    // pages, so the resident size grows by no more than the untouched part of a huge page.
    const bool huge = bytes >= kHuge && advise_huge();
    const size_t n = align(bytes);
    void* p = std::aligned_alloc(huge ? kHuge : 256, huge ? (n + kHuge - 1) / kHuge * kHuge : n);
    if (!p) throw std::bad_alloc();
    if (huge) ::madvise(p, n / kHuge * kHuge, MADV_HUGEPAGE);
    return p;
  }
  void release(void* p) override { std::free(p); }
  void upload(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void download(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }

  void run(const Node& n, std::span<const TensorView> in, std::span<const TensorView> out, void* ws) override {
    run_planned(n, NodeKernel{0, choose(n, in, out)}, in, out, ws);
  }

  void run_planned(const Node& n, const NodeKernel& k, std::span<const TensorView> in, std::span<const TensorView> out,
                   void* ws) override {
    std::visit(
        [&](const auto& p) {
          using P = std::decay_t<decltype(p)>;
          if constexpr (std::is_same_v<P, Conv2dParams>)
            cpu::conv2d(k.conv, p, in[0], in[1], opt(in, 2), opt(in, 3), out[0], ws);
          else if constexpr (std::is_same_v<P, DenseParams>)
            cpu::dense(p, in[0], in[1], opt(in, 2), out[0]);
          else if constexpr (std::is_same_v<P, BiasActParams>)
            cpu::bias_act(p, in[0], opt(in, 1), out[0]);
          else if constexpr (std::is_same_v<P, AddParams>)
            cpu::add(p, in[0], in[1], out[0]);
          else if constexpr (std::is_same_v<P, ResizeNearestParams>)
            cpu::resize_nearest(p, in[0], out[0]);
          else if constexpr (std::is_same_v<P, UpFirDn2dParams>)
            cpu::upfirdn2d_act(p, in[0], opt(in, 1), opt(in, 2), out[0], ws);  // the epilogue fused where it can
          else if constexpr (std::is_same_v<P, SoftmaxParams>)
            cpu::softmax(p, in[0], out[0]);
          else if constexpr (std::is_same_v<P, MaxPool2dParams>)
            cpu::max_pool2d(p, in[0], out[0]);
          else if constexpr (std::is_same_v<P, PadReflectParams>)
            cpu::pad_reflect(p, in[0], out[0]);
          else if constexpr (std::is_same_v<P, PixelNormParams>)
            cpu::pixel_norm(p, in[0], out[0]);
          else if constexpr (std::is_same_v<P, PixelUnshuffleParams>)
            cpu::pixel_unshuffle(p, in[0], out[0]);
          else if constexpr (std::is_same_v<P, DemodParams>)
            cpu::demod(p, in[0], in[1], out[0]);
          else if constexpr (std::is_same_v<P, ModConvParams>) {
            cpu::modconv(k.conv, p, modconv_args(in), out[0], ws);
          }
          else if constexpr (std::is_same_v<P, ResizeBilinearParams>)
            cpu::resize_bilinear(p, in[0], out[0]);
          else if constexpr (std::is_same_v<P, NoiseBiasActParams>)
            cpu::noise_bias_act(p, in[0], in[1], in[2], opt(in, 3), out[0]);
          else if constexpr (std::is_same_v<P, SftParams>)
            cpu::sft(p, in[0], in[1], in[2], out[0]);
          else if constexpr (std::is_same_v<P, GroupNormParams>)
            cpu::group_norm(p, in[0], opt(in, 1), opt(in, 2), out[0]);
          else if constexpr (std::is_same_v<P, LayerNormParams>)
            cpu::layer_norm(p, in[0], opt(in, 1), opt(in, 2), out[0]);
          else if constexpr (std::is_same_v<P, SmoothActParams>)
            cpu::smooth_act(p, in[0], out[0]);
          else if constexpr (std::is_same_v<P, AttentionParams>)
            cpu::attention(p, {opt(in, 0), opt(in, 1), opt(in, 2), opt(in, 3), opt(in, 4), opt(in, 5), opt(in, 6)}, out[0], ws);
          else if constexpr (std::is_same_v<P, CodeLookupParams>)
            cpu::code_lookup(p, in[0], in[1], out[0], out[1]);
          else if constexpr (std::is_same_v<P, FuseSftParams>)
            cpu::fuse_sft(p, in[0], in[1], in[2], out[0]);
          else if constexpr (std::is_same_v<P, AdaInParams>)
            cpu::adain(p, in[0], in[1], out[0]);
          else
            static_assert(sizeof(P) == 0, "CPU backend misses an op");
        },
        n.params);
  }

 private:
  // The conv rule (kernels/cpu/conv_select.h) for a conv2d or modconv node with these operands.
  cpu::ConvChoice choose(const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) const {
    if (auto* p = std::get_if<Conv2dParams>(&n.params))
      return cpu::choose_conv(cpu::conv2d_case(*p, in[0], in[1], opt(in, 2), opt(in, 3), out[0]), opts_);
    if (auto* p = std::get_if<ModConvParams>(&n.params))
      return cpu::choose_conv(cpu::modconv_case(*p, modconv_args(in), out[0]), opts_);
    return {};
  }
  static cpu::ModConvArgs modconv_args(std::span<const TensorView> in) {
    return {opt(in, 0), opt(in, 1), opt(in, 2), opt(in, 3), opt(in, 4), opt(in, 5), opt(in, 6), opt(in, 7), opt(in, 8)};
  }

  // Huge pages: the arena and the workspace are streamed through once per node by the
  // memory-bound ops (blur, the early encoder), whose 4 KiB pages each cost a TLB walk; the
  // blurs and ecd2 / ecd3 measured 5-27 % faster with them (docs/benchmarks.md, huge pages).
  static constexpr size_t kHuge = size_t{2} << 20;
  bool advise_huge() const { return opts_.huge_pages; }
  static size_t align(size_t b) { return b == 0 ? 256 : (b + 255) / 256 * 256; }

  const cpu::CpuOptions opts_;
};

}  // namespace

KernelFn planned_on(const Backend& b) {
  return [&b](const Graph& g, const Node& n) { return b.plan_node(g, n); };
}

std::unique_ptr<Backend> make_cpu_backend() { return make_cpu_backend(cpu_options_from_env()); }
std::unique_ptr<Backend> make_cpu_backend(const cpu::CpuOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace gpen
