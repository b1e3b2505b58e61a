// ParseNet: the converter (recognition, BatchNorm folding, refusals) and the engine graph against
// the PyTorch re-creation (tests/reference/parsenet_reference.py) on the same random weights in
// the official ParseNet-latest layout: logits and class maps at 64x64 and 48x80 on the CPU.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "converter/checkpoint.h"
#include "converter/convert.h"
#include "converter/layouts.h"
#include "engine/models/parsenet.h"
#include "engine/photo/npy.h"
#include "engine/plan/memory_plan.h"
#include "kernels/cpu/ops.h"
#include "tests/parsenet_fixture.h"
#include "weights/gpw.h"

using namespace gpen;
namespace fs = std::filesystem;

TEST_CASE("ParseNet layout: the official tensors, 21.30 M learnable parameters, refusals") {
  const auto layout = conv::parsenet_layout();
  // 238 tensors: 36 convs with a BatchNorm (weight + 5 BatchNorm tensors each), 11 with a bias (2 each).
  CHECK(layout.size() == 238);
  int64_t learnable = 0;
  conv::ShapeMap shapes;
  for (const auto& t : layout) {
    shapes[t.name] = t.shape;
    if (t.integer || t.name.find("running_") != std::string::npos) continue;
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    learnable += n;
  }
  CHECK(learnable == 21303254);
  const conv::Recognition r = conv::recognize(shapes);
  CHECK(r.arch == conv::Arch::parsenet);
  CHECK(r.config["parsing_ch"] == 19);
  CHECK(conv::validate_layout(r.layout, shapes).empty());
  auto bad = shapes;
  bad["decoder.2.conv1.conv2d.weight"] = {128, 256, 3, 1};
  CHECK_THROWS_WITH_AS(conv::validate_layout(r.layout, bad),
                       "tensor 'decoder.2.conv1.conv2d.weight' has shape [128, 256, 3, 1], expected [128, 256, 3, 3]",
                       Error);
  bad = shapes;
  bad.erase("body.7.conv2.norm.norm.running_var");
  CHECK_THROWS_WITH_AS(conv::validate_layout(r.layout, bad),
                       "missing tensor 'body.7.conv2.norm.norm.running_var' (expected shape [256])", Error);
  CHECK(conv::parse_arch("parsenet") == conv::Arch::parsenet);
}

TEST_CASE("ParseNet graph: shapes, cost of a 512 face, sizes refused") {
  const ParseNetGraph pg = build_parsenet_graph(512, 512);
  CHECK(pg.graph.tensor(pg.logits).shape == (Shape{1, 512, 512, 19}));
  // gpen-semantics.md: 234.0 GMAC without out_img_conv.
  CHECK(graph_flops(pg.graph) / 2 == doctest::Approx(234.0e9).epsilon(0.002));
  const ParseNetGraph g2 = build_parsenet_graph(48, 80, 2, true);
  CHECK(g2.graph.tensor(g2.logits).shape == (Shape{2, 48, 80, 19}));
  CHECK(g2.graph.tensor(g2.image).shape == (Shape{2, 48, 80, 3}));
  CHECK_THROWS_WITH_AS(build_parsenet_graph(40, 64), doctest::Contains("must be a multiple of 16"), Error);
  CHECK_THROWS_AS(build_parsenet_graph(16, 16), Error);
}

TEST_CASE("ParseNet on the CPU matches PyTorch on the same weights (64x64, 48x80)") {
  std::string why;
  const std::string dir = parsenet_test::parsenet_cache(&why);
  if (dir.empty()) {
    MESSAGE("skipped: " << why);
    return;
  }
  // The converter: architecture, every tensor, BatchNorm folded (no norm tensors stored).
  const auto ck = conv::Checkpoint::open(dir + "/parsenet_seed1.pth");
  const conv::CheckpointSummary s = conv::summarize(*ck);
  CHECK(s.arch == conv::Arch::parsenet);
  CHECK(s.valid);
  CHECK(s.tensors == 238);
  CHECK(s.parameters == 21319894);  // learnable + BatchNorm running statistics (docs/weights-format.md)
  const GpwFile f = GpwFile::open(dir + "/parsenet_seed1.gpw");
  CHECK(f.arch() == "parsenet");
  CHECK(f.tensors().size() == 2 * 47);  // weight + bias of each of the 47 convs
  int64_t stored = 0;
  for (const auto& e : f.tensors()) {
    CHECK(e.name.find("norm") == std::string::npos);
    stored += e.view.numel();
  }
  CHECK(stored == 21294934);
  // One fold by hand: encoder.1.conv1 (no conv bias), output channel 5, tap (1, 2), input 7.
  {
    auto rd = [&](const std::string& n) { return ck->read_f32(*ck->find(n)); };
    const auto w = rd("encoder.1.conv1.conv2d.weight");
    const auto g = rd("encoder.1.conv1.norm.norm.weight"), b = rd("encoder.1.conv1.norm.norm.bias");
    const auto m = rd("encoder.1.conv1.norm.norm.running_mean"), v = rd("encoder.1.conv1.norm.norm.running_var");
    const double sc = g[5] / std::sqrt(static_cast<double>(v[5]) + 1e-5);
    const TensorView* fw = nullptr;
    const TensorView* fb = nullptr;
    for (const auto& e : f.tensors()) {
      if (e.name == "encoder.1.conv1.conv2d.weight") fw = &e.view;
      if (e.name == "encoder.1.conv1.conv2d.bias") fb = &e.view;
    }
    REQUIRE(fw);
    REQUIRE(fb);
    CHECK(fw->shape == (Shape{3, 3, 64, 128}));
    CHECK(fw->f32()[((1 * 3 + 2) * 64 + 7) * 128 + 5] == static_cast<float>(w[((5 * 64 + 7) * 3 + 1) * 3 + 2] * sc));
    CHECK(fb->f32()[5] == static_cast<float>(b[5] - m[5] * sc));
  }

  auto backend = make_cpu_backend();
  ParseNetModel net(dir + "/parsenet_seed1.gpw", *backend);
  for (const std::string hw : {"64x64", "48x80"}) {
    CAPTURE(hw);
    const std::string cd = dir + "/cases/" + hw;
    const npy::Array in = npy::load(cd + "/input.npy"), want = npy::load(cd + "/logits.npy");
    const npy::Array labels = npy::load(cd + "/labels.npy"), mask = npy::load(cd + "/mask.npy");
    const int h = static_cast<int>(in.shape[1]), w = static_cast<int>(in.shape[2]);
    std::vector<float> got(static_cast<size_t>(want.numel()));
    net.run(in.data<float>(), h, w, got.data());
    // Logits: the engine sums in another order (folded BN, blocked GEMM); relative to the range.
    double maxabs = 0, range = 0;
    const float* ref = want.data<float>();
    for (size_t i = 0; i < got.size(); ++i) {
      maxabs = std::max(maxabs, std::fabs(static_cast<double>(got[i]) - ref[i]));
      range = std::max(range, std::fabs(static_cast<double>(ref[i])));
    }
    MESSAGE(hw << ": max |logit diff| " << maxabs << " of range " << range);
    CHECK(maxabs <= 1e-4 * range);
    std::vector<uint8_t> lab(static_cast<size_t>(h) * w), msk(lab.size());
    net.parse(in.data<float>(), h, w, lab.data(), msk.data());
    size_t same = 0, same_mask = 0, classes = 0;
    std::vector<int> seen(19, 0);
    for (size_t i = 0; i < lab.size(); ++i) {
      same += lab[i] == labels.data<uint8_t>()[i];
      same_mask += msk[i] == mask.data<uint8_t>()[i];
      if (!seen[lab[i]]++) ++classes;
    }
    const double agree = static_cast<double>(same) / lab.size();
    MESSAGE(hw << ": class map identical on " << agree * 100 << " % of pixels, " << classes << " classes present");
    CHECK(agree >= 0.999);
    CHECK(static_cast<double>(same_mask) / lab.size() >= 0.999);
    CHECK(classes >= 5);  // the random weights give a map worth comparing
  }
  // The 512 plan: what `gpen plan --arch parsenet` reports.
  net.prepare(512, 512);
  CHECK(net.plan().arena_bytes > 0);
  CHECK(net.plan().arena_bytes >= net.plan().lower_bound_bytes);
}
