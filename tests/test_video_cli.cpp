// `gpen video` through the CLI binary, with a tiny GPEN (tests/fixtures/gpen/s32) and the real
// RetinaFace mobilenet0.25 weights: every restored frame is what `gpen restore` makes of that
// frame; the output keeps the frame count, the timestamps and the audio packets; a file FFmpeg
// cannot open gets one line with FFmpeg's reason and no output; a damaged one is restored as far
// as it decodes with exit status 1; SIGINT stops the run within a second and leaves nothing; a
// folder is restored into a folder; with --sr each frame is what `gpen restore --sr` makes of it;
// with a GFPGAN model (a small random-weight one) each frame is what `gpen restore` makes of it
// with that model, the report's memory is GFPGAN's, and --smooth is refused.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "converter/convert.h"
#include "engine/photo/image.h"
#include "tests/gfpgan_synthetic.h"
#include "tests/realesrnet_fixture.h"
#include "tests/video/clips.h"

using namespace gpen;
using namespace gpen_test::video;
namespace fs = std::filesystem;

namespace {

const std::string kGpen = gpen_test::binary_dir() + "/gpen";

struct Models {
  fs::path root, gpen, det;
  ~Models() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

// The models once per process, converted into a folder of this process.
const Models& models() {
  static const Models m = [] {
    Models s;
    s.root = fs::path(gpen_test::binary_dir()) / ("video-cli-test-" + std::to_string(getpid()));
    fs::remove_all(s.root);
    fs::create_directories(s.root);
    s.gpen = s.root / "gpen_s32.gpw";
    s.det = s.root / "mnet.gpw";
    conv::convert(gpen_test::fixture_dir() + "/gpen/s32/checkpoint.pth", s.gpen.string());
    conv::convert(gpen_test::shared_dir() + "/models/retinaface-mobilenet0.25.pth", s.det.string());
    return s;
  }();
  return m;
}

// A small random-weight GFPGAN at 512 (tests/gfpgan_synthetic.h), written when first asked for.
const fs::path& gfpgan_model() {
  static const fs::path p = [] {
    const fs::path gpw = models().root / "gfpgan_small.gpw";
    gpen_test::write_small_gfpgan(gpw.string());
    return gpw;
  }();
  return p;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path d = models().root / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// One CPU thread: the tiny GPEN needs no more, and the tests run beside others.
std::string gpen_cmd(const std::string& sub, const std::string& args) {
  return kGpen + " " + sub + " --threads 1 -m " + models().gpen.string() + " -d " + models().det.string() + " " + args;
}
std::string video_cmd(const std::string& args) { return gpen_cmd("video", args); }

// Frames 0 and 5 of a restored clip equal what `restore` (the gpen command line up to its inputs)
// makes of the same decoded input frames, written as photos into dir.
void check_frames_as_restore(const fs::path& dir, const std::vector<gpen::Image>& input,
                             const std::vector<gpen::Image>& restored, const std::string& restore) {
  REQUIRE(restored.size() == input.size());
  for (int i : {0, 5}) {
    INFO("frame " << i);
    const std::string frame = (dir / ("frame" + std::to_string(i) + ".png")).string();
    const std::string want = (dir / ("restored" + std::to_string(i) + ".png")).string();
    write_image(frame, input[i]);
    std::string log;
    REQUIRE_MESSAGE(gpen_test::run(restore + " " + frame + " -o " + want, &log) == 0, log);
    CHECK(read_image(want).bgr == restored[i].bgr);
    CHECK(restored[i].bgr != input[i].bgr);
  }
}

std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> s;
  for (const auto& e : fs::recursive_directory_iterator(dir)) s.insert(fs::relative(e.path(), dir).string());
  return s;
}

}  // namespace

TEST_CASE("gpen video: each frame restored as gpen restore restores it, written exactly") {
  const fs::path dir = fresh_dir("same-as-restore");
  const std::string in = clip("faces_320.mp4"), out = (dir / "out.mov").string();
  std::string log;
  REQUIRE_MESSAGE(gpen_test::run(video_cmd(in + " -o " + out + " --codec ffv1 --pix-fmt bgr0 --report " +
                                           (dir / "r.json").string()), &log) == 0, log);
  const auto report = nlohmann::json::parse(read_bytes((dir / "r.json").string()));
  const auto& v = report["videos"][0];
  CHECK(v["frames"] == 6);
  CHECK(v["faces"].get<int>() >= 6);  // the kids' faces in every frame
  CHECK(v["encoding"]["encoder"] == "ffv1");
  CHECK(v["decode_errors"]["any"] == false);
  // Memory fixed when the video opens: GPEN planned at its batch limit, whatever the frames held.
  const auto& mem = v["memory"]["restorer"];
  CHECK(mem["gpen_batch"] == mem["gpen_batch_limit"]);
  check_frames_as_restore(dir, read_all(in), read_all(out), gpen_cmd("restore", ""));
}

// --smooth on a still photo under fresh noise in every frame: the detections are the same with and
// without it, so the frames differ only where the smoothed landmarks do.
TEST_CASE("gpen video --smooth: a still face's landmarks move less, and off or a window of 1 aligns as gpen restore") {
  const fs::path dir = fresh_dir("smooth");
  const std::string in = clip("still_noise_320.mp4");
  auto run_video = [&](const std::string& name, const std::string& opts) {
    const std::string out = (dir / (name + ".mov")).string(), rep = (dir / (name + ".json")).string();
    std::string log;
    REQUIRE_MESSAGE(gpen_test::run(video_cmd(in + " -o " + out + " --codec ffv1 --pix-fmt bgr0 --quiet --report " +
                                             rep + opts), &log) == 0, log);
    return std::make_pair(read_all(out), nlohmann::json::parse(read_bytes(rep))["videos"][0]);
  };
  const auto [off, off_report] = run_video("off", "");
  const auto [one, one_report] = run_video("one", " --smooth 1");
  const auto [five, five_report] = run_video("five", " --smooth 5");
  CHECK(off_report["smooth"].is_null());
  REQUIRE(off.size() == 12);
  REQUIRE(one.size() == off.size());
  REQUIRE(five.size() == off.size());
  CHECK(off_report["faces"].get<int>() >= 24);  // the kids' faces in every frame

  // Off: each frame as gpen restore restores it.
  const auto input = read_all(in);
  std::string log;
  const std::string frame = (dir / "frame6.png").string(), want = (dir / "restored6.png").string();
  write_image(frame, input[6]);
  REQUIRE(gpen_test::run(gpen_cmd("restore", frame + " -o " + want), &log) == 0);
  CHECK(read_image(want).bgr == off[6].bgr);

  // A window of 1 follows and measures the faces but aligns them by their own landmarks.
  for (size_t i = 0; i < off.size(); ++i) CHECK(one[i].bgr == off[i].bgr);
  const auto& j1 = one_report["smooth"]["landmark_jitter_px"];
  CHECK(one_report["smooth"]["frames"] == 1);
  CHECK(j1["steps"].get<int>() >= 22);  // at least two faces followed through all 12 frames
  CHECK(j1["smoothed"].get<double>() == j1["detected"].get<double>());

  // A window of 5: the same detections (the detector sees the same frames), every face one track
  // from start to end, the first frame as detected (each track's mean of one set), later ones not.
  const auto& s5 = five_report["smooth"];
  const auto& j5 = s5["landmark_jitter_px"];
  CHECK(s5["frames"] == 5);
  CHECK(s5["tracks"] == one_report["smooth"]["tracks"]);
  CHECK(j5["steps"] == j1["steps"]);
  CHECK(j5["detected"].get<double>() == j1["detected"].get<double>());
  CHECK(five[0].bgr == off[0].bgr);
  CHECK(five[11].bgr != off[11].bgr);
  // Measured: 1.30 px detected, 0.31 px smoothed (4.2 times less) for the 6 faces over 11 steps.
  // Independent noise averaged over 5 frames moves 5 times less once a track is 5 frames old; 4 of
  // the 11 steps are younger, hence 4.2. At least 3 times less: a clear reduction, with room for
  // another x264 or FFmpeg build changing the noise of the clip.
  MESSAGE("landmark jitter, detected " << j5["detected"].get<double>() << " px, smoothed over 5 frames "
                                       << j5["smoothed"].get<double>() << " px");
  CHECK(j5["detected"].get<double>() > 0.1);  // the noise does move the detector's landmarks
  CHECK(j5["smoothed"].get<double>() < j5["detected"].get<double>() / 3);
}

TEST_CASE("gpen video --sr: each frame super-resolved and restored as gpen restore --sr does it") {
  const fs::path dir = fresh_dir("sr");
  const std::string sr = (dir / "sr.gpw").string();
  gpen_test::write_tiny_realesrnet(sr);
  const std::string in = clip("faces_320.mp4"), out = (dir / "out.mov").string();
  std::string log;
  REQUIRE_MESSAGE(gpen_test::run(video_cmd(in + " -o " + out + " --sr " + sr + " --codec ffv1 --pix-fmt bgr0"), &log) == 0,
                  log);
  const auto input = read_all(in), restored = read_all(out);
  REQUIRE(restored.size() == input.size());
  for (int i : {0, 5}) {
    INFO("frame " << i);
    CHECK(restored[i].width == 2 * input[i].width);
    CHECK(restored[i].height == 2 * input[i].height);
    const std::string frame = (dir / ("frame" + std::to_string(i) + ".png")).string();
    const std::string want = (dir / ("restored" + std::to_string(i) + ".png")).string();
    write_image(frame, input[i]);
    REQUIRE(gpen_test::run(gpen_cmd("restore", frame + " -o " + want + " --sr " + sr), &log) == 0);
    CHECK(read_image(want).bgr == restored[i].bgr);
  }
}

TEST_CASE("gpen video: the default output keeps frames, timestamps and audio") {
  const fs::path dir = fresh_dir("default");
  const std::string in = clip("h264_pan25_audio.mp4"), out = (dir / "out.mp4").string();
  std::string log;
  REQUIRE_MESSAGE(gpen_test::run(video_cmd(in + " -o " + out + " --quiet"), &log) == 0, log);
  CHECK(log.empty());
  CHECK(probe(out, "v:0", "stream=codec_name,pix_fmt,nb_frames") == "codec_name=h264\npix_fmt=yuv420p\nnb_frames=12\n");
  CHECK(probe(in, "v:0", "frame=pts_time") == probe(out, "v:0", "frame=pts_time"));
  CHECK(packets_md5(in, "0:a") == packets_md5(out, "0:a"));
  CHECK(listing(dir) == std::set<std::string>{"out.mp4"});
}

TEST_CASE("gpen video: a file FFmpeg cannot open: one line with FFmpeg's reason, no output") {
  const fs::path dir = fresh_dir("unopenable");
  const std::string in = clip("not_a_video.mp4");
  std::string log;
  CHECK(gpen_test::run(video_cmd(in + " -o " + (dir / "out.mp4").string()), &log) == 1);
  INFO(log);
  CHECK(log.find("gpen: error: " + in + ": Invalid data found when processing input") != std::string::npos);
  CHECK(fs::is_empty(dir));
}

TEST_CASE("gpen video: a damaged file is restored as far as it decodes, and says so") {
  const fs::path dir = fresh_dir("damaged");
  const std::string in = clip("truncated.mp4"), out = (dir / "out.mkv").string(), rep = (dir / "r.json").string();
  std::string log;
  CHECK(gpen_test::run(video_cmd(in + " -o " + out + " --report " + rep), &log) == 1);
  INFO(log);
  CHECK(log.find(in + ": damaged input: ") != std::string::npos);
  const auto v = nlohmann::json::parse(read_bytes(rep))["videos"][0];
  CHECK(v["decode_errors"]["any"] == true);
  CHECK(v["frames"].get<int>() >= 2);
  CHECK(probe(out, "v:0", "stream=nb_read_frames -count_frames") ==
        "nb_read_frames=" + std::to_string(v["frames"].get<int>()) + "\n");
}

TEST_CASE("gpen video: SIGINT stops within a second and leaves no partial output") {
  const fs::path dir = fresh_dir("interrupted");
  const std::string out = (dir / "out.mp4").string();
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const std::string cmd = video_cmd(clip("long.mp4") + " -o " + out + " --quiet");
    execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Once the output is being written under its temporary name, interrupt.
  bool writing = false;
  for (int i = 0; i < 600 && !writing; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (const auto& e : fs::directory_iterator(dir)) writing |= e.path().filename().string().find(".partial-") != std::string::npos;
  }
  REQUIRE(writing);
  const auto t0 = std::chrono::steady_clock::now();
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  const double stop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(stop_s < 1.0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(fs::is_empty(dir));
}

TEST_CASE("gpen video: a folder of videos into a folder") {
  const fs::path dir = fresh_dir("folder"), in = dir / "in", out = dir / "out";
  fs::create_directories(in / "sub");
  fs::copy_file(clip("vfr.mp4"), in / "vfr.mp4");
  fs::copy_file(clip("vp9.webm"), in / "sub" / "vp9.webm");
  std::ofstream(in / "notes.txt") << "not a video\n";
  std::string log;
  REQUIRE_MESSAGE(gpen_test::run(video_cmd(in.string() + " -o " + out.string()), &log) == 0, log);
  CHECK(listing(out) == std::set<std::string>{"sub", "sub/vp9.webm", "vfr.mp4"});
  CHECK(probe((out / "sub" / "vp9.webm").string(), "v:0", "stream=codec_name") == "codec_name=vp9\n");
  CHECK(probe(clip("vfr.mp4"), "v:0", "frame=pts_time") == probe((out / "vfr.mp4").string(), "v:0", "frame=pts_time"));
}

TEST_CASE("gpen video with a GFPGAN model: each frame restored as gpen restore restores it, GFPGAN's memory reported") {
  const fs::path dir = fresh_dir("gfpgan");
  const std::string in = clip("faces_320.mp4"), out = (dir / "out.mov").string();
  const std::string models_args = " --threads 1 -m " + gfpgan_model().string() + " -d " + models().det.string() + " ";
  std::string log;
  REQUIRE_MESSAGE(gpen_test::run(kGpen + " video" + models_args + in + " -o " + out +
                                     " --codec ffv1 --pix-fmt bgr0 --report " + (dir / "r.json").string(),
                                 &log) == 0,
                  log);
  CHECK(log.find("GFPGAN 512x512") != std::string::npos);
  const auto report = nlohmann::json::parse(read_bytes((dir / "r.json").string()));
  const auto& v = report["videos"][0];
  CHECK(v["frames"] == 6);
  CHECK(v["faces"].get<int>() >= 1);
  // The memory section: GFPGAN's network, its arena and the detector's, nothing of GPEN's.
  const auto& m = v["memory"];
  const auto& r = m["restorer"];
  CHECK(r["model"] == "gfpgan");
  CHECK(r["plan"]["precision"] == "fp32");
  CHECK(r["parsenet_weights_bytes"] == 0);
  const size_t parts = r["weights_bytes"].get<size_t>() + r["arena_bytes"].get<size_t>() +
                       r["workspace_bytes"].get<size_t>() + r["detector_arena_bytes"].get<size_t>();
  CHECK(r["weights_bytes"].get<size_t>() > 0);
  CHECK(r["detector_arena_bytes"].get<size_t>() > 0);
  CHECK(r["planned_bytes"].get<size_t>() == parts);
  CHECK(m["planned_bytes"].get<size_t>() == parts + m["queue_bytes"].get<size_t>());
  const auto input = read_all(in);
  check_frames_as_restore(dir, input, read_all(out), kGpen + " restore" + models_args);
  // --upscale 2: frames twice the size, each as `gpen restore --upscale 2` makes it.
  const std::string up = (dir / "up.mov").string();
  REQUIRE_MESSAGE(gpen_test::run(kGpen + " video" + models_args + in + " -o " + up +
                                     " --codec ffv1 --pix-fmt bgr0 --upscale 2 --duration 0.1",
                                 &log) == 0,
                  log);
  const auto upscaled = read_all(up);
  REQUIRE(!upscaled.empty());
  CHECK(upscaled[0].width == 2 * input[0].width);
  const std::string want_up = (dir / "restored_up.png").string();
  REQUIRE(gpen_test::run(kGpen + " restore" + models_args + (dir / "frame0.png").string() + " -o " + want_up +
                             " --upscale 2", &log) == 0);
  CHECK(read_image(want_up).bgr == upscaled[0].bgr);
  // Landmark smoothing is GPEN's: refused before anything is written, naming the option.
  CHECK(gpen_test::run(kGpen + " video" + models_args + in + " -o " + (dir / "never.mov").string() + " --smooth 3",
                       &log) != 0);
  CHECK_MESSAGE(log.find("--smooth") != std::string::npos, log);
  CHECK_MESSAGE(log.find("GFPGAN model") != std::string::npos, log);
  CHECK(!fs::exists(dir / "never.mov"));
}
