#pragma once
// Checkpoint -> .gpw conversion: recognises the model, validates every tensor against the
// official layout, and rewrites the weights into the engine's conventions (equalized-LR scales
// folded in, HWIO conv weights, NHWC constants, demodulation tables, BatchNorm folded). See
// docs/weights-format.md for the exact per-tensor rules.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "converter/checkpoint.h"
#include "converter/layouts.h"
#include "engine/core/dtype.h"
#include "weights/gpw_writer.h"

namespace gpen::conv {

struct ConvertOptions {
  Arch arch = Arch::unknown;  // Arch::unknown: recognise from the key set
  std::string key;            // nested dict to read (see OpenOptions::key)
  DType dtype = DType::f32;   // storage of weight matrices / conv kernels: f32, f16, bf16, i8, f8e4m3 (GPEN)
  // GPEN only: the task the weights were trained for (enhance, colorize, inpaint, seg2face),
  // recorded in the header's config as "task"; the layouts alone never tell it. "": not recorded.
  std::string task;
  // GPEN with an 8-bit dtype only: the dense layers as 8-bit too (i8 / f8e4m3; f32: they stay
  // f32), and the scale group size along the reduction axis (0: one scale per output channel).
  DType dense_dtype = DType::f32;
  int dense_layers = 7;  // which dense layers dense_dtype applies to: 1 modulation, 2 final_linear, 4 style MLP
  int64_t q8_group = 0;
  GpwWriter::Progress progress;
};

struct ConvertResult {
  Arch arch = Arch::unknown;
  nlohmann::json config;
  std::string source_format;             // Checkpoint::format()
  std::string selected_key;              // nested key the state dict came from ("" for top level)
  size_t tensors = 0;                    // tensors written
  int64_t parameters = 0;                // elements written
  uint64_t bytes = 0;                    // size of the .gpw file
  std::vector<std::string> ignored;      // checkpoint tensors the model does not use
};

// Reads `in_path`, converts, writes `out_path` atomically.
ConvertResult convert(const std::string& in_path, const std::string& out_path, const ConvertOptions& opt = {});
ConvertResult convert(const Checkpoint& ck, const std::string& out_path, const ConvertOptions& opt = {});

// Recognises and validates the state dict and declares the converted tensors on a writer; the
// checkpoint is read lazily, tensor by tensor, when writer.write() runs, so `ck` must outlive it.
struct ConversionPlan {
  ConvertResult info;  // bytes is filled in; tensors/parameters describe the planned output
  GpwWriter writer;
};
ConversionPlan plan_conversion(const Checkpoint& ck, const ConvertOptions& opt = {});

// What `gpen info` reports for a checkpoint, without converting it.
struct CheckpointSummary {
  Arch arch = Arch::unknown;
  nlohmann::json config;        // null when not recognised
  bool valid = false;           // recognised and matches the official layout
  std::string problem;          // why not, when !valid
  size_t tensors = 0;           // all tensors of the state dict
  int64_t parameters = 0;       // floating-point elements (integer counters excluded)
  uint64_t bytes = 0;           // tensor bytes as stored in the checkpoint
  std::vector<std::string> ignored;
};
CheckpointSummary summarize(const Checkpoint& ck, Arch want = Arch::unknown);

// The engine-convention name of the demodulation table of a modulated conv `<prefix>.conv.weight`.
std::string demod_q_name(const std::string& prefix);

}  // namespace gpen::conv
