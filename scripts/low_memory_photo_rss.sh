#!/usr/bin/env bash
# Peak resident size and time of `gpen restore PHOTO` (detection, alignment, GPEN, paste) with an
# 8-bit GPEN file in the default mode and in the CPU's low-memory mode (--memory-budget), in one
# run, the modes alternated ROUNDS times; and each output's PSNR against the fp32 file's output,
# over the pixels the fp32 run pasted faces onto (where its output differs from the photo) and
# over the whole photo: against the default mode's, and against the default mode's on the direct
# conv paths (GPEN_CPU_CONV=direct, --batch 1: the detector's arithmetic of the low-memory mode).
#
#   scripts/low_memory_photo_rss.sh INT8.gpw FP32.gpw DET.gpw PHOTO [OUTDIR=/tmp/gpen_low_memory_photo] [ROUNDS=1]
#
# Writes OUTDIR/*.png, OUTDIR/time_*.txt (/usr/bin/time -v) and OUTDIR/report_*.json, and prints a
# line per mode and round (peak RSS from "Maximum resident set size", the photo's time from gpen's
# line, the process's wall time) and the PSNR table. $GPEN is the command (default build/gpen; e.g.
# "qemu-aarch64-static -L /usr/aarch64-linux-gnu build-aarch64/gpen": the peak RSS is then the
# emulator's, guest and translator together); threads from $THREADS (default 1); the budgets from
# $BUDGETS (default "128MiB 96MiB"). Needs /usr/bin/python3 with numpy and cv2 for the PSNR.
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: low_memory_photo_rss.sh INT8.gpw FP32.gpw DET.gpw PHOTO [OUTDIR] [ROUNDS]"
INT8=${1:?$usage}
FP32=${2:?$usage}
DET=${3:?$usage}
PHOTO=${4:?$usage}
OUT=${5:-/tmp/gpen_low_memory_photo}
ROUNDS=${6:-1}
read -r -a GPEN_CMD <<< "${GPEN:-build/gpen}"
THREADS=${THREADS:-1}
read -r -a BUDGETS <<< "${BUDGETS:-128MiB 96MiB}"
mkdir -p "$OUT"

run() {  # name model extra-args...
  local name=$1 model=$2
  shift 2
  /usr/bin/time -v env "${RUN_ENV[@]}" "${GPEN_CMD[@]}" --threads "$THREADS" restore -m "$model" -d "$DET" "$PHOTO" -o "$OUT/$name.png" \
    --report "$OUT/report_$name.json" "$@" 2> "$OUT/time_$name.txt" > /dev/null
  local rss ms wall
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2 / 1024}' "$OUT/time_$name.txt")
  ms=$(sed -n 's/^.*restored -> .*(\([0-9]*\) ms)$/\1/p' "$OUT/time_$name.txt")
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$OUT/time_$name.txt")
  printf '%-12s peak RSS %7s MiB  photo %7s ms  process %s\n' "$name" "$rss" "$ms" "$wall"
}

echo "gpen: $("${GPEN_CMD[@]}" --version | head -1); threads $THREADS; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "photo: $PHOTO"
RUN_ENV=()
run fp32 "$FP32"
RUN_ENV=(GPEN_CPU_CONV=direct)
run fp32-direct "$FP32" --batch 1
RUN_ENV=()
names=(default)
for b in "${BUDGETS[@]}"; do names+=("budget$b"); done
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r"
  run default "$INT8"
  for b in "${BUDGETS[@]}"; do run "budget$b" "$INT8" --memory-budget "$b"; done
done
grep -h "low-memory mode:" "$OUT"/time_budget*.txt || true

/usr/bin/python3 - "$OUT" "$PHOTO" "${names[@]}" <<'EOF'
import sys, cv2, numpy as np
out, photo, names = sys.argv[1], sys.argv[2], sys.argv[3:]
src = cv2.imread(photo).astype(np.float64)
def psnr(a, b):
    mse = np.mean((a - b) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)
for refname in ("fp32", "fp32-direct"):
    ref = cv2.imread(f"{out}/{refname}.png").astype(np.float64)
    pasted = np.any(ref != src, axis=2)
    print(f"PSNR against the fp32 file's output ({refname}); pasted pixels: {int(pasted.sum())} of {pasted.size}")
    for name in names:
        y = cv2.imread(f"{out}/{name}.png").astype(np.float64)
        print(f"  {name:12s} pasted pixels {psnr(y[pasted], ref[pasted]):6.2f} dB, whole photo {psnr(y, ref):6.2f} dB "
              f"(max |diff| {int(np.abs(y - ref).max())} levels)")
EOF
