// `gpen fetch` against a loopback server (tests/fetch_server.py), with the small checkpoint
// fixtures, so it runs in the sanitizer pass too: a download that is cut halfway is resumed with
// a Range request (also one left as .part by an earlier run); a server that ignores Range or
// answers 416 makes it start over; a wrong model, a truncated file, a connection that keeps
// being cut, a 404, a refused connection and a wrong sha256 are each refused with the reason and
// leave no file behind; an unreachable server stops the run at once; libcurl is loaded, not linked.
// The official-size layouts are in test_fetch_official.cpp.
#include <doctest/doctest.h>

#include <string>

#include "engine/core/error.h"
#include "converter/fetch/curl_library.h"
#include "converter/fetch/fetch.h"
#include "converter/fetch/sha256.h"
#include "tests/fetch_test_server.h"
#include "tests/run_command.h"
#include "weights/gpw.h"

using namespace fetch_test;
using namespace gpen;

namespace {

const std::string kCk = GPEN_FIXTURE_DIR "/checkpoints/";
// sha256sum tests/fixtures/checkpoints/gpen_s64.zip.pth
const std::string kS64Sha = "ab49f142bede2b45e061606ca6b8569322224aaafc451ad08e4292d387729708";

// A stand-in table entry for the 64x64 GPEN fixture, so the library path runs on a small file.
fetch::ModelInfo tiny_gpen() {
  fetch::ModelInfo m;
  m.name = "tiny-gpen";
  m.expect.arch = conv::Arch::gpen;
  m.expect.gpen_size = 64;
  m.expect.channel_multiplier = 1;
  m.expect.narrow = 0.015625;
  return m;
}

struct Env {
  fs::path work, root;
  Server server;
  bool ok = false;
  Env(const char* tag) {
    work = fs::temp_directory_path() / ("gpen_test_fetch_" + std::string(tag) + "_" + std::to_string(getpid()));
    fs::remove_all(work);
    root = work / "root";
    fs::create_directories(root / "small");
    fs::copy_file(kCk + "gpen_s64.zip.pth", root / "small" / "tiny-gpen.pth");
    // Under the official names: a GPEN of the wrong size, a RetinaFace of the wrong backbone, a
    // detector where a GPEN is expected, and a GPEN file cut short.
    fs::copy_file(kCk + "gpen_s64.zip.pth", root / "small" / "GPEN-BFR-256.pth");
    fs::copy_file(kCk + "mnet.zip.pth", root / "small" / "RetinaFace-R50.pth");
    fs::create_directories(root / "wrong");
    fs::copy_file(kCk + "mnet.zip.pth", root / "wrong" / "GPEN-BFR-256.pth");
    fs::copy_file(kCk + "gpen_s64.zip.pth", root / "wrong" / "ParseNet-latest.pth");
    const std::string s64 = read_file(kCk + "gpen_s64.zip.pth");
    write_file(root / "trunc" / "GPEN-BFR-256.pth", s64.substr(0, s64.size() / 2));
    ok = server.start(root, work);
  }
  ~Env() { fs::remove_all(work); }
};

}  // namespace

TEST_CASE("sha256: FIPS 180-4 test vectors, and a file streamed in pieces") {
  auto hex = [](const std::string& s) {
    Sha256 h;
    h.update(s.data(), s.size());
    return h.hex();
  };
  CHECK(hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  Sha256 split;  // 1,000,000 x 'a' in uneven pieces crosses every block boundary case
  const std::string a(999, 'a');
  size_t n = 0;
  for (int i = 0; n < 1000000; ++i) {
    const size_t take = std::min<size_t>(1 + (i * 37) % 999, 1000000 - n);
    split.update(a.data(), take);
    n += take;
  }
  CHECK(split.hex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  CHECK(sha256_file(kCk + "gpen_s64.zip.pth") == kS64Sha);
}

TEST_CASE("fetch: a download cut halfway resumes with a Range request, verifies and converts") {
  Env env("resume");
  if (!env.ok) return;
  const std::string want = read_file(env.root / "small" / "tiny-gpen.pth");
  fetch::Options opt;
  opt.dir = (env.work / "models").string();
  opt.base_url = env.server.url("cut/small");
  opt.convert = true;
  const fetch::Result r = fetch::fetch_model(tiny_gpen(), opt);
  CHECK(r.downloaded);
  CHECK(r.resumed);
  CHECK(r.transfers == 2);
  CHECK(r.bytes == want.size());
  CHECK(r.sha256 == kS64Sha);
  CHECK(read_file(r.pth) == want);
  const auto reqs = env.server.requests();
  REQUIRE(reqs.size() == 2);
  CHECK(reqs[0].range == "");
  CHECK(reqs[1].range == "bytes=" + std::to_string(want.size() / 2) + "-");  // the server cut at half
  GpwFile gpw = GpwFile::open(r.gpw);
  CHECK(gpw.arch() == "gpen");
  CHECK(gpw.config()["size"] == 64);
  CHECK(listing(opt.dir) == std::set<std::string>{"tiny-gpen.gpw", "tiny-gpen.pth"});

  // Again: the file is there and verified, nothing is requested.
  env.server.clear_log();
  const fetch::Result again = fetch::fetch_model(tiny_gpen(), opt);
  CHECK_FALSE(again.downloaded);
  CHECK(again.sha256 == kS64Sha);
  CHECK(env.server.requests().empty());
}

TEST_CASE("fetch: a .part left by an earlier run is resumed, a server that ignores Range or answers 416 restarts it") {
  Env env("part");
  if (!env.ok) return;
  const std::string want = read_file(env.root / "small" / "tiny-gpen.pth");
  fetch::Options opt;
  opt.dir = (env.work / "models").string();
  const std::string part = (env.work / "models" / "tiny-gpen.pth.part").string();
  const std::string pth = (env.work / "models" / "tiny-gpen.pth").string();
  struct Case {
    const char* mode;
    std::string part_bytes, range;
    bool resumed;
    int requests;
  } cases[] = {
      {"ok/small", want.substr(0, 1000), "bytes=1000-", true, 1},
      {"norange/small", want.substr(0, 1000), "bytes=1000-", false, 1},  // 200 + whole file: started over
      {"ok/small", want + "0123456789", "bytes=" + std::to_string(want.size() + 10) + "-", false, 2},  // 416
  };
  for (const auto& c : cases) {
    CAPTURE(c.mode);
    CAPTURE(c.range);
    fs::remove_all(opt.dir);
    write_file(part, c.part_bytes);
    env.server.clear_log();
    opt.base_url = env.server.url(c.mode);
    const fetch::Result r = fetch::fetch_model(tiny_gpen(), opt);
    CHECK(r.resumed == c.resumed);
    CHECK(read_file(pth) == want);
    CHECK_FALSE(fs::exists(part));
    const auto reqs = env.server.requests();
    REQUIRE(reqs.size() == size_t(c.requests));
    CHECK(reqs[0].range == c.range);
    if (c.requests == 2) CHECK(reqs[1].range == "");
  }
}

TEST_CASE("fetch: --sha256 pins the file") {
  Env env("sha");
  if (!env.ok) return;
  fetch::Options opt;
  opt.dir = (env.work / "models").string();
  opt.base_url = env.server.url("ok/small");
  opt.sha256 = std::string(64, '0');
  try {
    fetch::fetch_model(tiny_gpen(), opt);
    FAIL("a wrong sha256 was accepted");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("sha256 " + kS64Sha + ", expected " + opt.sha256) != std::string::npos);
    CHECK(msg.find(opt.base_url + "/tiny-gpen.pth") != std::string::npos);
  }
  CHECK(listing(opt.dir).empty());
  for (char& ch : opt.sha256 = kS64Sha) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  CHECK(fetch::fetch_model(tiny_gpen(), opt).sha256 == kS64Sha);
}

TEST_CASE("gpen fetch: wrong model, truncated, always cut, 404, refused, bad names: refused with the reason, nothing left") {
  Env env("cli");
  if (!env.ok) return;
  if (!fs::exists(kGpen)) {
    MESSAGE("skipped: " << kGpen << " is not built");
    return;
  }
  const fs::path dir = env.work / "models", log = env.work / "log.txt";
  struct Case {
    std::string args;
    std::vector<std::string> words;  // the message must contain each
    int requests;                    // -1: not checked
  } cases[] = {
      {"GPEN-BFR-256 --base-url " + env.server.url("ok/wrong"), {"not GPEN-BFR-256", "retinaface", "expected GPEN 256x256"}, 1},
      {"GPEN-BFR-256 --base-url " + env.server.url("ok/small"), {"not GPEN-BFR-256", "it holds GPEN 64x64"}, 1},
      {"RetinaFace-R50 --base-url " + env.server.url("ok/small"), {"it holds RetinaFace mobilenet0.25", "expected RetinaFace resnet50"}, 1},
      {"GPEN-BFR-256 --base-url " + env.server.url("ok/trunc"), {"truncated", "not a valid zip archive"}, 1},
      {"GPEN-BFR-256 --attempts 3 --base-url " + env.server.url("cutalways/small"), {"truncated: the transfer was cut 3 times"}, 3},
      {"GPEN-BFR-256 --base-url " + env.server.url("ok/missing"), {"404 Not Found", env.server.url("ok/missing") + "/GPEN-BFR-256.pth"}, 1},
      {"GPEN-BFR-256 RetinaFace-R50 --base-url http://127.0.0.1:1",
       {"cannot connect", "http://127.0.0.1:1/GPEN-BFR-256.pth", "not tried: RetinaFace-R50"}, 0},
      {"GPEN-BFR-256 --base-url ftp://127.0.0.1/x", {"not an http:// or https:// URL"}, 0},
      {"GPEN-BFR-256 --sha256 " + std::string(64, 'f') + " --base-url " + env.server.url("ok/small"), {"sha256 " + kS64Sha + ", expected"}, 1},
      {"GPEN-BFR-999", {"unknown model 'GPEN-BFR-999'", "GPEN-BFR-512"}, 0},
      {"ParseNet-latest --base-url " + env.server.url("ok/wrong"), {"not ParseNet-latest", "it holds a gpen model", "expected ParseNet"}, 1},
      {"GPEN-BFR-1024", {"GPEN-BFR-1024", "ModelScope", "--base-url"}, 0},
      {"GPEN-BFR-256 RetinaFace-R50 --sha256 " + std::string(64, 'f'), {"one model"}, 0},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    fs::remove_all(dir);
    env.server.clear_log();
    std::string text;
    const int rc = run(kGpen + " fetch --dir " + dir.string() + " " + c.args, log, &text);
    INFO("gpen fetch said:\n" << text);
    CHECK(rc != 0);
    for (const auto& w : c.words) CHECK_MESSAGE(text.find(w) != std::string::npos, w);
    CHECK(listing(dir).empty());
    if (c.requests >= 0) CHECK(env.server.requests().size() == size_t(c.requests));
  }

  // A file already there that is not the model: reported, left as it is, nothing downloaded.
  fs::remove_all(dir);
  env.server.clear_log();
  write_file(dir / "GPEN-BFR-256.pth", "not a checkpoint");
  std::string text;
  CHECK(run(kGpen + " fetch --dir " + dir.string() + " GPEN-BFR-256 --base-url " + env.server.url("ok/small"), log, &text) != 0);
  CHECK_MESSAGE(text.find("already there but is not usable as GPEN-BFR-256") != std::string::npos, text);
  CHECK(read_file(dir / "GPEN-BFR-256.pth") == "not a checkpoint");
  CHECK(env.server.requests().empty());
}

TEST_CASE("fetch: an unreachable server keeps the .part an earlier run left, for the next run") {
  const fs::path work = fs::temp_directory_path() / ("gpen_test_fetch_unreach_" + std::to_string(getpid()));
  fs::remove_all(work);
  fetch::Options opt;
  opt.dir = (work / "models").string();
  opt.base_url = "http://127.0.0.1:1";  // nothing listens on port 1
  const fs::path part = work / "models" / "tiny-gpen.pth.part";
  write_file(part, std::string(1000, 'x'));
  try {
    fetch::fetch_model(tiny_gpen(), opt);
    FAIL("port 1 answered");
  } catch (const fetch::Unreachable& e) {
    const std::string msg = e.what();
    CHECK(msg.find("cannot connect") != std::string::npos);
    CHECK(msg.find("kept " + part.string()) != std::string::npos);
  }
  CHECK(fs::file_size(part) == 1000);
  fs::remove_all(work);
}

TEST_CASE("fetch: libcurl is loaded when a download starts, and the gpen binary does not link it") {
  // No such library: the error names what was tried and how to install it.
  try {
    fetch::load_curl({"libcurl-absent.so.9"});
    FAIL("load_curl did not throw");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK_MESSAGE(m.find("libcurl-absent.so.9") != std::string::npos, m);
    CHECK_MESSAGE(m.find("apt-get install libcurl4") != std::string::npos, m);
  }
  const bool loaded = fetch::curl().easy_init != nullptr;  // the libcurl the download tests above used
  CHECK(loaded);
  if (!fs::exists(kGpen)) {
    MESSAGE("skipped: " << kGpen << " is not built");
    return;
  }
  std::string needed;
  REQUIRE(gpen_test::run("readelf -d " + kGpen, &needed) == 0);
  CHECK_MESSAGE(needed.find("(NEEDED)") != std::string::npos, needed);
  CHECK_MESSAGE(needed.find("libcurl") == std::string::npos, needed);
}
