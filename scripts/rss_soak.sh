#!/usr/bin/env bash
# Memory soak of `gpen restore`: N small photo variants (random crops of ../shared/images, random
# sizes, JPEG and PNG, so the detector sees many input sizes) restored in one run, with VmRSS
# sampled from /proc/PID/status while it runs. Memory must stay flat after the first photos.
#
#   scripts/rss_soak.sh GPEN.gpw RETINA.gpw [N=300] [WORKDIR=/tmp/gpen_rss_soak] [extra restore args...]
#
# Writes WORKDIR/in/ (the variants, regenerated only when N changes), WORKDIR/out/, report.json,
# rss.tsv (seconds, VmRSS KiB, outputs written so far) and prints a summary. Needs /usr/bin/python3
# with numpy and cv2 to make the variants; build/gpen or $GPEN is the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
GPEN_MODEL=${1:?usage: rss_soak.sh GPEN.gpw RETINA.gpw [N] [WORKDIR] [restore args...]}
RETINA=${2:?usage: rss_soak.sh GPEN.gpw RETINA.gpw [N] [WORKDIR] [restore args...]}
N=${3:-300}
WORK=${4:-/tmp/gpen_rss_soak}
shift $(( $# < 4 ? $# : 4 ))
GPEN_BIN=${GPEN:-build/gpen}
SHARED=${GPEN_SHARED_DIR:-../shared}
INTERVAL=${RSS_INTERVAL:-0.5}

mkdir -p "$WORK/in"
if [ "$(cat "$WORK/in/.count" 2>/dev/null || true)" != "$N" ]; then
  rm -rf "$WORK/in" && mkdir -p "$WORK/in"
  /usr/bin/python3 - "$SHARED/images" "$WORK/in" "$N" <<'EOF'
import glob, os, sys
import cv2, numpy as np
src_dir, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
srcs = [cv2.imread(p, cv2.IMREAD_COLOR) for p in sorted(glob.glob(os.path.join(src_dir, '*.*g')))]
rng = np.random.RandomState(7)
for i in range(n):
    img = srcs[i % len(srcs)]
    h, w = img.shape[:2]
    f = rng.uniform(0.5, 1.0)                       # crop: 50-100 % of each side
    ch, cw = int(h * f), int(w * f)
    y, x = rng.randint(0, h - ch + 1), rng.randint(0, w - cw + 1)
    crop = img[y:y + ch, x:x + cw]
    side = rng.randint(200, 641)                    # longer side 200..640 px
    s = side / max(ch, cw)
    crop = cv2.resize(crop, (max(16, round(cw * s)), max(16, round(ch * s))), interpolation=cv2.INTER_AREA)
    if rng.rand() < 0.5:
        cv2.imwrite(os.path.join(out, 'v%03d.jpg' % i), crop, [cv2.IMWRITE_JPEG_QUALITY, 90])
    else:
        cv2.imwrite(os.path.join(out, 'v%03d.png' % i), crop)
open(os.path.join(out, '.count'), 'w').write(str(n))
EOF
fi

rm -rf "$WORK/out" && mkdir -p "$WORK/out"
: > "$WORK/rss.tsv"
start=$(date +%s.%N)
"$GPEN_BIN" restore -m "$GPEN_MODEL" -d "$RETINA" "$WORK/in" -o "$WORK/out" --report "$WORK/report.json" "$@" \
  2> "$WORK/stderr.txt" &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  [ -n "$rss" ] && awk -v a="$(date +%s.%N)" -v b="$start" -v r="$rss" -v d="$(find "$WORK/out" -type f | wc -l)" \
    'BEGIN { printf "%.1f\t%s\t%s\n", a - b, r, d }' >> "$WORK/rss.tsv"
  sleep "$INTERVAL"
done
status=0
wait "$pid" || status=$?

/usr/bin/python3 - "$WORK" "$N" "$status" <<'EOF'
import json, sys
work, n, status = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = [tuple(float(v) for v in l.split('\t')) for l in open(work + '/rss.tsv') if l.strip()]
rep = json.load(open(work + '/report.json'))
t = rep['totals']
print('exit status %d: %d photos, %d failed, %d faces restored, GPEN batch %d, peak RSS (report) %.1f MiB'
      % (status, t['images'], t['failed'], t['faces_restored'], rep['memory']['gpen_batch'], rep['memory']['peak_rss_mib']))
if not rows:
    sys.exit('no RSS samples')
print('%d samples over %.0f s' % (len(rows), rows[-1][0]))
def rss_at(frac):
    done = [r for r in rows if r[2] >= frac * n]
    return done[0][1] / 1024 if done else float('nan')
marks = [0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99]
print('VmRSS (MiB) once this share of photos was written: ' +
      ', '.join('%d%%: %.1f' % (m * 100, rss_at(m)) for m in marks))
late = [r[1] for r in rows if r[2] >= 0.1 * n]
if late:
    print('after the first 10%%: min %.1f, max %.1f MiB (spread %.1f MiB)'
          % (min(late) / 1024, max(late) / 1024, (max(late) - min(late)) / 1024))
EOF
exit "$status"
