// The CPU conv rule (kernels/cpu/conv_select.h) on the models the engine runs: every conv2d and
// modconv layer of GPEN-256 / 512 / 1024, RetinaFace R50 and mobilenet0.25, ParseNet and RRDBNet
// (RealESRNet x2) mapped to the path the CPU backend plans for it on the AVX2 and on the AVX-512
// path, against tests/fixtures/conv_rule/<model>.txt (one line per distinct layer: op, kernel,
// stride, input (a modconv's with its concatenated channels) and output shapes, the path on each
// ISA, how many layers share all that, the first one's name). A rule
// change shows up here as a diff of those files; GPEN_CONV_RULE_WRITE=1 rewrites them (then
// review the diff). And docs/conv-rule.md shows exactly what `gpen --conv-rule` prints.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "engine/models/gpen.h"
#include "engine/models/parsenet.h"
#include "engine/models/retinaface.h"
#include "engine/models/rrdbnet.h"
#include "engine/runtime/backend.h"
#include "kernels/cpu/conv_select.h"
#include "test_paths.h"

using namespace gpen;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// One line per distinct conv layer, in graph order of first appearance.
std::string conv_table(const Graph& g) {
  cpu::CpuOptions avx2, avx512;
  avx2.isa = cpu::Isa::baseline;
  avx512.isa = cpu::Isa::avx512;
  const auto b2 = make_cpu_backend(avx2), b512 = make_cpu_backend(avx512);
  std::vector<std::string> order;
  std::map<std::string, std::pair<int, std::string>> seen;  // layer -> (count, first node)
  for (const Node& n : g.nodes()) {
    std::string kind;
    if (auto* c = std::get_if<Conv2dParams>(&n.params))
      kind = "conv2d " + std::to_string(c->kh) + "x" + std::to_string(c->kw) + " s" + std::to_string(c->stride_h) +
             (c->groups > 1 ? " g" + std::to_string(c->groups) : "");
    else if (auto* m = std::get_if<ModConvParams>(&n.params))
      kind = std::string("modconv ") + std::to_string(m->k) + "x" + std::to_string(m->k) + (m->up ? " up" : "");
    else
      continue;
    Shape x = g.tensor(n.inputs[0]).shape;
    if (std::holds_alternative<ModConvParams>(n.params)) x[3] = g.tensor(n.inputs[4]).shape[2];  // with the concat
    const std::string layer = kind + " " + x.str() + " -> " +
                              g.tensor(n.outputs[0]).shape.str() + ": " +
                              cpu::conv_choice_label(b2->plan_node(g, n).conv) + " (AVX2), " +
                              cpu::conv_choice_label(b512->plan_node(g, n).conv) + " (AVX-512)";
    auto [it, fresh] = seen.try_emplace(layer, 0, n.name);
    ++it->second.first;
    if (fresh) order.push_back(layer);
  }
  std::string s;
  for (const std::string& l : order) s += l + " x" + std::to_string(seen[l].first) + " [" + seen[l].second + "]\n";
  return s;
}

void check_model(const std::string& name, const Graph& g) {
  CAPTURE(name);
  const std::string path = gpen_test::fixture_dir() + "/conv_rule/" + name + ".txt";
  const std::string got = conv_table(g);
  if (const char* w = std::getenv("GPEN_CONV_RULE_WRITE"); w && std::string(w) == "1") std::ofstream(path) << got;
  const std::string want = read_file(path);
  REQUIRE_FALSE(want.empty());
  CHECK(got == want);
  if (got != want) MESSAGE("the rule now gives:\n" << got);
}

GpenConfig gpen_official(int size) {
  GpenConfig c;
  c.size = size;
  c.channel_multiplier = size == 256 ? 1 : 2;
  c.narrow = size == 256 ? 0.5 : 1.0;
  return c;
}

}  // namespace

TEST_CASE("conv rule: every conv layer of GPEN-256, 512 and 1024 takes its path on both ISAs") {
  for (int size : {256, 512, 1024}) check_model("gpen" + std::to_string(size), build_gpen_graph(gpen_official(size)).graph);
}

TEST_CASE("conv rule: every conv layer of RetinaFace R50 and mobilenet0.25 takes its path on both ISAs") {
  // A 1024x768 photo's network input, as the detector runs it (no shrink below 1500 px).
  check_model("retinaface_r50", build_retinaface_graph(RetinaFaceBackbone::resnet50, 768, 1024).graph);
  check_model("retinaface_mnet", build_retinaface_graph(RetinaFaceBackbone::mobilenet025, 768, 1024).graph);
}

TEST_CASE("conv rule: every conv layer of ParseNet and RRDBNet takes its path on both ISAs") {
  check_model("parsenet", build_parsenet_graph(512, 512).graph);
  RrdbConfig sr;  // RealESRNet x2 (32 features, 23 blocks), on a 512x512 face
  check_model("rrdbnet_x2", build_rrdbnet_graph(sr, 512, 512).graph);
}

TEST_CASE("conv rule: docs/conv-rule.md shows the rule the code prints") {
  // The block between the two marker lines of the doc, fenced as text.
  const std::string doc = read_file("docs/conv-rule.md");
  const std::string begin = "<!-- gpen --conv-rule -->\n```text\n", end = "```\n<!-- end -->";
  const size_t a = doc.find(begin), b = doc.find(end);
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  const std::string shown = doc.substr(a + begin.size(), b - a - begin.size());
  CHECK(shown == cpu::conv_rule_text());
  if (shown != cpu::conv_rule_text()) MESSAGE("gpen --conv-rule prints:\n" << cpu::conv_rule_text());
}

TEST_CASE("conv rule: the last row of each op holds for anything, and the options switch the rows they name") {
  Conv2dParams p;
  p.kh = p.kw = 3;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  const Shape x{1, 64, 64, 64}, y{1, 64, 64, 64};
  cpu::CpuOptions o;
  CHECK(cpu::choose_conv(cpu::conv2d_case(p, x, y), o) == cpu::ConvChoice{cpu::ConvPath::winograd, 4});
  o.conv = cpu::ConvMode::winograd2;
  CHECK(cpu::choose_conv(cpu::conv2d_case(p, x, y), o) == cpu::ConvChoice{cpu::ConvPath::winograd, 2});
  o.conv = cpu::ConvMode::direct;
  CHECK(cpu::choose_conv(cpu::conv2d_case(p, x, y), o).path == cpu::ConvPath::gemm_taps);
  o.own_gemm = false;
  CHECK(cpu::choose_conv(cpu::conv2d_case(p, x, y), o).path == cpu::ConvPath::gemm);
  ModConvParams m;
  m.k = 3;
  const Shape mx{1, 16, 16, 512}, my{1, 16, 16, 256};
  cpu::CpuOptions on;
  CHECK(cpu::choose_conv(cpu::modconv_case(m, mx, my), on) == cpu::ConvChoice{cpu::ConvPath::winograd_fused, 4});
  on.wino_fused = false;
  CHECK(cpu::choose_conv(cpu::modconv_case(m, mx, my), on).path == cpu::ConvPath::modconv_direct);
  m.k = 1;
  CHECK(cpu::choose_conv(cpu::modconv_case(m, mx, Shape{1, 16, 16, 3}), on).path == cpu::ConvPath::to_rgb);
}
