// gpen restore: GPEN, GFPGAN, CodeFormer or RestoreFormer on photos (detect, align, restore, paste
// back; the model file's kind picks the flow, engine/photo/face_flow.h) or, with --aligned, on face crops that are
// already aligned (images of any size; with GPEN also .npy batches in model space).
// Inputs are checked before work starts where that is cheap; every output is written atomically
// and never over an input; in a folder run a bad file is reported and skipped, and the exit
// status says that something failed.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include "apps/cli.h"
#include "apps/image_options.h"
#include "apps/restore_common.h"
#include "apps/restore_tasks.h"
#include "engine/core/rss.h"
#include "reports/svg.h"
#include "apps/sr_common.h"
#include "engine/core/bytes.h"
#include "engine/core/stopwatch.h"
#include "engine/photo/image.h"
#include "engine/photo/restorer.h"
#include "engine/photo/facexlib_flow.h"

namespace fs = std::filesystem;

namespace gpen::cli {
namespace {

using namespace restore_detail;

// What the setup decided, in words.
void print_plan(Restorer& r) {
  const RestorePlan& p = r.plan();
  if (p.low_memory) {
    std::fprintf(stderr, "GPEN %dx%d on %s (%s), low-memory mode within %s, %d face(s) per run; planned per photo below\n",
                 p.size, p.size, p.device.c_str(), p.precision.c_str(), human_bytes(double(p.budget_bytes)).c_str(),
                 p.split.batch);
    return;
  }
  if (FacexlibRestorer* f = r.facexlib()) {
    const nlohmann::json m = r.memory_json();
    std::string what = face_flow_name(r.flow());
    if (r.flow() == FaceFlow::codeformer) what += " (fidelity " + std::to_string(r.config().fidelity).substr(0, 4) + ")";
    std::fprintf(stderr, "%s %dx%d on %s (fp32), one face per run (weights %s, arena %s); %s, upscale %d, %s paste mask\n",
                 what.c_str(), p.size, p.size, p.device.c_str(),
                 human_bytes(m["weights_bytes"].get<double>()).c_str(), human_bytes(m["arena_bytes"].get<double>()).c_str(),
                 f->rules().name, r.config().upscale, r.parser() ? "face-parsing" : "square");
    return;
  }
  if (p.split.banded)
    std::fprintf(stderr, "GPEN runs banded to fit %s (arena at most %s)\n", human_bytes(double(p.budget_bytes)).c_str(),
                 human_bytes(double(p.split.plan.arena_budget)).c_str());
  if (RrdbModel* sr = r.sr_model())
    std::fprintf(stderr, "background: %s, tile from the %s the budget leaves beside GPEN's plan\n",
                 sr->config().describe().c_str(), human_bytes(double(p.split.sr_budget)).c_str());
  const MemoryPlan& plan = r.model().plan();
  std::fprintf(stderr,
               "GPEN %dx%d on %s (%s), up to %d faces per run (planned as photos need; batch 1: weights %s, arena %s, "
               "workspace %s)\n",
               p.size, p.size, p.device.c_str(), p.precision.c_str(), p.split.batch,
               human_bytes(double(plan.weights_bytes)).c_str(), human_bytes(double(plan.arena_bytes)).c_str(),
               human_bytes(double(plan.workspace_bytes)).c_str());
  if (r.parser())
    std::fprintf(stderr, "paste mask: face parsing, ParseNet 512x512 on %s (arena %s, %s)\n", p.device.c_str(),
                 human_bytes(double(p.parser_arena_bytes)).c_str(),
                 p.parser_in_generator_arena ? "inside GPEN's arena" : "its own: larger than GPEN's");
}

// The low-memory mode's account of a photo, in words (the report's `low_memory`).
std::string low_memory_line(const nlohmann::json& m) {
  auto mib = [&m](const char* k) { return human_bytes(m[k].get<double>()); };
  const int bands = m["gpen_bands"].get<int>();
  return "low-memory mode: planned " + mib("planned_bytes") + " of " + mib("budget_bytes") + ": GPEN's weights resident " +
         mib("gpen_weights_resident_bytes") + " at most (of " + mib("gpen_weights_file_bytes") +
         ", mapped from the file and let go after use), arena " + mib("arena_bytes") +
         " (GPEN's, lent to the detector; GPEN " + (bands ? "in " + std::to_string(bands) + " bands" : "unbanded") +
         "), workspace " + mib("workspace_bytes") + ", the detector's weights " + mib("detector_weights_bytes") +
         ", images " + mib("images_bytes") + ", paste buffer " + mib("pipeline_buffer_bytes") +
         (m["faces_kept_bytes"].get<size_t>() ? ", faces kept " + mib("faces_kept_bytes") : "") +
         "; the process's code and libraries not included";
}

void run_photos(const RestoreArgs& a) {
  const RestoreConfig config = restore_config(a);
  check_config(config);
  std::vector<Job> jobs = collect_jobs(a);
  GPEN_CHECK(!jobs.empty(), "no images found in the inputs (extensions .jpg, .jpeg, .png, .webp, .bmp)");
  std::unique_ptr<Restorer> restorer = Restorer::open(config);
  print_plan(*restorer);

  nlohmann::json images = nlohmann::json::array();
  std::string low_memory_said;
  StageTimes sum;
  int failed = 0, faces_total = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& job = jobs[i];
    progress(i, jobs.size(), job.input);
    nlohmann::json rep = {{"image", job.input}, {"output", job.output}};
    try {
      auto t0 = std::chrono::steady_clock::now();
      ImageMeta meta;  // EXIF (orientation reset when applied) and ICC profile, for the output
      const Image photo = read_image(job.input, photo_read_options(a), &meta);
      const double decode_ms = ms_since(t0);
      RestoreResult r = restorer->restore(photo, sr_progress(job.input));
      if (r.sr) rep["sr"] = sr_report_json(r.sr_report, r.sr_tile_reason, *restorer->sr_model());
      r.times.decode_ms = decode_ms;
      t0 = std::chrono::steady_clock::now();
      fs::create_directories(fs::absolute(job.output).parent_path());
      write_image(job.output, r.image, a.jpeg_quality, &meta);
      if (!a.save_faces.empty()) {
        const fs::path prefix = fs::path(a.save_faces) / job.faces_prefix;
        fs::create_directories(prefix.parent_path());
        for (size_t k = 0; k < r.restored_faces.size(); ++k)
          write_image(prefix.string() + "_face" + std::to_string(k) + ".png", r.restored_faces[k]);
      }
      r.times.encode_ms = ms_since(t0);
      faces_total += r.restored;
      sum.decode_ms += r.times.decode_ms;
      sum.detect_ms += r.times.detect_ms;
      sum.align_ms += r.times.align_ms;
      sum.restore_ms += r.times.restore_ms;
      sum.paste_ms += r.times.paste_ms;
      sum.encode_ms += r.times.encode_ms;
      rep["width"] = r.image.width;  // the photo restored: the SR size with --sr
      rep["height"] = r.image.height;
      rep["faces_found"] = r.faces.size();
      rep["faces_restored"] = r.restored;
      rep["mask"] = r.restored ? r.mask : restorer->plan().mask.c_str();
      rep["times_ms"] = {{"decode", r.times.decode_ms}, {"detect", r.times.detect_ms}, {"align", r.times.align_ms},
                         {"restore", r.times.restore_ms}, {"paste", r.times.paste_ms}, {"encode", r.times.encode_ms}};
      if (restorer->plan().low_memory) {
        rep["low_memory"] = restorer->memory_json()["low_memory"];
        // Said when it changes (a larger photo), not for every photo of a folder.
        if (std::string line = low_memory_line(rep["low_memory"]); line != low_memory_said)
          std::fprintf(stderr, "%s%s\n", isatty(fileno(stderr)) ? "\n" : "", (low_memory_said = line).c_str());
      }
      if (jobs.size() == 1 || !isatty(fileno(stderr)))
        std::fprintf(stderr, "%s: %zu faces found, %d restored -> %s (%.0f ms)\n", job.input.c_str(), r.faces.size(),
                     r.restored, job.output.c_str(),
                     r.times.decode_ms + r.times.detect_ms + r.times.align_ms + r.times.restore_ms + r.times.paste_ms +
                         r.times.encode_ms);
    } catch (const std::exception& e) {
      ++failed;
      rep["error"] = e.what();
      std::fprintf(stderr, "%sgpen: error: %s\n", isatty(fileno(stderr)) ? "\n" : "", e.what());
    }
    images.push_back(rep);
  }
  progress(jobs.size(), jobs.size(), "");
  if (!a.report.empty()) {
    nlohmann::json memory = restorer->memory_json();
    memory["peak_rss_mib"] = peak_rss_mib();
    nlohmann::json report = {
        {"images", images},
        {"totals",
         {{"images", jobs.size()},
          {"failed", failed},
          {"faces_restored", faces_total},
          {"times_ms",
           {{"decode", sum.decode_ms}, {"detect", sum.detect_ms}, {"align", sum.align_ms}, {"restore", sum.restore_ms},
            {"paste", sum.paste_ms}, {"encode", sum.encode_ms}}}}},
        {"memory", memory},
        // What the setup decided from the budget (the Python Restorer's .plan is the same).
        {"plan", to_json(restorer->plan())}};
    report::write_text_file(a.report, report.dump(2) + "\n");
  }
  std::fprintf(stderr, "%zu photos, %d faces restored, %d failed; peak RSS %.0f MiB\n", jobs.size(), faces_total,
               failed, peak_rss_mib());
  GPEN_CHECK(failed == 0, std::to_string(failed) + " of " + std::to_string(jobs.size()) +
                              " photos could not be restored (see the messages above)");
}

RestoreArgs g_args;

Command reg(
    "restore", "Restore faces in photos (detect, align, GPEN, GFPGAN, CodeFormer or RestoreFormer, paste back), or aligned crops with --aligned",
    [](CLI::App& sub) {
      sub.add_option("-m,--model", g_args.model,
                     "Converted GPEN, GFPGAN, CodeFormer or RestoreFormer model (.gpw); its kind picks the flow: GPEN's official "
                     "one, GFPGANer.enhance's (facexlib: FFHQ template, LMEDS alignment, gray crop border, eroded and "
                     "blurred square mask; RestoreFormer.enhance is the same) or inference_codeformer.py's (the same with its facelib's rules: photos "
                     "under 512 scaled up, detection at 640, gray photos' faces given the crop's tones)")
          ->required()
          ->check(CLI::ExistingFile);
      sub.add_option("-d,--detector", g_args.detector, "Converted RetinaFace model (.gpw); not used with --aligned")
          ->check(CLI::ExistingFile);
      sub.add_option("inputs", g_args.inputs,
                     "Photos or directories (recursive; .jpg .jpeg .png .webp .bmp); with --aligned: face crops of any size "
                     "or, with GPEN, .npy float32 N x 3 x S x S in [-1, 1]")
          ->required();
      sub.add_option("-o,--output", g_args.output, "Output file (one input) or directory")->required();
      sub.add_flag("--aligned", g_args.aligned,
                   "Inputs are aligned face crops (no detection): resized to the model's size (bilinear, as "
                   "cv2.resize), restored and written whole; with GFPGAN, CodeFormer and RestoreFormer as their has_aligned=True");
      sub.add_option("--device", g_args.device, "cpu, cuda or auto (CUDA when a GPU is present)")->capture_default_str();
      sub.add_option("--precision", g_args.precision,
                     "GPEN precision: fp32, fp16 or bf16 (default: fp32 on the CPU, fp16 on CUDA; the CPU runs fp32 "
                     "only; the detector always runs fp32); GFPGAN, CodeFormer and RestoreFormer run fp32 on every "
                     "device, as their official flows, and fp16 / bf16 with --device cuda when asked");
      sub.add_flag("--no-cuda-graphs", g_args.no_cuda_graphs,
                   "CUDA: launch every kernel each run instead of replaying a captured graph");
      sub.add_option("--batch", g_args.batch, "Most faces per GPEN run (default: from --vram-budget); GPEN is planned for the faces the photos have, up to this");
      sub.add_option("--vram-budget", g_args.vram_budget,
                     "Memory for GPEN (weights + arena + workspace), e.g. 2GiB; the batch is the largest that fits "
                     "(default: half the free RAM on CPU, 80% of the free GPU memory on CUDA); with --sr, GPEN's batch "
                     "comes from half of it and RealESRNet's tile from what GPEN's plan leaves");
      sub.add_option("--arena-budget", g_args.arena_budget,
                     "Run GPEN banded (rows of the high-resolution stages one band at a time) with the fewest extra "
                     "FLOPs whose arena fits this, e.g. 24MiB; --vram-budget bands before it lowers the batch");
      sub.add_option("--bands", g_args.bands, "Run GPEN banded with exactly this many bands of output rows")
          ->check(CLI::Range(1, 2048));
      sub.add_option("--memory-budget", g_args.memory_budget,
                     "GPEN on the CPU in the low-memory mode, planned into this much, e.g. 128MiB: photos: GPEN's "
                     "weights resident + the arena it shares with the detector + workspace + the detector's weights + "
                     "the photo, the composite and the paste canvases; --aligned: GPEN's weights resident + arena + "
                     "workspace. Weights read from the file's mapping and let go after use, 8-bit weights dequantised "
                     "tile by tile, the arena banded to what is left; one face per run; the rectangle paste mask");
      sub.add_option("--blend,--alpha", g_args.alpha,
                     "Every model: restored face * blend + original aligned crop * (1 - blend), before the paste; with "
                     "GFPGAN, CodeFormer or RestoreFormer and --aligned, the crop resized to 512")
          ->capture_default_str()
          ->check(CLI::Range(0.0, 1.0));
      sub.add_option("--threshold", g_args.threshold,
                     "Detection score threshold (default: 0.9 with GPEN, 0.97 with GFPGAN and RestoreFormer, 0.8 with CodeFormer, as "
                     "their official flows)");
      sub.add_option("--upscale", g_args.upscale,
                     "GFPGAN, CodeFormer and RestoreFormer: output at N x the photo's size (the background resized, bilinear with "
                     "CodeFormer, Lanczos with the others; faces pasted at that size)")
          ->capture_default_str()
          ->check(CLI::Range(1, 8));
      sub.add_flag("--only-center-face", g_args.only_center_face,
                   "GFPGAN, CodeFormer and RestoreFormer: restore only the face nearest the photo's centre");
      sub.add_option("--fidelity,-w", g_args.fidelity,
                     "CodeFormer's fidelity weight w: 0 favours quality, 1 the input's identity (as "
                     "inference_codeformer.py -w)")
          ->capture_default_str()
          ->check(CLI::Range(0.0, 1.0));
      sub.add_flag("--face-upsample", g_args.face_upsample,
                   "CodeFormer with --sr: also upsample the restored faces with the background upsampler before "
                   "pasting them (as inference_codeformer.py --face_upsample)");
      sub.add_option("--det-max-side", g_args.det_max_side,
                     "Shrink photos whose longer side exceeds N to N for detection (default: > 1500 -> 1000; 0: never)");
      sub.add_option("--save-faces", g_args.save_faces, "Also write every restored face crop into this directory, as <output path without extension>_face<K>.png mirroring the output tree");
      sub.add_option("--save-raw", g_args.save_raw, "--aligned: also write the raw generator output (float32 NCHW .npy)");
      sub.add_flag("--trace-start", g_args.trace_start,
                   "--aligned: print the wall clock (CLOCK_REALTIME, ns) to stderr as the first forward pass starts "
                   "(\"gpen: first op at N ns\"; scripts/startup.sh times start-up with it)");
      sub.add_option("--jpeg-quality", g_args.jpeg_quality,
                     "JPEG quality of .jpg outputs (.png and .webp outputs are lossless); every output keeps the "
                     "input's EXIF (orientation reset to 1 once applied) and ICC profile")
          ->capture_default_str()
          ->check(CLI::Range(1, 100));
      add_image_read_options(sub, g_args.max_pixels, g_args.ignore_orientation);
      sub.add_option("--parse", g_args.parse,
                     "Converted ParseNet model (.gpw, from GPEN's ParseNet-latest.pth or facexlib's "
                     "parsing_parsenet.pth, the same network): paste faces through the face-parsing mask, as the "
                     "official flows do (the default whenever it is given); each flow makes the mask its own way")
          ->check(CLI::ExistingFile);
      sub.add_option("--mask", g_args.mask,
                     "Paste mask: parse (face parsing, needs --parse) or rect (the feathered rectangle); default: "
                     "parse with --parse, else rect")
          ->check(CLI::IsMember({"rect", "parse"}));
      sub.add_option("--report", g_args.report, "Write a JSON report: faces, per-stage times, memory");
      add_task_options(sub, g_args);
      sub.add_option("--sr", g_args.sr_model,
                     "RealESRNet model (.gpw): super-resolve the background first, as the official --use_sr (faces "
                     "from the bilinear upscale, composited onto the SR photo); with --aligned, SR of each restored face. "
                     "GFPGAN, CodeFormer, RestoreFormer: the background upsampler (RealESRGAN_x2plus, as the scripts' --bg_upsampler "
                     "realesrgan): the faces pasted onto RealESRGANer.enhance(photo, outscale=--upscale)")
          ->check(CLI::ExistingFile);
      sub.add_option("--sr-tile", g_args.sr_tile,
                     "auto: untiled when RealESRNet's plan fits --vram-budget, else the largest tile that fits "
                     "(GFPGAN, CodeFormer, RestoreFormer: 400, the scripts' --bg_tile); N: the official tile_process with tile N; 0: "
                     "untiled")
          ->capture_default_str();
      sub.callback([] {
        const FaceFlow flow = face_flow_of_file(g_args.model);
        if (flow != FaceFlow::gpen) {
          GPEN_CHECK(g_args.task == "enhance", "--task " + g_args.task + " is an option of GPEN models; " +
                                                   g_args.model + " is a " + face_flow_name(flow) + " model");
        }
        finish_task_options(g_args);
        GPEN_CHECK(g_args.memory_budget.empty() || flow == FaceFlow::gpen,
                   "--memory-budget is an option of GPEN models; " + g_args.model + " is a " + face_flow_name(flow) +
                       " model");
        if (g_args.aligned) {
          GPEN_CHECK(g_args.parse.empty() && g_args.mask.empty(),
                     "--parse and --mask choose how faces are pasted into photos; --aligned pastes nothing");
          run_aligned(g_args);
        }
        else
          run_photos(g_args);
      });
    },
    30);

}  // namespace
}  // namespace gpen::cli
