#include "apps/peer.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "engine/core/error.h"

namespace gpen::cli {

namespace {

const char* const kPeersHint =
    "name its interpreter with --peers-python PATH or GPEN_PEERS_PYTHON=PATH; scripts/peers_venv.sh DIR makes one "
    "with onnxruntime and openvino, whose interpreter is DIR/bin/python";
std::string shell_quote(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

std::string python() {
  const char* p = std::getenv("GPEN_PYTHON");
  return p && *p ? p : "/usr/bin/python3";
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// Where the ONNX exports are kept between runs: $GPEN_PEERS_CACHE, else the user's cache folder.
std::string peers_cache() {
  const std::string xdg = env_or("XDG_CACHE_HOME", env_or("HOME", "/tmp") + "/.cache");
  return env_or("GPEN_PEERS_CACHE", xdg + "/gpen-engine/peers");
}

// Runs a reference script and returns the last JSON object it printed. With timeout_s > 0 it
// runs under coreutils' timeout (a torch.compile that takes too long must not eat a GPU run).
nlohmann::json run_reference(const std::string& script_name, const std::string& args, int timeout_s = 0,
                             const std::string& interpreter = "", const char* what = "the PyTorch reference",
                             const char* hint = "is torch installed for") {
  const std::string dir = reference_dir();
  if (dir.empty())
    return {{"error", "the reference scripts are not installed (PREFIX/share/gpen-engine/reference beside PREFIX/bin/gpen; "
                      "or set GPEN_REFERENCE_DIR to a folder that holds them, e.g. tests/reference of a source checkout)"}};
  const std::string script = dir + "/" + script_name;
  if (!std::filesystem::exists(script)) return {{"error", "missing " + script}};
  const std::string py = interpreter.empty() ? python() : interpreter;
  if (!interpreter.empty() && !std::filesystem::exists(py))
    return {{"error", "no " + py + " (" + kPeersHint + ")"}};
  std::string cmd;
  if (timeout_s > 0) cmd = "timeout -k 5 " + std::to_string(timeout_s) + " ";
  cmd += shell_quote(py) + " " + shell_quote(script) + " " + args + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return {{"error", "could not start " + py}};
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  const int status = pclose(pipe.release());
  auto start = out.rfind("\n{", out.size() > 1 ? out.size() - 2 : 0);
  start = start == std::string::npos ? out.find('{') : start + 1;
  if (start == std::string::npos) {
    // timeout(1) exits 124 when it had to stop the script.
    if (timeout_s > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 124)
      return {{"error", std::string(what) + " did not finish within " + std::to_string(timeout_s) + " s"}};
    return {{"error", std::string(what) + " printed no result (" + hint + " " + py + "?)"}};
  }
  try {
    return nlohmann::json::parse(out.substr(start));
  } catch (const std::exception& e) {
    return {{"error", std::string("unreadable result of ") + what + ": " + e.what()}};
  }
}

}  // namespace

std::string reference_dir() {
  const std::string env = env_or("GPEN_REFERENCE_DIR", "");
  if (!env.empty()) return env;
  std::error_code ec;
  const std::filesystem::path bin = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  if (ec) return "";
  for (const auto& d : {bin.parent_path() / "share/gpen-engine/reference", bin / "share/gpen-engine/reference"})
    if (std::filesystem::is_directory(d, ec)) return d.string();
  return "";
}

std::string peers_python(const std::string& flag) {
  const std::string py = flag.empty() ? env_or("GPEN_PEERS_PYTHON", "") : flag;
  if (py.empty())
    throw Error(std::string("the ONNX peers (--compare onnxruntime, openvino) run in a Python environment of their own: ") +
                kPeersHint);
  if (!std::filesystem::exists(py))
    throw Error(py + ": no such interpreter for the ONNX peers (" + kPeersHint + ")");
  return py;
}

nlohmann::json run_pytorch_gpen_bench(const PytorchGpenBench& b) {
  std::string args = "--bench --threads " + std::to_string(b.threads);
  // A .gpw is the engine's own format; PyTorch gets the configuration and random weights instead
  // (time does not depend on the values).
  bool is_pth = b.model.size() > 4 && b.model.substr(b.model.size() - 4) == ".pth";
  if (is_pth) args += " --checkpoint " + shell_quote(b.model);
  args += " --size " + std::to_string(b.size) + " --cm " + std::to_string(b.cm) + " --narrow " +
          std::to_string(b.narrow) + " --batch " + std::to_string(b.batch) + " --runs " + std::to_string(b.runs) +
          " --warmup " + std::to_string(b.warmup);
  // The CPU call stays the one it always was (no new flags), so an older script still answers.
  if (b.device != "cpu") args += " --device " + shell_quote(b.device);
  if (b.dtype != "fp32") args += " --dtype " + shell_quote(b.dtype);
  if (b.compile) args += " --compile";
  nlohmann::json j = run_reference("gpen_reference.py", args, b.timeout_s);
  // The script's names -> the ones gpen bench prints (its "mb" is ru_maxrss / 1024, i.e. MiB).
  if (j.contains("median_ms_per_face")) j["ms_per_face"] = j["median_ms_per_face"];
  if (j.contains("peak_rss_mb")) j["peak_rss_mib"] = j["peak_rss_mb"];
  return j;
}

nlohmann::json run_pytorch_detector_bench(const std::string& checkpoint, const std::string& image, int runs,
                                          int warmup, int threads, const std::string& device, int timeout_s) {
  std::string args = "--bench --checkpoint " + shell_quote(checkpoint) + " --runs " + std::to_string(runs) +
                     " --warmup " + std::to_string(warmup) + " --threads " + std::to_string(threads);
  if (device != "cpu") args += " --device " + shell_quote(device);
  return run_reference("retinaface_reference.py", args + " " + shell_quote(image), timeout_s);
}

nlohmann::json run_pytorch_parsenet_bench(const std::string& checkpoint, int size, int runs, int threads,
                                          int timeout_s) {
  std::string args = "--bench --size " + std::to_string(size) + " --runs " + std::to_string(runs) + " --threads " +
                     std::to_string(threads);
  if (!checkpoint.empty()) args += " --checkpoint " + shell_quote(checkpoint);
  return run_reference("parsenet_reference.py", args, timeout_s);
}

const std::vector<std::string>& onnx_peers() {
  static const std::vector<std::string> v{"onnxruntime", "openvino"};
  return v;
}

nlohmann::json run_onnx_peer_gpen_bench(const std::string& peer, const PytorchGpenBench& b, const std::string& py) {
  const std::string cache = peers_cache();
  const std::string args = "--peer " + shell_quote(peer) + " --size " + std::to_string(b.size) + " --cm " +
                           std::to_string(b.cm) + " --narrow " + std::to_string(b.narrow) + " --batch " +
                           std::to_string(b.batch) + " --threads " + std::to_string(b.threads) + " --runs " +
                           std::to_string(b.runs) + " --warmup " + std::to_string(b.warmup) + " --cache-dir " +
                           shell_quote(cache) + " --export-python " + shell_quote(python());
  return run_reference("peer_bench.py", args, b.timeout_s, py, "the ONNX peer",
                       "are onnxruntime and openvino installed (scripts/peers_venv.sh) for");
}

nlohmann::json run_onnx_peer_detector_bench(const std::string& peer, const std::string& checkpoint_pth,
                                            const std::string& image, int runs, int warmup, int threads,
                                            const std::string& py, int timeout_s) {
  const std::string cache = peers_cache();
  const std::string args = "--arch retinaface --peer " + shell_quote(peer) + " --checkpoint " +
                           shell_quote(checkpoint_pth) + " --image " + shell_quote(image) + " --threads " +
                           std::to_string(threads) + " --runs " + std::to_string(runs) + " --warmup " +
                           std::to_string(warmup) + " --cache-dir " + shell_quote(cache) + " --export-python " +
                           shell_quote(python());
  return run_reference("peer_bench.py", args, timeout_s, py, "the ONNX peer",
                       "are onnxruntime and openvino installed (scripts/peers_venv.sh) for");
}

nlohmann::json run_gfpgan_export(const GfpganPeerConfig& c) {
  std::string args = "--size " + std::to_string(c.size) + " --cm " + std::to_string(c.cm) + " --narrow " +
                     std::to_string(c.narrow) + " --style-feat " + std::to_string(c.style_feat) + " --different-w " +
                     std::to_string(int(c.different_w)) + " --sft-half " + std::to_string(int(c.sft_half)) +
                     " --batch " + std::to_string(c.batch) + " --threads " + std::to_string(c.threads) +
                     " --out-dir " + shell_quote(peers_cache());
  args += c.checkpoint.empty() ? " --seed " + std::to_string(c.seed) : " --checkpoint " + shell_quote(c.checkpoint);
  return run_reference("export_gfpgan_onnx.py", args, c.timeout_s, "", "the GFPGAN export",
                       "are torch and the official GFPGAN code (tests/reference/gfpgan_official.py) installed for");
}

namespace {

// peer_bench.py on an export made by the bench (--onnx, --input, --expect given).
nlohmann::json run_onnx_peer_on_export(const std::string& peer, const std::string& arch, const nlohmann::json& exported,
                                       int batch, int threads, int runs, int warmup, const std::string& save_output,
                                       const std::string& py, int timeout_s) {
  const std::string args = "--arch " + arch + " --peer " + shell_quote(peer) + " --onnx " +
                           shell_quote(exported["onnx"].get<std::string>()) + " --input " +
                           shell_quote(exported["input"].get<std::string>()) + " --expect " +
                           shell_quote(exported["expect"].get<std::string>()) + " --save-output " +
                           shell_quote(save_output) + " --batch " + std::to_string(batch) + " --threads " +
                           std::to_string(threads) + " --runs " + std::to_string(runs) + " --warmup " +
                           std::to_string(warmup) + " --cache-dir " + shell_quote(peers_cache());
  return run_reference("peer_bench.py", args, timeout_s, py, "the ONNX peer",
                       "are onnxruntime and openvino installed (scripts/peers_venv.sh) for");
}

}  // namespace

nlohmann::json run_onnx_peer_gfpgan_bench(const std::string& peer, const nlohmann::json& exported,
                                          const GfpganPeerConfig& c, int runs, int warmup,
                                          const std::string& save_output, const std::string& py) {
  return run_onnx_peer_on_export(peer, "gfpgan", exported, c.batch, c.threads, runs, warmup, save_output, py,
                                 c.timeout_s);
}

nlohmann::json run_transformer_export(const TransformerPeerConfig& c) {
  std::string args = "--arch " + c.arch + " --w " + std::to_string(c.w) + " --batch " + std::to_string(c.batch) +
                     " --threads " + std::to_string(c.threads) + " --out-dir " + shell_quote(peers_cache());
  args += c.checkpoint.empty() ? " --seed " + std::to_string(c.seed) : " --checkpoint " + shell_quote(c.checkpoint);
  return run_reference("export_transformer_onnx.py", args, c.timeout_s, "", "the CodeFormer / RestoreFormer++ export",
                       "are torch and the official code (tests/reference/export_transformer_onnx.py says where) "
                       "installed for");
}

nlohmann::json run_onnx_peer_transformer_bench(const std::string& peer, const nlohmann::json& exported,
                                               const TransformerPeerConfig& c, int runs, int warmup,
                                               const std::string& save_output, const std::string& py) {
  return run_onnx_peer_on_export(peer, c.arch, exported, c.batch, c.threads, runs, warmup, save_output, py,
                                 c.timeout_s);
}

}  // namespace gpen::cli
