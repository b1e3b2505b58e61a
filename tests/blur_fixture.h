#pragma once
// GPEN's up-path blur as the CPU tests build it: the 4x4 [1, 3, 3, 1] x [1, 3, 3, 1] / 16 kernel,
// padded by one on every side (an (H + 1) x (W + 1) input gives H x W).
#include "kernels/params.h"

inline gpen::UpFirDn2dParams gpen_blur_params() {
  const float b4[4] = {1, 3, 3, 1};
  gpen::UpFirDn2dParams p;
  p.kh = p.kw = 4;
  for (float u : b4)
    for (float v : b4) p.kernel.push_back(u * v / 16.0f);
  p.pad_x0 = p.pad_y0 = 1;
  p.pad_x1 = p.pad_y1 = 1;
  return p;
}
