// gpen restore: GPEN on photos (detect, align, restore, paste back) or, with --aligned, on face
// crops that are already aligned (images of any size, or .npy batches in model space).
// Inputs are checked before work starts where that is cheap; every output is written atomically
// and never over an input; in a folder run a bad file is reported and skipped, and the exit
// status says that something failed.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/cli.h"
#include "apps/image_options.h"
#include "apps/format.h"
#include "apps/rss.h"
#include "apps/svg.h"
#include "engine/runtime/device.h"
#include "kernels/cpu/face_io.h"
#include "engine/photo/image.h"
#include "engine/core/stopwatch.h"
#include "engine/models/gpen_model.h"
#include "engine/photo/npy.h"
#include "engine/photo/pipeline.h"
#include "kernels/cpu/ops.h"

namespace fs = std::filesystem;

namespace gpen::cli {
namespace {

struct RestoreArgs {
  std::string model;
  std::string detector;
  std::vector<std::string> inputs;
  std::string output;
  bool aligned = false;
  std::string device = "auto";
  std::string precision;  // empty: fp32 on the CPU, fp16 on CUDA
  bool no_cuda_graphs = false;
  std::string save_raw;
  std::string save_faces;
  std::string report;
  std::string vram_budget;
  int batch = 0;
  double alpha = 1.0;
  float threshold = 0.9f;
  int det_max_side = -1;
  int jpeg_quality = 95;
  int64_t max_pixels = kMaxImagePixels;
  bool ignore_orientation = false;
};

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

size_t available_ram() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  size_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return size_t{4} << 30;
}

DeviceOptions device_options(const RestoreArgs& a) {
  DeviceOptions o;
  o.kind = parse_device(a.device);
  o.cuda_graphs = !a.no_cuda_graphs;
  return o;
}

// The GPEN model on the chosen device at the chosen precision.
std::unique_ptr<GpenModel> open_model(const RestoreArgs& a, Backend& backend) {
  const DType p = a.precision.empty() ? default_precision(backend) : parse_precision(a.precision);
  GPEN_CHECK(p == DType::f32 || is_device_backend(backend),
             "--precision " + a.precision + ": the CPU backend runs fp32 only (use --device cuda)");
  return GpenModel::open(a.model, backend, p);
}

// ---------------------------------------------------------------- aligned crops
struct AlignedFace {
  std::string stem;
  std::vector<float> x;  // S * S * 3, NHWC model space
};

void load_aligned(const std::string& path, int S, const ReadOptions& ro, std::vector<AlignedFace>& faces) {
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
      AlignedFace f{a.shape[0] == 1 ? stem : stem + "_" + std::to_string(n), std::vector<float>(plane * 3)};
      for (size_t i = 0; i < plane; ++i)
        for (int c = 0; c < 3; ++c) f.x[i * 3 + c] = d[(n * 3 + c) * plane + i];
      faces.push_back(std::move(f));
    }
    return;
  }
  Image img = read_image(path, ro);
  AlignedFace f{stem, std::vector<float>(static_cast<size_t>(S) * S * 3)};
  face_to_model(img, S, f.x.data());
  faces.push_back(std::move(f));
}

void run_aligned(const RestoreArgs& a) {
  auto backend = make_backend(device_options(a));
  auto model = open_model(a, *backend);
  const int S = model->size();

  std::vector<AlignedFace> faces;
  for (const auto& in : a.inputs) load_aligned(in, S, photo_read_options(a), faces);
  const bool to_dir = faces.size() > 1 || fs::is_directory(a.output) || a.output.back() == '/';
  std::vector<std::string> out_paths;
  for (const AlignedFace& f : faces) {
    std::string p = to_dir ? (fs::path(a.output) / (f.stem + ".png")).string() : a.output;
    GPEN_CHECK(to_dir || is_image_name(p), p + ": the output must end in .png, .jpg, .jpeg or .webp (or be a directory)");
    for (const auto& in : a.inputs)
      GPEN_CHECK(!fs::exists(p) || !fs::equivalent(p, in), p + ": refusing to overwrite an input");
    GPEN_CHECK(std::find(out_paths.begin(), out_paths.end(), p) == out_paths.end(),
               p + ": two inputs would write the same output (rename one)");
    out_paths.push_back(p);
  }
  if (to_dir) fs::create_directories(a.output);

  const int total = static_cast<int>(faces.size());
  const int batch = std::clamp(a.batch > 0 ? a.batch : std::min(total, 8), 1, total);
  model->prepare(batch);
  const size_t face_floats = static_cast<size_t>(S) * S * 3;
  std::vector<float> in(face_floats * batch), out(face_floats * batch), raw;
  if (!a.save_raw.empty()) raw.resize(face_floats * total);
  for (int start = 0; start < total; start += batch) {
    int n = std::min(batch, total - start);
    for (int i = 0; i < n; ++i)
      std::copy(faces[start + i].x.begin(), faces[start + i].x.end(), in.begin() + i * face_floats);
    // scripts/startup.sh reads this to time process start -> first op (the start-up
    // figure); GPEN_TRACE_START=exit stops there, so measuring does not wait for the forward pass.
    if (const char* trace = std::getenv("GPEN_TRACE_START"); trace && start == 0) {
      timespec now{};
      clock_gettime(CLOCK_REALTIME, &now);
      std::fprintf(stderr, "gpen: first op at %lld ns\n", now.tv_sec * 1000000000LL + now.tv_nsec);
      if (std::string(trace) == "exit") std::_Exit(0);
    }
    auto t0 = std::chrono::steady_clock::now();
    model->run(n, in.data(), out.data());
    double ms = ms_since(t0);
    for (int i = 0; i < n; ++i) {
      const float* y = out.data() + i * face_floats;
      write_image(out_paths[start + i], model_to_face(y, S), a.jpeg_quality);
      if (!raw.empty()) {
        // NHWC -> NCHW for the .npy, matching the official tensor layout.
        const size_t plane = static_cast<size_t>(S) * S;
        float* r = raw.data() + static_cast<size_t>(start + i) * face_floats;
        for (size_t p = 0; p < plane; ++p)
          for (int c = 0; c < 3; ++c) r[c * plane + p] = y[p * 3 + c];
      }
    }
    std::fprintf(stderr, "restored %d/%d faces (%.0f ms for this batch of %d)\n", start + n, total, ms, n);
  }
  if (!raw.empty()) {
    std::string tmp = a.save_raw + ".tmp";
    npy::save_f32(tmp, {total, 3, S, S}, raw.data());
    fs::rename(tmp, a.save_raw);
  }
}

// ---------------------------------------------------------------- photos
struct Job {
  std::string input;
  std::string output;
  std::string faces_prefix;  // --save-faces: path under that directory, before "_faceK.png"
};

// Files and directories (recursively, image extensions) -> (input, output) pairs. One file in:
// OUT is a file unless it names a directory; otherwise OUT is a directory that mirrors the
// inputs' names (relative to each input directory).
std::vector<Job> collect_jobs(const RestoreArgs& a) {
  std::vector<Job> jobs;
  bool single = a.inputs.size() == 1 && !fs::is_directory(a.inputs[0]);
  bool out_is_dir = !single || fs::is_directory(a.output) || a.output.back() == '/';
  for (const auto& in : a.inputs) {
    GPEN_CHECK(fs::exists(in), in + ": no such file or directory");
    if (fs::is_directory(in)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::recursive_directory_iterator(in, fs::directory_options::skip_permission_denied))
        if (e.is_regular_file() && is_image_name(e.path().string())) found.push_back(e.path());
      std::sort(found.begin(), found.end());
      for (const auto& p : found) {
        fs::path rel = fs::relative(p, in);
        if (a.inputs.size() > 1) rel = fs::path(in).filename() / rel;
        jobs.push_back({p.string(), (fs::path(a.output) / rel).string(), {}});
      }
    } else {
      jobs.push_back({in, out_is_dir ? (fs::path(a.output) / fs::path(in).filename()).string() : a.output, {}});
    }
  }
  // Paths compared by what they resolve to, so "./a.png" and "a.png" are one file.
  auto key = [](const std::string& p) { return fs::weakly_canonical(fs::absolute(p)).string(); };
  std::map<std::string, std::string> input_of;  // resolved input -> as given
  for (const auto& j : jobs) input_of.emplace(key(j.input), j.input);
  std::map<std::string, std::string> writer_of;  // resolved output -> the input written there
  std::map<std::string, std::vector<Job*>> by_prefix;
  for (auto& j : jobs) {
    if (ends_with(j.output, ".bmp")) j.output = fs::path(j.output).replace_extension(".png").string();
    if (!out_is_dir) GPEN_CHECK(is_image_name(j.output), j.output + ": the output must end in .png, .jpg, .jpeg or .webp");
    const std::string k = key(j.output);
    auto in = input_of.find(k);
    GPEN_CHECK(in == input_of.end(), j.output + ": refusing to overwrite an input (" + in->second + ")");
    auto [w, fresh] = writer_of.emplace(k, j.input);
    GPEN_CHECK(fresh, j.output + ": both " + w->second + " and " + j.input +
                          " would be written here; restore them in separate runs or rename one");
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

void run_photos(const RestoreArgs& a) {
  const DeviceOptions dopt = device_options(a);
  GPEN_CHECK(!a.detector.empty(), "restore needs a detector (-d RETINAFACE.gpw), or --aligned for face crops");
  std::vector<Job> jobs = collect_jobs(a);
  GPEN_CHECK(!jobs.empty(), "no images found in the inputs (extensions .jpg, .jpeg, .png, .webp, .bmp)");

  auto backend = make_backend(dopt);
  auto model = open_model(a, *backend);
  // The detector on the same kind of device (its own backend: own stream, own arena).
  DeviceOptions det_opt = dopt;
  det_opt.kind = is_device_backend(*backend) ? DeviceKind::cuda : DeviceKind::cpu;
  RetinaFaceDetector detector(a.detector, make_backend(det_opt));
  RestoreOptions opt;
  opt.alpha = a.alpha;
  opt.min_score = a.threshold;
  opt.detect.post.threshold = a.threshold;
  if (a.det_max_side >= 0) {
    opt.detect.max_side = a.det_max_side;
    opt.detect.target_side = a.det_max_side;
  }
  if (a.batch > 0) {
    opt.batch = a.batch;
  } else {
    // Default budget: half the free RAM on the CPU; on a GPU 80% of the free device memory (the
    // weights, already uploaded, count in the plan's total and are added back).
    size_t budget = 0;
    if (!a.vram_budget.empty())
      budget = parse_bytes(a.vram_budget);
    else if (auto* dev = dynamic_cast<DeviceBackend*>(backend.get()))
      budget = dev->memory_info().free / 10 * 8 + model->device_weights_bytes();
    else
      budget = available_ram() / 2;
    opt.batch = choose_batch(model->config(), *backend, budget, 16);
  }
  // The batch above is a limit: GPEN is planned for the faces the photos have, up to it.
  opt.grow_batch = true;
  FaceRestorer restorer(*model, detector, opt);
  {
    const MemoryPlan& plan = model->plan();
    std::fprintf(stderr, "GPEN %dx%d on %s (%s), up to %d faces per run (planned as photos need; batch 1: weights %s, arena %s, workspace %s)\n",
                 model->size(), model->size(), backend->name(), precision_name(model->precision()), opt.batch,
                 human_bytes(double(plan.weights_bytes)).c_str(), human_bytes(double(plan.arena_bytes)).c_str(),
                 human_bytes(double(plan.workspace_bytes)).c_str());
  }

  nlohmann::json images = nlohmann::json::array();
  StageTimes sum;
  int failed = 0, faces_total = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& job = jobs[i];
    progress(i, jobs.size(), job.input);
    nlohmann::json rep = {{"image", job.input}, {"output", job.output}};
    try {
      auto t0 = std::chrono::steady_clock::now();
      ImageMeta meta;  // EXIF (orientation reset when applied) and ICC profile, for the output
      Image photo = read_image(job.input, photo_read_options(a), &meta);
      double decode_ms = ms_since(t0);
      PhotoResult r = restorer.process(photo);
      r.times.decode_ms = decode_ms;
      t0 = std::chrono::steady_clock::now();
      fs::create_directories(fs::absolute(job.output).parent_path());
      write_image(job.output, r.image, a.jpeg_quality, &meta);
      if (!a.save_faces.empty()) {
        const fs::path prefix = fs::path(a.save_faces) / job.faces_prefix;
        fs::create_directories(prefix.parent_path());
        for (size_t k = 0; k < r.restored_faces.size(); ++k)
          write_image(prefix.string() + "_face" + std::to_string(k) + ".png", r.restored_faces[k]);
      }
      r.times.encode_ms = ms_since(t0);
      faces_total += r.restored;
      sum.decode_ms += r.times.decode_ms;
      sum.detect_ms += r.times.detect_ms;
      sum.align_ms += r.times.align_ms;
      sum.restore_ms += r.times.restore_ms;
      sum.paste_ms += r.times.paste_ms;
      sum.encode_ms += r.times.encode_ms;
      rep["width"] = photo.width;
      rep["height"] = photo.height;
      rep["faces_found"] = r.faces.size();
      rep["faces_restored"] = r.restored;
      rep["times_ms"] = {{"decode", r.times.decode_ms}, {"detect", r.times.detect_ms}, {"align", r.times.align_ms},
                         {"restore", r.times.restore_ms}, {"paste", r.times.paste_ms}, {"encode", r.times.encode_ms}};
      if (jobs.size() == 1 || !isatty(fileno(stderr)))
        std::fprintf(stderr, "%s: %zu faces found, %d restored -> %s (%.0f ms)\n", job.input.c_str(), r.faces.size(),
                     r.restored, job.output.c_str(),
                     r.times.decode_ms + r.times.detect_ms + r.times.align_ms + r.times.restore_ms + r.times.paste_ms +
                         r.times.encode_ms);
    } catch (const std::exception& e) {
      ++failed;
      rep["error"] = e.what();
      std::fprintf(stderr, "%sgpen: error: %s\n", isatty(fileno(stderr)) ? "\n" : "", e.what());
    }
    images.push_back(rep);
  }
  progress(jobs.size(), jobs.size(), "");
  if (!a.report.empty()) {
    const MemoryPlan& plan = model->plan();  // the plan of the batch the photos needed
    nlohmann::json report = {
        {"images", images},
        {"totals",
         {{"images", jobs.size()},
          {"failed", failed},
          {"faces_restored", faces_total},
          {"times_ms",
           {{"decode", sum.decode_ms}, {"detect", sum.detect_ms}, {"align", sum.align_ms}, {"restore", sum.restore_ms},
            {"paste", sum.paste_ms}, {"encode", sum.encode_ms}}}}},
        {"memory",
         {{"device", backend->name()},
          {"precision", precision_name(model->precision())},
          {"gpen_batch", restorer.batch()},
          {"gpen_batch_limit", opt.batch},
          {"weights_bytes", plan.weights_bytes},
          {"arena_bytes", plan.arena_bytes},
          {"workspace_bytes", plan.workspace_bytes},
          // In the generator's arena when it fits there (FaceRestorer lends it): no extra memory.
          {"detector_arena_bytes", detector.arena_capacity()},
          {"detector_in_generator_arena", detector.uses_shared_memory()},
          // Device pipeline: the photo, paste canvas, detection candidates, mask and one batch of
          // crops in one buffer, sized by the largest photo (0 on the host).
          {"pipeline_on_device", restorer.on_device()},
          {"pipeline_buffer_bytes", restorer.device_buffer_bytes()},
          {"peak_rss_mib", peak_rss_mib()}}}};
    write_text_file(a.report, report.dump(2) + "\n");
  }
  std::fprintf(stderr, "%zu photos, %d faces restored, %d failed; peak RSS %.0f MiB\n", jobs.size(), faces_total,
               failed, peak_rss_mib());
  GPEN_CHECK(failed == 0, std::to_string(failed) + " of " + std::to_string(jobs.size()) +
                              " photos could not be restored (see the messages above)");
}

RestoreArgs g_args;

Command reg(
    "restore", "Restore faces in photos (detect, align, GPEN, paste back), or aligned crops with --aligned",
    [](CLI::App& sub) {
      sub.add_option("-m,--model", g_args.model, "Converted GPEN model (.gpw)")->required()->check(CLI::ExistingFile);
      sub.add_option("-d,--detector", g_args.detector, "Converted RetinaFace model (.gpw); not used with --aligned")
          ->check(CLI::ExistingFile);
      sub.add_option("inputs", g_args.inputs,
                     "Photos or directories (recursive; .jpg .jpeg .png .webp .bmp); with --aligned: face crops of any size "
                     "or .npy float32 N x 3 x S x S in [-1, 1]")
          ->required();
      sub.add_option("-o,--output", g_args.output, "Output file (one input) or directory")->required();
      sub.add_flag("--aligned", g_args.aligned, "Inputs are aligned face crops (no detection)");
      sub.add_option("--device", g_args.device, "cpu, cuda or auto (CUDA when a GPU is present)")->capture_default_str();
      sub.add_option("--precision", g_args.precision,
                     "GPEN precision: fp32, fp16 or bf16 (default: fp32 on the CPU, fp16 on CUDA; the CPU runs fp32 "
                     "only; the detector always runs fp32)");
      sub.add_flag("--no-cuda-graphs", g_args.no_cuda_graphs,
                   "CUDA: launch every kernel each run instead of replaying a captured graph");
      sub.add_option("--batch", g_args.batch, "Most faces per GPEN run (default: from --vram-budget); GPEN is planned for the faces the photos have, up to this");
      sub.add_option("--vram-budget", g_args.vram_budget,
                     "Memory for GPEN (weights + arena + workspace), e.g. 2GiB; the batch is the largest that fits "
                     "(default: half the free RAM on CPU, 80% of the free GPU memory on CUDA)");
      sub.add_option("--alpha", g_args.alpha, "Blend: restored * alpha + original crop * (1 - alpha)")
          ->capture_default_str()
          ->check(CLI::Range(0.0, 1.0));
      sub.add_option("--threshold", g_args.threshold, "Detection score threshold")->capture_default_str();
      sub.add_option("--det-max-side", g_args.det_max_side,
                     "Shrink photos whose longer side exceeds N to N for detection (default: > 1500 -> 1000; 0: never)");
      sub.add_option("--save-faces", g_args.save_faces, "Also write every restored face crop into this directory, as <output path without extension>_face<K>.png mirroring the output tree");
      sub.add_option("--save-raw", g_args.save_raw, "--aligned: also write the raw generator output (float32 NCHW .npy)");
      sub.add_option("--jpeg-quality", g_args.jpeg_quality,
                     "JPEG quality of .jpg outputs (.png and .webp outputs are lossless); every output keeps the "
                     "input's EXIF (orientation reset to 1 once applied) and ICC profile")
          ->capture_default_str()
          ->check(CLI::Range(1, 100));
      add_image_read_options(sub, g_args.max_pixels, g_args.ignore_orientation);
      sub.add_option("--report", g_args.report, "Write a JSON report: faces, per-stage times, memory");
      sub.callback([] {
        if (g_args.aligned)
          run_aligned(g_args);
        else
          run_photos(g_args);
      });
    },
    30);

}  // namespace
}  // namespace gpen::cli
