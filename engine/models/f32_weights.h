#pragma once
// A .gpw's tensors as the f32 views a CPU graph binds (on a device, uploaded in the dtype the graph
// declares), and the check that a graph finds every weight it binds with its shape (the networks
// of F32Network load this way).
#include <string>
#include <vector>

#include "engine/graph/graph.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/executor.h"
#include "weights/gpw.h"

namespace gpen {

// Every tensor of f by name; f16 / bf16 ones widened once into `widened`, which must outlive the
// views. Throws naming the file and the tensor for any other dtype.
WeightMap f32_weight_views(const GpwFile& f, std::vector<std::vector<float>>& widened);

// On a device backend: every view (f32) copied into one device allocation, converted to the dtype
// `every_weight` declares it in (f32 for a tensor the graph does not bind, and every tensor
// without a graph), and repointed there,
// the host widening released; returns that allocation (the caller releases it with the backend), or
// nullptr on the CPU, where the views stay where they are. Throws naming the file for a view
// that is not contiguous.
void* upload_weight_views(Backend& backend, WeightMap& views, std::vector<std::vector<float>>& widened,
                          const std::string& path, const Graph* every_weight = nullptr);

// Throws naming the file, the model and the tensor when g binds a weight that w lacks or holds
// with another shape: a clear error at load, not at run.
void check_graph_weights(const Graph& g, const WeightMap& w, const std::string& path, const std::string& model);

}  // namespace gpen
