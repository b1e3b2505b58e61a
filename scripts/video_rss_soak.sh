#!/usr/bin/env bash
# Memory of `gpen video` over a video's length: a short and a long clip of the same slow pan over
# a photo with children's faces (kids_1024x768.jpg of ../shared/images), made by the ffmpeg program
# with an AAC track, each restored by one `gpen video` run with VmRSS sampled from
# /proc/PID/status. The restorer's planned arena and the pipeline's pool of frames are fixed at
# the start (docs/video.md, "Memory and speed"), so the long clip's peak RSS must stay within
# 10 % of the short one's: the script exits 1 when it does not.
#
#   scripts/video_rss_soak.sh [GPEN.gpw|-] [RETINA.gpw|-] [WORKDIR=/tmp/gpen_video_rss_soak] [video args...]
#
# Models: by default (or "-") the tiny GPEN fixture (tests/fixtures/gpen/s32) and the real
# RetinaFace mobilenet0.25 (../shared/models), converted into WORKDIR: faces are detected and
# restored in every frame, and the 10-minute clip takes minutes, not hours (GPEN-BFR-256 costs
# ~0.1 s a face on two cores: 15000 frames of 4-6 faces would take hours). The smaller the model's
# arena, the smaller a growth the 10 % bound lets through.
# Environment: SHORT_SECONDS (10), LONG_SECONDS (600), FPS (25), SIZE (320x240: the faces 35-45 px,
# all detected), THREADS (2), RSS_INTERVAL (0.5 s), GPEN (build/gpen), GPEN_SHARED_DIR (../shared),
# MAX_GROWTH (1.10).
# Writes WORKDIR/short.mp4 and long.mp4 (made again only when their settings change), out_*.mp4,
# report_*.json, rss_*.tsv (seconds, VmRSS KiB) and prints a summary. Needs the ffmpeg program
# and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
GPEN_MODEL=${1:--}
RETINA=${2:--}
WORK=${3:-/tmp/gpen_video_rss_soak}
shift $(( $# < 3 ? $# : 3 ))
GPEN_BIN=${GPEN:-build/gpen}
SHARED=${GPEN_SHARED_DIR:-../shared}
SHORT=${SHORT_SECONDS:-10}
LONG=${LONG_SECONDS:-600}
FPS=${FPS:-25}
SIZE=${SIZE:-320x240}
THREADS=${THREADS:-2}
INTERVAL=${RSS_INTERVAL:-0.5}
MAX_GROWTH=${MAX_GROWTH:-1.10}
PHOTO=$SHARED/images/kids_1024x768.jpg
[ -x "$GPEN_BIN" ] || { echo "video_rss_soak: $GPEN_BIN missing (scripts/build.sh)" >&2; exit 2; }
[ -f "$PHOTO" ] || { echo "video_rss_soak: $PHOTO missing" >&2; exit 2; }
mkdir -p "$WORK"

if [ "$GPEN_MODEL" = - ]; then
  GPEN_MODEL=$WORK/gpen_s32.gpw
  [ -f "$GPEN_MODEL" ] || "$GPEN_BIN" convert tests/fixtures/gpen/s32/checkpoint.pth -o "$GPEN_MODEL" >/dev/null 2>&1
fi
if [ "$RETINA" = - ]; then
  RETINA=$WORK/retinaface-mobilenet0.25.gpw
  [ -f "$RETINA" ] || "$GPEN_BIN" convert "$SHARED/models/retinaface-mobilenet0.25.pth" -o "$RETINA" >/dev/null 2>&1
fi

# A 560x420 window over the 1024x768 photo (4-6 faces in it), swept across the whole width every
# 20 s and down 80 px every 30 s, scaled to SIZE: the short clip is the long one's first seconds
# and already sweeps the whole width, so both see the same faces.
PAN="crop=w=560:h=420:x='232*(1-cos(2*PI*t/20))':y='120+40*(1-cos(2*PI*t/30))',scale=${SIZE/x/:}"
make_clip() {  # NAME SECONDS
  local out=$WORK/$1.mp4 want="$PAN $2 $FPS $(ffmpeg -version | head -n 1)"
  [ -f "$out" ] && [ "$(cat "$out.settings" 2>/dev/null || true)" = "$want" ] && return
  ffmpeg -hide_banner -loglevel error -y -loop 1 -framerate "$FPS" -i "$PHOTO" \
    -f lavfi -i "sine=frequency=440:sample_rate=48000" -vf "$PAN" -t "$2" \
    -c:v libx264 -preset veryfast -pix_fmt yuv420p -c:a aac -b:a 64k "$out.tmp.mp4"
  mv "$out.tmp.mp4" "$out"
  echo "$want" > "$out.settings"
}
t0=$(date +%s)
make_clip short "$SHORT"
make_clip long "$LONG"
echo "clips: ${SHORT} s and ${LONG} s at $FPS fps, $SIZE, with audio ($(( $(date +%s) - t0 )) s to make)"

soak() {  # NAME [video args...]
  local name=$1 status=0 pid start rss
  shift
  : > "$WORK/rss_$name.tsv"
  start=$(date +%s.%N)
  "$GPEN_BIN" --threads "$THREADS" video -m "$GPEN_MODEL" -d "$RETINA" "$WORK/$name.mp4" -o "$WORK/out_$name.mp4" \
    --report "$WORK/report_$name.json" --quiet "$@" 2> "$WORK/stderr_$name.txt" &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    [ -n "$rss" ] && awk -v a="$(date +%s.%N)" -v b="$start" -v r="$rss" 'BEGIN { printf "%.1f\t%s\n", a - b, r }' \
      >> "$WORK/rss_$name.tsv"
    sleep "$INTERVAL"
  done
  wait "$pid" || status=$?
  if [ "$status" != 0 ]; then
    echo "video_rss_soak: gpen video on the $name clip failed (exit status $status):" >&2
    tail -n 5 "$WORK/stderr_$name.txt" >&2
    exit "$status"
  fi
}
soak short "$@"
soak long "$@"

python3 - "$WORK" "$MAX_GROWTH" <<'EOF'
import json, sys
work, max_growth = sys.argv[1], float(sys.argv[2])
peaks = {}
for name in ('short', 'long'):
    v = json.load(open('%s/report_%s.json' % (work, name)))['videos'][0]
    rows = [tuple(float(x) for x in l.split('\t')) for l in open('%s/rss_%s.tsv' % (work, name)) if l.strip()]
    if not rows:
        sys.exit('no RSS samples of the %s run' % name)
    end = rows[-1][0]
    def at(frac):
        return [r[1] for r in rows if r[0] >= frac * end][0] / 1024
    m = v['memory']
    print('%-5s %6d frames, %6d faces, %5.1f frames/s, %6.0f s; peak RSS %.1f MiB (sampled max VmRSS %.1f MiB; '
          'at 10/50/90 %% of the run %.1f / %.1f / %.1f MiB); planned %.1f MiB, pool of %s frames'
          % (name, v['frames'], v['faces'], v['fps'], v['times_s']['wall'], v['peak_rss_mib'],
             max(r[1] for r in rows) / 1024, at(0.1), at(0.5), at(0.9), m.get('planned_bytes', 0) / 2**20,
             m.get('frames_in_flight', '?')))
    peaks[name] = v['peak_rss_mib']
ratio = peaks['long'] / peaks['short']
print('peak RSS long / short: %.3f (%+.1f %%; limit %+.0f %%)' % (ratio, (ratio - 1) * 100, (max_growth - 1) * 100))
sys.exit(0 if ratio <= max_growth else 1)
EOF
