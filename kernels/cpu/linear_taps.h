#pragma once
// One axis of cv2.resize INTER_LINEAR: for each destination index the two source indices and
// their weights, with OpenCV's border rule (a clamped tap puts weight 1 on the edge sample).
// Shared by the image resizes and the paste-back mask so both round exactly as OpenCV does.
#include <vector>

namespace gpen {

struct LinearTap {
  int i0, i1;
  float a0, a1;
};

// inv_scale is cv2's: dst / src, or the fx / fy the caller passed to cv2.resize.
std::vector<LinearTap> linear_taps(int src, int dst, double inv_scale);
// The vertical axis of OpenCV's 8-bit resize: there the row indices are clipped to the image but
// the weights are kept (a destination row above the first source row blends row 0 with itself by
// (1 - f, f)), which its fixed-point rounding can tell from a weight of 1 on row 0.
std::vector<LinearTap> linear_taps_rows(int src, int dst, double inv_scale);

}  // namespace gpen
