#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <type_traits>

#include "engine/runtime/backend.h"
#include "kernels/cpu/core_distance.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/upfirdn2d_act.h"

namespace gpen {

namespace {

const TensorView* opt(std::span<const TensorView> in, size_t i) {
  return i < in.size() && in[i].data ? &in[i] : nullptr;
}

class CpuBackend final : public Backend {
 public:
  const char* name() const override { return "cpu"; }

  size_t workspace_bytes(const Graph& g, const Node& n) const override {
    const int threads = cpu::num_threads();
    if (auto* p = std::get_if<Conv2dParams>(&n.params))
      return cpu::conv2d_workspace_bytes(*p, g.tensor(n.inputs[0]).shape, g.tensor(n.outputs[0]).shape, threads);
    if (auto* p = std::get_if<UpFirDn2dParams>(&n.params))
      return cpu::upfirdn2d_workspace_bytes(*p, g.tensor(n.inputs[0]).shape, g.tensor(n.outputs[0]).shape, threads);
    if (auto* p = std::get_if<ModConvParams>(&n.params)) {
      Shape x = g.tensor(n.inputs[0]).shape;
      x[3] = g.tensor(n.inputs[4]).shape[2];  // the concatenated input channels
      return cpu::modconv_workspace_bytes(*p, x, g.tensor(n.outputs[0]).shape, threads);
    }
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

  void begin_run() override { cpu::probe_cores(); }

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
    std::visit(
        [&](const auto& p) {
          using P = std::decay_t<decltype(p)>;
          if constexpr (std::is_same_v<P, Conv2dParams>)
            cpu::conv2d(p, in[0], in[1], opt(in, 2), opt(in, 3), out[0], ws);
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
            cpu::ModConvArgs a{opt(in, 0), opt(in, 1), opt(in, 2), opt(in, 3), opt(in, 4),
                               opt(in, 5), opt(in, 6), opt(in, 7), opt(in, 8)};
            cpu::modconv(p, a, out[0], ws);
          }
          else
            static_assert(sizeof(P) == 0, "CPU backend misses an op");
        },
        n.params);
  }

 private:
  // Huge pages: the arena and the workspace are streamed through once per node by the
  // memory-bound ops (blur, the early encoder), whose 4 KiB pages each cost a TLB walk; the
  // blurs and ecd2 / ecd3 measured 5-27 % faster with them (docs/benchmarks.md, session 10).
  static constexpr size_t kHuge = size_t{2} << 20;
  static bool advise_huge() {
    static const bool on = [] {
      const char* e = std::getenv("GPEN_CPU_HUGEPAGES");
      return !(e && std::string(e) == "0");
    }();
    return on;
  }
  static size_t align(size_t b) { return b == 0 ? 256 : (b + 255) / 256 * 256; }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace gpen
