#pragma once
// 8-bit conv weights of a GPEN model (GpenConfig::quant8): the link between a code tensor and its
// `<name>.qscale` scales, and the quantisation of float host weights (synthetic models).
#include <string>
#include <vector>

#include "engine/graph/graph.h"
#include "engine/runtime/executor.h"

namespace gpen {

// Sets TensorView::qscale of every 8-bit entry of `m` from `<name>.qscale` (same memory space);
// throws naming `origin` when a scale tensor is missing or has the wrong size.
void link_qscales(WeightMap& m, const std::string& origin);

// For every 8-bit weight tensor of `g`, replaces the f32 host view of the same name in `host` by
// its quantised codes and adds the scales (quantize8, weights/quant8.h); the new buffers are
// appended to `storage`, which must outlive the views.
void quantize_host_weights(const Graph& g, WeightMap& host, std::vector<std::vector<float>>& storage);

}  // namespace gpen
