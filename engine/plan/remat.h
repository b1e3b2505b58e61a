#pragma once
// Rematerialization as a graph transform: a tensor that is cheap to recompute from inputs that are
// cheap to keep (graph inputs, small tensors) is produced a second time right before its late
// consumers instead of being kept alive across the gap. The target is GPEN's first encoder
// feature: full resolution, made from the 3-channel input by one 1x1 conv, and read again only by
// the last decoder layers, so it otherwise stays alive across the whole decoder.
#include <string>
#include <vector>

#include "engine/graph/graph.h"

namespace gpen {

struct RematResult {
  std::vector<std::string> recomputed;  // tensor names, in the order they were chosen
  double flops_added = 0;
  size_t lower_bound_before = 0, lower_bound_after = 0;
};

// Greedy: among all (tensor, split of its consumers) candidates, duplicate the producer of the one
// that lowers the liveness peak most per FLOP added, rewire the consumers after the split to the
// copy, and repeat while the peak drops and the added FLOPs stay within max_flops. The copy
// computes exactly what the original does (same op, same inputs), so results are bit-identical.
RematResult rematerialize(Graph& g, bool allow_inplace, double max_flops);

}  // namespace gpen
