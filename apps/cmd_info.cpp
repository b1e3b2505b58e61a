// gpen info FILE: what a .gpw, .pth or .safetensors file holds.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "converter/convert.h"
#include "engine/core/error.h"
#include "weights/gpw.h"

namespace {

struct InfoArgs {
  std::string path;
  bool json = false;
  bool list = false;
};

std::string shape_text(const gpen::Shape& s) { return s.str(); }

void run_info(const InfoArgs& a) {
  using nlohmann::json;
  json out;
  json list = json::array();
  if (gpen::GpwFile::has_magic(a.path)) {
    gpen::GpwFile f = gpen::GpwFile::open(a.path);
    out["format"] = "gpw";
    out["arch"] = f.arch();
    out["config"] = f.config();
    out["storage_dtype"] = gpen::dtype_name(f.storage_dtype());
    out["tensors"] = f.size();
    out["parameters"] = f.parameter_count();
    out["bytes"] = f.tensor_bytes();
    out["file_bytes"] = f.file_bytes();
    if (f.header().contains("source")) out["source"] = f.header()["source"];
    for (const auto& e : f.tensors())
      list.push_back({{"name", e.name}, {"dtype", gpen::dtype_name(e.view.dtype)}, {"shape", shape_text(e.view.shape)}});
  } else {
    auto ck = gpen::conv::Checkpoint::open(a.path);
    auto s = gpen::conv::summarize(*ck);
    out["format"] = ck->format();
    if (!ck->selected_key().empty()) out["key"] = ck->selected_key();
    out["arch"] = gpen::conv::arch_name(s.arch);
    out["config"] = s.config;
    out["valid"] = s.valid;
    if (!s.valid) out["problem"] = s.problem;
    out["tensors"] = s.tensors;
    out["parameters"] = s.parameters;
    out["bytes"] = s.bytes;
    if (!s.ignored.empty()) out["ignored"] = s.ignored.size();
    for (const auto& t : ck->tensors())
      list.push_back({{"name", t.name}, {"dtype", gpen::conv::src_dtype_name(t.dtype)}, {"shape", t.shape_str()}});
  }
  if (a.json) {
    if (a.list) out["tensor_list"] = list;
    std::printf("%s\n", out.dump(2, ' ', false, json::error_handler_t::replace).c_str());
    return;
  }
  std::printf("%s\n", a.path.c_str());
  for (auto& [k, v] : out.items()) {
    std::string val = v.is_string() ? v.get<std::string>() : v.dump(-1, ' ', false, json::error_handler_t::replace);
    std::printf("  %-14s %s\n", k.c_str(), val.c_str());
  }
  if (a.list)
    for (const auto& t : list)
      std::printf("  %-56s %-9s %s\n", t["name"].get<std::string>().c_str(), t["dtype"].get<std::string>().c_str(),
                  t["shape"].get<std::string>().c_str());
}

gpen::cli::Command reg(
    "info", "Describe a .gpw, .pth or .safetensors file (architecture, configuration, sizes)",
    [](CLI::App& sub) {
      auto a = std::make_shared<InfoArgs>();
      sub.add_option("file", a->path, "A .gpw, .pth or .safetensors file")->required();
      sub.add_flag("--json", a->json, "Print JSON");
      sub.add_flag("--tensors", a->list, "Also list every tensor");
      sub.callback([a] { run_info(*a); });
    },
    21);

}  // namespace
