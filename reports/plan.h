#pragma once
// `gpen plan` and the Python package's plan() (apps/cmd_plan.cpp, python/src/tools.cpp; the
// reports themselves in reports/plan_*.cpp): the options, the plan of one graph
// with the asked-for transforms, the figures every report shares (reports/plan_report.cpp), the GPEN
// planner (reports/plan_gpen.cpp) and the RetinaFace and pipeline plans (reports/plan_detector.cpp).
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "engine/models/gpen.h"
#include "engine/models/gpen_model.h"
#include "engine/plan/memory_plan.h"
#include "engine/runtime/backend.h"

namespace gpen::report {

struct PlanArgs {
  std::string arch = "gpen";
  std::string model;
  std::string detector;  // -d: with -m and --memory-budget, a photo of --input-size in the low-memory mode
  int size = 512;
  int out_size = 0;  // FullGenerator_SR decoder resolution (0: = size)
  std::vector<int> sizes;
  bool sweep = false;
  int channel_multiplier = 2;
  double narrow = 1.0;
  int batch = 1;
  std::vector<int> batches;
  std::string precision = "fp32";
  std::vector<std::string> precisions;
  std::string weights_dtype;  // "int8" / "fp8": 8-bit conv weights (GpenConfig::quant8); "" as the model file says
  std::string dense_dtype;    // with weights_dtype: "int8" / "fp8" dense layers too (GpenConfig::dense8)
  std::string dense_layers = "modulation";  // which ones (GpenConfig::dense8_layers)
  int group_size = -1;        // with weights_dtype: GpenConfig::q8_group; -1 as the model file says (else 0)
  std::string strategy;
  bool json = false;
  bool csv = false;
  bool official = false;
  bool tensors = false;
  std::string max_batch_for;
  std::string plot;
  std::string plot_lifetimes;
  std::string input_size = "1000x750";
  bool remat = false;
  bool reorder = false;
  double remat_max_flops = 2.0;  // percent of the model's FLOPs
  bool pipeline = false;
  bool parse = false;  // --pipeline: ParseNet (the face-parsing paste mask) at 512 in the arena too
  std::string arena_budget;  // banded execution under this arena (e.g. 24MiB)
  int bands = 0;             // banded execution with exactly this many bands
  std::string plot_bands;    // SVG: arena against band height per released size
  std::string device = "cpu";
  // RealESRNet (--arch realesrnet; --pipeline with --sr-scale): reports/plan_sr.cpp.
  int scale = 2;
  int num_block = 23;
  std::string sr_tile = "0";   // --tile: auto, 0 (untiled) or a tile size
  std::string sr_budget;       // --memory-budget: RealESRNet's --tile auto; GPEN's low-memory mode
  int sr_scale = 0;            // --pipeline: add RealESRNet at this scale (0: none)
  bool roofline = false;  // --roofline: the CUDA roofline estimate (reports/plan_roofline.cpp)
  // Where the JSON goes when set (the Python binding), instead of stdout.
  nlohmann::json* json_out = nullptr;
};

// The backend whose workspace figures a plan uses.
struct PlanDevice {
  std::string name;
  WorkspaceFn ws;
};

// Only the workspace function of a backend is used, so no device is opened (and none is needed).
PlanDevice plan_device(const std::string& device);
PlanOptions plan_options(const PlanArgs& a, const std::string& strategy);

// A plan of one graph, with the graph transforms of --remat / --reorder: `before` plans the
// builder's graph, `plan` the transformed one (the same when no transform was asked for).
struct Planned {
  MemoryPlan plan, before;
  bool transformed = false;
  TransformReport xf;
  size_t arena_budget = 0;  // --arena-budget (0: none)
};
Planned plan_with_transforms(Graph& g, const WorkspaceFn& ws, const PlanOptions& o);
nlohmann::json transform_json(const Planned& p);
void print_transform(const Planned& p);
std::pair<int, int> parse_input_size(const std::string& s);
// Banded execution in the reports (reports/plan_band.cpp): the `bands` object of the JSON, the text
// lines, and the --plot-bands chart.
nlohmann::json bands_json(const Planned& p, size_t budget);
void print_bands(const Planned& p, size_t budget);
void write_band_plot(const PlanArgs& a, const PlanDevice& dev);
double ratio(const MemoryPlan& p);

// The figures every plan report has (GPEN and RetinaFace), as JSON fields and as text lines.
nlohmann::json plan_json(const MemoryPlan& p);
// `backend`: named after the workspace figure when not null.
void print_plan(const MemoryPlan& p, const char* backend);
// One entry of the --strategy all comparison.
nlohmann::json strategy_json(const MemoryPlan& q);
void print_strategy(const MemoryPlan& q);
// The report of a model planned alone (RetinaFace, ParseNet): plans `g` with the asked-for
// transforms and, with --strategy all, under every strategy; the JSON is plan_json's fields, then
// `fields` (the model's own: arch, sizes, precision), then the graph's op and tensor counts; the
// text starts with `title`.
void report_single_plan(const PlanArgs& a, const PlanDevice& dev, Graph& g, const nlohmann::json& fields,
                        const std::string& title);
// The activation dtypes a report plans: --precisions, else --precision (fp32, fp16 or bf16; a
// plan is bytes, so every device plans every precision, as GPEN's table does).
std::vector<DType> plan_precisions(const PlanArgs& a);
// --batches (else --batch) and --precisions (else --precision) for such a model: `graph(batch,
// precision)` planned per pair (with the asked-for transforms), one row each (weights, arena,
// lower bound, workspace, total); JSON: `fields`, "precisions" ("precision" too when there is
// one) and "batches", an array of plan_json's objects with their batch and precision.
void report_batch_sweep(const PlanArgs& a, const PlanDevice& dev, const std::function<Graph(int, DType)>& graph,
                        const nlohmann::json& fields, const std::string& title);

struct Row {
  std::string model;
  GpenConfig cfg;
  std::string precision;
  MemoryPlan plan;
  size_t ops = 0, tensors = 0;
  Planned detail;  // before / after the graph transforms
};

class Planner {
 public:
  Planner(const PlanArgs& a, PlanDevice dev) : dev_(std::move(dev)), args_(a) {}
  Row plan(const std::string& name, GpenConfig c, const std::string& prec, const std::string& strategy) {
    c.act_dtype = c.weight_dtype = parse_dtype(prec);
    GpenGraph gg = build_gpen_graph(c);
    Planned pd = plan_with_transforms(gg.graph, dev_.ws, plan_options(args_, strategy));
    Row r{name, c, prec, pd.plan, gg.graph.nodes().size(), gg.graph.tensors().size(), pd};
    last_graph_ = std::move(gg);
    return r;
  }
  const Graph& last_graph() const { return last_graph_.graph; }
  const char* device() const { return dev_.name.c_str(); }

 private:
  PlanDevice dev_;
  PlanArgs args_;
  GpenGraph last_graph_;
};

// The GPEN configuration asked for: from the converted model (-m), or --size and the width options;
// batch from --batch.
struct GpenBase {
  std::string name = "gpen";
  GpenConfig cfg;
};
GpenBase gpen_base(const PlanArgs& a);
// --weights-dtype, --dense-dtype / --dense-layers and --group-size of `gpen plan` and `gpen bench`
// onto c (quant8 already set from an 8-bit -m file, if any); "" / -1 leave c as it is.
void apply_weights8_args(GpenConfig& c, const std::string& weights_dtype, const std::string& dense_dtype,
                         const std::string& dense_layers, int group_size);

// RetinaFace plans: one input size (WxH), the detector's graph, same report fields as GPEN.
void run_retinaface_plan(const PlanArgs& a, const PlanDevice& dev);
// The restore pipeline: the detector runs, then the generator, never both at once, so one arena
// (and one workspace) of the larger size serves both.
void run_pipeline_plan(const PlanArgs& a, const PlanDevice& dev);
// RealESRNet on a photo of --input-size (reports/plan_sr.cpp).
void run_realesrnet_plan(const PlanArgs& a, const PlanDevice& dev);
// --pipeline --sr-scale S: RealESRNet's plan on the --input-size photo as a MemoryPlan (arena and
// workspace of its largest cut), and its JSON entry.
MemoryPlan realesrnet_pipeline_part(const PlanArgs& a, const PlanDevice& dev, nlohmann::json* j);
// ParseNet plans (reports/plan_parsenet.cpp): --input-size S or WxH (multiples of 16; 512 when the
// option keeps the detector's default), fp32, same report fields, plus GFLOP per run.
void run_parsenet_plan(const PlanArgs& a, const PlanDevice& dev);
// The ParseNet graph of the face-parsing paste mask (512 x 512, batch 1) planned for `dev`.
Planned plan_parsenet_for_pipeline(const PlanArgs& a, const PlanDevice& dev, double* flops);
// GPEN in the CPU's low-memory mode within --memory-budget (reports/plan_low_memory.cpp).
void run_gpen_memory_budget_plan(const PlanArgs& a);
// The same with -d: the whole photo flow on a photo of --input-size, planned as `gpen restore
// --memory-budget` plans it (reports/plan_low_memory_photo.cpp).
void run_photo_memory_budget_plan(const PlanArgs& a);
// GFPGANv1Clean plans (reports/plan_gfpgan.cpp): --size, --channel-multiplier, --narrow or -m,
// fp32, fp16 or bf16 (--precision / --precisions).
void run_gfpgan_plan(const PlanArgs& a, const PlanDevice& dev);
// CodeFormer plans (reports/plan_codeformer.cpp): the released configuration or -m, 512, fp32,
// fp16 or bf16.
void run_codeformer_plan(const PlanArgs& a, const PlanDevice& dev);
// RestoreFormer++ plans (reports/plan_restoreformer.cpp): the released configuration or -m, 512,
// fp32, fp16 or bf16.
void run_restoreformer_plan(const PlanArgs& a, const PlanDevice& dev);
// The roofline estimate of a graph on the CUDA backend at H200 figures (reports/plan_roofline.cpp):
// per node FLOPs, bytes moved by the kernel's tiling, intensity, bound; printed when `print`.
nlohmann::json roofline_report(const Graph& g, const WorkspaceFn& ws, bool print);
// Runs the plan the options ask for: the pipeline, RetinaFace, or GPEN (one report or a table).
void run_plan(PlanArgs a);
// A --json report: to a.json_out when set, else to stdout as `gpen plan --json` prints it.
void emit_json(const PlanArgs& a, const nlohmann::json& j);
// The JSON that `gpen plan --json` with these options prints (the Python package's plan()).
nlohmann::json plan_report(PlanArgs a);

}  // namespace gpen::report
