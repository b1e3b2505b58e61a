// gpen info FILE: what a .gpw, .pth or .safetensors file holds.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "reports/info_report.h"

namespace {

struct InfoArgs {
  std::string path;
  bool json = false;
  bool list = false;
};

void run_info(const InfoArgs& a) {
  using nlohmann::json;
  json out = gpen::report::info_report(a.path, a.list);
  if (a.json) {
    std::printf("%s\n", out.dump(2, ' ', false, json::error_handler_t::replace).c_str());
    return;
  }
  json list = out.contains("tensor_list") ? out["tensor_list"] : json::array();
  out.erase("tensor_list");
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
