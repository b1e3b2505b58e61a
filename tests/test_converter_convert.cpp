// Checkpoint -> .gpw conversion into the engine's conventions, checked against tensors computed
// independently in Python (tests/reference/make_checkpoint_fixtures.py), plus the real RetinaFace
// checkpoint, a full-size ResNet-50 RetinaFace generated here, reduced-precision storage, and
// every validation failure leaving no output file.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "converter/convert.h"
#include "engine/core/error.h"
#include "weights/gpw.h"
#include "weights/half.h"
#include "tests/converter_fixtures.h"

namespace fs = std::filesystem;
using namespace gpen;
using namespace gpen::conv;
using gpen_test::kCheckpointDir;
using gpen_test::slurp;
using gpen_test::manifest;
using gpen_test::error_of;

namespace {

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("gpen_test_convert_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

std::vector<int64_t> dims(const TensorView& v) { return std::vector<int64_t>(v.shape.d.begin(), v.shape.d.begin() + v.rank()); }

float value_at(const TensorView& v, size_t i) {
  switch (v.dtype) {
    case DType::f32: return v.f32()[i];
    case DType::f16: return f16_to_f32(v.as<uint16_t>()[i]);
    case DType::bf16: return bf16_to_f32(v.as<uint16_t>()[i]);
    default: FAIL("unexpected dtype");
  }
  return 0;
}

// Compares every tensor of an expected manifest (float32 blob) with the .gpw, |a-b| <= atol + rtol |b|.
void check_expected(const GpwFile& f, const std::string& base, double rtol, double atol, bool exact_names) {
  const auto m = manifest(base);
  const auto blob = slurp(kCheckpointDir + base + ".bin");
  for (const auto& e : m) {
    const std::string name = e["name"];
    CAPTURE(name);
    const TensorView* v = f.find(name);
    REQUIRE(v);
    CHECK(dims(*v) == e["shape"].get<std::vector<int64_t>>());
    const float* want = reinterpret_cast<const float*>(blob.data() + e["offset"].get<size_t>());
    size_t n = e["bytes"].get<size_t>() / 4;
    REQUIRE(static_cast<int64_t>(n) == v->numel());
    double worst = 0;
    for (size_t i = 0; i < n; ++i) {
      double d = std::fabs(static_cast<double>(value_at(*v, i)) - want[i]) - (atol + rtol * std::fabs(want[i]));
      worst = std::max(worst, d);
    }
    CHECK(worst <= 0);
  }
  if (exact_names) CHECK(f.size() == m.size());
}

// safetensors writer for generated inputs.
struct StTensor {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};
void write_safetensors(const fs::path& p, const std::vector<StTensor>& ts) {
  nlohmann::json h = nlohmann::json::object();
  uint64_t off = 0;
  for (const auto& t : ts) {
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {off, off + t.bytes.size()}}};
    off += t.bytes.size();
  }
  std::string text = h.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream f(p, std::ios::binary);
  uint64_t n = text.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& t : ts) f.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
}

std::vector<StTensor> read_all(const Checkpoint& ck) {
  std::vector<StTensor> out;
  for (const auto& t : ck.tensors()) {
    StTensor s{t.name, t.dtype == SrcDType::i64 ? "I64" : "F32", t.shape, std::vector<uint8_t>(static_cast<size_t>(t.nbytes))};
    REQUIRE((t.dtype == SrcDType::f32 || t.dtype == SrcDType::i64));
    ck.read_raw(t, s.bytes.data());
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

TEST_CASE("convert: tiny GPEN, every source format, matches the independently computed tensors") {
  fs::path d = temp_dir();
  std::vector<std::vector<uint8_t>> data_sections;
  for (const char* src : {"gpen_s64.zip.pth", "gpen_s64.legacy.pth", "gpen_s64.safetensors"}) {
    CAPTURE(src);
    fs::path out = d / (std::string(src) + ".gpw");
    ConvertResult r = convert(kCheckpointDir + src, out.string());
    CHECK(r.arch == Arch::gpen);
    CHECK(r.ignored.empty());
    CHECK(r.bytes == fs::file_size(out));
    GpwFile f = GpwFile::open(out.string());
    CHECK(f.arch() == "gpen");
    CHECK(f.config()["size"] == 64);
    CHECK(f.config()["channel_multiplier"] == 1);
    CHECK(f.config()["narrow"].get<double>() == 1.0 / 64);
    CHECK(f.config()["style_dim"] == 8);
    CHECK(f.config()["n_mlp"] == 2);
    CHECK(f.storage_dtype() == DType::f32);
    CHECK(static_cast<int64_t>(r.tensors) == static_cast<int64_t>(f.size()));
    CHECK(r.parameters == f.parameter_count());
    // Same names, shapes and values (to float rounding) as the Python reference; FIR kernels
    // dropped, a demod_q table for every StyledConv (conv1, convs.*) and none for to_rgb.
    check_expected(f, "gpen_s64.expected", 1e-6, 1e-7, true);
    CHECK(f.find("generator.conv1.conv.demod_q"));
    CHECK(f.find("generator.convs.7.conv.demod_q"));
    CHECK_FALSE(f.find("generator.convs.8.conv.demod_q"));
    CHECK_FALSE(f.find("generator.to_rgb1.conv.demod_q"));
    CHECK_FALSE(f.find("generator.to_rgbs.0.conv.demod_q"));
    CHECK_FALSE(f.find("ecd1.0.0.kernel"));
    CHECK(f.at("generator.to_rgbs.3.bias").shape == Shape{3});
    CHECK(f.at("generator.input.input").shape == Shape{1, 4, 4, 8});
    std::vector<uint8_t> all;
    for (const auto& e : f.tensors()) {
      CHECK(e.view.dtype == DType::f32);
      all.insert(all.end(), e.view.as<uint8_t>(), e.view.as<uint8_t>() + e.bytes);
    }
    data_sections.push_back(std::move(all));
  }
  // The three formats hold the same values: the converted data is bit-identical.
  CHECK(data_sections[0] == data_sections[1]);
  CHECK(data_sections[0] == data_sections[2]);
}

TEST_CASE("convert: fp16 / bf16 storage keeps biases, constants and Q tables in fp32") {
  fs::path d = temp_dir();
  for (DType dt : {DType::f16, DType::bf16}) {
    CAPTURE(dtype_name(dt));
    ConvertOptions o;
    o.dtype = dt;
    fs::path out = d / (std::string("tiny_") + dtype_name(dt) + ".gpw");
    convert(kCheckpointDir + "gpen_s64.zip.pth", out.string(), o);
    GpwFile f = GpwFile::open(out.string());
    CHECK(f.storage_dtype() == dt);
    for (const auto& e : f.tensors()) {
      CAPTURE(e.name);
      bool weight = e.view.rank() >= 2 && e.name.size() > 7 && e.name.compare(e.name.size() - 7, 7, ".weight") == 0;
      CHECK(e.view.dtype == (weight ? dt : DType::f32));
    }
    check_expected(f, "gpen_s64.expected", dt == DType::f16 ? 1.0 / 1024 : 1.0 / 128, 1e-6, true);
  }
  ConvertOptions bad;
  bad.dtype = DType::i32;
  CHECK(error_of([&] { convert(kCheckpointDir + "gpen_s64.zip.pth", (d / "x.gpw").string(), bad); }).find("--dtype") !=
        std::string::npos);
}

TEST_CASE("convert: RetinaFace mobilenet0.25 fixtures fold BatchNorm into HWIO convs") {
  fs::path d = temp_dir();
  for (const char* src : {"mnet.zip.pth", "mnet.legacy.pth", "mnet.safetensors"}) {
    CAPTURE(src);
    fs::path out = d / (std::string(src) + ".gpw");
    ConvertResult r = convert(kCheckpointDir + src, out.string());
    CHECK(r.arch == Arch::retinaface);
    GpwFile f = GpwFile::open(out.string());
    CHECK(f.arch() == "retinaface");
    CHECK(f.config()["backbone"] == "mobilenet0.25");
    CHECK(f.size() == 2 * 56);
    check_expected(f, "mnet.expected", 2e-6, 1e-6, false);
    CHECK(f.at("body.stage1.1.0.weight").shape == Shape{3, 3, 1, 8});  // depthwise
    CHECK(f.at("body.stage3.1.3.weight").shape == Shape{1, 1, 256, 256});
    CHECK(f.at("BboxHead.1.conv1x1.bias").shape == Shape{8});
    CHECK_FALSE(f.find("body.stage1.0.1.weight"));  // BN folded away
    for (const auto& e : f.tensors()) CHECK(e.view.dtype == DType::f32);
  }
}

TEST_CASE("convert: the real RetinaFace mobilenet0.25 checkpoint") {
  const std::string path = GPEN_SHARED_DIR "/models/retinaface-mobilenet0.25.pth";
  if (!std::ifstream(path).good()) {
    MESSAGE("skipped: " << path << " is absent");
    return;
  }
  fs::path out = temp_dir() / "mnet_real.gpw";
  auto ck = Checkpoint::open(path);
  ConvertResult r = convert(*ck, out.string());
  CHECK(r.source_format == "pytorch-legacy");
  GpwFile f = GpwFile::open(out.string());
  CHECK(f.size() == 112);
  // Fold recomputed here in double from the checkpoint's own tensors.
  auto fold_check = [&](const std::string& conv, const std::string& bn, int64_t O, int64_t I, int64_t K) {
    CAPTURE(conv);
    auto w = ck->read_f32(*ck->find(conv + ".weight"));
    auto g = ck->read_f32(*ck->find(bn + ".weight"));
    auto b = ck->read_f32(*ck->find(bn + ".bias"));
    auto m = ck->read_f32(*ck->find(bn + ".running_mean"));
    auto v = ck->read_f32(*ck->find(bn + ".running_var"));
    const TensorView& W = f.require(conv + ".weight", Shape{K, K, I, O});
    const TensorView& B = f.require(conv + ".bias", Shape{O});
    for (int64_t o = 0; o < O; ++o) {
      double s = g[o] / std::sqrt(static_cast<double>(v[o]) + 1e-5);
      CHECK(B.f32()[o] == doctest::Approx(b[o] - m[o] * s).epsilon(1e-6));
      for (int64_t i = 0; i < I; ++i)
        for (int64_t k = 0; k < K * K; ++k)
          REQUIRE(W.f32()[(k * I + i) * O + o] == doctest::Approx(w[(o * I + i) * K * K + k] * s).epsilon(1e-6));
    }
  };
  fold_check("body.stage1.0.0", "body.stage1.0.1", 8, 3, 3);
  fold_check("body.stage2.2.0", "body.stage2.2.1", 128, 1, 3);
  fold_check("fpn.merge2.0", "fpn.merge2.1", 64, 64, 3);
  fold_check("ssh3.conv5X5_2.0", "ssh3.conv5X5_2.1", 16, 16, 3);
}

TEST_CASE("convert: a full-size ResNet-50 RetinaFace (generated bf16 safetensors)") {
  std::mt19937 rng(50);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  std::vector<StTensor> ts;
  for (const auto& s : retinaface_layout(RetinaBackbone::resnet50)) {
    StTensor t{s.name, s.integer ? "I64" : "BF16", s.shape, {}};
    int64_t n = 1;
    for (int64_t x : s.shape) n *= x;
    t.bytes.resize(static_cast<size_t>(n) * (s.integer ? 8 : 2));
    if (!s.integer) {
      bool var = s.name.find("running_var") != std::string::npos;
      auto* p = reinterpret_cast<uint16_t*>(t.bytes.data());
      for (int64_t i = 0; i < n; ++i) p[i] = f32_to_bf16(var ? 0.5f + 0.5f * std::fabs(uni(rng)) : uni(rng));
    }
    ts.push_back(std::move(t));
  }
  fs::path in = temp_dir() / "r50.safetensors", out = temp_dir() / "r50.gpw";
  write_safetensors(in, ts);
  auto ck = Checkpoint::open(in.string());
  auto s = summarize(*ck);
  CHECK(s.valid);
  CHECK(s.config["backbone"] == "resnet50");
  ConvertResult r = convert(*ck, out.string());
  CHECK(r.arch == Arch::retinaface);
  GpwFile f = GpwFile::open(out.string());
  CHECK(f.config()["backbone"] == "resnet50");
  CHECK(f.size() == 2 * retinaface_units(RetinaBackbone::resnet50).size());
  auto fold_check = [&](const std::string& conv, const std::string& bn, int64_t O, int64_t I, int64_t K) {
    CAPTURE(conv);
    auto w = ck->read_f32(*ck->find(conv + ".weight"));
    auto g = ck->read_f32(*ck->find(bn + ".weight"));
    auto b = ck->read_f32(*ck->find(bn + ".bias"));
    auto m = ck->read_f32(*ck->find(bn + ".running_mean"));
    auto v = ck->read_f32(*ck->find(bn + ".running_var"));
    const TensorView& W = f.require(conv + ".weight", Shape{K, K, I, O});
    const TensorView& B = f.require(conv + ".bias", Shape{O});
    std::uniform_int_distribution<int64_t> pick_o(0, O - 1), pick_i(0, I - 1), pick_k(0, K * K - 1);
    for (int t = 0; t < 200; ++t) {
      int64_t o = pick_o(rng), i = pick_i(rng), k = pick_k(rng);
      double sc = g[o] / std::sqrt(static_cast<double>(v[o]) + 1e-5);
      REQUIRE(B.f32()[o] == doctest::Approx(b[o] - m[o] * sc).epsilon(1e-6));
      REQUIRE(W.f32()[(k * I + i) * O + o] == doctest::Approx(w[(o * I + i) * K * K + k] * sc).epsilon(1e-6));
    }
  };
  fold_check("body.conv1", "body.bn1", 64, 3, 7);
  fold_check("body.layer1.0.downsample.0", "body.layer1.0.downsample.1", 256, 64, 1);
  fold_check("body.layer3.5.conv2", "body.layer3.5.bn2", 256, 256, 3);
  fold_check("body.layer4.2.conv3", "body.layer4.2.bn3", 2048, 512, 1);
  fold_check("fpn.output3.0", "fpn.output3.1", 256, 2048, 1);
  fold_check("ssh2.conv3X3.0", "ssh2.conv3X3.1", 128, 256, 3);
  auto hw = ck->read_f32(*ck->find("LandmarkHead.2.conv1x1.weight"));
  auto hb = ck->read_f32(*ck->find("LandmarkHead.2.conv1x1.bias"));
  const TensorView& HW = f.require("LandmarkHead.2.conv1x1.weight", Shape{1, 1, 256, 20});
  for (int64_t o = 0; o < 20; ++o) {
    CHECK(f.at("LandmarkHead.2.conv1x1.bias").f32()[o] == hb[o]);
    for (int64_t i = 0; i < 256; ++i) REQUIRE(HW.f32()[i * 20 + o] == hw[o * 256 + i]);
  }
  fs::remove(in);
  fs::remove(out);
}

TEST_CASE("convert: wrong or incomplete checkpoints fail, naming the tensor, and write nothing") {
  fs::path d = temp_dir() / "bad";
  fs::remove_all(d);
  fs::create_directories(d);
  auto ck = Checkpoint::open(kCheckpointDir + "gpen_s64.safetensors");
  const auto all = read_all(*ck);
  auto variant = [&](const std::string& file, const std::function<void(std::vector<StTensor>&)>& edit) {
    auto ts = all;
    edit(ts);
    write_safetensors(d / file, ts);
    return (d / file).string();
  };
  auto drop = [](const std::string& name) {
    return [name](std::vector<StTensor>& ts) {
      ts.erase(std::remove_if(ts.begin(), ts.end(), [&](const StTensor& t) { return t.name == name; }), ts.end());
    };
  };
  const std::string out = (d / "out.gpw").string();
  std::string e = error_of([&] { convert(variant("missing.safetensors", drop("generator.convs.5.activate.bias")), out); });
  CHECK(e.find("missing tensor 'generator.convs.5.activate.bias'") != std::string::npos);
  CHECK(e.find("GPEN size 64") != std::string::npos);
  CHECK(e.find("missing.safetensors") != std::string::npos);
  e = error_of([&] {
    convert(variant("misshaped.safetensors",
                    [](std::vector<StTensor>& ts) {
                      for (auto& t : ts)
                        if (t.name == "ecd2.0.1.weight") t.shape = {8, 4, 2, 9};
                    }),
            out);
  });
  CHECK(e.find("tensor 'ecd2.0.1.weight' has shape [8, 4, 2, 9], expected [8, 8, 3, 3]") != std::string::npos);
  e = error_of([&] {
    convert(variant("int.safetensors",
                    [](std::vector<StTensor>& ts) {
                      for (auto& t : ts)
                        if (t.name == "generator.style.2.bias") t.dtype = "I32";
                    }),
            out);
  });
  CHECK(e.find("'generator.style.2.bias' is int32, expected floating point") != std::string::npos);
  // A missing tensor the configuration depends on.
  e = error_of([&] { convert(variant("noinput.safetensors", drop("generator.input.input")), out); });
  CHECK(e.find("generator.input.input") != std::string::npos);
  // Forced to the wrong architecture.
  ConvertOptions o;
  o.arch = Arch::retinaface;
  CHECK(error_of([&] { convert(kCheckpointDir + "gpen_s64.safetensors", out, o); }).find("backbone not recognised") !=
        std::string::npos);
  CHECK(error_of([&] { convert(kCheckpointDir + "bad_global.pth", out); }).find("argparse.Namespace") != std::string::npos);
  // Nothing but the inputs in the directory: no output, no temporary file.
  for (const auto& entry : fs::directory_iterator(d)) CHECK(entry.path().extension() == ".safetensors");
  // Extra tensors are reported and skipped.
  ConvertResult r = convert(variant("extra.safetensors",
                                    [](std::vector<StTensor>& ts) {
                                      ts.push_back({"generator.noises.noise_0", "F32", {1, 1, 4, 4},
                                                    std::vector<uint8_t>(64, 0)});
                                    }),
                            out);
  CHECK(r.ignored == std::vector<std::string>{"generator.noises.noise_0"});
  CHECK(fs::exists(out));
}

// A checkpoint whose data becomes unreadable after it was opened (a file cut or a disk error
// while converting): the failure surfaces during the write.
class FailingCheckpoint : public Checkpoint {
 public:
  FailingCheckpoint(std::unique_ptr<Checkpoint> inner, std::string fail_on) : inner_(std::move(inner)), fail_on_(std::move(fail_on)) {
    format_ = inner_->format();
    name_ = inner_->name();
    tensors_ = inner_->tensors();
    index_tensors();
  }
  void read_raw(const SourceTensor& t, void* dst) const override {
    if (t.name == fail_on_) throw Error(name_ + ": read failed (simulated)");
    inner_->read_raw(*inner_->find(t.name), dst);
  }

 private:
  std::unique_ptr<Checkpoint> inner_;
  std::string fail_on_;
};

TEST_CASE("convert: a read failure in the middle of writing leaves no file") {
  fs::path d = temp_dir() / "midway";
  fs::remove_all(d);
  fs::create_directories(d);
  FailingCheckpoint ck(Checkpoint::open(kCheckpointDir + "gpen_s64.safetensors"), "ecd3.0.2.bias");
  CHECK(error_of([&] { convert(ck, (d / "out.gpw").string()); }).find("read failed (simulated)") != std::string::npos);
  CHECK(fs::is_empty(d));
  FailingCheckpoint fine(Checkpoint::open(kCheckpointDir + "gpen_s64.safetensors"), "no such tensor");
  convert(fine, (d / "out.gpw").string());
  CHECK(GpwFile::open((d / "out.gpw").string()).size() > 0);
}

namespace {
struct Run {
  int status;
  std::string out;
};
// Runs a command, capturing stdout and stderr together.
Run run(const std::string& cmd) {
  Run r{-1, ""};
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}
}  // namespace

TEST_CASE("cli: gpen info / convert end to end") {
  const std::string gpen = GPEN_BINARY_DIR "/gpen";
  if (!fs::exists(gpen)) {
    MESSAGE("skipped: " << gpen << " is not built");
    return;
  }
  const std::string real = GPEN_SHARED_DIR "/models/retinaface-mobilenet0.25.pth";
  if (fs::exists(real)) {
    Run r = run(gpen + " info --json " + real);
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["arch"] == "retinaface");
    CHECK(j["config"]["backbone"] == "mobilenet0.25");
    CHECK(j["parameters"] == 433296);
    CHECK(j["tensors"] == 300);
    CHECK(j["valid"] == true);
  }
  fs::path d = temp_dir() / "cli";
  fs::remove_all(d);
  fs::create_directories(d);
  const std::string out = (d / "tiny.gpw").string();
  Run c = run(gpen + " convert " + kCheckpointDir + "gpen_s64.zip.pth -o " + out + " --dtype bf16 --key g_ema");
  CHECK(c.status == 0);
  CHECK(c.out.find("gpen") != std::string::npos);
  Run i = run(gpen + " info --json " + out);
  REQUIRE(i.status == 0);
  auto j = nlohmann::json::parse(i.out);
  CHECK(j["arch"] == "gpen");
  CHECK(j["format"] == "gpw");
  CHECK(j["config"]["size"] == 64);
  CHECK(j["storage_dtype"] == "bf16");
  CHECK(j["tensors"] == GpwFile::open(out).size());
  // Bad input: one line on stderr, exit status 1, no output file.
  for (const char* bad : {"bad_os_system.pth", "no_datapkl.zip", "bad_noncontig.pth"}) {
    CAPTURE(bad);
    Run b = run(gpen + " convert " + kCheckpointDir + bad + " -o " + (d / "bad.gpw").string());
    CHECK(b.status == 1);
    CHECK(b.out.rfind("gpen: error: ", 0) == 0);
    CHECK(std::count(b.out.begin(), b.out.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(d / "bad.gpw"));
  }
  Run b = run(gpen + " info " + kCheckpointDir + "gpen_s64.ref.json");
  CHECK(b.status == 1);
  CHECK(b.out.find("not a PyTorch checkpoint") != std::string::npos);
}
