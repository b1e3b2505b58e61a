// ParseNet against the PyTorch re-creation (tests/reference/parsenet_reference.py) on the same
// random weights in the official ParseNet-latest layout: the converted file (BatchNorm folded,
// one fold checked by hand), logits and class maps at 64x64 and 48x80 on the CPU. The checkpoint
// (85 MB) is generated at test time (tests/parsenet_fixture.h), about a minute the first time:
// labelled "slow" (tests/CMakeLists.txt).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "converter/checkpoint.h"
#include "converter/convert.h"
#include "engine/models/parsenet.h"
#include "engine/photo/npy.h"
#include "engine/plan/memory_plan.h"
#include "tests/parsenet_fixture.h"
#include "weights/gpw.h"

using namespace gpen;

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
