// gpen restore --aligned: GPEN on aligned face crops (any size) or model-space .npy batches;
// GFPGAN, CodeFormer and RestoreFormer on aligned face crops as their has_aligned=True restores them.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>
#include "apps/restore_common.h"
#include "engine/core/bytes.h"
#include "engine/core/stopwatch.h"
#include "engine/photo/image.h"
#include "engine/photo/npy.h"
#include "engine/photo/restorer.h"
#include "engine/photo/face_flow.h"
#include "engine/photo/facexlib_flow.h"
#include "engine/photo/tasks.h"
#include "engine/runtime/device.h"
#include "engine/runtime/env_options.h"

namespace fs = std::filesystem;

namespace gpen::cli::restore_detail {

namespace {
struct AlignedFace {
  std::string stem;
  std::vector<float> x;  // S * S * 3, NHWC model space
  Image input;           // --task colorize: the 8-bit input, whose luma the result keeps
};

void load_aligned(const std::string& path, int S, const ReadOptions& ro, GpenTask task, std::vector<AlignedFace>& faces) {
  GPEN_CHECK(fs::exists(path), path + ": no such file");
  std::string stem = fs::path(path).stem().string();
  if (ends_with(path, ".npy")) {
    npy::Array a = npy::load(path);
    GPEN_CHECK(a.type == npy::ElemType::f4, path + ": expected float32 (<f4) data");
    GPEN_CHECK(a.shape.size() == 4 && a.shape[1] == 3 && a.shape[2] == S && a.shape[3] == S && a.shape[0] >= 1,
               path + ": expected shape (N, 3, " + std::to_string(S) + ", " + std::to_string(S) +
                   ") in model space for this model");
    const float* d = a.data<float>();
    const size_t plane = static_cast<size_t>(S) * S;
    for (int64_t n = 0; n < a.shape[0]; ++n) {
      AlignedFace f{a.shape[0] == 1 ? stem : stem + "_" + std::to_string(n), std::vector<float>(plane * 3), {}};
      for (size_t i = 0; i < plane; ++i)
        for (int c = 0; c < 3; ++c) f.x[i * 3 + c] = d[(n * 3 + c) * plane + i];
      faces.push_back(std::move(f));
    }
    return;
  }
  Image img = read_image(path, ro);
  AlignedFace f{stem, std::vector<float>(static_cast<size_t>(S) * S * 3), {}};
  task_to_model(task, img, S, f.x.data());
  if (task == GpenTask::colorize) f.input = std::move(img);
  faces.push_back(std::move(f));
}

// One output per face: OUT itself for one face, else OUT/<stem>.png; never an input, never twice.
std::vector<std::string> aligned_outputs(const RestoreArgs& a, const std::vector<std::string>& stems) {
  const bool to_dir = stems.size() > 1 || fs::is_directory(a.output) || a.output.back() == '/';
  std::vector<std::string> out_paths;
  for (const std::string& stem : stems) {
    std::string p = to_dir ? (fs::path(a.output) / (stem + ".png")).string() : a.output;
    GPEN_CHECK(to_dir || is_image_name(p), p + ": the output must end in .png, .jpg, .jpeg or .webp (or be a directory)");
    for (const auto& in : a.inputs)
      GPEN_CHECK(!fs::exists(p) || !fs::equivalent(p, in), p + ": refusing to overwrite an input");
    GPEN_CHECK(std::find(out_paths.begin(), out_paths.end(), p) == out_paths.end(),
               p + ": two inputs would write the same output (rename one)");
    out_paths.push_back(p);
  }
  if (to_dir) fs::create_directories(a.output);
  return out_paths;
}

// GFPGAN, CodeFormer and RestoreFormer: each crop resized to 512 (cv2.resize INTER_LINEAR), the network, the
// restored face (blended with the resized crop by --blend), as their has_aligned=True.
void run_aligned_facexlib(const RestoreArgs& a, FaceFlow flow) {
  const char* kind = face_flow_name(flow);
  RestoreConfig c = restore_config(a);
  check_config(c, flow);  // other models' options refused, naming them
  GPEN_CHECK(c.upscale == 1 && !c.only_center_face && !c.face_upsample,
             "--upscale, --only-center-face and --face-upsample act on photos; --aligned writes each restored face as "
             "the network makes it");
  GPEN_CHECK(a.save_raw.empty(), "--save-raw writes GPEN's model-space output; " + a.model + " is a " + kind + " model");
  for (const auto& in : a.inputs) {
    GPEN_CHECK(fs::exists(in), in + ": no such file");
    GPEN_CHECK(!ends_with(in, ".npy"), in + ": " + kind + "'s aligned mode takes face images (.npy model-space batches "
                                             "are an input of GPEN models)");
  }
  std::vector<std::string> stems;
  for (const auto& in : a.inputs) stems.push_back(fs::path(in).stem().string());
  const std::vector<std::string> out_paths = aligned_outputs(a, stems);
  // The network on the device with --device cuda (fp32 unless --precision says fp16 or bf16), else on
  // the CPU backend in fp32 (as the photo flow; check_config refused 16 bits there).
  auto backend = c.device == DeviceKind::cuda ? make_backend(device_options(a)) : make_cpu_backend();
  const std::unique_ptr<FacexlibNet> net =
      open_facexlib_net(a.model, flow, *backend, c.fidelity, parse_precision_flag(c.precision));
  FacexlibFlowOptions o;
  o.helper = facexlib_helper(flow);
  o.blend = a.alpha;
  FacexlibRestorer restorer(net->run, nullptr, nullptr, o);
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    const Image face = read_image(a.inputs[i], photo_read_options(a));
    if (a.trace_start && i == 0) {
      timespec now{};
      clock_gettime(CLOCK_REALTIME, &now);
      std::fprintf(stderr, "gpen: first op at %lld ns\n", now.tv_sec * 1000000000LL + now.tv_nsec);
    }
    auto t0 = std::chrono::steady_clock::now();
    const Image restored = restorer.restore_aligned(face);
    const double ms = ms_since(t0);
    write_image(out_paths[i], restored, a.jpeg_quality);
    std::fprintf(stderr, "restored %zu/%zu faces (%.0f ms)\n", i + 1, a.inputs.size(), ms);
  }
}

// --memory-budget: the CPU backend in its low-memory mode (weights from the file's mapping, read
// tile by tile, no Winograd), and where every planned byte goes.
std::unique_ptr<Backend> low_memory_backend(const RestoreArgs& a) {
  check_low_memory(restore_config(a));  // restore_config refuses --vram-budget beside it
  return make_cpu_backend(low_memory_cpu_options());
}

void print_budget(const GpenModel& m) {
  const BudgetFit& f = m.budget_fit();
  const MemoryPlan& p = m.plan();
  std::fprintf(stderr,
               "low-memory mode, budget %s: weights resident at most %s (of %s, mapped from the file and let go "
               "after use), arena %s (lower bound %s, %s), workspace %s; planned %s, the process's own memory "
               "(code, images) not included\n",
               human_bytes(double(f.budget)).c_str(), human_bytes(double(f.weights.peak_bytes)).c_str(),
               human_bytes(double(f.weights.total_bytes)).c_str(), human_bytes(double(p.arena_bytes)).c_str(),
               human_bytes(double(p.lower_bound_bytes)).c_str(),
               f.arena_budget ? ("banded to " + human_bytes(double(f.arena_budget))).c_str() : "unbanded",
               human_bytes(double(p.workspace_bytes)).c_str(),
               human_bytes(double(f.weights.peak_bytes + p.arena_bytes + p.workspace_bytes)).c_str());
}

}  // namespace

void run_aligned(const RestoreArgs& a) {
  if (const FaceFlow flow = face_flow_of_file(a.model); is_facexlib_flow(flow)) return run_aligned_facexlib(a, flow);
  const bool low_memory = !a.memory_budget.empty();
  auto backend = low_memory ? low_memory_backend(a) : make_backend(device_options(a));
  auto model = open_gpen_model(a.model, *backend, a.precision);
  const int S = model->size(), O = model->output_size();  // O > S: FullGenerator_SR
  const GpenTask task = parse_task(a.task);
  model->set_noise_seed(a.seed);

  std::vector<AlignedFace> faces;
  for (const auto& in : a.inputs) load_aligned(in, S, photo_read_options(a), task, faces);
  std::vector<std::string> stems;
  for (const AlignedFace& f : faces) stems.push_back(f.stem);
  const std::vector<std::string> out_paths = aligned_outputs(a, stems);

  // --sr: the official aligned flow super-resolves each restored face (s * S square).
  std::unique_ptr<RrdbModel> sr;
  if (!a.sr_model.empty()) sr = open_sr_model(a.sr_model, *backend, a.precision);
  SrSettings sr_set;
  sr_set.tile = a.sr_tile;
  if (!a.vram_budget.empty()) sr_set.budget = parse_bytes(a.vram_budget);
  const int total = static_cast<int>(faces.size());
  // The low-memory mode runs one face at a time unless asked otherwise: the arena grows with the batch.
  const int batch = std::clamp(a.batch > 0 ? a.batch : low_memory ? 1 : std::min(total, 8), 1, total);
  model->prepare(batch, plan_options(a));
  if (low_memory) print_budget(*model);
  const size_t face_floats = static_cast<size_t>(S) * S * 3, out_floats = static_cast<size_t>(O) * O * 3;
  std::vector<float> in(face_floats * batch), out(out_floats * batch), raw;
  if (!a.save_raw.empty()) raw.resize(out_floats * total);
  for (int start = 0; start < total; start += batch) {
    int n = std::min(batch, total - start);
    for (int i = 0; i < n; ++i)
      std::copy(faces[start + i].x.begin(), faces[start + i].x.end(), in.begin() + i * face_floats);
    // --trace-start: scripts/startup.sh times process start -> first op with this line.
    if (a.trace_start && start == 0) {
      timespec now{};
      clock_gettime(CLOCK_REALTIME, &now);
      std::fprintf(stderr, "gpen: first op at %lld ns\n", now.tv_sec * 1000000000LL + now.tv_nsec);
    }
    auto t0 = std::chrono::steady_clock::now();
    model->run(n, in.data(), out.data());
    double ms = ms_since(t0);
    for (int i = 0; i < n; ++i) {
      const float* y = out.data() + i * out_floats;
      Image face = task_from_model(task, faces[start + i].input, y, O);
      if (sr) {
        SrOptions so;
        so.tile = resolve_sr_tile(sr_set, *sr, face.width, face.height, nullptr);
        face = super_resolve(*sr, face, so);
      }
      write_image(out_paths[start + i], face, a.jpeg_quality);
      if (!raw.empty()) {
        // NHWC -> NCHW for the .npy, matching the official tensor layout.
        const size_t plane = static_cast<size_t>(O) * O;
        float* r = raw.data() + static_cast<size_t>(start + i) * out_floats;
        for (size_t p = 0; p < plane; ++p)
          for (int c = 0; c < 3; ++c) r[c * plane + p] = y[p * 3 + c];
      }
    }
    std::fprintf(stderr, "restored %d/%d faces (%.0f ms for this batch of %d)\n", start + n, total, ms, n);
  }
  if (!raw.empty()) {
    std::string tmp = a.save_raw + ".tmp";
    npy::save_f32(tmp, {total, 3, O, O}, raw.data());
    fs::rename(tmp, a.save_raw);
  }
}

}  // namespace gpen::cli::restore_detail
