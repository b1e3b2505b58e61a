#pragma once
// What the parts of `gpen restore` share: its options, and the helpers both modes use
// (apps/cmd_restore.cpp runs photos, apps/restore_aligned.cpp aligned crops, apps/restore_jobs.cpp
// turns inputs into (input, output) pairs).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/image.h"
#include "engine/models/gpen_model.h"
#include "engine/photo/image.h"
#include "engine/photo/restorer.h"
#include "engine/runtime/device.h"

namespace gpen::cli::restore_detail {

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
  bool trace_start = false;  // --trace-start: print the wall clock at the first forward pass
  std::string save_faces;
  std::string report;
  std::string vram_budget;
  std::string arena_budget;  // banded execution of GPEN (engine/plan/banding.h)
  std::string memory_budget;  // the CPU's low-memory mode (engine/plan/memory_budget.h)
  int bands = 0;
  int batch = 0;
  double alpha = 1.0;
  float threshold = 0.0f;  // 0: the model's flow's own (GPEN 0.9, GFPGAN 0.97, CodeFormer 0.8)
  int upscale = 1;
  bool only_center_face = false;
  float fidelity = 0.5f;
  bool face_upsample = false;  // CodeFormer with --sr: the faces through the background upsampler too
  int det_max_side = -1;
  int jpeg_quality = 95;
  int64_t max_pixels = kMaxImagePixels;
  bool ignore_orientation = false;
  std::string task = "enhance";  // apps/restore_tasks.h
  uint64_t seed = 0;             // FullGenerator_SR noise (engine/models/gpen_noise.h)
  std::string sr_model;         // --sr REALESRNET.gpw: background super-resolution
  std::string sr_tile = "auto";  // --sr-tile
  std::string parse;  // --parse PARSENET.gpw: the face-parsing paste mask
  std::string mask;   // --mask rect|parse; empty: parse when --parse is given, else rect
};

ReadOptions photo_read_options(const RestoreArgs& a);
bool ends_with(const std::string& s, const std::string& suffix);  // case-insensitive
bool is_image_name(const std::string& p);
DeviceOptions device_options(const RestoreArgs& a);
// --arena-budget / --bands / --memory-budget as planner options.
PlanOptions plan_options(const RestoreArgs& a);
// The engine's restore setup (engine/photo/restorer.h) with the choices the flags make.
RestoreConfig restore_config(const RestoreArgs& a);

struct Job {
  std::string input;
  std::string output;
  std::string faces_prefix;  // --save-faces: path under that directory, before "_faceK.png"
};
// Files and directories (recursively, the names `wanted` takes) -> (input, output) pairs, each
// output path as `output_name` makes it from the mirrored one (and whether OUT is a directory);
// refuses outputs that would overwrite an input or that two inputs share, before any work.
using OutputName = std::function<std::string(const std::string& output, bool out_is_dir)>;
std::vector<Job> pair_inputs(const std::vector<std::string>& inputs, const std::string& output,
                             bool (*wanted)(const std::string&), const OutputName& output_name,
                             bool* out_is_dir = nullptr);
// The same for photos (image extensions; a .bmp is written as .png), with the --save-faces prefixes.
std::vector<Job> collect_jobs(const RestoreArgs& a);
// A progress bar on a terminal for more than one photo.
void progress(size_t done, size_t total, const std::string& name);

// --aligned: GPEN on face crops or model-space .npy batches.
void run_aligned(const RestoreArgs& a);

}  // namespace gpen::cli::restore_detail
