// Banded execution end to end at the released GPEN-BFR-256 and -512 shapes (full channel counts,
// synthetic weights) on the CPU in fp32: banded output == unbanded output bit for bit. The small
// models of tests/test_banding.cpp have 16 channels, which the CPU conv runs on its direct path;
// these widths take the GEMM paths the real models use. Slow (seconds of CPU per run). Recomputed
// and carried halos (engine/plan/banding_carry.h) both. Then the default conv paths, under which
// the unbanded ops of the banded stages run Winograd and their bands do not (docs/memory.md).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/models/gpen_model.h"
#include "kernels/cpu/ops.h"

using namespace gpen;

namespace {

// The bands of a banded graph run the direct conv (Winograd's tiles span rows: kernels/cpu/
// conv_select.h), so the unbanded reference must too. The CPU backend's options read GPEN_CPU_CONV
// once per process (engine/runtime/env_options.h): set before main.
const bool kDirectConvs = [] { return setenv("GPEN_CPU_CONV", "direct", 1) == 0; }();

void check_banded(const GpenConfig& c, const BandingSpec& spec) {
  auto be = make_cpu_backend();
  auto m = GpenModel::synthetic(c, *be, 2);
  std::mt19937 rng(c.size);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> in(size_t(c.size) * c.size * 3), a(in.size()), b(in.size());
  for (auto& v : in) v = u(rng);
  REQUIRE(kDirectConvs);
  m->prepare(1);
  m->run(in.data(), a.data());
  PlanOptions o;
  o.band_spec = spec;
  m->prepare(1, o);
  REQUIRE(m->transform_report().banding.applied);
  CHECK(m->plan().arena_bytes < m->transform_report().banding.lower_bound_before);
  m->run(in.data(), b.data());
  size_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  CHECK(differ == 0);
}

}  // namespace

TEST_CASE("banding e2e: GPEN-BFR-256 shapes, odd band heights, bit-identical in fp32") {
  GpenConfig c;
  c.size = 256;
  c.channel_multiplier = 1;
  c.narrow = 0.5;
  BandingSpec s;
  s.band_res = 32;
  s.keep_res = 64;
  s.boundaries = {0, 37, 101, 102, 200, 256};
  check_banded(c, s);
}

TEST_CASE("banding e2e: GPEN-BFR-512 shapes, bit-identical in fp32") {
  GpenConfig c;  // size 512, channel multiplier 2
  BandingSpec s;
  s.band_res = 128;
  s.keep_res = 128;
  s.boundaries = {0, 75, 150, 299, 512};
  check_banded(c, s);
}

TEST_CASE("banding e2e: carried halos at GPEN-BFR-256 shapes, odd band heights, bit-identical in fp32") {
  GpenConfig c;
  c.size = 256;
  c.channel_multiplier = 1;
  c.narrow = 0.5;
  BandingSpec s;
  s.band_res = 16;
  s.keep_res = 32;
  s.boundaries = {0, 1, 37, 38, 101, 150, 203, 255, 256};
  s.carry = true;
  check_banded(c, s);
}

TEST_CASE("banding e2e: carried halos at GPEN-BFR-512 shapes, bit-identical in fp32") {
  GpenConfig c;  // size 512, channel multiplier 2
  BandingSpec s;
  s.band_res = 64;
  s.keep_res = 128;
  s.bands = 13;  // 39- and 40-row bands
  s.carry = true;
  s.stage_rows = 16;
  check_banded(c, s);
}

TEST_CASE("banding e2e: the 24 MiB pick at GPEN-BFR-512 shapes (64 carried bands from 16), bit-identical in fp32") {
  // What `gpen plan --size 512 --precision fp16 --arena-budget 24MiB` picks since the transposed
  // modconv's row crop (docs/memory.md): 8-row output bands, a transposed conv band of 1-2 rows at
  // 32, carried halos on every stage, the features above 128 recomputed.
  GpenConfig c;  // size 512, channel multiplier 2
  BandingSpec s;
  s.band_res = 16;
  s.keep_res = 128;
  s.bands = 64;
  s.carry = true;
  check_banded(c, s);
}

namespace {

// The CPU backend with the default options, but planning the nodes named in `direct` as
// GPEN_CPU_CONV=direct would: the paths those ops take when they run in bands.
class DirectFor final : public Backend {
 public:
  explicit DirectFor(std::set<std::string> direct) : direct_(std::move(direct)) {
    cpu::CpuOptions d;
    d.conv = cpu::ConvMode::direct;
    plain_ = make_cpu_backend(cpu::CpuOptions{});
    direct_be_ = make_cpu_backend(d);
  }
  const char* name() const override { return plain_->name(); }
  size_t workspace_bytes(const Graph& g, const Node& n) const override { return plan_node(g, n).workspace_bytes; }
  NodeKernel plan_node(const Graph& g, const Node& n) const override {
    return (direct_.contains(n.name) ? direct_be_ : plain_)->plan_node(g, n);
  }
  size_t planned_workspace_bytes(const Graph& g, const Node& n, const NodeKernel& k) const override {
    return plain_->planned_workspace_bytes(g, n, k);
  }
  void* allocate(size_t bytes) override {
    ++allocations_;
    return plain_->allocate(bytes);
  }
  void release(void* p) override { plain_->release(p); }
  void upload(void* d, const void* s, size_t b) override { plain_->upload(d, s, b); }
  void download(void* d, const void* s, size_t b) override { plain_->download(d, s, b); }
  void run(const Node&, std::span<const TensorView>, std::span<const TensorView>, void*) override {
    FAIL("DirectFor runs planned kernels only");
  }
  void run_planned(const Node& n, const NodeKernel& k, std::span<const TensorView> in, std::span<const TensorView> out,
                   void* ws) override {
    plain_->run_planned(n, k, in, out, ws);
  }

 private:
  std::set<std::string> direct_;
  std::unique_ptr<Backend> plain_, direct_be_;
};

}  // namespace

TEST_CASE("banding e2e: with the default conv paths, banded GPEN-BFR-256 equals unbanded with its banded ops off Winograd") {
  // Under the default rule the unbanded convs of the banded stages run Winograd, their bands the
  // direct paths (conv_select.h: the Winograd rows take whole ops only). So the banded output is
  // the unbanded one computed with those ops on the paths their bands take, bit for bit, and
  // differs from the plain unbanded output by Winograd's rounding.
  GpenConfig c;
  c.size = 256;
  c.channel_multiplier = 1;
  c.narrow = 0.5;
  std::mt19937 rng(c.size);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> in(size_t(c.size) * c.size * 3), plain(in.size()), banded(in.size()), reference(in.size());
  for (auto& v : in) v = u(rng);
  for (const bool carry : {false, true}) {
    CAPTURE(carry);
    auto be = make_cpu_backend(cpu::CpuOptions{});
    auto m = GpenModel::synthetic(c, *be, 2);
    m->prepare(1);
    m->run(in.data(), plain.data());
    PlanOptions o;
    o.band_spec.band_res = 32;
    o.band_spec.keep_res = 64;
    o.band_spec.boundaries = {0, 37, 101, 102, 200, 256};
    o.band_spec.carry = carry;
    m->prepare(1, o);
    REQUIRE(m->transform_report().banding.applied);
    m->run(in.data(), banded.data());
    // The ops that run in bands, by their names in the unbanded graph ("<name>@a3" -> "<name>").
    std::set<std::string> band_ops;
    int winograd_bands = 0;
    for (const Node& n : m->graph().nodes()) {
      const size_t at = n.name.find('@');
      if (at == std::string::npos) continue;
      if (!std::holds_alternative<Conv2dParams>(n.params) && !std::holds_alternative<ModConvParams>(n.params)) continue;
      band_ops.insert(n.name.substr(0, at));
    }
    DirectFor mixed(band_ops);
    auto r = GpenModel::synthetic(c, mixed, 2);
    r->prepare(1);
    for (const Node& n : r->graph().nodes()) {
      if (!band_ops.contains(n.name)) continue;
      const cpu::ConvChoice whole = be->plan_node(r->graph(), n).conv;
      winograd_bands += whole.tile != 0;
    }
    r->run(in.data(), reference.data());
    size_t differ = 0, differ_plain = 0;
    double worst = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      differ += std::memcmp(&banded[i], &reference[i], sizeof(float)) != 0;
      differ_plain += std::memcmp(&banded[i], &plain[i], sizeof(float)) != 0;
      worst = std::max(worst, double(std::abs(banded[i] - plain[i])));
    }
    MESSAGE(band_ops.size() << " conv ops run in bands, " << winograd_bands << " of them Winograd when whole; "
            << differ_plain << " of " << in.size() << " outputs differ from the plain unbanded run, by at most " << worst);
    CHECK(winograd_bands > 0);
    CHECK(differ == 0);
    CHECK(worst < 1e-4);
  }
}
