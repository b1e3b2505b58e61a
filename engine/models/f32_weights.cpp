#include "engine/models/f32_weights.h"

#include "engine/runtime/device.h"
#include "engine/runtime/device_weights.h"
#include "weights/half.h"

namespace gpen {

WeightMap f32_weight_views(const GpwFile& f, std::vector<std::vector<float>>& widened) {
  WeightMap views;
  for (const auto& e : f.tensors()) {
    TensorView v = e.view;
    if (v.dtype == DType::f16 || v.dtype == DType::bf16) {
      std::vector<float> wide(static_cast<size_t>(v.numel()));
      const uint16_t* src = v.as<const uint16_t>();
      for (size_t i = 0; i < wide.size(); ++i) wide[i] = v.dtype == DType::f16 ? f16_to_f32(src[i]) : bf16_to_f32(src[i]);
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
                          const std::string& path) {
  if (!is_device_backend(backend)) return nullptr;
  std::vector<TensorView*> list;
  for (auto& [name, v] : views) {
    GPEN_CHECK(v.contiguous(), path + ": tensor '" + name + "' is not contiguous");
    list.push_back(&v);
  }
  void* base = upload_views(backend, list).base;
  widened.clear();
  return base;
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
