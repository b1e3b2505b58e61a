// `gpen restore` on folders with bad files in them, through the CLI binary: every good photo is
// restored, every bad one is reported with its reason and gets no output, no temporary file is
// left behind, the exit status says that something failed, and inputs are never overwritten.
// A tiny GPEN (tests/fixtures/gpen/s32) and the real RetinaFace mobilenet0.25 weights keep it
// fast enough for the sanitizer pass.
#include <doctest/doctest.h>

#include <algorithm>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "engine/photo/exif.h"
#include "engine/photo/image.h"

using namespace gpen;
namespace fs = std::filesystem;

namespace {

const std::string kGpen = GPEN_BINARY_DIR "/gpen";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

// Exit status of a shell command whose stderr and stdout go to `log`. A sanitizer report in the
// log (the sanitizer build runs the same test) fails the test even where a failure is expected.
int run(const std::string& cmd, const fs::path& log) {
  int st = std::system((cmd + " >" + log.string() + " 2>&1").c_str());
  const std::string text = read_file(log);
  CHECK_MESSAGE(text.find("Sanitizer") == std::string::npos, text);
  CHECK_MESSAGE(text.find("runtime error:") == std::string::npos, text);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// Every regular file under dir (relative path -> bytes).
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> m;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) m[fs::relative(e.path(), dir).string()] = read_file(e.path());
  return m;
}

std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> s;
  if (!fs::exists(dir)) return s;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) s.insert(fs::relative(e.path(), dir).string());
  return s;
}

struct Setup {
  fs::path root, in, gpen_gpw, det_gpw;
  std::vector<std::string> good, bad;  // relative to `in`
  std::map<std::string, std::string> reasons;  // bad file -> a word its message must contain
};

bool prepare(Setup& s) {
  const std::string det_pth = std::string(GPEN_SHARED_DIR) + "/models/retinaface-mobilenet0.25.pth";
  if (!fs::exists(kGpen)) {
    MESSAGE("skipped: " << kGpen << " is not built");
    return false;
  }
  if (!fs::exists(det_pth)) {
    MESSAGE("skipped: " << det_pth << " is missing");
    return false;
  }
  s.root = fs::temp_directory_path() / ("gpen_test_pipeline_cli_" + std::to_string(getpid()));
  fs::remove_all(s.root);
  s.in = s.root / "in";
  fs::create_directories(s.in / "sub");
  s.gpen_gpw = s.root / "gpen_s32.gpw";
  s.det_gpw = s.root / "mnet.gpw";
  conv::convert(std::string(GPEN_FIXTURE_DIR) + "/gpen/s32/checkpoint.pth", s.gpen_gpw.string());
  conv::convert(det_pth, s.det_gpw.string());

  // Good photos: faces (PNG and JPEG), a subfolder, and one without faces.
  const std::string align = std::string(GPEN_FIXTURE_DIR) + "/align/";
  fs::copy_file(align + "kids/image.png", s.in / "kids.png");
  write_image((s.in / "kids.jpg").string(), read_image(align + "kids/image.png"), 90);
  fs::copy_file(align + "ffhq1/image.png", s.in / "sub" / "ffhq.png");
  Image blank;
  blank.width = 64;
  blank.height = 48;
  blank.bgr.assign(blank.pixels() * 3, 128);
  write_image((s.in / "blank.png").string(), blank);
  s.good = {"blank.png", "kids.jpg", "kids.png", "sub/ffhq.png"};

  // Bad ones, each with an image extension so that it is attempted.
  const std::string jpeg = read_file(s.in / "kids.jpg");
  write_file(s.in / "truncated.jpg", jpeg.substr(0, jpeg.size() / 2));
  std::string png = "\x89PNG\r\n\x1a\n";
  for (int i = 0; i < 300; ++i) png += static_cast<char>(i * 7);
  write_file(s.in / "corrupt.png", png);
  write_file(s.in / "empty.jpg", "");
  write_file(s.in / "sub" / "notes.png", "these are notes, not an image\n");
  s.bad = {"corrupt.png", "empty.jpg", "sub/notes.png", "truncated.jpg"};
  s.reasons = {{"corrupt.png", "PNG"}, {"empty.jpg", "empty"}, {"sub/notes.png", "format"}, {"truncated.jpg", "JPEG"}};
  // Not an image name: not attempted, not reported.
  write_file(s.in / "readme.txt", "not a photo\n");
  return true;
}

std::string restore_cmd(const Setup& s, const std::string& args) {
  return kGpen + " restore -m " + s.gpen_gpw.string() + " -d " + s.det_gpw.string() + " " + args;
}

}  // namespace

TEST_CASE("gpen restore: a folder with corrupt, empty and non-image files") {
  Setup s;
  if (!prepare(s)) return;
  const auto before = snapshot(s.in);
  const fs::path out = s.root / "out", log = s.root / "log.txt", report = s.root / "report.json";

  int rc = run(restore_cmd(s, s.in.string() + " -o " + out.string() + " --report " + report.string()), log);
  const std::string messages = read_file(log);
  INFO("gpen restore said:\n" << messages);
  CHECK(rc != 0);

  // Outputs: exactly the good photos, decodable, at their size; nothing else (no temporaries).
  std::set<std::string> want(s.good.begin(), s.good.end());
  CHECK(listing(out) == want);
  for (const auto& g : s.good) {
    Image in = read_image((s.in / g).string());
    Image res = read_image((out / g).string());
    CHECK(res.width == in.width);
    CHECK(res.height == in.height);
  }
  // The faceless photo comes back as it was (PNG in, PNG out).
  CHECK(read_image((out / "blank.png").string()).bgr == read_image((s.in / "blank.png").string()).bgr);

  // Every bad file named with its reason, on stderr and in the report.
  for (const auto& b : s.bad) {
    CHECK_MESSAGE(messages.find((s.in / b).string() + ": ") != std::string::npos, b);
    CHECK_MESSAGE(messages.find(s.reasons[b]) != std::string::npos, b);
  }
  CHECK(messages.find("4 of 8 photos could not be restored") != std::string::npos);
  REQUIRE(fs::exists(report));
  auto j = nlohmann::json::parse(read_file(report));
  CHECK(j["totals"]["images"] == 8);
  CHECK(j["totals"]["failed"] == 4);
  std::set<std::string> failed, restored;
  for (const auto& im : j["images"]) {
    std::string rel = fs::relative(im["image"].get<std::string>(), s.in).string();
    if (im.contains("error")) {
      failed.insert(rel);
      CHECK_MESSAGE(im["error"].get<std::string>().find(s.reasons[rel]) != std::string::npos, rel);
    } else {
      restored.insert(rel);
      CHECK(im["faces_restored"].get<int>() == im["faces_found"].get<int>());
    }
  }
  CHECK(failed == std::set<std::string>(s.bad.begin(), s.bad.end()));
  CHECK(restored == want);
  int most_faces = 0;
  for (const auto& im : j["images"]) {
    if (fs::relative(im["image"].get<std::string>(), s.in) == "kids.png") CHECK(im["faces_restored"].get<int>() >= 5);
    most_faces = std::max(most_faces, im.value("faces_restored", 0));
  }
  // GPEN is planned for the faces the photos had, not for the budget's batch.
  CHECK(j["memory"]["gpen_batch"].get<int>() == std::min(most_faces, j["memory"]["gpen_batch_limit"].get<int>()));

  // Inputs untouched.
  CHECK(snapshot(s.in) == before);
  fs::remove_all(s.root);
}

TEST_CASE("gpen restore never writes over its inputs") {
  Setup s;
  if (!prepare(s)) return;
  const auto before = snapshot(s.in);
  const fs::path log = s.root / "log.txt";

  // Output folder = input folder: refused before any work.
  CHECK(run(restore_cmd(s, s.in.string() + " -o " + s.in.string()), log) != 0);
  CHECK(read_file(log).find("refusing to overwrite an input") != std::string::npos);
  CHECK(snapshot(s.in) == before);

  // One photo onto itself.
  CHECK(run(restore_cmd(s, (s.in / "kids.png").string() + " -o " + (s.in / "kids.png").string()), log) != 0);
  CHECK(read_file(log).find("refusing to overwrite an input") != std::string::npos);
  CHECK(snapshot(s.in) == before);

  // One bad photo: a failure, and no output file at all.
  const fs::path single = s.root / "single" / "out.png";
  CHECK(run(restore_cmd(s, (s.in / "truncated.jpg").string() + " -o " + single.string()), log) != 0);
  CHECK(read_file(log).find("truncated.jpg") != std::string::npos);
  CHECK(listing(s.root / "single").empty());

  // One good photo to a file: exit status 0.
  CHECK(run(restore_cmd(s, (s.in / "kids.png").string() + " -o " + single.string()), log) == 0);
  CHECK(listing(s.root / "single") == std::set<std::string>{"out.png"});
  CHECK(snapshot(s.in) == before);
  fs::remove_all(s.root);
}

TEST_CASE("gpen restore refuses two inputs that would share one output, before any work") {
  Setup s;
  if (!prepare(s)) return;
  const fs::path log = s.root / "log.txt";
  const fs::path out = s.root / "clash_out";
  const std::string kids = read_file(s.in / "kids.png");
  write_file(s.root / "p" / "x.png", kids);
  write_file(s.root / "q" / "x.png", kids);
  write_file(s.root / "p" / "in" / "y.png", kids);
  write_file(s.root / "q" / "in" / "y.png", kids);
  write_file(s.root / "r" / "z.png", kids);
  write_file(s.root / "r" / "z.bmp", "not decoded: the clash is found first");

  struct Case {
    std::string inputs, clash;
  } cases[] = {
      {(s.root / "p" / "x.png").string() + " " + (s.root / "q" / "x.png").string(), "x.png"},
      {(s.root / "p" / "in").string() + " " + (s.root / "q" / "in").string(), "y.png"},
      {(s.root / "r").string(), "z.png"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.inputs);
    CHECK(run(restore_cmd(s, c.inputs + " -o " + out.string()), log) != 0);
    const std::string said = read_file(log);
    CHECK_MESSAGE(said.find("would be written here") != std::string::npos, said);
    CHECK_MESSAGE(said.find(c.clash) != std::string::npos, said);
    CHECK(!fs::exists(out));
  }
  fs::remove_all(s.root);
}

TEST_CASE("global options are accepted before and after the subcommand") {
  const fs::path log = fs::temp_directory_path() / ("gpen_test_cli_globals_" + std::to_string(getpid()) + ".txt");
  const std::string plan = " plan --arch gpen --size 64 --channel-multiplier 1 --narrow 0.5";
  CHECK(run(kGpen + " --threads 1" + plan, log) == 0);
  CHECK(run(kGpen + plan + " --threads 1", log) == 0);
  // Still checked where it stands: a negative count is refused, after the subcommand too.
  CHECK(run(kGpen + plan + " --threads -1", log) != 0);
  CHECK(read_file(log).find("--threads") != std::string::npos);
  fs::remove(log);
}

TEST_CASE("gpen restore/detect: EXIF orientation, metadata kept, --ignore-orientation, --max-pixels") {
  Setup s;
  if (!prepare(s)) return;
  const fs::path log = s.root / "log.txt";
  // A "phone photo": pixels stored sideways with EXIF orientation 6 and an ICC profile.
  ReadOptions raw;
  raw.apply_orientation = false;
  ImageMeta meta;
  read_image(std::string(GPEN_FIXTURE_DIR) + "/image/codec/orient6.jpg", raw, &meta);
  REQUIRE(exif::orientation(meta.exif) == 6);
  meta.icc.assign(300, 7);
  const Image stored = read_image((s.in / "kids.png").string());
  const fs::path phone = s.root / "phone.jpg";
  write_image(phone.string(), stored, 92, &meta);

  const fs::path up = s.root / "up.jpg", side = s.root / "side.jpg";
  REQUIRE(run(restore_cmd(s, phone.string() + " -o " + up.string()), log) == 0);
  ImageMeta got;
  const Image u = read_image(up.string(), raw, &got);
  CHECK(u.width == stored.height);  // restored upright: rotated 90 degrees
  CHECK(u.height == stored.width);
  CHECK(exif::orientation(got.exif) == 1);
  CHECK(got.icc == meta.icc);

  REQUIRE(run(restore_cmd(s, phone.string() + " -o " + side.string() + " --ignore-orientation"), log) == 0);
  ImageMeta got2;
  const Image sd = read_image(side.string(), raw, &got2);
  CHECK(sd.width == stored.width);
  CHECK(exif::orientation(got2.exif) == 6);  // still says how to show the unrotated pixels
  CHECK(got2.icc == meta.icc);

  const fs::path big = s.root / "big.png";
  CHECK(run(restore_cmd(s, phone.string() + " -o " + big.string() + " --max-pixels 1000"), log) != 0);
  CHECK(read_file(log).find("phone.jpg: image of") != std::string::npos);
  CHECK(read_file(log).find("over the limit (1000 pixels") != std::string::npos);
  CHECK(!fs::exists(big));

  const std::string det = kGpen + " detect -d " + s.det_gpw.string() + " --json " + phone.string();
  REQUIRE(run(det, log) == 0);
  auto j = nlohmann::json::parse(read_file(log));
  CHECK(j["width"] == stored.height);
  REQUIRE(run(det + " --ignore-orientation", log) == 0);
  CHECK(nlohmann::json::parse(read_file(log))["width"] == stored.width);
  CHECK(run(det + " --max-pixels 1000", log) != 0);
  fs::remove_all(s.root);
}

TEST_CASE("gpen restore --memory-budget: photos in the low-memory mode, the account said, a photo that cannot fit refused") {
  Setup s;
  if (!prepare(s)) return;
  const fs::path out = s.root / "low_memory";
  const fs::path log = s.root / "low_memory.log", report = s.root / "low_memory.json";
  const std::string photo = (s.in / "kids.png").string();
  REQUIRE(run(restore_cmd(s, photo + " -o " + (out / "kids.png").string() + " --memory-budget 48MiB --report " +
                                 report.string()),
              log) == 0);
  const std::string text = read_file(log);
  CHECK_MESSAGE(text.find("low-memory mode: planned") != std::string::npos, text);
  CHECK(fs::exists(out / "kids.png"));
  const nlohmann::json r = nlohmann::json::parse(read_file(report));
  const nlohmann::json& a = r["images"][0]["low_memory"];
  CHECK(a["planned_bytes"].get<size_t>() <= a["budget_bytes"].get<size_t>());
  CHECK(a["images_bytes"].get<size_t>() > 0);
  CHECK(r["memory"]["low_memory"] == a);
  CHECK(r["plan"]["low_memory"] == true);
  // `gpen plan -d` plans the photo as the restore did, without running it: the same account.
  {
    const Image kids = read_image(photo);
    const fs::path plan_log = s.root / "low_memory_plan.json";
    REQUIRE(run(kGpen + " plan -m " + s.gpen_gpw.string() + " -d " + s.det_gpw.string() + " --input-size " +
                    std::to_string(kids.width) + "x" + std::to_string(kids.height) + " --memory-budget 48MiB --json",
                plan_log) == 0);
    const nlohmann::json p = nlohmann::json::parse(read_file(plan_log));
    CHECK(p["low_memory"] == a);
    REQUIRE(run(kGpen + " plan -m " + s.gpen_gpw.string() + " -d " + s.det_gpw.string() + " --input-size " +
                    std::to_string(kids.width) + "x" + std::to_string(kids.height) + " --memory-budget 2MiB",
                plan_log) != 0);
    CHECK_MESSAGE(read_file(plan_log).find("memory budget") != std::string::npos, read_file(plan_log));
  }
  // The same photo in the default mode on one face per run differs only by the detector's and
  // GPEN's conv paths (Winograd there): the faces restored are the same ones.
  CHECK(r["images"][0]["faces_restored"].get<int>() > 0);

  // A budget the photo's images and buffers alone exceed: refused by name, no output written.
  const fs::path tiny = s.root / "low_memory_tiny";
  CHECK(run(restore_cmd(s, photo + " -o " + (tiny / "kids.png").string() + " --memory-budget 2MiB"), log) != 0);
  CHECK_MESSAGE(read_file(log).find("memory budget") != std::string::npos, read_file(log));
  CHECK(listing(tiny).empty());
  // Options the mode does not plan, refused before any work.
  CHECK(run(restore_cmd(s, photo + " -o " + (tiny / "kids.png").string() + " --memory-budget 48MiB --vram-budget 1GiB"),
            log) != 0);
  CHECK(read_file(log).find("give one of them") != std::string::npos);
  CHECK(listing(tiny).empty());
  fs::remove_all(s.root);
}
