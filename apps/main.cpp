#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "apps/cli.h"
#include "engine/core/error.h"
#include "engine/runtime/env_options.h"
#include "kernels/cpu/conv_select.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"

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
  // The CPU kernels' path, as chosen at start-up (cpuid, or GPEN_CPU_ISA), and the conv rule.
  try {
    const gpen::cpu::CpuOptions& o = gpen::cpu_options_from_env();
    v += std::string("\nCPU kernels: ") + gpen::cpu::isa_name(gpen::cpu::cpu_isa()) +
         (gpen::cpu::cpu_has_avx512() ? " (this CPU has AVX-512 F/BW/DQ/VL)" : " (no AVX-512 on this CPU or build)") +
         "\nCPU kernels per ISA: GEMM and modconv micro-kernels, Winograd transforms, to_rgb dot products, upfirdn2d rows,"
         " conv2d epilogues, direct conv and depthwise 3x3 tiles (the im2col gather and the other depthwise: AVX2 on both"
         " paths)";
    v += std::string("\nCPU conv rule (GPEN_CPU_CONV=") + gpen::cpu::conv_mode_name(o.conv) +
         ", GPEN_CPU_CONV1X1=" + (o.own_gemm ? "own" : "eigen") + ", GPEN_CPU_WINO_FUSED=" + (o.wino_fused ? "1" : "0") +
         "; docs/conv-rule.md):\n\n" + gpen::cpu::conv_rule_text();
    if (!v.empty() && v.back() == '\n') v.pop_back();
  } catch (const gpen::Error& e) {
    v += std::string("\nCPU kernels: ") + e.what();
  }
  return v;
}

int main(int argc, char** argv) {
  using namespace gpen::cli;
  CLI::App app{"gpen: GPEN face restoration with a static memory plan"};
  app.set_version_flag("--version", std::function<std::string()>(kVersionText));
  app.add_flag_callback(
      "--conv-rule",
      [] {
        std::fputs(gpen::cpu::conv_rule_text().c_str(), stdout);
        throw CLI::Success();
      },
      "Print the CPU conv rule (which kernel runs each conv2d and modconv; docs/conv-rule.md) and exit");
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
    gpen::cpu_options_from_env();  // a bad GPEN_CPU_* variable is reported before anything runs
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
