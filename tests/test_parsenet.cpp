// ParseNet: the converter's layout (recognition, parameter count, refusals) and the engine graph
// (shapes, cost, sizes refused). Against PyTorch: tests/test_parsenet_reference.cpp.
#include <doctest/doctest.h>

#include <string>

#include "converter/layouts.h"
#include "engine/models/parsenet.h"
#include "engine/plan/memory_plan.h"

using namespace gpen;

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
