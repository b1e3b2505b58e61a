#include "apps/peer.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>

namespace gpen::cli {

namespace {
std::string shell_quote(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}
}  // namespace

nlohmann::json run_pytorch_gpen_bench(const std::string& model, int size, int cm, double narrow, int batch, int runs,
                                      int warmup) {
  std::string script = std::string(GPEN_SOURCE_DIR) + "/tests/reference/gpen_reference.py";
  if (!std::filesystem::exists(script)) return {{"error", "missing " + script}};
  std::string cmd = "/usr/bin/python3 " + shell_quote(script) + " --bench --json";
  // A .gpw is the engine's own format; PyTorch gets the configuration and random weights instead
  // (time does not depend on the values).
  bool is_pth = model.size() > 4 && model.substr(model.size() - 4) == ".pth";
  if (is_pth) cmd += " --checkpoint " + shell_quote(model);
  cmd += " --size " + std::to_string(size) + " --cm " + std::to_string(cm) + " --narrow " + std::to_string(narrow) +
         " --batch " + std::to_string(batch) + " --runs " + std::to_string(runs) + " --warmup " + std::to_string(warmup);
  cmd += " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return {{"error", "could not start /usr/bin/python3"}};
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  auto start = out.find('{');
  if (start == std::string::npos) return {{"error", "the PyTorch reference printed no result (is python3-torch installed?)"}};
  try {
    return nlohmann::json::parse(out.substr(start));
  } catch (const std::exception& e) {
    return {{"error", std::string("unreadable PyTorch result: ") + e.what()}};
  }
}

}  // namespace gpen::cli
