#pragma once
// The CUDA backend of engine/runtime/backend.h (engine/runtime/cuda/backend_cuda.cu, host code only). Built twice
// like the kernels: gpen::cuda::native (nvcc, linked into the engine when CUDA is compiled in and
// reached through engine/runtime/device.h's make_backend) and gpen::cuda::emu (the host emulator, for the
// test_cuda_* tests, which call these functions directly).
#include <memory>

#include "engine/runtime/device.h"
#include "kernels/cuda/abi.h"

GPEN_CUDA_NAMESPACE_BEGIN

// CUDA devices present (0 when none, or no driver).
int device_count();
// The backend on the current device: one stream, cudaMalloc'd memory, every op of the graph IR.
// gpen::Error "no CUDA device found" when there is none.
std::unique_ptr<Backend> make_cuda_backend(const DeviceOptions& o);
// Workspace bytes the backend's kernel for node n of g needs: the one definition behind both the
// backend's workspace_bytes and CudaProvider::workspace_bytes. Host arithmetic on the shapes only
// (no CUDA call), so it works without a device.
size_t node_workspace_bytes(const Graph& g, const Node& n);
// device_count, make_cuda_backend and node_workspace_bytes, for engine/runtime/device.h.
const CudaProvider& cuda_provider();

GPEN_CUDA_NAMESPACE_END
