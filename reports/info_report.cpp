// The report of `gpen info`: format, architecture, configuration, sizes, and the tensors.
#include "reports/info_report.h"

#include "converter/convert.h"
#include "engine/core/error.h"
#include "weights/gpw.h"

namespace gpen::report {

namespace {

// GPEN, GFPGAN, CodeFormer and RestoreFormer files: which official class they build and, for GPEN when the file records it,
// the task. The official task models (colorization, inpainting, seg2face) share the FullGenerator
// layout with GPEN-BFR-*, so the shapes alone never tell the task.
void add_gpen_model(nlohmann::json& out, const std::string& arch, const nlohmann::json& config) {
  if (arch == "gfpgan" && !config.is_null()) {
    try {
      out["model"] = conv::gfpgan_model_name(conv::GfpganConfig::from_json(config));
    } catch (const Error&) {
    }
    return;
  }
  if (arch == "codeformer" && !config.is_null()) {
    try {
      out["model"] = conv::codeformer_model_name(conv::CodeformerConfig::from_json(config));
    } catch (const Error&) {
    }
    return;
  }
  if (arch == "restoreformer" && !config.is_null()) {
    try {
      out["model"] = conv::restoreformer_model_name(conv::RestoreformerConfig::from_json(config));
    } catch (const Error&) {
    }
    return;
  }
  if (arch != "gpen" || config.is_null()) return;
  try {
    out["model"] = conv::gpen_model_name(conv::GpenConfig::from_json(config));
  } catch (const Error&) {
    return;  // a damaged header is reported by whoever opens the model
  }
  if (config.contains("task")) out["task"] = config["task"];
}

}  // namespace

nlohmann::json info_report(const std::string& path, bool tensors) {
  using nlohmann::json;
  json out;
  json list = json::array();
  if (GpwFile::has_magic(path)) {
    GpwFile f = GpwFile::open(path);
    out["format"] = "gpw";
    out["arch"] = f.arch();
    out["config"] = f.config();
    add_gpen_model(out, f.arch(), f.config());
    out["storage_dtype"] = dtype_name(f.storage_dtype());
    out["tensors"] = f.size();
    out["parameters"] = f.parameter_count();
    out["bytes"] = f.tensor_bytes();
    out["file_bytes"] = f.file_bytes();
    if (f.header().contains("source")) out["source"] = f.header()["source"];
    for (const auto& e : f.tensors())
      list.push_back({{"name", e.name}, {"dtype", dtype_name(e.view.dtype)}, {"shape", e.view.shape.str()}});
  } else {
    auto ck = conv::Checkpoint::open(path);
    auto s = conv::summarize(*ck);
    out["format"] = ck->format();
    if (!ck->selected_key().empty()) out["key"] = ck->selected_key();
    out["arch"] = conv::arch_name(s.arch);
    out["config"] = s.config;
    add_gpen_model(out, conv::arch_name(s.arch), s.config);
    out["valid"] = s.valid;
    if (!s.valid) out["problem"] = s.problem;
    out["tensors"] = s.tensors;
    out["parameters"] = s.parameters;
    out["bytes"] = s.bytes;
    if (!s.ignored.empty()) out["ignored"] = s.ignored.size();
    for (const auto& t : ck->tensors())
      list.push_back({{"name", t.name}, {"dtype", conv::src_dtype_name(t.dtype)}, {"shape", t.shape_str()}});
  }
  if (tensors) out["tensor_list"] = list;
  return out;
}

}  // namespace gpen::report
