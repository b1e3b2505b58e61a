// gpen restore --aligned: GPEN on face crops that are already aligned (images of any size, or
// .npy batches already in model space). Every input is read and checked before anything runs,
// and every output is written atomically, so a bad input leaves no partial output behind.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "apps/cli.h"
#include "engine/face_io.h"
#include "engine/image.h"
#include "engine/models/gpen_model.h"
#include "engine/npy.h"
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
  std::string device = "cpu";
  std::string save_raw;
  int batch = 0;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  return std::equal(suffix.rbegin(), suffix.rend(), s.rbegin(),
                    [](char a, char b) { return std::tolower(a) == std::tolower(b); });
}

struct Face {
  std::string source;  // input path
  std::string stem;    // output name without extension
  std::vector<float> x;  // S * S * 3, NHWC model space
};

// Reads one input into one or more faces in model space.
void load_input(const std::string& path, int S, std::vector<Face>& faces) {
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
      Face f{path, a.shape[0] == 1 ? stem : stem + "_" + std::to_string(n), std::vector<float>(plane * 3)};
      for (size_t i = 0; i < plane; ++i)
        for (int c = 0; c < 3; ++c) f.x[i * 3 + c] = d[(n * 3 + c) * plane + i];
      faces.push_back(std::move(f));
    }
    return;
  }
  Image img = read_image(path);
  Face f{path, stem, std::vector<float>(static_cast<size_t>(S) * S * 3)};
  face_to_model(img, S, f.x.data());
  faces.push_back(std::move(f));
}

void run_aligned(const RestoreArgs& a) {
  GPEN_CHECK(a.device == "cpu" || a.device == "auto",
             "--device " + a.device + ": only the CPU backend runs GPEN in this build (see docs/status.md)");
  GPEN_CHECK(!a.inputs.empty(), "no input given");
  auto backend = make_cpu_backend();
  auto model = GpenModel::open(a.model, *backend);
  const int S = model->size();

  std::vector<Face> faces;
  for (const auto& in : a.inputs) load_input(in, S, faces);
  const bool to_dir = faces.size() > 1 || fs::is_directory(a.output) || a.output.back() == '/';
  std::vector<std::string> out_paths;
  for (const Face& f : faces) {
    std::string p = to_dir ? (fs::path(a.output) / (f.stem + ".png")).string() : a.output;
    GPEN_CHECK(to_dir || ends_with(p, ".png") || ends_with(p, ".jpg") || ends_with(p, ".jpeg"),
               p + ": the output must end in .png, .jpg or .jpeg (or be a directory)");
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
    std::fill(in.begin(), in.end(), 0.0f);
    for (int i = 0; i < n; ++i) std::copy(faces[start + i].x.begin(), faces[start + i].x.end(), in.begin() + i * face_floats);
    auto t0 = std::chrono::steady_clock::now();
    model->run(in.data(), out.data());
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    for (int i = 0; i < n; ++i) {
      const float* y = out.data() + i * face_floats;
      write_image(out_paths[start + i], model_to_face(y, S));
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

RestoreArgs g_args;

Command reg(
    "restore", "Restore faces with GPEN (--aligned: inputs are aligned face crops or model-space .npy)",
    [](CLI::App& sub) {
      sub.add_option("-m,--model", g_args.model, "Converted GPEN model (.gpw)")->required()->check(CLI::ExistingFile);
      sub.add_option("inputs", g_args.inputs, "Input images (any size) or .npy float32 N x 3 x S x S in [-1, 1]")
          ->required();
      sub.add_option("-o,--output", g_args.output, "Output file (one face) or directory")->required();
      sub.add_flag("--aligned", g_args.aligned, "Inputs are aligned face crops (no detection)");
      sub.add_option("--device", g_args.device, "cpu or auto")->capture_default_str();
      sub.add_option("--save-raw", g_args.save_raw, "Also write the raw generator output (float32 NCHW .npy)");
      sub.add_option("--batch", g_args.batch, "Faces per generator run (default: up to 8)");
      sub.callback([] {
        GPEN_CHECK(g_args.aligned, "restore without --aligned needs the detector pipeline, which is not built yet "
                                   "(see docs/status.md); pass --aligned for face crops");
        run_aligned(g_args);
      });
    },
    30);

}  // namespace
}  // namespace gpen::cli
