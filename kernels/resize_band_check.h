#pragma once
// The argument check of a band of rows of resize_bilinear (ResizeBilinearParams::in_h > 0) that
// does not depend on the device: cpu::resize_bilinear and cuda::resize_bilinear both reject a band
// that does not fit the whole op with the same message.
#include <string>

#include "engine/core/error.h"
#include "engine/core/tensor.h"
#include "kernels/params.h"

namespace gpen {

// y's rows from out_row0 lie inside the whole op's out_h rows, x's rows from in_row0 inside its
// in_h input rows, and y has x's batch and channels at out_w columns.
inline void check_resize_band(const ResizeBilinearParams& p, const TensorView& x, const TensorView& y) {
  GPEN_CHECK(y.dim(0) == x.dim(0) && y.dim(2) == p.out_w && y.dim(3) == x.dim(3) && p.out_row0 >= 0 &&
                 p.out_row0 + y.dim(1) <= p.out_h && p.in_row0 >= 0 && p.in_row0 + x.dim(1) <= p.in_h,
             "resize_bilinear: band of rows " + y.shape.str() + " from " + std::to_string(p.out_row0) + " of " +
                 std::to_string(p.out_h) + " does not fit the input rows " + x.shape.str() + " from " +
                 std::to_string(p.in_row0) + " of " + std::to_string(p.in_h));
}

}  // namespace gpen
