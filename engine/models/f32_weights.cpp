#include "engine/models/f32_weights.h"

#include <map>

#include "engine/models/float_convert.h"
#include "engine/runtime/device.h"
#include "engine/runtime/device_weights.h"

namespace gpen {

WeightMap f32_weight_views(const GpwFile& f, std::vector<std::vector<float>>& widened) {
  WeightMap views;
  for (const auto& e : f.tensors()) {
    TensorView v = e.view;
    if (v.dtype == DType::f16 || v.dtype == DType::bf16) {
      std::vector<float> wide(static_cast<size_t>(v.numel()));
      floats_from(v.data, v.dtype, wide.data(), wide.size());
      widened.push_back(std::move(wide));
      v.data = widened.back().data();
      v.dtype = DType::f32;
    }
    GPEN_CHECK(v.dtype == DType::f32, f.path() + ": tensor '" + e.name + "' has unsupported dtype " + dtype_name(v.dtype));
    views[e.name] = v;
  }
  return views;
}

void* upload_weight_views(Backend& backend, WeightMap& views, std::vector<std::vector<float>>& widened,
                          const std::string& path, const Graph* every_weight) {
  if (!is_device_backend(backend)) return nullptr;
  std::map<std::string, DType> bound;
  if (every_weight)
    for (const auto& t : every_weight->tensors())
      if (t.kind == TensorKind::Weight) bound[t.name] = t.dtype;
  std::vector<TensorView*> list;
  std::vector<DType> to;
  std::vector<size_t> sizes;
  for (auto& [name, v] : views) {
    GPEN_CHECK(v.contiguous(), path + ": tensor '" + name + "' is not contiguous");
    auto it = bound.find(name);
    list.push_back(&v);
    to.push_back(it == bound.end() ? DType::f32 : it->second);
    sizes.push_back(static_cast<size_t>(v.numel()) * dtype_size(to.back()));
  }
  const PackedWeights p = upload_packed(backend, sizes, [&](size_t i, uint8_t* dst) {
    floats_to(list[i]->as<const float>(), dst, to[i], static_cast<size_t>(list[i]->numel()));
  });
  for (size_t i = 0; i < list.size(); ++i) {
    list[i]->data = static_cast<uint8_t*>(p.base) + p.offset[i];
    list[i]->dtype = to[i];
  }
  widened.clear();
  return p.base;
}

void check_graph_weights(const Graph& g, const WeightMap& w, const std::string& path, const std::string& model) {
  for (const auto& t : g.tensors()) {
    if (t.kind != TensorKind::Weight) continue;
    auto it = w.find(t.name);
    GPEN_CHECK(it != w.end(), path + ": " + model + " tensor '" + t.name + "' is missing");
    GPEN_CHECK(it->second.shape == t.shape, path + ": " + model + " tensor '" + t.name + "' has shape " +
                                                it->second.shape.str() + ", expected " + t.shape.str());
  }
}

}  // namespace gpen
