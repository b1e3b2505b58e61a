#pragma once
// upfirdn2d with its optional epilogue (UpFirDn2dParams: out_scale [N, C], bias [C], act) in one
// pass where it can: the separable path into dense output rows applies the epilogue to each row
// as it is written (kernels/cpu/upfirdn2d.cpp), instead of upfirdn2d followed by
// upfirdn2d_epilogue re-reading the whole output. Same arithmetic, same bits as the two passes,
// which run (and validate) everything else. Workspace: upfirdn2d_workspace_bytes.
#include "kernels/cpu/ops.h"

namespace gpen::cpu {

void upfirdn2d_act(const UpFirDn2dParams& p, const TensorView& x, const TensorView* out_scale, const TensorView* bias,
                   const TensorView& y, void* workspace);

}  // namespace gpen::cpu
