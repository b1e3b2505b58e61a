// gpen restore: the helpers both modes share, and inputs -> (input, output) pairs.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>
#include "apps/image_options.h"
#include "apps/restore_common.h"
#include "engine/core/bytes.h"

namespace fs = std::filesystem;

namespace gpen::cli::restore_detail {

ReadOptions photo_read_options(const RestoreArgs& a) { return read_options(a.max_pixels, a.ignore_orientation); }

bool ends_with(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  return std::equal(suffix.rbegin(), suffix.rend(), s.rbegin(),
                    [](char a, char b) { return std::tolower(a) == std::tolower(b); });
}
bool is_image_name(const std::string& p) {
  for (const char* e : {".jpg", ".jpeg", ".png", ".webp", ".bmp"})
    if (ends_with(p, e)) return true;
  return false;
}

DeviceOptions device_options(const RestoreArgs& a) {
  DeviceOptions o;
  o.kind = parse_device(a.device);
  o.cuda_graphs = !a.no_cuda_graphs;
  return o;
}

PlanOptions plan_options(const RestoreArgs& a) {
  PlanOptions o;
  if (!a.arena_budget.empty()) o.arena_budget = parse_bytes(a.arena_budget);
  o.bands = a.bands;
  if (!a.memory_budget.empty()) o.memory_budget = parse_bytes(a.memory_budget);
  return o;
}

RestoreConfig restore_config(const RestoreArgs& a) {
  RestoreConfig c;
  c.model = a.model;
  c.detector = a.detector;
  c.parser = a.parse;
  c.mask = a.mask;
  c.sr = a.sr_model;
  c.sr_tile = a.sr_tile;
  const DeviceOptions dopt = device_options(a);
  c.device = dopt.kind;
  c.cuda_graphs = dopt.cuda_graphs;
  c.precision = a.precision;
  if (!a.vram_budget.empty()) c.memory_budget = parse_bytes(a.vram_budget);
  if (!a.memory_budget.empty()) {
    GPEN_CHECK(a.vram_budget.empty(), "--memory-budget plans the CPU's low-memory mode and --vram-budget the default "
                                      "one: give one of them");
    c.memory_budget = parse_bytes(a.memory_budget);
    c.low_memory = true;
    c.keep_faces = !a.save_faces.empty();  // else the faces kept would count in the budget for nothing
  }
  c.batch = std::max(a.batch, 0);
  const PlanOptions po = plan_options(a);
  c.arena_budget = po.arena_budget;
  c.bands = po.bands;
  c.alpha = a.alpha;
  c.threshold = a.threshold;
  c.upscale = a.upscale;
  c.only_center_face = a.only_center_face;
  c.fidelity = a.fidelity;
  c.face_upsample = a.face_upsample;
  c.det_max_side = a.det_max_side;
  return c;
}

// One file in: OUT is a file unless it names a directory; otherwise OUT is a directory that
// mirrors the inputs' names (relative to each input directory).
std::vector<Job> pair_inputs(const std::vector<std::string>& inputs, const std::string& output,
                             bool (*wanted)(const std::string&), const OutputName& output_name, bool* out_is_dir_p) {
  std::vector<Job> jobs;
  bool single = inputs.size() == 1 && !fs::is_directory(inputs[0]);
  bool out_is_dir = !single || fs::is_directory(output) || output.back() == '/';
  for (const auto& in : inputs) {
    GPEN_CHECK(fs::exists(in), in + ": no such file or directory");
    if (fs::is_directory(in)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::recursive_directory_iterator(in, fs::directory_options::skip_permission_denied))
        if (e.is_regular_file() && wanted(e.path().string())) found.push_back(e.path());
      std::sort(found.begin(), found.end());
      for (const auto& p : found) {
        fs::path rel = fs::relative(p, in);
        if (inputs.size() > 1) rel = fs::path(in).filename() / rel;
        jobs.push_back({p.string(), (fs::path(output) / rel).string(), {}});
      }
    } else {
      jobs.push_back({in, out_is_dir ? (fs::path(output) / fs::path(in).filename()).string() : output, {}});
    }
  }
  // Paths compared by what they resolve to, so "./a.png" and "a.png" are one file.
  auto key = [](const std::string& p) { return fs::weakly_canonical(fs::absolute(p)).string(); };
  std::map<std::string, std::string> input_of;  // resolved input -> as given
  for (const auto& j : jobs) input_of.emplace(key(j.input), j.input);
  std::map<std::string, std::string> writer_of;  // resolved output -> the input written there
  for (auto& j : jobs) {
    j.output = output_name(j.output, out_is_dir);
    const std::string k = key(j.output);
    auto in = input_of.find(k);
    GPEN_CHECK(in == input_of.end(), j.output + ": refusing to overwrite an input (" + in->second + ")");
    auto [w, fresh] = writer_of.emplace(k, j.input);
    GPEN_CHECK(fresh, j.output + ": both " + w->second + " and " + j.input +
                          " would be written here; restore them in separate runs or rename one");
  }
  if (out_is_dir_p) *out_is_dir_p = out_is_dir;
  return jobs;
}

std::vector<Job> collect_jobs(const RestoreArgs& a) {
  bool out_is_dir = false;
  std::vector<Job> jobs = pair_inputs(
      a.inputs, a.output, is_image_name,
      [](const std::string& out, bool to_dir) {
        if (ends_with(out, ".bmp")) return fs::path(out).replace_extension(".png").string();
        GPEN_CHECK(to_dir || is_image_name(out), out + ": the output must end in .png, .jpg, .jpeg or .webp");
        return out;
      },
      &out_is_dir);
  std::map<std::string, std::vector<Job*>> by_prefix;
  for (auto& j : jobs) {
    fs::path rel = out_is_dir ? fs::path(j.output).lexically_relative(a.output) : fs::path(j.output).filename();
    j.faces_prefix = rel.replace_extension().string();
    by_prefix[j.faces_prefix].push_back(&j);
  }
  // x.png and x.jpg keep apart in --save-faces by their extension.
  for (auto& [prefix, same] : by_prefix)
    if (same.size() > 1)
      for (Job* j : same) j->faces_prefix += "_" + fs::path(j->output).extension().string().substr(1);
  return jobs;
}

void progress(size_t done, size_t total, const std::string& name) {
  if (!isatty(fileno(stderr)) || total < 2) return;
  const int width = 30;
  int fill = static_cast<int>(width * done / total);
  std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu %-40.40s", fill, "==============================", width - fill, "", done,
               total, name.c_str());
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

}  // namespace gpen::cli::restore_detail
