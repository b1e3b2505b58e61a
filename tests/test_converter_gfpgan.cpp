// GFPGANv1Clean layouts and conversion: the released models' layout against the official class's
// state dict (tests/fixtures/gfpgan/layout_official.json: names, shapes, order, 87,143,276
// parameters), the configuration inferred from shapes, the random-weight checkpoints of
// tests/reference/make_gfpgan_fixtures.py converted to .gpw with every rewritten tensor checked
// element by element, and refusals naming the tensor at fault.
#include <doctest/doctest.h>

#include <tuple>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "converter/checkpoint.h"
#include "converter/convert.h"
#include "converter/fetch/fetch.h"
#include "converter/layouts.h"
#include "converter/synthetic_checkpoint.h"
#include "tests/layout_shapes.h"
#include "engine/core/error.h"
#include "tests/converter_fixtures.h"
#include "tests/test_paths.h"
#include "weights/gpw.h"

using namespace gpen;
using namespace gpen::conv;
using gpen_test::error_of;
using gpen_test::shapes_of;
namespace fs = std::filesystem;

namespace {

nlohmann::json read_json(const std::string& p) {
  std::ifstream f(p);
  REQUIRE_MESSAGE(f.good(), "missing fixture " << p << " (run tests/reference/make_gfpgan_fixtures.py)");
  return nlohmann::json::parse(f);
}

std::string gfpgan_dir() { return gpen_test::fixture_dir() + "/gfpgan/"; }

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("gpen_test_gfpgan_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

const float* f32(const GpwFile& f, const std::string& n) {
  const TensorView* v = f.find(n);
  REQUIRE_MESSAGE(v != nullptr, "missing converted tensor " << n);
  REQUIRE(v->dtype == DType::f32);
  return static_cast<const float*>(v->data);
}

}  // namespace

TEST_CASE("the GFPGANv1Clean layout of the released models is the official state dict") {
  const nlohmann::json j = read_json(gfpgan_dir() + "layout_official.json");
  const GfpganConfig c;  // defaults: the released clean models
  const std::vector<TensorSpec> mine = gfpgan_layout(c);
  const auto& tensors = j.at("tensors");
  REQUIRE(mine.size() == tensors.size());
  int64_t n = 0;
  for (size_t i = 0; i < mine.size(); ++i) {
    CAPTURE(i);
    CHECK(mine[i].name == tensors[i][0].get<std::string>());
    CHECK(mine[i].shape == tensors[i][1].get<std::vector<int64_t>>());
    int64_t k = 1;
    for (int64_t d : mine[i].shape) k *= d;
    n += k;
  }
  CHECK(n == 87143276);
  CHECK(n == j.at("parameters").get<int64_t>());
  const Recognition r = recognize(shapes_of(mine));
  CHECK(r.arch == Arch::gfpgan);
  const auto& args = j.at("args");
  CHECK(r.gfpgan.out_size == args.at("out_size").get<int>());
  CHECK(r.gfpgan.num_style_feat == args.at("num_style_feat").get<int>());
  CHECK(r.gfpgan.channel_multiplier == args.at("channel_multiplier").get<double>());
  CHECK(r.gfpgan.narrow == args.at("narrow").get<double>());
  CHECK(r.gfpgan.num_mlp == args.at("num_mlp").get<int>());
  CHECK(r.gfpgan.different_w == args.at("different_w").get<bool>());
  CHECK(r.gfpgan.sft_half == args.at("sft_half").get<bool>());
  CHECK(r.gfpgan.input_is_latent == args.at("input_is_latent").get<bool>());
  CHECK(validate_layout(r.layout, shapes_of(mine)).empty());
  CHECK(GfpganConfig::from_json(r.config).to_json() == r.config);
  CHECK(gfpgan_model_name(r.gfpgan) == "GFPGANv1Clean 512");
  CHECK(parse_arch("gfpgan") == Arch::gfpgan);
  CHECK(std::string(arch_name(Arch::gfpgan)) == "gfpgan");
}

TEST_CASE("GFPGAN configurations come back from their shapes") {
  for (bool dw : {false, true})
    for (bool half : {false, true})
      for (int size : {16, 64, 256, 512}) {
        GfpganConfig c;
        c.out_size = size;
        c.num_style_feat = 24;
        c.narrow = 1.0 / 16;
        c.channel_multiplier = 1;
        c.num_mlp = 3;
        c.different_w = dw;
        c.sft_half = half;
        CAPTURE(dw);
        CAPTURE(half);
        CAPTURE(size);
        const Recognition r = recognize(shapes_of(gfpgan_layout(c)));
        REQUIRE(r.arch == Arch::gfpgan);
        CHECK(r.gfpgan.out_size == size);
        CHECK(r.gfpgan.num_style_feat == 24);
        CHECK(r.gfpgan.narrow == 1.0 / 16);
        if (size >= 64) CHECK(r.gfpgan.channel_multiplier == 1);
        CHECK(r.gfpgan.num_mlp == 3);
        CHECK(r.gfpgan.different_w == dw);
        CHECK(r.gfpgan.sft_half == half);
      }
}

TEST_CASE("bad GFPGAN state dicts are refused naming the tensor") {
  const ShapeMap m = shapes_of(gfpgan_layout(GfpganConfig{}));
  {
    ShapeMap b = m;
    b["final_linear.weight"] = {1000, 4096};
    const std::string e = error_of([&] { recognize(b); });
    CHECK(e.find("final_linear.weight") != std::string::npos);
  }
  {
    ShapeMap b = m;
    b["condition_shift.3.2.weight"] = {256, 255, 3, 3};
    const Recognition r = recognize(b);
    const std::string e = error_of([&] { validate_layout(r.layout, b); });
    CHECK(e.find("condition_shift.3.2.weight") != std::string::npos);
    CHECK(e.find("[256, 256, 3, 3]") != std::string::npos);
  }
  {
    ShapeMap b = m;
    b.erase("stylegan_decoder.noises.noise9");
    const Recognition r = recognize(b);
    CHECK(error_of([&] { validate_layout(r.layout, b); }).find("missing tensor 'stylegan_decoder.noises.noise9'") !=
          std::string::npos);
  }
  {
    ShapeMap b = m;
    b.erase("stylegan_decoder.constant_input.weight");
    CHECK(error_of([&] { recognize(b); }).find("lacks tensor 'stylegan_decoder.constant_input.weight'") !=
          std::string::npos);
  }
}

TEST_CASE("the released GFPGAN layout plans its conversion: the tensors the engine runs") {
  // A checkpoint object that only names tensors: plan_conversion reads no data until write().
  struct Shapes : SyntheticCheckpoint {
    explicit Shapes(const std::vector<TensorSpec>& layout) : SyntheticCheckpoint(layout, "shapes") {}
    void read_raw(const SourceTensor&, void*) const override { throw Error("not read"); }
  };
  const Shapes ck(gfpgan_layout(GfpganConfig{}));
  ConversionPlan plan = plan_conversion(ck);
  CHECK(plan.info.arch == Arch::gfpgan);
  // 285 official tensors, less 14 toRGB heads and 16 style-MLP tensors, plus one demodulation
  // table per 3x3 StyleConv (15).
  CHECK(plan.info.tensors == 285 - 14 - 16 + 15);
  int64_t dropped = 0, demod = 0;
  for (const auto& s : gfpgan_layout(GfpganConfig{})) {
    int64_t k = 1;
    for (int64_t d : s.shape) k *= d;
    if (s.name.rfind("toRGB.", 0) == 0 || s.name.find(".style_mlp.") != std::string::npos) dropped += k;
    if (s.shape.size() == 5 && s.shape[3] == 3) demod += s.shape[1] * s.shape[2];
  }
  CHECK(dropped == 8 * (512 * 512 + 512) + 3 * (4 * 256 + 128 + 64 + 32) + 7 * 3);
  CHECK(plan.info.parameters == 87143276 - dropped + demod);
}

TEST_CASE("GFPGAN checkpoints in the official layout convert to the engine's conventions") {
  const nlohmann::json man = read_json(gfpgan_dir() + "manifest.json");
  for (const char* cfg : {"s64", "s32"}) {
    CAPTURE(cfg);
    const std::string pth = gfpgan_dir() + cfg + "/checkpoint.pth";
    auto ck = Checkpoint::open(pth);
    CHECK(ck->selected_key() == "params_ema");
    const CheckpointSummary s = summarize(*ck);
    REQUIRE_MESSAGE(s.valid, s.problem);
    CHECK(s.arch == Arch::gfpgan);
    const auto& args = man.at("configs").at(cfg).at("args");
    for (const char* k : {"out_size", "num_style_feat", "narrow", "different_w", "sft_half"})
      CHECK(s.config.at(k) == args.at(k));
    if (args.at("out_size").get<int>() >= 64) CHECK(s.config.at("channel_multiplier") == args.at("channel_multiplier"));

    const fs::path out = temp_dir() / (std::string(cfg) + ".gpw");
    const ConvertResult r = convert(*ck, out.string());
    const GfpganConfig c = GfpganConfig::from_json(r.config);
    const GpwFile f = GpwFile::open(out.string());
    CHECK(f.arch() == "gfpgan");
    auto src = [&](const std::string& n) { return ck->read_f32(*ck->find(n)); };
    // Plain conv: OIHW -> HWIO.
    {
      const std::string n = "conv_body_down.1.conv2.weight";
      const auto w = src(n);
      const auto& sh = ck->find(n)->shape;
      const int64_t O = sh[0], I = sh[1];
      const float* d = f32(f, n);
      for (int64_t o = 0; o < O; ++o)
        for (int64_t i = 0; i < I; ++i)
          for (int64_t k = 0; k < 9; ++k) REQUIRE(d[(k * I + i) * O + o] == w[static_cast<size_t>((o * I + i) * 9 + k)]);
    }
    // Modulated conv: HWIO and its demodulation table sum_k W^2.
    {
      const std::string n = "stylegan_decoder.style_convs.2.modulated_conv.weight";
      const auto w = src(n);
      const auto& sh = ck->find(n)->shape;
      const int64_t O = sh[1], I = sh[2];
      const float* d = f32(f, n);
      const float* q = f32(f, "stylegan_decoder.style_convs.2.modulated_conv.demod_q");
      for (int64_t o = 0; o < O; ++o)
        for (int64_t i = 0; i < I; ++i) {
          double acc = 0;
          for (int64_t k = 0; k < 9; ++k) {
            const float v = w[static_cast<size_t>((o * I + i) * 9 + k)];
            REQUIRE(d[(k * I + i) * O + o] == v);
            acc += static_cast<double>(v) * v;
          }
          REQUIRE(q[o * I + i] == doctest::Approx(acc).epsilon(1e-6));
        }
      CHECK(f.find("stylegan_decoder.to_rgbs.0.modulated_conv.demod_q") == nullptr);
    }
    // final_linear: columns (c, y, x) -> (y, x, c).
    {
      const auto w = src("final_linear.weight");
      const auto& sh = ck->find("final_linear.weight")->shape;
      const int64_t O = sh[0], In = sh[1], C = In / 16;
      CHECK(O == (c.different_w ? c.num_latent() : 1) * c.num_style_feat);
      const float* d = f32(f, "final_linear.weight");
      for (int64_t o = 0; o < O; ++o)
        for (int64_t ch = 0; ch < C; ++ch)
          for (int64_t p = 0; p < 16; ++p) REQUIRE(d[o * In + p * C + ch] == w[static_cast<size_t>(o * In + ch * 16 + p)]);
    }
    // Constant input NCHW -> NHWC; noise buffers and StyleConv biases keep their element order.
    {
      const auto w = src("stylegan_decoder.constant_input.weight");
      const int64_t C = c.channels(4);
      const float* d = f32(f, "stylegan_decoder.constant_input.weight");
      for (int64_t ch = 0; ch < C; ++ch)
        for (int64_t p = 0; p < 16; ++p) REQUIRE(d[p * C + ch] == w[static_cast<size_t>(ch * 16 + p)]);
      const std::string last = "stylegan_decoder.noises.noise" + std::to_string(c.num_layers() - 1);
      const TensorView* nv = f.find(last);
      REQUIRE(nv != nullptr);
      CHECK(nv->shape.rank == 2);
      CHECK(nv->shape.d[0] == c.out_size);
      CHECK(std::memcmp(nv->data, src(last).data(), 4 * static_cast<size_t>(c.out_size * c.out_size)) == 0);
      CHECK(f.find("stylegan_decoder.style_convs.0.bias")->shape.rank == 1);
    }
    // Not written: the training-only RGB heads and, with input_is_latent, the style MLP.
    CHECK(f.find("toRGB.0.weight") == nullptr);
    CHECK(f.find("stylegan_decoder.style_mlp.1.weight") == nullptr);
  }
  std::error_code ec;
  fs::remove_all(temp_dir(), ec);
}

TEST_CASE("gpen fetch knows CodeFormer, RestoreFormer++, facexlib's parsing_parsenet and RealESRGAN at the links their official code downloads") {
  const fetch::ModelInfo* cf = fetch::find_model("CodeFormer");
  REQUIRE(cf != nullptr);
  CHECK(cf->expect.arch == Arch::codeformer);
  CHECK(fetch::model_url(*cf, "") == "https://github.com/sczhou/CodeFormer/releases/download/v0.1.0/codeformer.pth");
  const fetch::ModelInfo* pn = fetch::find_model("parsing_parsenet");
  REQUIRE(pn != nullptr);
  CHECK(pn->expect.arch == Arch::parsenet);
  CHECK(fetch::model_url(*pn, "") == "https://github.com/xinntao/facexlib/releases/download/v0.2.2/parsing_parsenet.pth");
  for (const auto& [name, scale, url] :
       {std::tuple<const char*, int, const char*>{
            "RealESRGAN_x2plus", 2, "https://github.com/sczhou/CodeFormer/releases/download/v0.1.0/RealESRGAN_x2plus.pth"},
        {"RealESRGAN_x4plus", 4, "https://github.com/xinntao/Real-ESRGAN/releases/download/v0.1.0/RealESRGAN_x4plus.pth"}}) {
    const fetch::ModelInfo* m = fetch::find_model(name);
    REQUIRE(m != nullptr);
    CHECK(m->expect.arch == Arch::realesrnet);
    CHECK(m->expect.sr_scale == scale);
    CHECK(m->expect.sr_feat == 64);
    CHECK(fetch::model_url(*m, "") == url);
  }
  for (const char* name : {"RestoreFormer++", "RestoreFormer"}) {
    const fetch::ModelInfo* m = fetch::find_model(name);
    REQUIRE(m != nullptr);
    CHECK(m->expect.arch == Arch::restoreformer);
    CHECK(fetch::model_url(*m, "") ==
          std::string("https://github.com/wzhouxiff/RestoreFormerPlusPlus/releases/download/v1.0.0/") + name + ".ckpt");
  }
  // A GFPGAN checkpoint is refused as CodeFormer, naming what it holds.
  const std::string gfp = error_of([&] { fetch::verify(gfpgan_dir() + "s64/checkpoint.pth", *cf, ""); });
  CHECK(gfp.find("not CodeFormer: it holds a gfpgan model") != std::string::npos);
}

TEST_CASE("gpen fetch knows GFPGANv1.4, GFPGANv1.3 and GFPGANCleanv1-NoCE-C2 at the official release links") {
  const std::pair<const char*, const char*> want[] = {
      {"GFPGANv1.4", "https://github.com/TencentARC/GFPGAN/releases/download/v1.3.0/GFPGANv1.4.pth"},
      {"GFPGANv1.3", "https://github.com/TencentARC/GFPGAN/releases/download/v1.3.0/GFPGANv1.3.pth"},
      {"GFPGANCleanv1-NoCE-C2", "https://github.com/TencentARC/GFPGAN/releases/download/v0.2.0/GFPGANCleanv1-NoCE-C2.pth"}};
  for (const auto& [name, url] : want) {
    CAPTURE(name);
    const fetch::ModelInfo* m = fetch::find_model(name);
    REQUIRE(m != nullptr);
    CHECK(m->supported);
    CHECK(m->expect.arch == Arch::gfpgan);
    CHECK(fetch::model_url(*m, "") == url);
    CHECK(fetch::model_url(*m, "http://mirror/x/") == std::string("http://mirror/x/") + name + ".pth");
  }
  // A download is accepted only as the released configuration: the small fixture model is a
  // GFPGANv1Clean too, but not the 512 one, and a GPEN checkpoint is another architecture.
  const fetch::ModelInfo& v14 = *fetch::find_model("GFPGANv1.4");
  const std::string small = error_of([&] { fetch::verify(gfpgan_dir() + "s64/checkpoint.pth", v14, ""); });
  CHECK(small.find("not GFPGANv1.4: it holds GFPGAN") != std::string::npos);
  CHECK(small.find("\"out_size\":64") != std::string::npos);
  const std::string gpen =
      error_of([&] { fetch::verify(gpen_test::fixture_dir() + "/checkpoints/gpen_s64.legacy.pth", v14, ""); });
  CHECK(gpen.find("not GFPGANv1.4: it holds a gpen model") != std::string::npos);
}
