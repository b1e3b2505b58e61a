#pragma once
// Where a bench runs its network (--device cpu, cuda or auto), and the device memory figures every
// bench reports on a device.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/runtime/backend.h"
#include "engine/runtime/device.h"

namespace gpen::cli {

// The device's name, its free memory before the model was opened and after the runs, the
// difference (what the model and its arena took) and its total.
void add_device_memory(nlohmann::json& j, const DeviceBackend& dev, const DeviceBackend::MemoryInfo& before,
                       const DeviceBackend::MemoryInfo& after);

// The backend of --device, and the device's free memory before the model is opened.
struct BenchDevice {
  std::unique_ptr<Backend> backend;
  DeviceBackend* dev = nullptr;  // the backend as a device (null on the CPU)
  DeviceBackend::MemoryInfo before;
  explicit BenchDevice(const std::string& device);
  // gpen::Error on a device when the bench was asked for the ONNX peers or the official forward
  // (`cpu_comparisons`): those run on the CPU; --accuracy on a device is against the CPU backend.
  void refuse_cpu_comparisons(const std::string& arch, bool cpu_comparisons) const;
  // add_device_memory on a device; nothing on the CPU.
  void add_json(nlohmann::json& j) const {
    if (dev) add_device_memory(j, *dev, before, dev->memory_info());
  }
};

}  // namespace gpen::cli
