#include "engine/models/gpen_weights8.h"

#include <cstring>

#include "weights/quant8.h"

namespace gpen {

void link_qscales(WeightMap& m, const std::string& origin) {
  for (auto& [name, v] : m) {
    if (!dtype_is_8bit_weight(v.dtype)) continue;
    auto it = m.find(name + ".qscale");
    const int64_t cout = v.rank() ? v.dim(v.rank() - 1) : 1;
    GPEN_CHECK(it != m.end() && it->second.dtype == DType::f32 && it->second.numel() == cout,
               origin + ": 8-bit weight '" + name + "' has no scale tensor '" + name + ".qscale' (f32, " +
                   std::to_string(cout) + " values)");
    v.qscale = static_cast<const float*>(it->second.data);
  }
}

void quantize_host_weights(const Graph& g, WeightMap& host, std::vector<std::vector<float>>& storage) {
  for (const TensorDesc& t : g.tensors()) {
    if (t.kind != TensorKind::Weight || !dtype_is_8bit_weight(t.dtype)) continue;
    auto it = host.find(t.name);
    GPEN_CHECK(it != host.end() && it->second.dtype == DType::f32,
               "quantize_host_weights: no f32 host weight '" + t.name + "'");
    const int64_t n = t.shape.numel(), cout = t.shape[t.shape.rank - 1];
    Quantized8 q = quantize8(it->second.f32(), n, cout, t.dtype);
    std::vector<float> codes(static_cast<size_t>((n + 3) / 4));  // float storage, 8-bit content
    std::memcpy(codes.data(), q.codes.data(), static_cast<size_t>(n));
    storage.push_back(std::move(codes));
    it->second = make_view(storage.back().data(), t.dtype, t.shape);
    storage.push_back(std::move(q.scale));
    host[t.name + ".qscale"] = make_view(storage.back().data(), DType::f32, Shape{cout});
  }
  link_qscales(host, "synthetic GPEN");
}

}  // namespace gpen
