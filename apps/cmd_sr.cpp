// gpen sr: background super-resolution of photos on their own (RealESRNet.process, tiled from the
// memory plan). Inputs, outputs, EXIF/ICC and robustness as `gpen restore` (its job code): every
// output written atomically, never over an input; a bad file in a folder is reported and skipped.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "engine/core/bytes.h"
#include "apps/image_options.h"
#include "apps/restore_common.h"
#include "engine/core/rss.h"
#include "apps/sr_common.h"
#include "reports/svg.h"
#include "engine/core/stopwatch.h"
#include "engine/photo/image.h"
#include "engine/photo/restore_plan.h"
#include "engine/runtime/device.h"

namespace fs = std::filesystem;

namespace gpen::cli {
namespace {

using namespace restore_detail;

struct SrArgs {
  RestoreArgs io;  // inputs, output, device, precision, report, jpeg quality, read options
  std::string tile = "auto";
  bool official_crop = false;
};

SrArgs g_sr;

void run_sr(const SrArgs& a) {
  std::vector<Job> jobs = collect_jobs(a.io);
  GPEN_CHECK(!jobs.empty(), "no images found in the inputs (extensions .jpg, .jpeg, .png, .webp, .bmp)");
  auto backend = make_backend(device_options(a.io));
  auto model = open_sr_model(a.io.model, *backend, a.io.precision);
  SrSettings st;
  st.tile = a.tile;
  st.budget = a.io.vram_budget.empty() ? default_memory_budget(*backend, model->weights_bytes())
                                        : parse_bytes(a.io.vram_budget);
  std::fprintf(stderr, "%s on %s (%s), memory budget %s\n", model->config().describe().c_str(), backend->name(),
               precision_name(model->precision()), human_bytes(double(st.budget)).c_str());
  nlohmann::json images = nlohmann::json::array();
  int failed = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& job = jobs[i];
    progress(i, jobs.size(), job.input);
    nlohmann::json rep = {{"image", job.input}, {"output", job.output}};
    try {
      const auto t0 = std::chrono::steady_clock::now();
      ImageMeta meta;
      Image photo = read_image(job.input, photo_read_options(a.io), &meta);
      std::string why;
      SrOptions opt;
      opt.tile = resolve_sr_tile(st, *model, photo.width, photo.height, &why);
      opt.official = a.official_crop;
      opt.progress = sr_progress(job.input);
      SrReport r;
      Image out = super_resolve(*model, photo, opt, &r);
      fs::create_directories(fs::absolute(job.output).parent_path());
      write_image(job.output, out, a.io.jpeg_quality, &meta);
      rep["sr"] = sr_report_json(r, why, *model);
      rep["ms"] = ms_since(t0);
      if (jobs.size() == 1 || !isatty(fileno(stderr))) {
        std::fprintf(stderr, "%s: %dx%d -> %dx%d %s (%s; %.1f GFLOP in %.2f s, %.1f GFLOP/s)\n", job.input.c_str(),
                     photo.width, photo.height, out.width, out.height, job.output.c_str(), why.c_str(), r.flops * 1e-9,
                     r.seconds, r.seconds > 0 ? r.flops * 1e-9 / r.seconds : 0.0);
        for (const auto& c : r.corrections) std::fprintf(stderr, "  differs from the official code: %s\n", c.c_str());
      }
    } catch (const std::exception& e) {
      ++failed;
      rep["error"] = e.what();
      std::fprintf(stderr, "%sgpen: error: %s\n", isatty(fileno(stderr)) ? "\n" : "", e.what());
    }
    images.push_back(rep);
  }
  progress(jobs.size(), jobs.size(), "");
  if (!a.io.report.empty()) {
    nlohmann::json report = {{"images", images},
                             {"totals", {{"images", jobs.size()}, {"failed", failed}}},
                             {"memory",
                              {{"device", backend->name()},
                               {"precision", precision_name(model->precision())},
                               {"budget_bytes", st.budget},
                               {"weights_bytes", model->weights_bytes()},
                               {"arena_bytes", model->arena_bytes()},
                               {"workspace_bytes", model->workspace_bytes()},
                               {"peak_rss_mib", peak_rss_mib()}}}};
    report::write_text_file(a.io.report, report.dump(2) + "\n");
  }
  GPEN_CHECK(failed == 0, std::to_string(failed) + " of " + std::to_string(jobs.size()) +
                              " photos could not be super-resolved (see the messages above)");
}

Command reg(
    "sr", "Super-resolve photos with RealESRNet (x1/x2/x4), tiled from the memory plan",
    [](CLI::App& sub) {
      RestoreArgs& io = g_sr.io;
      sub.add_option("-s,--sr-model", io.model, "Converted RealESRNet model (.gpw, from realesrnet_x1/x2/x4.pth)")
          ->required()
          ->check(CLI::ExistingFile);
      sub.add_option("inputs", io.inputs, "Photos or directories (recursive; .jpg .jpeg .png .webp .bmp)")->required();
      sub.add_option("-o,--output", io.output, "Output file (one input) or directory")->required();
      sub.add_option("--sr-tile", g_sr.tile,
                     "auto: untiled when the whole photo's plan fits the memory budget, else the largest tile that "
                     "fits; N: the official tile_process with tile N (tile_pad 10); 0: untiled")
          ->capture_default_str();
      sub.add_option("--memory-budget,--vram-budget", io.vram_budget,
                     "Memory for RealESRNet (weights + arena + workspace), e.g. 2GiB (default: half the free RAM on "
                     "CPU, 80% of the free GPU memory on CUDA)");
      sub.add_flag("--official-crop", g_sr.official_crop,
                   "Reproduce the official results where they are wrong: the x2 crop of 2H+1 rows for an odd H, and "
                   "failing tile cuts (error instead of widening them); for comparisons");
      sub.add_option("--device", io.device, "cpu, cuda or auto (CUDA when a GPU is present)")->capture_default_str();
      sub.add_option("--precision", io.precision, "fp32, fp16 or bf16 (default: fp32 on the CPU, fp16 on CUDA)");
      sub.add_flag("--no-cuda-graphs", io.no_cuda_graphs, "CUDA: launch every kernel each run");
      sub.add_option("--jpeg-quality", io.jpeg_quality,
                     "JPEG quality of .jpg outputs; outputs keep the input's EXIF (orientation 1) and ICC profile")
          ->capture_default_str()
          ->check(CLI::Range(1, 100));
      add_image_read_options(sub, io.max_pixels, io.ignore_orientation);
      sub.add_option("--report", io.report, "Write a JSON report: tile chosen and why, time, GFLOP, memory");
      sub.callback([] { run_sr(g_sr); });
    },
    32);

}  // namespace
}  // namespace gpen::cli
