// gpen fetch NAME...: downloads the official checkpoints by name, verifies them, optionally
// converts them to .gpw.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "apps/cli.h"
#include "engine/core/error.h"
#include "converter/fetch/fetch.h"

namespace {

struct FetchArgs {
  std::vector<std::string> names;
  gpen::fetch::Options opt;
  bool list = false;
  bool quiet = false;
};

void list_models() {
  std::printf("%-22s %-48s %s\n", "name", "what it must be", "where");
  for (const auto& m : gpen::fetch::models()) {
    std::string where = !m.supported ? "not yet (the converter does not know its layout)"
                        : m.at_base  ? gpen::fetch::model_url(m, "")
                                     : "not in the official folder: --base-url only";
    std::printf("%-22s %-48s %s\n", m.name.c_str(), m.supported ? gpen::fetch::describe(m.expect).c_str() : "-",
                where.c_str());
  }
}

int run_fetch(FetchArgs& a) {
  if (a.list) {
    list_models();
    return 0;
  }
  if (a.names.empty()) throw gpen::Error("name the models to fetch (" + gpen::fetch::model_names() + "), or --list");
  if (!a.opt.sha256.empty() && a.names.size() != 1) throw gpen::Error("--sha256 pins one file: name exactly one model");
  // Names are checked before anything is downloaded, so a typo costs nothing.
  std::vector<const gpen::fetch::ModelInfo*> ms;
  for (const auto& n : a.names) {
    const auto* m = gpen::fetch::find_model(n);
    if (!m) throw gpen::Error("unknown model '" + n + "' (known: " + gpen::fetch::model_names() + ")");
    if (!m->supported) gpen::fetch::model_url(*m, a.opt.base_url);  // throws the reason
    ms.push_back(m);
  }
  a.opt.progress = !a.quiet && isatty(STDERR_FILENO);
  int failed = 0;
  for (size_t i = 0; i < ms.size(); ++i) {
    const auto* m = ms[i];
    try {
      const auto r = gpen::fetch::fetch_model(*m, a.opt);
      std::printf("%s: %s %s (%.1f MiB, %s, sha256 %s)%s%s\n", m->name.c_str(),
                  r.downloaded ? (r.resumed ? "downloaded (resumed)" : "downloaded") : "already there,", r.pth.c_str(),
                  double(r.bytes) / (1024.0 * 1024.0), r.what.c_str(), r.sha256.c_str(),
                  r.gpw.empty() ? "" : " -> ", r.gpw.c_str());
    } catch (const gpen::fetch::Unreachable& e) {
      // One line, not one per model: the rest would wait for the same timeout and say the same.
      std::string rest;
      for (size_t j = i + 1; j < ms.size(); ++j) rest += (rest.empty() ? "" : ", ") + ms[j]->name;
      std::fprintf(stderr, "gpen: error: %s%s%s\n", e.what(), rest.empty() ? "" : "; not tried: ", rest.c_str());
      return 1;
    } catch (const gpen::Error& e) {
      std::fprintf(stderr, "gpen: error: %s\n", e.what());
      ++failed;
    }
  }
  return failed ? 1 : 0;
}

gpen::cli::Command reg(
    "fetch", "Download official checkpoints by name, verify them (layout, size/sha256) and optionally convert them",
    [](CLI::App& sub) {
      auto a = std::make_shared<FetchArgs>();
      sub.add_option("names", a->names, "Models: " + gpen::fetch::model_names());
      sub.add_option("--dir", a->opt.dir, "Folder for NAME.pth (and NAME.gpw)")->capture_default_str();
      sub.add_option("--base-url", a->opt.base_url,
                     std::string("Fetch BASE/NAME.pth instead of the official ") + gpen::fetch::kOfficialBase + "/NAME.pth");
      sub.add_option("--sha256", a->opt.sha256, "Require this SHA-256 of the file (one model only)")
          ->check([](const std::string& s) {
            if (s.size() != 64 || s.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
              return std::string("not a SHA-256: 64 hex digits expected");
            return std::string();
          });
      sub.add_flag("--convert", a->opt.convert, "Also write NAME.gpw beside NAME.pth (gpen convert)");
      sub.add_option("--connect-timeout", a->opt.connect_timeout_s, "Seconds to wait for a connection")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
      sub.add_option("--attempts", a->opt.attempts, "Transfers per model; each resumes where the last was cut")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
      sub.add_flag("--quiet", a->quiet, "No progress bar (it is drawn only when stderr is a terminal)");
      sub.add_flag("--list", a->list, "List the known models and where they come from");
      sub.footer(
          "A download is written to DIR/NAME.pth.part, resumed with a Range request when the connection is cut "
          "(also by the next run, if this one is killed), and renamed to NAME.pth only once the converter recognises "
          "the model's architecture, configuration and every tensor shape (and its size and sha256 match, where known). "
          "A failed or wrong download is deleted. A NAME.pth already there is verified, not downloaded again. "
          "When the server cannot be reached, the remaining models are not tried. Exit status 1 when any model failed.");
      sub.callback([a] {
        if (int rc = run_fetch(*a); rc != 0) throw CLI::RuntimeError(rc);
      });
    },
    22);

}  // namespace
