#!/usr/bin/env bash
# The landmark jitter `gpen video --smooth N` reports, for several N, on a clip of a still photo:
# the mean frame-to-frame movement, in pixels, of the tracked faces' landmarks as detected and as
# smoothed (docs/video.md, "Temporal smoothing"). The detections, and so the jitter, depend on the
# detector only: any GPEN model gives the same figures.
#
#   scripts/video_jitter.sh GPEN.gpw RETINA.gpw [CLIP] [N...]
#
# CLIP defaults to tests/video/make_clips.py's still_noise_320.mp4 (the kids photo under fresh
# noise in every frame, 12 frames of 320x240), made into WORKDIR; N defaults to 1 3 5 8 (1:
# tracked, landmarks as detected). build/gpen or $GPEN is the binary; WORKDIR is
# $GPEN_JITTER_DIR or /tmp/gpen_video_jitter.
set -euo pipefail
cd "$(dirname "$0")/.."
GPEN_MODEL=${1:?usage: video_jitter.sh GPEN.gpw RETINA.gpw [CLIP] [N...]}
RETINA=${2:?usage: video_jitter.sh GPEN.gpw RETINA.gpw [CLIP] [N...]}
WORK=${GPEN_JITTER_DIR:-/tmp/gpen_video_jitter}
mkdir -p "$WORK"
CLIP=${3:-}
if [ -z "$CLIP" ]; then
  # Quiet unless it fails: making the test clips also reads the damaged ones, which FFmpeg reports.
  if ! GPEN_SHARED_DIR=${GPEN_SHARED_DIR:-../shared} /usr/bin/python3 tests/video/make_clips.py "$WORK/clips" \
      >"$WORK/make_clips.log" 2>&1; then
    cat "$WORK/make_clips.log" >&2
    exit 1
  fi
  CLIP="$WORK/clips/still_noise_320.mp4"
fi
shift $(( $# < 3 ? $# : 3 ))
WINDOWS=${*:-1 3 5 8}
GPEN_BIN=${GPEN:-build/gpen}
printf '%-8s %-8s %-8s %-14s %-14s %s\n' smooth faces steps detected_px smoothed_px ratio
for n in $WINDOWS; do
  "$GPEN_BIN" video -m "$GPEN_MODEL" -d "$RETINA" "$CLIP" -o "$WORK/out.mkv" --quiet --smooth "$n" \
    --report "$WORK/report.json"
  /usr/bin/python3 - "$WORK/report.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))["videos"][0]
s = v["smooth"]
j = s["landmark_jitter_px"]
ratio = j["detected"] / j["smoothed"] if j["smoothed"] > 0 else float("inf")
print(f'{s["frames"]:<8} {v["faces"]:<8} {j["steps"]:<8} {j["detected"]:<14.4f} {j["smoothed"]:<14.4f} {ratio:.2f}')
PY
done
