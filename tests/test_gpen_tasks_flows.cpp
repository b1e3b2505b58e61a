// The official colorize / inpaint / seg2face flows and FullGenerator_SR on aligned crops, against
// Python re-creations of the official scripts (tests/reference/make_gpen_tasks_fixtures.py) on a
// small random FullGenerator 64 and a FullGenerator_SR 32 -> 64; OpenCV's 8-bit YUV conversions bit
// for bit; `gpen restore --task` through the CLI, with its refusals, and `gpen info` / `gpen plan`.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "converter/convert.h"
#include "engine/models/gpen_model.h"
#include "engine/photo/image.h"
#include "engine/photo/tasks.h"
#include "kernels/cpu/ops.h"
#include "test_paths.h"

using namespace gpen;
namespace fs = std::filesystem;

namespace {

const std::string kDir = gpen_test::fixture_dir() + "/gpen_tasks/";

std::string convert_tmp(const std::string& name) {
  std::string gpw = (gpen_test::scratch_path("tasks_flows_" + name + ".gpw")).string();
  conv::convert(kDir + name + ".pth", gpw);
  return gpw;
}

struct Compare {
  int max = 0;
  double exact = 0;  // fraction of equal values
};
Compare compare(const Image& a, const Image& b) {
  REQUIRE(a.width == b.width);
  REQUIRE(a.height == b.height);
  Compare c;
  size_t same = 0;
  for (size_t i = 0; i < a.bgr.size(); ++i) {
    int d = std::abs(int(a.bgr[i]) - int(b.bgr[i]));
    c.max = std::max(c.max, d);
    same += d == 0;
  }
  c.exact = double(same) / double(a.bgr.size());
  return c;
}

Image run_task(GpenModel& m, GpenTask t, const Image& in) {
  const int S = m.size(), O = m.output_size();
  std::vector<float> x(size_t(S) * S * 3), y(size_t(O) * O * 3);
  task_to_model(t, in, S, x.data());
  m.prepare(1);
  m.run(1, x.data(), y.data());
  return task_from_model(t, in, y.data(), O);
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

int sh(const std::string& cmd, const fs::path& log) {
  int st = std::system((cmd + " >" + log.string() + " 2>&1").c_str());
  const std::string text = slurp(log);
  CHECK_MESSAGE(text.find("Sanitizer") == std::string::npos, text);
  CHECK_MESSAGE(text.find("runtime error:") == std::string::npos, text);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace

TEST_CASE("tasks: BGR2YUV and YUV2BGR match OpenCV 4.6 bit for bit") {
  const Image in = read_image(kDir + "yuv_in.png");
  CHECK(compare(bgr_to_yuv(in), read_image(kDir + "yuv_bgr2yuv.png")).max == 0);
  CHECK(compare(yuv_to_bgr(in), read_image(kDir + "yuv_yuv2bgr.png")).max == 0);
}

TEST_CASE("tasks: colorize, inpaint and seg2face match the official scripts") {
  cpu::set_num_threads(2);
  auto be = make_cpu_backend();
  const std::string gpw = convert_tmp("task64");
  auto m = GpenModel::open(gpw, *be);
  fs::remove(gpw);
  struct Case {
    GpenTask task;
    const char* in;
    const char* want;
    int max;  // levels: the raw output is float32-close; truncation to 8 bits flips a level now and then
  } cases[] = {
      {GpenTask::colorize, "gray_48x56.png", "colorize_48x56.png", 2},  // resize + luma transfer
      {GpenTask::colorize, "gray_64.png", "colorize_64.png", 1},        // same size: the raw output
      {GpenTask::inpaint, "masked_64.png", "inpaint_64.png", 1},
      {GpenTask::seg2face, "seg_80.png", "seg2face_80.png", 1},         // no normalisation, resized 80 -> 64
  };
  for (const auto& c : cases) {
    const std::string want = c.want;
    CAPTURE(want);
    const Image in = read_image(kDir + c.in);
    Compare d = compare(run_task(*m, c.task, in), read_image(kDir + c.want));
    MESSAGE(want, ": max ", d.max, " levels, ", 100 * d.exact, " % identical");
    CHECK(d.max <= c.max);
    CHECK(d.exact >= 0.99);
  }
  // Colorize keeps the input's luma exactly where sizes differ: Y of the result within the YUV
  // round trip's rounding of Y(input).
  const Image gray = read_image(kDir + "gray_48x56.png");
  const Image yo = bgr_to_yuv(run_task(*m, GpenTask::colorize, gray)), yi = bgr_to_yuv(gray);
  int worst = 0;
  for (size_t i = 0; i < yo.bgr.size(); i += 3) worst = std::max(worst, std::abs(int(yo.bgr[i]) - int(yi.bgr[i])));
  CHECK(worst <= 2);
  // Seg2face without normalisation differs from the normalised flow on the same input.
  const Image seg = read_image(kDir + "seg_80.png");
  CHECK(compare(run_task(*m, GpenTask::seg2face, seg), run_task(*m, GpenTask::enhance, seg)).max > 10);
}

TEST_CASE("tasks: FullGenerator_SR on an aligned crop matches FaceGAN.process (zero noise weights)") {
  cpu::set_num_threads(2);
  auto be = make_cpu_backend();
  const std::string gpw = convert_tmp("sr_zero");
  auto m = GpenModel::open(gpw, *be);
  fs::remove(gpw);
  Compare d = compare(run_task(*m, GpenTask::enhance, read_image(kDir + "sr_face40.png")),
                      read_image(kDir + "sr_zero_face40_out.png"));
  MESSAGE("SR 32 -> 64: max ", d.max, " levels, ", 100 * d.exact, " % identical");
  CHECK(d.max <= 1);
  CHECK(d.exact >= 0.99);
}

TEST_CASE("tasks: gpen restore --task through the CLI, and its refusals") {
  const std::string gpen = gpen_test::binary_dir() + "/gpen";
  const fs::path tmp = gpen_test::scratch_path("tasks_cli");
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const std::string task = convert_tmp("task64"), sr = convert_tmp("sr_noise");
  const fs::path log = tmp / "log.txt";

  // The colorize flow, whole image, as the official script.
  const std::string out = (tmp / "c.png").string();
  REQUIRE(sh(gpen + " restore --aligned --task colorize -m " + task + " " + kDir + "gray_48x56.png -o " + out, log) == 0);
  Compare d = compare(read_image(out), read_image(kDir + "colorize_48x56.png"));
  CHECK(d.max <= 2);
  CHECK(d.exact >= 0.99);
  // A .gpw converted with --task colorize: restore takes the task from the file, info shows it.
  {
    const std::string tagged = (tmp / "tagged.gpw").string(), o2 = (tmp / "c2.png").string();
    conv::ConvertOptions co;
    co.task = "colorize";
    conv::convert(kDir + "task64.pth", tagged, co);
    REQUIRE(sh(gpen + " restore --aligned -m " + tagged + " " + kDir + "gray_48x56.png -o " + o2, log) == 0);
    CHECK(slurp(log).find("--task colorize (recorded in") != std::string::npos);
    CHECK(slurp(o2) == slurp(out));
    REQUIRE(sh(gpen + " info --json " + tagged, log) == 0);
    auto ji = nlohmann::json::parse(slurp(log));
    CHECK(ji["task"] == "colorize");
    CHECK(ji["model"] == "FullGenerator 64");
    co.task = "sharpen";
    CHECK_THROWS_WITH_AS(conv::convert(kDir + "task64.pth", tagged, co), doctest::Contains("unknown task 'sharpen'"), Error);
  }
  // seg2face through the CLI is the seg2face flow.
  const std::string so = (tmp / "s.png").string();
  REQUIRE(sh(gpen + " restore --aligned --task seg2face -m " + task + " " + kDir + "seg_80.png -o " + so, log) == 0);
  CHECK(compare(read_image(so), read_image(kDir + "seg2face_80.png")).max <= 1);

  // FullGenerator_SR: out_size outputs; the same seed gives the same file, another seed another.
  const std::string a = (tmp / "a.png").string(), b = (tmp / "b.png").string(), c = (tmp / "c7.png").string();
  const std::string face = kDir + "sr_face40.png";
  REQUIRE(sh(gpen + " restore --aligned -m " + sr + " --seed 7 " + face + " -o " + a, log) == 0);
  REQUIRE(sh(gpen + " restore --aligned -m " + sr + " --seed 7 " + face + " -o " + b, log) == 0);
  REQUIRE(sh(gpen + " restore --aligned -m " + sr + " --seed 8 " + face + " -o " + c, log) == 0);
  CHECK(read_image(a).width == 64);
  CHECK(slurp(a) == slurp(b));
  CHECK(slurp(a) != slurp(c));

  // Refusals, each saying why.
  const std::string det = gpen_test::shared_dir() + "/models/retinaface-mobilenet0.25.pth";
  struct Bad {
    std::string args, says;
  } bad[] = {
      {"--task seg2face -d " + task + " " + kDir + "seg_80.png -o " + (tmp / "x.png").string(), "whole input image"},
      {"--task colorize --aligned --alpha 0.5 " + kDir + "gray_64.png -o " + (tmp / "x.png").string(), "no blend"},
      {"--task colorize --aligned " + kDir + "sr_input.npy -o " + (tmp / "x.png").string(), "needs 8-bit images"},
      {"--task paint --aligned " + kDir + "gray_64.png -o " + (tmp / "x.png").string(), "--task"},
  };
  for (const auto& x : bad) {
    CAPTURE(x.args);
    CHECK(sh(gpen + " restore -m " + task + " " + x.args, log) != 0);
    CHECK(slurp(log).find(x.says) != std::string::npos);
    CHECK(!fs::exists(tmp / "x.png"));
  }
  // A FullGenerator_SR model in the photo pipeline: refused with the official reason.
  const std::string det_gpw = (tmp / "det.gpw").string();
  conv::convert(det, det_gpw);
  CHECK(sh(gpen + " restore -m " + sr + " -d " + det_gpw + " " + face + " -o " + (tmp / "x.png").string(), log) != 0);
  CHECK(slurp(log).find("FullGenerator_SR (32 -> 64)") != std::string::npos);
  CHECK(!fs::exists(tmp / "x.png"));

  // gpen info names the class and both sizes; gpen plan reports the SR graph.
  REQUIRE(sh(gpen + " info --json " + sr, log) == 0);
  auto j = nlohmann::json::parse(slurp(log));
  CHECK(j["model"] == "FullGenerator_SR 32 -> 64");
  CHECK(j["config"]["out_size"] == 64);
  REQUIRE(sh(gpen + " plan --size 512 --out-size 1024 --json", log) == 0);
  auto p = nlohmann::json::parse(slurp(log));
  CHECK(p.dump().find("1024") != std::string::npos);
  // gpen bench --accuracy on a model with noise compares runs that drew the same noise.
  REQUIRE(sh(gpen + " bench -m " + sr + " --accuracy --json --runs 2 --batch 2", log) == 0);
  auto bj = nlohmann::json::parse(slurp(log));
  CHECK(bj["accuracy_max_abs"].get<double>() == 0.0);
  fs::remove(task);
  fs::remove(sr);
  fs::remove_all(tmp);
}
