#pragma once
// Internal to the banding transform (engine/plan/banding*.cpp): one banded region and its two
// emitters. Recomputed halos (banding.cpp): every band computes, at every stage, all the rows its
// consumers need, the previous band's included. Carried halos (banding_carry.cpp, line buffers):
// bands run top to bottom and each stage computes only the rows no earlier band computed; the rows
// of a stage's band the next band still reads (its halo) are copied into a small carry tensor
// that lives from one band to the next and copied back on top of the next band's rows.
#include <map>
#include <string>
#include <vector>

#include "engine/graph/graph.h"

namespace gpen::banding_detail {

// One banded region: its nodes (original indices, in order), the tensors it writes whole
// (rows of full buffers) and the band boundaries of the tensor its bands are cut on.
struct Region {
  std::vector<int> nodes;
  std::vector<int> outputs;  // original tensor ids written into their full buffers
  int main = -1;             // the output whose rows define the bands
  std::vector<int64_t> bounds;
};

struct CarryStats {
  std::vector<int> copy_nodes;               // indices into the emitted list: the carry copies (no FLOPs)
  size_t max_carry_bytes = 0;                // most carry bytes alive across one band boundary
  std::map<std::string, int64_t> carried;    // original tensor name -> most rows carried
};

inline int64_t rows_of(const Graph& g, int t) { return g.tensor(t).shape[1]; }

// The band copies of a region's nodes with carried halos, appended to `out` (the carry copies
// are identity bias_act nodes: a bit-exact copy on both backends).
// stage_rows: see BandingSpec::stage_rows.
CarryStats emit_region_carried(Graph& g, const Region& reg, std::vector<Node>& out, const std::string& tag,
                               int stage_rows = 0);

}  // namespace gpen::banding_detail
