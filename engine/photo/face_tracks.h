#pragma once
// Faces followed from frame to frame of a video, and their landmarks smoothed over time, so that
// the aligned crop of a face that does not move stops jittering with the detector's noise
// (`gpen video --smooth N`).
//
// Input: each frame's detections (boxes, 5 landmarks, scores), frame after frame in display
// order. Output: the same detections, each face's landmarks replaced by the mean of its track's
// last N detected landmark sets (this frame's included). Boxes and scores are left as detected.
//
// Tracking: a detection continues the track of the previous frame whose box it overlaps most,
// greedily, the pair with the highest intersection over union first, each track and each
// detection used once, a pair below min_iou never matched. 0.3 lets a face shift by half its
// width between frames (two equal boxes offset by d of their width overlap (1-d)/(1+d)) and
// still keep its track, while two neighbouring faces rarely overlap that much (the detector's
// NMS already removes boxes overlapping more than 0.4 within a frame). A detection left
// unmatched starts a track; a track not seen in a frame ends (a face the detector misses once
// starts over, its average built again from its next detections).
//
// Smoothing: causal, the plain mean of the last N landmark sets of the track (fewer while the
// track is younger than N frames). It needs no frame after the current one, so it works within
// any batch of frames the video pipeline holds. For a face at rest it divides the detector's
// frame-to-frame landmark movement by up to N; a moving face's landmarks trail it by (N - 1) / 2
// frames of its motion. N <= 1 leaves every landmark as detected.
#include <array>
#include <cstddef>
#include <span>
#include <vector>

#include "kernels/cpu/detect_post.h"

namespace gpen {

// The overlap below which a detection never continues a track (see above).
inline constexpr float kTrackMinIou = 0.3f;

// Intersection over union of two boxes (x1, y1, x2, y2); 0 when either is empty.
float box_iou(const std::array<float, 4>& a, const std::array<float, 4>& b);

// Mean frame-to-frame movement of the landmarks of faces that continue a track, in pixels: per
// continued face the mean distance its 5 points moved since the previous frame, averaged over
// those faces. `detected`: of the landmarks as detected; `smoothed`: as handed back.
struct LandmarkJitter {
  double detected_px = 0, smoothed_px = 0;
  long long steps = 0;  // continued faces measured
};

class FaceTracks {
 public:
  explicit FaceTracks(int window, float min_iou = kTrackMinIou);
  // The next frame's detections: matched to the tracks, their landmarks smoothed in place.
  void next_frame(std::span<Face> faces);
  // Forgets every track and the jitter measured (a new video).
  void reset();

  int window() const { return window_; }
  // The track of each face of the last frame, in the order given (ids count from 0 per reset).
  const std::vector<int>& last_ids() const { return last_ids_; }
  long long tracks_started() const { return next_id_; }
  LandmarkJitter jitter() const;

 private:
  using Points = std::array<float, 10>;
  struct Track {
    int id = 0;
    std::array<float, 4> box{};
    std::vector<Points> recent;  // the last `window_` detected landmark sets, oldest first
    Points detected{}, smoothed{};  // this track's landmarks in the frame last seen
  };
  int window_;
  float min_iou_;
  std::vector<Track> tracks_;
  std::vector<int> last_ids_;
  int next_id_ = 0;
  double detected_sum_ = 0, smoothed_sum_ = 0;
  long long steps_ = 0;
};

}  // namespace gpen
