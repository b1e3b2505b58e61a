// FaceTracks: detections matched to the previous frame's faces by box overlap, landmarks averaged
// over each track's last frames (face_tracks.h).
#include "engine/photo/face_tracks.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "engine/core/error.h"

namespace gpen {

float box_iou(const std::array<float, 4>& a, const std::array<float, 4>& b) {
  const float iw = std::min(a[2], b[2]) - std::max(a[0], b[0]);
  const float ih = std::min(a[3], b[3]) - std::max(a[1], b[1]);
  const float area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
  if (!(iw > 0 && ih > 0 && area_a > 0 && area_b > 0)) return 0.0f;  // also false for NaN
  const float inter = iw * ih;
  return inter / (area_a + area_b - inter);
}

namespace {

// Mean distance the 5 points moved between two landmark sets.
double movement(const std::array<float, 10>& a, const std::array<float, 10>& b) {
  double sum = 0;
  for (int k = 0; k < 5; ++k) sum += std::hypot(double{a[2 * k]} - b[2 * k], double{a[2 * k + 1]} - b[2 * k + 1]);
  return sum / 5;
}

}  // namespace

FaceTracks::FaceTracks(int window, float min_iou) : window_(std::max(window, 1)), min_iou_(min_iou) {
  GPEN_CHECK(min_iou > 0 && min_iou <= 1, "face tracks: the overlap threshold must be in (0, 1]");
}

void FaceTracks::reset() {
  tracks_.clear();
  last_ids_.clear();
  next_id_ = 0;
  detected_sum_ = smoothed_sum_ = 0;
  steps_ = 0;
}

LandmarkJitter FaceTracks::jitter() const {
  LandmarkJitter j;
  j.steps = steps_;
  if (steps_ > 0) {
    j.detected_px = detected_sum_ / static_cast<double>(steps_);
    j.smoothed_px = smoothed_sum_ / static_cast<double>(steps_);
  }
  return j;
}

void FaceTracks::next_frame(std::span<Face> faces) {
  // Every pair that overlaps enough, highest overlap first; ties by track, then detection, so
  // the matching does not depend on the sort's implementation.
  std::vector<std::tuple<float, size_t, size_t>> pairs;
  for (size_t t = 0; t < tracks_.size(); ++t)
    for (size_t f = 0; f < faces.size(); ++f) {
      const float iou = box_iou(tracks_[t].box, faces[f].box);
      if (iou >= min_iou_) pairs.emplace_back(iou, t, f);
    }
  std::sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) {
    if (std::get<0>(a) != std::get<0>(b)) return std::get<0>(a) > std::get<0>(b);
    return std::make_pair(std::get<1>(a), std::get<2>(a)) < std::make_pair(std::get<1>(b), std::get<2>(b));
  });
  constexpr size_t kNone = static_cast<size_t>(-1);
  std::vector<size_t> track_of(faces.size(), kNone);
  std::vector<bool> track_used(tracks_.size(), false);
  for (const auto& [iou, t, f] : pairs) {
    if (track_used[t] || track_of[f] != kNone) continue;
    track_used[t] = true;
    track_of[f] = t;
  }

  std::vector<Track> next;
  next.reserve(faces.size());
  last_ids_.assign(faces.size(), 0);
  for (size_t f = 0; f < faces.size(); ++f) {
    Face& face = faces[f];
    const bool continued = track_of[f] != kNone;
    Track t;
    if (continued) {
      t = std::move(tracks_[track_of[f]]);
    } else {
      t.id = next_id_++;
    }
    t.box = face.box;
    t.recent.push_back(face.landmarks);
    if (t.recent.size() > static_cast<size_t>(window_)) t.recent.erase(t.recent.begin());
    Points smoothed = face.landmarks;
    if (window_ > 1) {
      // In double: the mean of up to N sets, rounded once.
      for (size_t k = 0; k < smoothed.size(); ++k) {
        double sum = 0;
        for (const Points& p : t.recent) sum += p[k];
        smoothed[k] = static_cast<float>(sum / static_cast<double>(t.recent.size()));
      }
    }
    if (continued) {
      detected_sum_ += movement(t.detected, face.landmarks);
      smoothed_sum_ += movement(t.smoothed, smoothed);
      ++steps_;
    }
    t.detected = face.landmarks;
    t.smoothed = smoothed;
    face.landmarks = smoothed;
    last_ids_[f] = t.id;
    next.push_back(std::move(t));
  }
  tracks_ = std::move(next);  // tracks not seen in this frame end here
}

}  // namespace gpen
