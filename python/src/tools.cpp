// plan, info and convert: the same code as `gpen plan --json`, `gpen info --json` and
// `gpen convert`, returning their JSON as text (gpen_engine/__init__.py parses it into a dict).
#include <optional>
#include <string>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "reports/info_report.h"
#include "reports/plan.h"
#include "reports/convert_args.h"
#include "converter/convert.h"
#include "engine/core/error.h"
#include "python/src/bindings.h"

namespace gpen::py {
namespace {

std::string plan_text(std::optional<std::string> model, const std::string& arch, int size, std::vector<int> sizes,
                      int batch, std::vector<int> batches, const std::string& precision,
                      std::vector<std::string> precisions, const std::string& device, std::optional<std::string> strategy,
                      bool pipeline, const std::string& input_size, int channel_multiplier, double narrow,
                      std::optional<std::string> max_batch_for, bool remat, bool reorder, double remat_max_flops,
                      bool tensors, bool official, bool sweep) {
  report::PlanArgs a;
  a.model = model.value_or("");
  a.arch = arch;
  a.size = size;
  a.sizes = std::move(sizes);
  GPEN_CHECK(batch >= 1, "batch must be at least 1");
  a.batch = batch;
  a.batches = std::move(batches);
  a.precision = precision;
  a.precisions = std::move(precisions);
  a.device = device;
  a.strategy = strategy.value_or("");
  a.pipeline = pipeline;
  a.input_size = input_size;
  a.channel_multiplier = channel_multiplier;
  a.narrow = narrow;
  a.max_batch_for = max_batch_for.value_or("");
  a.remat = remat;
  a.reorder = reorder;
  GPEN_CHECK(remat_max_flops >= 0.0 && remat_max_flops <= 100.0, "remat_max_flops must be in [0, 100]");
  a.remat_max_flops = remat_max_flops;
  a.tensors = tensors;
  a.official = official;
  a.sweep = sweep;
  nb::gil_scoped_release unlocked;
  return report::plan_report(a).dump();
}

std::string convert_text(const std::string& in, const std::string& out, const std::string& arch,
                         std::optional<std::string> key, const std::string& dtype, std::optional<std::string> task,
                         const std::string& dense_dtype, const std::string& dense_layers, int64_t group_size) {
  nb::gil_scoped_release unlocked;
  report::ConvertArgs a;
  a.in = in, a.out = out, a.arch = arch, a.key = key.value_or(""), a.dtype = dtype, a.task = task.value_or("");
  a.dense_dtype = dense_dtype, a.dense_layers = dense_layers, a.group_size = group_size;
  const conv::ConvertOptions opt = report::convert_options(a);
  conv::OpenOptions oo;
  oo.key = opt.key;
  auto ck = conv::Checkpoint::open(in, oo);
  conv::ConvertResult r = conv::convert(*ck, out, opt);
  nlohmann::json j = {{"input", in},
                      {"output", out},
                      {"source_format", r.source_format},
                      {"key", r.selected_key},
                      {"arch", conv::arch_name(r.arch)},
                      {"config", r.config},
                      {"tensors", r.tensors},
                      {"parameters", r.parameters},
                      {"bytes", r.bytes},
                      {"storage_dtype", dtype_name(opt.dtype)},
                      {"ignored", r.ignored}};
  return j.dump();
}

}  // namespace

void register_tools(nb::module_& m) {
  m.def("_plan", &plan_text, nb::arg("model") = nb::none(), nb::arg("arch") = "gpen", nb::arg("size") = 512,
        nb::arg("sizes") = std::vector<int>{}, nb::arg("batch") = 1, nb::arg("batches") = std::vector<int>{},
        nb::arg("precision") = "fp32", nb::arg("precisions") = std::vector<std::string>{}, nb::arg("device") = "cpu",
        nb::arg("strategy") = nb::none(), nb::arg("pipeline") = false, nb::arg("input_size") = "1000x750",
        nb::arg("channel_multiplier") = 2, nb::arg("narrow") = 1.0, nb::arg("max_batch_for") = nb::none(),
        nb::arg("remat") = false, nb::arg("reorder") = false, nb::arg("remat_max_flops") = 2.0,
        nb::arg("tensors") = false, nb::arg("official") = false, nb::arg("sweep") = false);
  m.def(
      "_info",
      [](const std::string& path, bool tensors) {
        nb::gil_scoped_release unlocked;
        return report::info_report(path, tensors).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      },
      nb::arg("path"), nb::arg("tensors") = false);
  m.def("_convert", &convert_text, nb::arg("input"), nb::arg("output"), nb::arg("arch") = "auto",
        nb::arg("key") = nb::none(), nb::arg("dtype") = "fp32", nb::arg("task") = nb::none(),
        nb::arg("dense_dtype") = "fp32", nb::arg("dense_layers") = "modulation", nb::arg("group_size") = 0);
  m.def("cuda_compiled_in", &cuda_compiled_in);
}

}  // namespace gpen::py
