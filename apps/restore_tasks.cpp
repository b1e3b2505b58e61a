#include "apps/restore_tasks.h"

#include <cstdio>

#include "engine/core/error.h"
#include "weights/gpw.h"
#include "engine/models/gpen_noise.h"
#include "engine/photo/tasks.h"

namespace gpen::cli::restore_detail {

namespace {

CLI::Option* g_task_option = nullptr;

// The task the converter recorded in the .gpw header, "" when none (or not a readable .gpw: the
// model's own opening reports that).
std::string recorded_task(const std::string& path) {
  try {
    if (!GpwFile::has_magic(path)) return "";
    GpwFile f = GpwFile::open(path);
    const auto& c = f.config();
    if (c.is_object() && c.contains("task") && c["task"].is_string()) return c["task"].get<std::string>();
  } catch (const std::exception&) {
  }
  return "";
}

void check_task_options(const RestoreArgs& a);

}  // namespace

void finish_task_options(RestoreArgs& a) {
  const std::string rec = recorded_task(a.model);
  if (!rec.empty()) {
    parse_task(rec);  // an unknown recorded task fails here, naming it
    if (!g_task_option || g_task_option->count() == 0) {
      a.task = rec;
      if (rec != "enhance") std::fprintf(stderr, "gpen: --task %s (recorded in %s)\n", rec.c_str(), a.model.c_str());
    } else if (rec != a.task) {
      std::fprintf(stderr, "gpen: warning: %s was converted as a '%s' model; running --task %s as asked\n",
                   a.model.c_str(), rec.c_str(), a.task.c_str());
    }
  }
  check_task_options(a);
}

void add_task_options(CLI::App& sub, RestoreArgs& a) {
  g_task_option = sub.add_option("--task", a.task,
                 "What the GPEN model was trained for: enhance (GPEN-BFR-*), colorize (GPEN-Colorization-1024: "
                 "keeps the input's luma when its size differs from the output's), inpaint (GPEN-Inpainting-1024: "
                 "give the already-masked image), seg2face (GPEN-Seg2face-512: a colour-coded parsing map, no "
                 "[-1, 1] normalisation); tasks other than enhance run on whole images with --aligned, as the "
                 "official scripts do. Default: the task recorded in the .gpw (gpen convert --task), else enhance")
      ->check(CLI::IsMember({"enhance", "colorize", "inpaint", "seg2face"}));
  sub.add_option("--seed", a.seed,
                 "Seed of the N(0, 1) noise a FullGenerator_SR model (out size > in size) adds above its input "
                 "size; face k of a run gets the same noise for the same seed whatever the batch (other models "
                 "draw no noise)")
      ->capture_default_str();
}

namespace {

void check_task_options(const RestoreArgs& a) {
  const GpenTask t = parse_task(a.task);
  if (t == GpenTask::enhance) return;
  const std::string name = task_name(t);
  if (!a.aligned)
    throw Error("--task " + name + ": the official " + task_official_model(t) +
                " script runs GPEN on the whole input image (FaceGAN.process, no detection, no paste-back, whatever "
                "its --aligned says); run it with --aligned on aligned face images" +
                (a.detector.empty() ? "" : " (and without -d: no detector is used)"));
  if (!a.detector.empty())
    throw Error("--task " + name + " --aligned uses no detector: drop -d " + a.detector);
  if (a.alpha != 1.0)
    throw Error("--task " + name + ": --blend blends a restored face with its crop in the photo pipeline; the " +
                std::string(task_official_model(t)) + " flow has no blend");
  if (!a.save_faces.empty()) throw Error("--task " + name + ": --save-faces needs the photo pipeline; the output is the face");
  if (!a.sr_model.empty())
    throw Error("--task " + name + ": the official " + std::string(task_official_model(t)) +
                " script has no super-resolution step; --sr " + a.sr_model + " belongs to the enhance task");
  if (t == GpenTask::colorize)
    for (const auto& in : a.inputs)
      if (ends_with(in, ".npy"))
        throw Error(in + ": --task colorize needs 8-bit images (the result keeps the input's luma), not .npy");
}

}  // namespace

}  // namespace gpen::cli::restore_detail
