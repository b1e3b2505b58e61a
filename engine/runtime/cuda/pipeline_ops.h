#pragma once
// engine/runtime/pipeline_ops.h on the CUDA stream of the backend (engine/runtime/cuda/pipeline_ops.cu, host
// code over kernels/cuda/ops_pipeline.h). Built natively and for the emulator like the kernels.
#include <memory>

#include "engine/runtime/pipeline_ops.h"
#include "kernels/cuda/ops.h"

GPEN_CUDA_NAMESPACE_BEGIN

std::unique_ptr<PipelineOps> make_pipeline_ops(Stream stream);

GPEN_CUDA_NAMESPACE_END
