#pragma once
// Subcommands register themselves: each apps/cmd_<name>.cpp defines a static Command, so adding
// a subcommand touches no other file.
#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace gpen::cli {

struct GlobalOptions {
  int threads = 0;  // 0: all cores
};
GlobalOptions& globals();

using Setup = std::function<void(CLI::App& sub)>;
struct Command {
  Command(const char* name, const char* help, Setup setup, int order = 100);
};

}  // namespace gpen::cli
