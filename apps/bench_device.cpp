#include "apps/bench_device.h"

#include "engine/core/error.h"

namespace gpen::cli {

void add_device_memory(nlohmann::json& j, const DeviceBackend& dev, const DeviceBackend::MemoryInfo& before,
                       const DeviceBackend::MemoryInfo& after) {
  j["device_name"] = dev.device_name();
  j["device_free_before_bytes"] = before.free;
  j["device_free_after_bytes"] = after.free;
  j["device_used_bytes"] = before.free > after.free ? before.free - after.free : 0;
  j["device_total_bytes"] = after.total;
}

BenchDevice::BenchDevice(const std::string& device) {
  DeviceOptions o;
  o.kind = parse_device(device);
  backend = make_backend(o);
  dev = dynamic_cast<DeviceBackend*>(backend.get());
  if (dev) before = dev->memory_info();
}

void BenchDevice::refuse_cpu_comparisons(const std::string& arch, bool cpu_comparisons) const {
  GPEN_CHECK(!dev || !cpu_comparisons,
             "--arch " + arch + " on " + backend->name() +
                 ": --compare and --pytorch-checkpoint are CPU comparisons (--accuracy there is against the CPU "
                 "backend); give --device cpu for them");
}

}  // namespace gpen::cli
