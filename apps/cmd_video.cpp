// gpen video: the faces of every frame of a film restored, through FFmpeg's libraries
// (engine/video): frames decoded as cv2.VideoCapture decodes them, restored (engine/video/video_restore.h),
// re-encoded in the input's codec family, pixel format, colour description and timestamps, the
// other streams and the metadata copied. Decoding, restoring and encoding overlap on their own
// threads. A file FFmpeg cannot open gets one line with FFmpeg's reason and no output; a damaged
// one is restored as far as it decodes, the loss named, the exit status 1; Ctrl-C or SIGTERM stops
// within a second and leaves no partial output.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/cli.h"
#include "engine/core/bytes.h"
#include "reports/svg.h"
#include "apps/restore_common.h"
#include "engine/core/rss.h"
#include "apps/video_cancel.h"
#include "engine/core/error.h"
#include "engine/video/video_pipeline.h"
#include "engine/video/video_report.h"
#include "engine/video/video_restore.h"

namespace gpen::cli {
namespace {

using namespace restore_detail;

struct VideoArgs {
  RestoreArgs restore;  // the models, the device, the memory budget, inputs and output
  video::EncodeSettings encode;
  double start_s = 0, duration_s = -1;
  int smooth = 0;  // landmarks averaged over this many frames per face track (0: off)
  bool quiet = false;
};

bool is_video_name(const std::string& p) {
  for (const char* e : {".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi", ".ts", ".mts", ".m2ts", ".mpg", ".mpeg",
                        ".flv", ".wmv", ".ogv", ".3gp", ".y4m"})
    if (ends_with(p, e)) return true;
  return false;
}

// "frame 120/300, 24.1 fps, 57 faces, ETA 0:07" on one terminal line, at most four times a second.
class ProgressLine {
 public:
  ProgressLine(const std::string& name, bool show) : name_(name), show_(show && isatty(fileno(stderr))) {}
  void update(const video::PipelineProgress& p) {
    if (!show_) return;
    const auto now = std::chrono::steady_clock::now();
    if (p.frames != p.frames_total && now - last_ < std::chrono::milliseconds(250)) return;
    last_ = now;
    const double fps = p.elapsed_s > 0 ? p.frames / p.elapsed_s : 0;
    std::string line = name_ + ": frame " + std::to_string(p.frames);
    if (p.frames_total > 0) line += "/" + std::to_string(p.frames_total);
    char rest[96];
    std::snprintf(rest, sizeof rest, ", %.1f fps, %lld faces", fps, static_cast<long long>(p.faces));
    line += rest;
    if (p.frames_total > p.frames && fps > 0) {
      const long eta = std::lround((p.frames_total - p.frames) / fps);
      std::snprintf(rest, sizeof rest, ", ETA %ld:%02ld", eta / 60, eta % 60);
      line += rest;
    }
    std::fprintf(stderr, "\r%-79.79s", line.c_str());
    std::fflush(stderr);
    shown_ = true;
  }
  void clear() {
    if (shown_) std::fprintf(stderr, "\r%79s\r", "");
    shown_ = false;
  }

 private:
  std::string name_;
  bool show_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

// One video: read, restore, write (the engine's restore_video, as Python's). Returns its report;
// throws gpen::Error (nothing written) or video::Cancelled.
nlohmann::json run_one(const VideoArgs& a, const Job& job, video::RestoreFrames& restorer, SignalCancel& cancel) {
  video::VideoJob v;
  v.input = job.input;
  v.output = job.output;
  v.read.apply_orientation = !a.restore.ignore_orientation;
  v.read.max_pixels = a.restore.max_pixels;
  v.read.start_s = a.start_s;
  v.read.duration_s = a.duration_s;
  v.encode = a.encode;
  v.cancel = cancel.flag();
  ProgressLine line(job.input, !a.quiet);
  v.progress = [&](const video::PipelineProgress& p) { line.update(p); };
  v.writing = [&](const std::string& temp) { cancel.guard(temp); };
  try {
    nlohmann::json rep = video::restore_video(restorer, v);
    line.clear();
    return rep;
  } catch (...) {
    line.clear();
    throw;
  }
}

void run_videos(const VideoArgs& a) {
  GPEN_CHECK(a.start_s >= 0, "--start must not be negative");
  GPEN_CHECK(a.duration_s < 0 || a.duration_s > 0, "--duration must be positive");
  const std::vector<Job> jobs = pair_inputs(
      a.restore.inputs, a.restore.output, is_video_name, [](const std::string& out, bool) { return out; });
  GPEN_CHECK(!jobs.empty(), "no videos found in the inputs (extensions .mp4 .mkv .mov .webm .avi and others)");
  RestoreConfig config = restore_config(a.restore);
  // A film's memory is fixed before its first frame: GPEN planned at its batch limit (and every
  // smaller batch with it), not grown when a scene first has more faces.
  config.plan_at_limit = true;
  const std::unique_ptr<Restorer> engine = Restorer::open(config);
  video::RestoreFrames restorer(*engine, a.smooth);
  if (!a.quiet) std::fprintf(stderr, "%s\n", restorer.describe().c_str());

  nlohmann::json videos = nlohmann::json::array();
  int failed = 0, damaged = 0, signal = 0;
  {
    SignalCancel cancel;
    for (const Job& job : jobs) {
      try {
        nlohmann::json rep = run_one(a, job, restorer, cancel);
        const bool loss = rep["decode_errors"]["any"];
        damaged += loss;
        if (loss)
          std::fprintf(stderr, "%s: damaged input: %s; the %lld frames that decoded are restored in %s\n",
                       job.input.c_str(), rep["decode_errors"]["summary"].get<std::string>().c_str(),
                       rep["frames"].get<long long>(), job.output.c_str());
        if (!a.quiet) std::fprintf(stderr, "%s\n", video::video_summary(rep).c_str());
        videos.push_back(std::move(rep));
      } catch (const video::Cancelled&) {
        signal = cancel.signal();
        break;
      } catch (const std::exception& e) {
        ++failed;
        videos.push_back({{"video", job.input}, {"output", job.output}, {"error", e.what()}});
        std::fprintf(stderr, "gpen: error: %s\n", e.what());
      }
    }
  }
  if (signal) {
    std::fprintf(stderr, "gpen: cancelled; no partial output is left\n");
    std::fflush(stderr);
    std::exit(128 + signal);
  }
  if (!a.restore.report.empty()) report::write_text_file(a.restore.report, video::video_report_file(videos) + "\n");
  if (jobs.size() > 1 && !a.quiet)
    std::fprintf(stderr, "%zu videos, %d failed, %d damaged; peak RSS %.0f MiB\n", jobs.size(), failed, damaged,
                 peak_rss_mib());
  GPEN_CHECK(failed == 0 && damaged == 0,
             std::to_string(failed + damaged) + " of " + std::to_string(jobs.size()) +
                 (jobs.size() == 1 ? " video" : " videos") + " failed or damaged (see the messages above)");
}

VideoArgs g_args;

Command reg(
    "video", "Restore the faces of every frame of videos (GPEN, GFPGAN, CodeFormer or RestoreFormer), through FFmpeg's libraries",
    [](CLI::App& sub) {
      RestoreArgs& r = g_args.restore;
      sub.add_option("-m,--model", r.model,
                     "Converted GPEN, GFPGAN, CodeFormer or RestoreFormer model (.gpw); its kind picks the flow, as `gpen restore` "
                     "(GFPGAN, CodeFormer, RestoreFormer: their scripts' flow on every frame)")
          ->required()
          ->check(CLI::ExistingFile);
      sub.add_option("-d,--detector", r.detector, "Converted RetinaFace model (.gpw)")
          ->required()
          ->check(CLI::ExistingFile);
      sub.add_option("inputs", r.inputs,
                     "Videos or directories (recursive; .mp4 .m4v .mov .mkv .webm .avi .ts .mts .m2ts .mpg .mpeg .flv "
                     ".wmv .ogv .3gp .y4m), any container and codec FFmpeg decodes")
          ->required();
      sub.add_option("-o,--output", r.output,
                     "Output file (one input; its extension picks the container) or directory (the inputs' names)")
          ->required();
      sub.add_option("--parse", r.parse,
                     "Converted ParseNet model (.gpw): paste faces through the face-parsing mask, as `gpen restore`")
          ->check(CLI::ExistingFile);
      sub.add_option("--sr", r.sr_model,
                     "Converted RealESRNet model (.gpw): super-resolve each frame's background first, as `gpen "
                     "restore --sr` (the output is that many times larger); GFPGAN, CodeFormer, RestoreFormer: the background "
                     "upsampler (RealESRGAN), the frames at --upscale x their size")
          ->check(CLI::ExistingFile);
      sub.add_option("--upscale", r.upscale,
                     "GFPGAN, CodeFormer, RestoreFormer: frames at N x the input's size, as `gpen restore --upscale` (CodeFormer: "
                     "frames under 512 pixels high or wide scaled up to 512 first)")
          ->capture_default_str()
          ->check(CLI::Range(1, 8));
      sub.add_flag("--only-center-face", r.only_center_face,
                   "GFPGAN, CodeFormer, RestoreFormer: restore only the face nearest each frame's centre");
      sub.add_option("--fidelity,-w", r.fidelity, "CodeFormer's fidelity weight w, as `gpen restore --fidelity`")
          ->capture_default_str()
          ->check(CLI::Range(0.0, 1.0));
      sub.add_flag("--face-upsample", r.face_upsample,
                   "CodeFormer with --sr: the restored faces upsampled too, as `gpen restore --face-upsample`");
      sub.add_option("--codec", g_args.encode.codec,
                     "Encoder (any FFmpeg has, e.g. libx264, libx265, libvpx-vp9, libaom-av1, ffv1); default: the "
                     "input's codec family at visually lossless settings (docs/video.md)");
      sub.add_option("--pix-fmt", g_args.encode.pix_fmt,
                     "Pixel format of the output (default: the input's, or the encoder's nearest)");
      sub.add_option("--crf", g_args.encode.crf, "Constant rate factor of encoders that have one (default: the table's)")
          ->check(CLI::Range(0, 63));
      sub.add_option("--preset", g_args.encode.preset, "Preset of encoders that have one (e.g. libx264, libx265)");
      sub.add_option("--start", g_args.start_s, "Start at this time, in seconds (the output starts there, at time 0)");
      sub.add_option("--duration", g_args.duration_s, "Restore this many seconds (default: to the end)");
      sub.add_option("--smooth", g_args.smooth,
                     "Follow each face from frame to frame (by box overlap) and align it by the mean of its "
                     "landmarks over the last N frames, so that the crop of a still face stops jittering (a moving "
                     "face's crop trails it by (N-1)/2 frames); 1 tracks and measures only. Default: off, every "
                     "frame aligned by its own landmarks as `gpen restore` does (docs/video.md); GPEN models")
          ->check(CLI::Range(0, 64));  // beyond 64 frames (2.5 s at 25 fps) a track only lags
      sub.add_option("--report", r.report,
                     "Write a JSON report: frames, faces, fps, time per stage, peak RSS, planned memory, codecs and "
                     "settings, decode errors, with --smooth the landmark jitter detected and smoothed");
      sub.add_option("--device", r.device, "cpu, cuda or auto (CUDA when a GPU is present)")->capture_default_str();
      sub.add_option("--precision", r.precision,
                     "GPEN precision: fp32, fp16 or bf16 (default: fp32 on the CPU, fp16 on CUDA; GFPGAN runs fp32)");
      sub.add_option("--memory-budget,--vram-budget", r.vram_budget,
                     "Memory for GPEN (weights + arena + workspace), e.g. 2GiB (default: half the free RAM on CPU, "
                     "80% of the free GPU memory on CUDA; with --sr, GPEN's batch comes from half of it and "
                     "RealESRNet's tile from what GPEN's plan leaves)");
      sub.add_option("--max-pixels", r.max_pixels,
                     "Refuse videos whose frames have more pixels than this, read from the stream's header")
          ->capture_default_str()
          ->check(CLI::Range(int64_t{1}, kMaxImagePixels));
      sub.add_flag("--ignore-orientation", r.ignore_orientation,
                   "Use the frames as stored, not turned upright by the stream's rotation as cv2.VideoCapture does");
      sub.add_flag("--quiet", g_args.quiet, "No progress line and no summaries (errors are still printed)");
      sub.callback([] { run_videos(g_args); });
    },
    35);

}  // namespace
}  // namespace gpen::cli
