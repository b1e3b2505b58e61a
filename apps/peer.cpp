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

// Runs a reference script and returns the last JSON object it printed.
nlohmann::json run_reference(const std::string& script_name, const std::string& args) {
  std::string script = std::string(GPEN_SOURCE_DIR) + "/tests/reference/" + script_name;
  if (!std::filesystem::exists(script)) return {{"error", "missing " + script}};
  std::string cmd = "/usr/bin/python3 " + shell_quote(script) + " " + args + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return {{"error", "could not start /usr/bin/python3"}};
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  auto start = out.rfind("\n{", out.size() > 1 ? out.size() - 2 : 0);
  start = start == std::string::npos ? out.find('{') : start + 1;
  if (start == std::string::npos) return {{"error", "the PyTorch reference printed no result (is python3-torch installed?)"}};
  try {
    return nlohmann::json::parse(out.substr(start));
  } catch (const std::exception& e) {
    return {{"error", std::string("unreadable PyTorch result: ") + e.what()}};
  }
}

}  // namespace

nlohmann::json run_pytorch_gpen_bench(const std::string& model, int size, int cm, double narrow, int batch, int runs,
                                      int warmup, int threads) {
  std::string args = "--bench --threads " + std::to_string(threads);
  // A .gpw is the engine's own format; PyTorch gets the configuration and random weights instead
  // (time does not depend on the values).
  bool is_pth = model.size() > 4 && model.substr(model.size() - 4) == ".pth";
  if (is_pth) args += " --checkpoint " + shell_quote(model);
  args += " --size " + std::to_string(size) + " --cm " + std::to_string(cm) + " --narrow " + std::to_string(narrow) +
          " --batch " + std::to_string(batch) + " --runs " + std::to_string(runs) + " --warmup " + std::to_string(warmup);
  nlohmann::json j = run_reference("gpen_reference.py", args);
  // The script's names -> the ones gpen bench prints (its "mb" is ru_maxrss / 1024, i.e. MiB).
  if (j.contains("median_ms_per_face")) j["ms_per_face"] = j["median_ms_per_face"];
  if (j.contains("peak_rss_mb")) j["peak_rss_mib"] = j["peak_rss_mb"];
  return j;
}

nlohmann::json run_pytorch_detector_bench(const std::string& checkpoint, const std::string& image, int runs,
                                          int warmup, int threads) {
  return run_reference("retinaface_reference.py",
                       "--bench --checkpoint " + shell_quote(checkpoint) + " --runs " + std::to_string(runs) +
                           " --warmup " + std::to_string(warmup) + " --threads " + std::to_string(threads) + " " +
                           shell_quote(image));
}

}  // namespace gpen::cli
