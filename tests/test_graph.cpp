#include <doctest/doctest.h>

#include "engine/graph/graph.h"

using namespace gpen;

TEST_CASE("graph infers conv shapes and channel-slice views") {
  Graph g;
  int x = g.input("x", DType::f32, Shape{2, 16, 16, 8});
  int w = g.weight("w", DType::f32, Shape{3, 3, 8, 4});
  Conv2dParams p;
  p.kh = p.kw = 3;
  p.stride_h = p.stride_w = 2;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  int cat = g.buffer("cat", DType::f32, Shape{2, 8, 8, 12});
  int slice = g.slice_channels(cat, 4, 4);
  int y = g.conv2d(x, w, -1, p, -1, slice);
  CHECK(y == slice);
  CHECK(g.tensor(slice).shape == Shape{2, 8, 8, 4});
  CHECK(g.tensor(slice).strides[2] == 12);
  CHECK(g.root_of(slice) == cat);
  CHECK(g.offset_in_root(slice) == 4);
  int z = g.conv2d(x, w, -1, p);
  CHECK(g.tensor(z).shape == Shape{2, 8, 8, 4});
  CHECK_THROWS_AS(g.conv2d(x, g.weight("bad", DType::f32, Shape{3, 3, 7, 4}), -1, p), Error);
}
