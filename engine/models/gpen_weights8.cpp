#include "engine/models/gpen_weights8.h"

#include <cstring>
#include <map>

#include "weights/quant8.h"

namespace gpen {

void link_qscales(WeightMap& m, const std::string& origin) {
  for (auto& [name, v] : m) {
    if (!dtype_is_8bit_weight(v.dtype)) continue;
    auto it = m.find(name + ".qscale");
    GPEN_CHECK(it != m.end(), origin + ": 8-bit weight '" + name + "' has no scale tensor '" + name + ".qscale' (" +
                                  q8_scale_expectation(v.shape) + ")");
    int64_t group = 0;
    GPEN_CHECK(it->second.dtype == DType::f32 && q8_group_of(v.shape, it->second.shape, &group),
               origin + ": scale tensor '" + name + ".qscale' is " + it->second.shape.str() + " " +
                   dtype_name(it->second.dtype) + "; weight " + v.shape.str() + " needs " +
                   q8_scale_expectation(v.shape));
    v.qscale = static_cast<const float*>(it->second.data);
    v.qgroup = group;
  }
}

void quantize_host_weights(const Graph& g, WeightMap& host, std::vector<std::vector<float>>& storage) {
  std::map<std::string, const TensorDesc*> scales;
  for (const TensorDesc& t : g.tensors())
    if (t.kind == TensorKind::Weight) scales[t.name] = &t;
  for (const TensorDesc& t : g.tensors()) {
    if (t.kind != TensorKind::Weight || !dtype_is_8bit_weight(t.dtype)) continue;
    auto it = host.find(t.name);
    GPEN_CHECK(it != host.end() && it->second.dtype == DType::f32,
               "quantize_host_weights: no f32 host weight '" + t.name + "'");
    auto st = scales.find(t.name + ".qscale");
    int64_t group = 0;
    GPEN_CHECK(st != scales.end() && q8_group_of(t.shape, st->second->shape, &group),
               "quantize_host_weights: the graph has no scale tensor for '" + t.name + "'");
    const int64_t n = t.shape.numel();
    Quantized8Grouped q = quantize8_grouped(it->second.f32(), t.shape, t.dtype, group);
    std::vector<float> codes(static_cast<size_t>((n + 3) / 4));  // float storage, 8-bit content
    std::memcpy(codes.data(), q.codes.data(), static_cast<size_t>(n));
    storage.push_back(std::move(codes));
    it->second = make_view(storage.back().data(), t.dtype, t.shape);
    storage.push_back(std::move(q.scale));
    host[t.name + ".qscale"] = make_view(storage.back().data(), DType::f32, st->second->shape);
  }
  link_qscales(host, "synthetic GPEN");
}

}  // namespace gpen
