#pragma once
// Internal to the banding transform (engine/plan/banding*.cpp): the row footprint of each
// bandable op. Given the rows [o.a, o.b) of an op's output a band needs (full-tensor row
// indices), which input rows it reads, which output rows it computes from them, and the op's
// parameters for the band. Every bandable op computes exactly the rows asked for: conv2d and
// upfirdn2d through their row padding, the same-padded modconv through ModConvParams::pad_top /
// pad_bottom, the transposed one through its row crop (ModConvParams::crop_top / crop_bottom),
// GFPGAN's bilinear resize through the whole op's taps at the band's global rows
// (ResizeBilinearParams::in_row0 / out_row0: the top edge clamps at global row 0, not the band's),
// and the elementwise add, SFT and noise epilogue (its noise map read from the band's first row,
// NoiseBiasActParams::noise_row0) row for row.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/graph/graph.h"

namespace gpen::banding_detail {

struct Range {
  int64_t a = 0, b = 0;
  bool empty() const { return b <= a; }
  int64_t rows() const { return b - a; }
  void hull(const Range& r) {
    if (r.empty()) return;
    if (empty()) *this = r;
    else a = std::min(a, r.a), b = std::max(b, r.b);
  }
  bool contains(const Range& r) const { return r.empty() || (a <= r.a && r.b <= b); }
  bool operator==(const Range& r) const { return a == r.a && b == r.b; }
};

struct OpBand {
  Range in;        // rows of the primary spatial inputs (x, x2)
  Range computed;  // rows of the output the band op writes (residual inputs cover these)
  OpParams params;
  bool exact = true;  // computed == the rows asked for, every one exact
};

// Spatial (row-banded) inputs of a node by input index, and whether each is a residual (which
// covers the computed rows rather than the input rows). Empty when the op cannot be banded.
struct SpatialInput {
  int index;
  bool residual;
};
std::vector<SpatialInput> spatial_inputs(const Node& n);
bool bandable(const Node& n);

// in_rows: the height of the op's primary input in the full graph.
OpBand map_rows(const Node& n, int64_t in_rows, Range o);

}  // namespace gpen::banding_detail
