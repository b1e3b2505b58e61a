#include "engine/runtime/device.h"

#include "engine/core/error.h"

#if defined(GPEN_WITH_CUDA)
#include "engine/runtime/cuda/backend_cuda.h"
#endif

namespace gpen {

DeviceKind parse_device(const std::string& s) {
  if (s == "cpu") return DeviceKind::cpu;
  if (s == "cuda" || s == "gpu") return DeviceKind::cuda;
  if (s == "auto" || s.empty()) return DeviceKind::automatic;
  throw Error("unknown --device '" + s + "' (expected cpu, cuda or auto)");
}

DType parse_precision(const std::string& s) {
  DType d;
  try {
    d = parse_dtype(s);
  } catch (const Error&) {
    d = DType::i32;
  }
  GPEN_CHECK(d == DType::f32 || d == DType::f16 || d == DType::bf16,
             "unknown --precision '" + s + "' (expected fp32, fp16 or bf16)");
  return d;
}

std::optional<DType> parse_precision_flag(const std::string& s) {
  if (s.empty()) return std::nullopt;
  return parse_precision(s);
}

const char* precision_name(DType d) {
  switch (d) {
    case DType::f16: return "fp16";
    case DType::bf16: return "bf16";
    default: return "fp32";
  }
}

bool cuda_compiled_in() { return native_cuda() != nullptr; }

const CudaProvider* native_cuda() {
#if defined(GPEN_WITH_CUDA)
  return &cuda::native::cuda_provider();
#else
  return nullptr;
#endif
}

std::unique_ptr<Backend> make_backend(const DeviceOptions& o, const CudaProvider* cuda) {
  switch (o.kind) {
    case DeviceKind::cpu: return make_cpu_backend();
    case DeviceKind::cuda:
      GPEN_CHECK(cuda, "CUDA support was not compiled in (rebuild with nvcc / -DGPEN_CUDA=ON)");
      GPEN_CHECK(cuda->device_count() > 0, "no CUDA device found");
      return cuda->make(o);
    case DeviceKind::automatic:
      if (cuda && cuda->device_count() > 0) return cuda->make(o);
      return make_cpu_backend();
  }
  return make_cpu_backend();
}

DType default_precision(const Backend& b) { return is_device_backend(b) ? DType::f16 : DType::f32; }

}  // namespace gpen
