#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "apps/cli.h"
#include "engine/core/error.h"
#include "engine/core/version.h"
#include "engine/runtime/device.h"
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

namespace {

// The first argument that is neither an option of `app` itself nor such an option's value: the
// name of the subcommand the user asked for ("" when there is none).
std::string subcommand_word(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") return i + 1 < argc ? argv[i + 1] : "";
    if (a.size() < 2 || a[0] != '-') return a;
    if (a.find('=') != std::string::npos) continue;
    const CLI::Option* o = app.get_option_no_throw(a);
    if (o && o->get_items_expected_min() > 0) ++i;  // its value
  }
  return "";
}

bool is_subcommand(const std::string& word) {
  return std::any_of(registry().begin(), registry().end(), [&](const Entry& e) { return word == e.name; });
}

// Edits (insert, delete, replace, swap two neighbours) that turn a into b.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// "unknown subcommand 'restor'; did you mean 'restore'?": the nearest name when it is a few edits
// away (or starts with the word), else the list of them all.
std::string unknown_subcommand(const std::string& word) {
  std::string nearest, all;
  size_t best = SIZE_MAX;
  for (const Entry& e : registry()) {
    all += (all.empty() ? "" : ", ") + std::string(e.name);
    const std::string name = e.name;
    const size_t d = name.rfind(word, 0) == 0 ? 1 : edit_distance(word, name);
    if (d < best) best = d, nearest = name;
  }
  if (best <= std::max<size_t>(1, word.size() / 3))
    return "unknown subcommand '" + word + "'; did you mean '" + nearest + "'?";
  return "unknown subcommand '" + word + "' (subcommands: " + all + ")";
}

}  // namespace
}  // namespace gpen::cli

static std::string kVersionText() {
  std::string v = std::string("gpen-engine ") + gpen::version() +
                  (gpen::cuda_compiled_in() ? " (CUDA backend compiled in)" : " (CPU only: CUDA backend not compiled in)");
  // The CPU kernels' path, as chosen at start-up (x86-64: cpuid; or GPEN_CPU_ISA), and the conv rule.
  try {
    const gpen::cpu::CpuOptions& o = gpen::cpu_options_from_env();
    v += std::string("\nCPU kernels: ") + gpen::cpu::isa_name(gpen::cpu::cpu_isa()) +
         (gpen::cpu::cpu_has_avx512() ? " (this CPU has AVX-512 F/BW/DQ/VL)" : " (no AVX-512 on this CPU or build)") +
         "\nCPU kernels per ISA: GEMM and modconv micro-kernels, Winograd transforms, to_rgb dot products, upfirdn2d rows,"
         " conv2d epilogues, direct conv and depthwise 3x3 tiles, GroupNorm sweeps, many-row dense blocks (the im2col gather and"
         " the other depthwise: the baseline on both paths)";
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
  // Before CLI11 parses: it would take a mistyped name for a stray argument ("A subcommand is
  // required"), and `gpen NAME --help` for the main help.
  if (const std::string word = subcommand_word(app, argc, argv); !word.empty() && !is_subcommand(word)) {
    std::fprintf(stderr, "gpen: error: %s\n", unknown_subcommand(word).c_str());
    return static_cast<int>(CLI::ExitCodes::ExtrasError);
  }
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
