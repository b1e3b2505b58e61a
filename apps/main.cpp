#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "apps/cli.h"
#include "engine/core/error.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/winograd.h"

namespace gpen::cli {

namespace {
struct Entry {
  const char* name;
  const char* help;
  Setup setup;
  int order;
};
std::vector<Entry>& registry() {
  static std::vector<Entry> r;
  return r;
}
}  // namespace

GlobalOptions& globals() {
  static GlobalOptions g;
  return g;
}

Command::Command(const char* name, const char* help, Setup setup, int order) {
  registry().push_back({name, help, std::move(setup), order});
}

}  // namespace gpen::cli

static std::string kVersionText() {
#ifdef GPEN_WITH_CUDA
  std::string v = "gpen-engine " GPEN_VERSION " (CUDA backend compiled in)";
#else
  std::string v = "gpen-engine " GPEN_VERSION " (CPU only: CUDA backend not compiled in)";
#endif
  // The CPU kernels' path, as chosen at start-up (cpuid, or GPEN_CPU_ISA).
  try {
    v += std::string("\nCPU kernels: ") + gpen::cpu::isa_name(gpen::cpu::cpu_isa()) +
         (gpen::cpu::cpu_has_avx512() ? " (this CPU has AVX-512 F/BW/DQ/VL)" : " (no AVX-512 on this CPU or build)") +
         "\nCPU kernels per ISA: GEMM and modconv micro-kernels, Winograd transforms, to_rgb dot products, upfirdn2d rows,"
         " conv2d epilogues, direct conv and depthwise 3x3 tiles (the im2col gather and the other depthwise: AVX2 on both"
         " paths)";
    v += std::string("\nCPU 3x3 convs: ") + gpen::cpu::winograd_detail::conv_mode_name() +
         " (GPEN_CPU_CONV: auto = Winograd F(4x4,3x3) on the stride-1 modconvs from 48 px (channel-rich ones from 32 px) and"
         " conv2d from 24 px,"
         " polyphase F(4,2) on the large narrow transposed ones and the fused small channel-rich ones,"
         " polyphase F(4x4) / F(2x2) on the stride-2 conv2ds from 96 / 64 px with at most 128 input channels;"
         " direct; winograd4 / winograd2 = on every stride-1 and transposed 3x3 modconv and every stride-2 3x3"
         " conv2d)";
  } catch (const gpen::Error& e) {
    v += std::string("\nCPU kernels: ") + e.what();
  }
  return v;
}

int main(int argc, char** argv) {
  using namespace gpen::cli;
  CLI::App app{"gpen: GPEN face restoration with a static memory plan"};
  app.set_version_flag("--version", kVersionText());
  app.add_option("--threads", globals().threads, "CPU threads (default: all cores)")->check(CLI::NonNegativeNumber);
  app.require_subcommand(1);
  // Global options are accepted after the subcommand too (`gpen bench --threads 2`).
  app.fallthrough();
  std::sort(registry().begin(), registry().end(), [](const auto& a, const auto& b) { return a.order < b.order; });
  for (auto& e : registry()) {
    CLI::App* sub = app.add_subcommand(e.name, e.help);
    e.setup(*sub);
  }
  app.parse_complete_callback([] { gpen::cpu::set_num_threads(globals().threads); });
  try {
    gpen::cpu::cpu_isa();  // a bad GPEN_CPU_ISA is reported before anything runs
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const gpen::Error& e) {
    std::fprintf(stderr, "gpen: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpen: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
