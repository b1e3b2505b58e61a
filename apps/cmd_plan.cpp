// gpen plan: the memory plan of a model for concrete (size, batch, precision) choices, from the
// architecture alone (no weights are read), as one report, a sweep table, CSV, JSON or a chart.
// The workspace column is that of the backend named by --device; planning for CUDA needs CUDA
// compiled in but no GPU (only the backend's host-side workspace arithmetic runs).
// The parts: reports/plan.h.
#include "apps/cli.h"
#include "reports/plan.h"

namespace gpen::cli {
namespace {

using namespace report;

PlanArgs g_args;

Command reg(
    "plan", "Memory plan of a model (weights, arena, workspace, lower bound) without running it",
    [](CLI::App& sub) {
      sub.add_option("--arch", g_args.arch, "Architecture: gpen, retinaface-r50, retinaface-mnet, realesrnet, parsenet, gfpgan, codeformer (512 only, fuse blocks in at w 0.5), restoreformer (RestoreFormer++, 512 only)")->capture_default_str();
      sub.add_option("--input-size", g_args.input_size, "RetinaFace / RealESRNet input WIDTHxHEIGHT; ParseNet input S or WIDTHxHEIGHT (default 512)")->capture_default_str();
      sub.add_option("--scale", g_args.scale, "RealESRNet scale: 1, 2 or 4")->capture_default_str();
      sub.add_option("--num-block", g_args.num_block, "RealESRNet RRDB blocks (official 23)")->capture_default_str();
      sub.add_option("--tile", g_args.sr_tile,
                     "RealESRNet tile: 0 (untiled), N, or auto (untiled when the plan fits --memory-budget, else "
                     "the largest tile that fits)")
          ->capture_default_str();
      sub.add_option("--memory-budget", g_args.sr_budget,
                     "Weights + arena + workspace, e.g. 2GiB: RealESRNet's --tile auto; GPEN: the CPU's low-memory "
                     "mode planned into it (weights resident at most, the banded arena, the per-tile workspace); "
                     "with -d, a whole photo of --input-size as `gpen restore --memory-budget` plans it");
      sub.add_option("-d,--detector", g_args.detector,
                     "With -m and --memory-budget: the RetinaFace .gpw of the photo flow (a photo of --input-size "
                     "planned in the low-memory mode)")
          ->check(CLI::ExistingFile);
      sub.add_option("--sr-scale", g_args.sr_scale,
                     "With --pipeline: add RealESRNet at this scale on the --input-size photo (its tile from --tile)");
      sub.add_option("-m,--model", g_args.model, "Take the configuration from a converted model (.gpw)")
          ->check(CLI::ExistingFile);
      sub.add_option("--size", g_args.size, "GPEN resolution (power of two, 16..2048); GFPGAN's (8..1024)")->capture_default_str();
      sub.add_option("--out-size", g_args.out_size,
                     "FullGenerator_SR: decoder (output) resolution above --size, e.g. --size 512 --out-size 1024 "
                     "(default: the same as --size)");
      sub.add_option("--sizes", g_args.sizes, "Several resolutions (sweep table)")->delimiter(',');
      sub.add_flag("--sweep", g_args.sweep, "All resolutions 16..2048");
      sub.add_option("--channel-multiplier", g_args.channel_multiplier, "GPEN channel multiplier")->capture_default_str();
      sub.add_option("--narrow", g_args.narrow, "GPEN narrow factor")->capture_default_str();
      sub.add_option("--batch", g_args.batch, "Faces per run")->capture_default_str()->check(CLI::PositiveNumber);
      sub.add_option("--batches", g_args.batches, "Several batch sizes (sweep table)")->delimiter(',');
      sub.add_option("--device", g_args.device,
                     "Backend whose workspace the plan counts: cpu or cuda (cuda needs CUDA compiled in, not a GPU)")
          ->capture_default_str();
      sub.add_flag("--roofline", g_args.roofline,
                   "With --device cuda: per node FLOPs, bytes moved by the kernel's tiling, FLOP/byte and the "
                   "time bound at H200 figures (GEMM family from GPEN_CUDA_GEMM), summed per model");
      sub.add_option("--precision", g_args.precision, "Activation and weight precision: fp32, fp16, bf16")
          ->capture_default_str();
      sub.add_option("--precisions", g_args.precisions, "Several precisions (sweep table; --arch gfpgan, codeformer, restoreformer: one row per batch and precision)")->delimiter(',');
      sub.add_option("--weights-dtype", g_args.weights_dtype,
                     "GPEN conv weights as 8-bit codes: int8 or fp8 (default: as the -m file stores them, else "
                     "the precision)")
          ->check(CLI::IsMember({"int8", "fp8", "fp32"}));
      sub.add_option("--dense-dtype", g_args.dense_dtype,
                     "With --weights-dtype int8|fp8: the dense layers as 8-bit codes too (int8, fp8; fp32: float)")
          ->check(CLI::IsMember({"int8", "fp8", "fp32"}));
      sub.add_option("--dense-layers", g_args.dense_layers,
                     "With --dense-dtype: modulation, final_linear, style, all or a list (as gpen convert)")
          ->capture_default_str();
      sub.add_option("--group-size", g_args.group_size,
                     "With --weights-dtype int8|fp8: scales per group of about N reduction rows (0: per channel)")
          ->check(CLI::NonNegativeNumber);
      sub.add_option("--strategy", g_args.strategy, "Planner strategy, or 'all' to compare them (default: the best)");
      sub.add_flag("--json", g_args.json, "Print JSON");
      sub.add_flag("--csv", g_args.csv, "Print CSV (one row per configuration and strategy)");
      sub.add_flag("--tensors", g_args.tensors, "With --json: list every arena tensor with its offset");
      sub.add_flag("--official", g_args.official,
                   "Table of the released GPEN-BFR-256/512/1024 at batch 1, 4, 8 in fp32 and fp16");
      sub.add_option("--max-batch-for", g_args.max_batch_for,
                     "Largest batch whose total (weights + arena + workspace) fits this much memory, e.g. 8GiB");
      sub.add_flag("--remat", g_args.remat,
                   "Rematerialize: recompute cheap tensors instead of keeping them alive across a long gap");
      sub.add_flag("--reorder", g_args.reorder, "Look for an execution order with a lower liveness peak");
      sub.add_option("--remat-max-flops", g_args.remat_max_flops,
                     "Recomputation allowed by --remat, in percent of the model's FLOPs")
          ->capture_default_str()
          ->check(CLI::Range(0.0, 100.0));
      sub.add_option("--arena-budget", g_args.arena_budget,
                     "Banded execution: the banding with the fewest extra FLOPs whose arena fits this, e.g. 24MiB "
                     "(says so when none does)");
      sub.add_option("--bands", g_args.bands, "Banded execution with exactly this many bands of output rows")
          ->check(CLI::Range(1, 2048));
      sub.add_option("--plot-bands", g_args.plot_bands,
                     "Write an SVG chart of the arena against the band height for GPEN-256/512/1024/2048 "
                     "(batch and precision from --batch, --precision)");
      sub.add_flag("--pipeline", g_args.pipeline,
                   "Plan the restore pipeline: the detector (--arch retinaface-r50|retinaface-mnet, --input-size) "
                   "and GPEN (--size or -m, --batch, --precision) sharing one arena");
      sub.add_flag("--parse", g_args.parse,
                   "With --pipeline: ParseNet at 512 (the face-parsing paste mask of restore --parse) in the same arena");
      sub.add_option("--plot", g_args.plot, "Write an SVG chart of arena versus resolution per strategy");
      sub.add_option("--plot-lifetimes", g_args.plot_lifetimes,
                     "Write an SVG chart of the plan's tensor lifetimes and offsets");
      sub.callback([] { run_plan(g_args); });
    },
    10);

}  // namespace
}  // namespace gpen::cli
