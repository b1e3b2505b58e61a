// RestoreFormer++ and RestoreFormer on the engine against the official network: the checkpoints
// of tests/reference/make_restoreformer_fixtures.py (the released configurations with ch 32, their
// weights rebuilt here from their rule, tests/codeformer_fixture.h's CodeformerWeightRule, under
// the released checkpoint's "vqvae." prefix) converted to .gpw, the raw network run on the CPU in
// fp32 on two degraded aligned faces, batched. The codes picked must be the official ones,
// position for position; the output may differ from the official one by 1e-4 of its largest
// magnitude (float rounding alone moves it by ~3e-6 of it: manifest.json's f64_maxabs_diff),
// checked on the fixture's sixteenth of the pixels. The converted file's layouts, `gpen info` and
// `gpen plan -m` on it in the same case; the memory plan and `gpen plan --arch restoreformer` apart.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "converter/layouts.h"
#include "engine/core/error.h"
#include "engine/models/restoreformer.h"
#include "engine/photo/face_flow.h"
#include "engine/photo/facexlib_flow.h"
#include "engine/photo/image.h"
#include "engine/photo/npy.h"
#include "engine/plan/memory_plan.h"
#include "engine/runtime/backend.h"
#include "tests/codeformer_fixture.h"
#include "tests/restoreformer_fixture.h"
#include "tests/converter_fixtures.h"
#include "tests/facexlib_flow_fixture.h"
#include "kernels/cpu/image_resize.h"
#include "tests/run_command.h"
#include "tests/test_paths.h"
#include "weights/gpw.h"

using namespace gpen;
using namespace gpen_test;
namespace fs = std::filesystem;

namespace {

// The model of `gpw` on the fixture's faces against the variant's official codes and output.
void check_against_official(const std::string& gpw, const std::string& variant) {
  auto backend = make_cpu_backend();
  RestoreformerModel m(gpw, *backend);
  const nlohmann::json mf = restoreformer_manifest()["variants"][variant];
  CHECK(m.config().ch == mf["config"]["ch"].get<int>());
  CHECK(m.config().head_size == mf["config"]["head_size"].get<int>());
  const auto d = run_restoreformer_fixture(m, variant, 2);
  const double scale = mf["max_abs"].get<double>();
  MESSAGE(variant << ": max abs diff " << d.worst << " of max |output| " << scale << ", relative " << d.worst / scale);
  CHECK(d.codes_differ == 0);
  CHECK(d.not_finite == 0);
  CHECK(d.worst <= 1e-4 * scale);
}

// The converted file holds the official tensors in the engine's layouts, without the prefix.
void check_converted_layouts(const std::string& gpw) {
  const GpwFile f = GpwFile::open(gpw);
  const uint64_t seed = restoreformer_manifest()["seed"].get<uint64_t>();
  CHECK(f.arch() == "restoreformer");
  auto at = [&](const std::string& n) {
    const TensorView* v = f.find(n);
    REQUIRE_MESSAGE(v != nullptr, "missing converted tensor " << n);
    REQUIRE(v->dtype == DType::f32);
    return static_cast<const float*>(v->data);
  };
  // A 3x3 conv OIHW [128][64][3][3] -> HWIO: element (o, i, y, x) at ((y * 3 + x) * 64 + i) * 128 + o.
  const std::string conv = "encoder.down.3.block.0.conv1.weight";
  const gpen_test::CodeformerWeightRule cw(conv, {128, 64, 3, 3}, seed);
  REQUIRE(f.find(conv) != nullptr);
  CHECK(f.find(conv)->shape == Shape{3, 3, 64, 128});
  for (int64_t o : {0, 7, 127})
    for (int64_t i : {0, 33, 63})
      for (int64_t k : {0, 4, 8}) CHECK(at(conv)[(k * 64 + i) * 128 + o] == cw(static_cast<uint64_t>((o * 64 + i) * 9 + k)));
  // A MultiHeadAttnBlock's q, k, v 1x1 convs as the rows of one [3C, C] in-projection.
  const std::string p = "decoder.up.4.attn.1";
  const int64_t C = 128;
  CHECK(f.find(p + ".in_proj_weight")->shape == (Shape{3 * C, C}));
  CHECK(f.find(p + ".q.weight") == nullptr);
  const char* parts[] = {".q", ".k", ".v"};
  for (int part = 0; part < 3; ++part) {
    const gpen_test::CodeformerWeightRule w(p + parts[part] + ".weight", {C, C, 1, 1}, seed);
    const gpen_test::CodeformerWeightRule b(p + parts[part] + ".bias", {C}, seed);
    for (int64_t e : {int64_t{0}, int64_t{1234}, C * C - 1}) CHECK(at(p + ".in_proj_weight")[part * C * C + e] == w(static_cast<uint64_t>(e)));
    CHECK(at(p + ".in_proj_bias")[part * C + 3] == b(3));
  }
  CHECK(f.find(p + ".norm2.weight") != nullptr);                 // the decoder's queries are normalised by it
  CHECK(f.find("encoder.mid.attn_1.norm2.weight") == nullptr);   // the encoder never uses it
  CHECK(f.find("quantize.embedding.weight")->shape == (Shape{1024, 256}));
  CHECK(f.find("quant_conv.weight")->shape == (Shape{1, 1, 256, 256}));
}

}  // namespace

TEST_CASE("RestoreFormer++ converted from the official layout picks the official codes and matches the official output") {
  const std::string gpw = converted_restoreformer_fixture("rfpp");
  check_converted_layouts(gpw);
  {
    std::string out;
    const std::string gpen = gpen_test::binary_dir() + "/gpen";
    REQUIRE(gpen_test::run(gpen + " info " + gpw + " --json", &out) == 0);
    const auto info = nlohmann::json::parse(out);
    CHECK(info["arch"] == "restoreformer");
    CHECK(info["model"] == "RestoreFormer++ 512");
    CHECK(info["config"]["ch"] == 32);
    CHECK(info["config"]["head_size"] == 4);
    CHECK(info["config"]["attn_resolutions"] == nlohmann::json::array({16, 32}));
    REQUIRE(gpen_test::run(gpen + " plan --arch restoreformer -m " + gpw + " --json", &out) == 0);
    CHECK(nlohmann::json::parse(out)["arena_bytes"].get<size_t>() > 0);
  }
  check_against_official(gpw, "rfpp");
}

TEST_CASE("RestoreFormer (8 heads, no attention at 32 x 32) picks the official codes and matches the official output") {
  const std::string gpw = converted_restoreformer_fixture("rf");
  CHECK(GpwFile::open(gpw).config()["variant"] == "RestoreFormer");
  check_against_official(gpw, "rf");
}

TEST_CASE("RestoreFormer++'s memory plan puts every intermediate in one arena, smaller than all of them") {
  auto backend = make_cpu_backend();
  RestoreformerNetConfig c;
  c.batch = 2;
  const RestoreformerGraph rg = build_restoreformer_graph(c);
  const MemoryPlan p = plan_memory(rg.graph, planned_on(*backend));
  CHECK(p.arena_bytes > 0);
  CHECK(p.arena_bytes < p.naive_bytes);
  CHECK(p.arena_bytes >= p.lower_bound_bytes);
  CHECK(p.workspace_bytes > 0);  // the attention's scores and the convs' tiles
  CHECK(rg.graph.tensor(rg.indices).dtype == DType::i32);
  CHECK(rg.graph.tensor(rg.indices).shape == (Shape{2, 16, 16}));
  // RestoreFormer (no attention at 32 x 32) has three attention blocks fewer.
  auto attentions = [](const Graph& g) {
    return std::count_if(g.nodes().begin(), g.nodes().end(),
                         [](const Node& n) { return std::holds_alternative<AttentionParams>(n.params); });
  };
  RestoreformerNetConfig v1;
  v1.head_size = 8;
  v1.ex_multi_scale_num = 0;
  CHECK(attentions(rg.graph) == 2 + 1 + 1 + 3 + 3);  // encoder 16 x 16 and mid, decoder mid, 16 and 32
  CHECK(attentions(build_restoreformer_graph(v1).graph) == attentions(rg.graph) - 3);
}

TEST_CASE("RestoreformerModel refuses a .gpw of another model and bad configurations") {
  auto backend = make_cpu_backend();
  auto ck = conv::Checkpoint::open(gpen_test::fixture_dir() + "/checkpoints/gpen_s64.zip.pth");
  const auto gpw = restoreformer_temp_dir() / "gpen_s64.gpw";
  conv::convert(*ck, gpw.string());
  const std::string e = gpen_test::error_of([&] { RestoreformerModel m(gpw.string(), *backend); });
  CHECK(e.find("not RestoreFormer") != std::string::npos);
  CHECK(e.find(gpw.string()) != std::string::npos);
  RestoreformerNetConfig c;
  c.ch = 48;  // not a multiple of GroupNorm's 32 groups
  CHECK_THROWS_AS(build_restoreformer_graph(c), Error);
  c = RestoreformerNetConfig{};
  c.head_size = 3;  // 512 channels do not split into 3 heads
  CHECK_THROWS_AS(build_restoreformer_graph(c), Error);
  c = RestoreformerNetConfig{};
  c.ex_multi_scale_num = 2;
  CHECK_THROWS_AS(build_restoreformer_graph(c), Error);
}

TEST_CASE("gpen plan --arch restoreformer reports the released configuration's plan") {
  std::string out;
  const std::string gpen = gpen_test::binary_dir() + "/gpen";
  REQUIRE(gpen_test::run(gpen + " plan --arch restoreformer --batch 2 --json", &out) == 0);
  const auto j = nlohmann::json::parse(out);
  CHECK(j["arch"] == "restoreformer");
  CHECK(j["model"] == "RestoreFormer++ 512");
  CHECK(j["size"] == 512);
  CHECK(j["batch"] == 2);
  CHECK(j["gflop"].get<double>() > 0);
  CHECK(j["arena_bytes"].get<size_t>() >= j["lower_bound_bytes"].get<size_t>());
  CHECK(gpen_test::run(gpen + " plan --arch restoreformer --size 256 --json", &out) != 0);
  // fp16 (a device's precision when asked): every weight and activation in 16 bits, half the bytes.
  REQUIRE(gpen_test::run(gpen + " plan --arch restoreformer --batch 2 --precisions fp32,fp16 --json", &out) == 0);
  const auto s = nlohmann::json::parse(out);
  REQUIRE(s["batches"].size() == 2);
  CHECK(s["batches"][0]["arena_bytes"] == j["arena_bytes"]);
  CHECK(s["batches"][1]["precision"] == "fp16");
  CHECK(2 * s["batches"][1]["weights_bytes"].get<size_t>() == s["batches"][0]["weights_bytes"].get<size_t>());
  // The arena halves but for the planner's alignment of each buffer's offset.
  CHECK(s["batches"][1]["arena_bytes"].get<double>() / s["batches"][0]["arena_bytes"].get<double>() ==
        doctest::Approx(0.5).epsilon(0.01));
}

// RestoreFormer.enhance (the official inference.py's) is GFPGANer.enhance's facexlib flow with this
// network, so `gpen restore` runs a RestoreFormer .gpw through that flow: checked here against the
// model's own output through facexlib's steps (the flow itself is checked against the official
// code in test_gfpgan_flow).
TEST_CASE("gpen restore with a RestoreFormer++ model: aligned crops and photos through GFPGANer's flow") {
  const std::string gpw = converted_restoreformer_fixture("rfpp");
  const fs::path dir = restoreformer_temp_dir() / "restore";
  fs::create_directories(dir);
  CHECK(gpen::face_flow_of_file(gpw) == gpen::FaceFlow::restoreformer);
  const std::string gpen = gpen_test::binary_dir() + "/gpen --threads 1 restore -m " + gpw + " ";
  const std::string face = gpen_test::shared_dir() + "/images/ffhq_lq_00002.png";
  std::string log;
  REQUIRE_MESSAGE(gpen_test::run(gpen + "--aligned " + face + " -o " + (dir / "aligned.png").string(), &log) == 0, log);
  // has_aligned=True: cv2.resize to 512, the network, tensor2img.
  auto backend = gpen::make_cpu_backend();
  gpen::RestoreformerModel net(gpw, *backend);
  const gpen::Image crop = gpen::resize_bilinear(gpen::read_image(face), 512, 512);
  std::vector<float> x(512 * 512 * 3), y(x.size());
  gpen::facexlib_input(crop, x.data());
  net.run(x.data(), 1, y.data());
  CHECK(gpen::read_image((dir / "aligned.png").string()).bgr == gpen::facexlib_output(y.data(), 512).bgr);
  // A photo: GFPGAN's options are its own, CodeFormer's refused by name.
  const std::string det = gpen_test::facexlib_detector_gpw(dir);
  const std::string photo = gpen_test::shared_dir() + "/images/kids_1024x768.jpg";
  REQUIRE_MESSAGE(gpen_test::run(gpen + "-d " + det + " " + photo + " --only-center-face -o " +
                                     (dir / "photo.png").string() + " --report " + (dir / "r.json").string(),
                                 &log) == 0,
                  log);
  std::ifstream rs(dir / "r.json");
  const nlohmann::json rep = nlohmann::json::parse(rs);
  CHECK(rep["images"][0]["faces_restored"] == 1);
  const gpen::Image out = gpen::read_image((dir / "photo.png").string()), in = gpen::read_image(photo);
  CHECK(out.width == in.width);
  CHECK(out.bgr != in.bgr);
  CHECK(gpen_test::run(gpen + "-d " + det + " " + photo + " --fidelity 0.7 -o " + (dir / "never.png").string(), &log) != 0);
  CHECK(log.find("--fidelity is an option of CodeFormer models") != std::string::npos);
  CHECK(!fs::exists(dir / "never.png"));
}
