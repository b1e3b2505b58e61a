#include "engine/runtime/device_weights.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace gpen {

namespace {
std::vector<size_t> view_bytes(const std::vector<TensorView*>& views) {
  std::vector<size_t> sizes;
  for (const TensorView* v : views) sizes.push_back(static_cast<size_t>(v->numel()) * dtype_size(v->dtype));
  return sizes;
}

PackedWeights layout(const std::vector<size_t>& sizes) {
  PackedWeights p;
  p.offset.reserve(sizes.size());
  for (size_t s : sizes) {
    p.offset.push_back(p.bytes);
    p.bytes += (s + 255) / 256 * 256;
  }
  return p;
}
}  // namespace

PackedWeights pack_host_weights(Backend& backend, const std::vector<TensorView*>& views,
                                const std::function<void(const void*, size_t)>& release) {
  const std::vector<size_t> sizes = view_bytes(views);
  std::map<const void*, int> readers;
  for (const TensorView* v : views) ++readers[v->data];
  PackedWeights p = layout(sizes);
  p.base = backend.allocate(std::max<size_t>(p.bytes, 1));
  for (size_t i = 0; i < views.size(); ++i) {
    const void* src = views[i]->data;
    std::memcpy(static_cast<uint8_t*>(p.base) + p.offset[i], src, sizes[i]);
    views[i]->data = static_cast<uint8_t*>(p.base) + p.offset[i];
    if (--readers[src] == 0) release(src, sizes[i]);
  }
  return p;
}

PackedWeights upload_views(Backend& backend, const std::vector<TensorView*>& views) {
  const std::vector<size_t> sizes = view_bytes(views);
  PackedWeights p =
      upload_packed(backend, sizes, [&](size_t i, uint8_t* dst) { std::memcpy(dst, views[i]->data, sizes[i]); });
  for (size_t i = 0; i < views.size(); ++i) views[i]->data = static_cast<uint8_t*>(p.base) + p.offset[i];
  return p;
}

PackedWeights upload_packed(Backend& backend, const std::vector<size_t>& sizes,
                            const std::function<void(size_t, uint8_t*)>& fill) {
  PackedWeights p = layout(sizes);
  std::vector<uint8_t> host(std::max<size_t>(p.bytes, 1), 0);
  for (size_t i = 0; i < sizes.size(); ++i) fill(i, host.data() + p.offset[i]);
  p.base = backend.allocate(p.bytes);
  backend.upload(p.base, host.data(), p.bytes);
  return p;
}

}  // namespace gpen
