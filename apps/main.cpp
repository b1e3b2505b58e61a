#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "apps/cli.h"
#include "engine/core/error.h"
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

static const char* kVersionText() {
#ifdef GPEN_WITH_CUDA
  return "gpen-engine " GPEN_VERSION " (CUDA backend compiled in)";
#else
  return "gpen-engine " GPEN_VERSION " (CPU only: CUDA backend not compiled in)";
#endif
}

int main(int argc, char** argv) {
  using namespace gpen::cli;
  CLI::App app{"gpen: GPEN face restoration with a static memory plan"};
  app.set_version_flag("--version", std::string(kVersionText()));
  app.add_option("--threads", globals().threads, "CPU threads (default: all cores)")->check(CLI::NonNegativeNumber);
  app.require_subcommand(1);
  std::sort(registry().begin(), registry().end(), [](const auto& a, const auto& b) { return a.order < b.order; });
  for (auto& e : registry()) {
    CLI::App* sub = app.add_subcommand(e.name, e.help);
    e.setup(*sub);
  }
  app.parse_complete_callback([] { gpen::cpu::set_num_threads(globals().threads); });
  try {
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
