// FaceTracks (engine/photo/face_tracks.h): detections matched to the previous frame's tracks by
// box overlap, greedily and highest overlap first; a new track for a detection left over, the end
// of a track not seen; landmarks averaged causally over the last N frames, untouched for N <= 1;
// the jitter measured on what was detected and on what is handed back.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "engine/photo/face_tracks.h"

using namespace gpen;

namespace {

// A face whose box is (x, y) to (x + s, y + s) and whose 5 landmarks all sit at (lx, ly).
Face face_at(float x, float y, float s, float lx, float ly) {
  Face f;
  f.box = {x, y, x + s, y + s};
  f.score = 0.99f;
  for (int k = 0; k < 5; ++k) {
    f.landmarks[2 * k] = lx + static_cast<float>(k);
    f.landmarks[2 * k + 1] = ly;
  }
  return f;
}

}  // namespace

TEST_CASE("box_iou: overlap over union, 0 for disjoint or empty boxes") {
  CHECK(box_iou({0, 0, 10, 10}, {0, 0, 10, 10}) == doctest::Approx(1.0));
  CHECK(box_iou({0, 0, 10, 10}, {5, 0, 15, 10}) == doctest::Approx(50.0 / 150.0));
  CHECK(box_iou({0, 0, 10, 10}, {10, 0, 20, 10}) == 0.0f);
  CHECK(box_iou({0, 0, 0, 10}, {0, 0, 10, 10}) == 0.0f);
  CHECK(box_iou({0, 0, NAN, 10}, {0, 0, 10, 10}) == 0.0f);
}

TEST_CASE("FaceTracks with a window of 1: landmarks exactly as detected, tracks still followed and measured") {
  FaceTracks t(1);
  const float xs[] = {100.3f, 101.1f, 99.7f, 100.9f};
  for (float x : xs) {
    std::vector<Face> frame = {face_at(10, 10, 50, x, 40.25f), face_at(200, 10, 50, 230, 40)};
    const std::vector<Face> detected = frame;
    t.next_frame(frame);
    for (size_t i = 0; i < frame.size(); ++i) CHECK(frame[i].landmarks == detected[i].landmarks);
    CHECK(t.last_ids() == std::vector<int>{0, 1});
  }
  CHECK(t.tracks_started() == 2);
  const LandmarkJitter j = t.jitter();
  CHECK(j.steps == 6);  // two faces continued in three frames
  CHECK(j.detected_px == j.smoothed_px);
  CHECK(j.detected_px == doctest::Approx((0.8 + 1.4 + 1.2) / 6).epsilon(1e-6));  // the second face never moves
}

TEST_CASE("FaceTracks: the mean of the last N landmark sets, fewer while the track is young") {
  FaceTracks t(3);
  const float xs[] = {0, 3, 6, 9, 30};
  const float want[] = {0, 1.5f, 3, 6, 15};
  for (int i = 0; i < 5; ++i) {
    std::vector<Face> frame = {face_at(10, 10, 50, xs[i], 20)};
    t.next_frame(frame);
    CHECK(frame[0].landmarks[0] == doctest::Approx(want[i]));
    CHECK(frame[0].landmarks[2] == doctest::Approx(want[i] + 1));
    CHECK(frame[0].landmarks[1] == 20.0f);
    CHECK(frame[0].box == face_at(10, 10, 50, 0, 0).box);  // boxes stay as detected
  }
  const LandmarkJitter j = t.jitter();
  CHECK(j.steps == 4);
  CHECK(j.detected_px == doctest::Approx((3 + 3 + 3 + 21) / 4.0));
  CHECK(j.smoothed_px == doctest::Approx((1.5 + 1.5 + 3 + 9) / 4.0));
}

TEST_CASE("FaceTracks: each detection continues the track it overlaps most, whatever the order of detection") {
  FaceTracks t(4);
  std::vector<Face> a = {face_at(0, 0, 100, 10, 10), face_at(300, 0, 100, 310, 10)};
  t.next_frame(a);
  CHECK(t.last_ids() == std::vector<int>{0, 1});
  // The same faces moved a little, listed the other way round.
  std::vector<Face> b = {face_at(304, 2, 100, 314, 12), face_at(4, 2, 100, 14, 12)};
  t.next_frame(b);
  CHECK(t.last_ids() == std::vector<int>{1, 0});
  CHECK(b[0].landmarks[0] == doctest::Approx(312));  // averaged with its own track, not the other's
  CHECK(b[1].landmarks[0] == doctest::Approx(12));
}

TEST_CASE("FaceTracks: highest overlap first, one detection per track, a new track for the rest") {
  FaceTracks t(2);
  std::vector<Face> a = {face_at(0, 0, 100, 0, 0)};
  t.next_frame(a);
  // Both overlap track 0; the second more (IoU 0.82 against 0.54): it continues the track.
  std::vector<Face> b = {face_at(30, 0, 100, 50, 0), face_at(10, 0, 100, 20, 0)};
  t.next_frame(b);
  CHECK(t.last_ids() == std::vector<int>{1, 0});
  CHECK(b[0].landmarks[0] == doctest::Approx(50));  // a young track: its own landmarks
  CHECK(b[1].landmarks[0] == doctest::Approx(10));
  CHECK(t.tracks_started() == 2);
}

TEST_CASE("FaceTracks: below the overlap threshold, or after a frame unseen, a face starts over") {
  FaceTracks t(5);
  std::vector<Face> a = {face_at(0, 0, 100, 0, 0)};
  t.next_frame(a);
  // Shifted by 60% of its width: IoU 0.25 < 0.3, a new track with its own landmarks.
  std::vector<Face> b = {face_at(60, 0, 100, 60, 0)};
  t.next_frame(b);
  CHECK(t.last_ids() == std::vector<int>{1});
  CHECK(b[0].landmarks[0] == doctest::Approx(60));
  // Not seen for one frame: track 1 ends; back at the same place, it is track 2.
  std::vector<Face> none;
  t.next_frame(none);
  CHECK(t.last_ids().empty());
  std::vector<Face> c = {face_at(60, 0, 100, 66, 0)};
  t.next_frame(c);
  CHECK(t.last_ids() == std::vector<int>{2});
  CHECK(c[0].landmarks[0] == doctest::Approx(66));
  CHECK(t.jitter().steps == 0);
  t.reset();
  std::vector<Face> d = {face_at(60, 0, 100, 66, 0)};
  t.next_frame(d);
  CHECK(t.last_ids() == std::vector<int>{0});
}

TEST_CASE("FaceTracks: a still face's detector noise, averaged over N frames, moves about N times less") {
  // Landmarks scattered +-1 px around rest by a fixed pseudo-random sequence: the frame-to-frame
  // movement of a mean of N i.i.d. positions is (x_t - x_{t-N}) / N, 1/N of the raw movement
  // once the track is N frames old.
  FaceTracks t(5);
  unsigned s = 12345;
  auto noise = [&s] {
    s = s * 1103515245u + 12345u;
    return static_cast<float>((s >> 16) & 0x7fff) / 16383.5f - 1.0f;
  };
  for (int i = 0; i < 200; ++i) {
    std::vector<Face> frame = {face_at(10 + noise(), 10 + noise(), 80, 40 + noise(), 50 + noise())};
    t.next_frame(frame);
  }
  const LandmarkJitter j = t.jitter();
  CHECK(j.steps == 199);
  CHECK(j.detected_px > 0.5);
  // About 1/5 (for 1/N at N = 5 with i.i.d. noise; 1/4 leaves room for the random sequence).
  CHECK(j.smoothed_px < j.detected_px / 4);
}
