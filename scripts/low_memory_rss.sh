#!/usr/bin/env bash
# Peak resident size and time of `gpen restore --aligned` on one face with an 8-bit GPEN file, in
# the default mode, banded (--arena-budget) and in the CPU's low-memory mode (--memory-budget),
# in one run, the modes alternated ROUNDS times; and each output's PSNR against the fp32 file's
# output (the default mode on the fp32 weights, the same face).
#
#   scripts/low_memory_rss.sh INT8.gpw FP32.gpw FACE.png [OUTDIR=/tmp/gpen_low_memory] [ROUNDS=2]
#
# Writes OUTDIR/*.png, OUTDIR/time_*.txt (/usr/bin/time -v) and prints one line per mode and round
# (peak RSS from "Maximum resident set size", the network's time from gpen's "restored" line, the
# wall time of the whole process) and the PSNR table. build/gpen or $GPEN is the binary; threads
# from $THREADS (default 1). Needs /usr/bin/python3 with numpy and cv2 for the PSNR.
set -euo pipefail
cd "$(dirname "$0")/.."
INT8=${1:?usage: low_memory_rss.sh INT8.gpw FP32.gpw FACE.png [OUTDIR] [ROUNDS]}
FP32=${2:?usage: low_memory_rss.sh INT8.gpw FP32.gpw FACE.png [OUTDIR] [ROUNDS]}
FACE=${3:?usage: low_memory_rss.sh INT8.gpw FP32.gpw FACE.png [OUTDIR] [ROUNDS]}
OUT=${4:-/tmp/gpen_low_memory}
ROUNDS=${5:-2}
GPEN_BIN=${GPEN:-build/gpen}
THREADS=${THREADS:-1}
mkdir -p "$OUT"

MODES=("default|" "arena36|--arena-budget 36MiB" "budget128|--memory-budget 128MiB" "budget96|--memory-budget 96MiB")
run() {  # name model extra-args...
  local name=$1 model=$2
  shift 2
  /usr/bin/time -v "$GPEN_BIN" --threads "$THREADS" restore --aligned -m "$model" "$FACE" -o "$OUT/$name.png" "$@" \
    2> "$OUT/time_$name.txt" > /dev/null
  local rss ms wall
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2 / 1024}' "$OUT/time_$name.txt")
  ms=$(sed -n 's/^restored .*(\([0-9]*\) ms.*/\1/p' "$OUT/time_$name.txt")
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$OUT/time_$name.txt")
  printf '%-10s peak RSS %7s MiB  network %6s ms  process %s\n' "$name" "$rss" "$ms" "$wall"
}

echo "gpen: $("$GPEN_BIN" --version | head -1); threads $THREADS; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
run fp32 "$FP32"
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r"
  for m in "${MODES[@]}"; do
    name=${m%%|*}
    args=${m#*|}
    # shellcheck disable=SC2086
    run "$name" "$INT8" $args
  done
done
grep -h "low-memory mode" "$OUT"/time_budget*.txt || true

/usr/bin/python3 - "$OUT" <<'EOF'
import sys, cv2, numpy as np
out = sys.argv[1]
ref = cv2.imread(f"{out}/fp32.png").astype(np.float64)
print("PSNR of the 8-bit output against the fp32 file's (same face, default mode):")
for name in ("default", "arena36", "budget128", "budget96"):
    y = cv2.imread(f"{out}/{name}.png").astype(np.float64)
    mse = np.mean((y - ref) ** 2)
    psnr = float("inf") if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)
    print(f"  {name:10s} {psnr:6.2f} dB  (max |diff| {int(np.abs(y - ref).max())} levels)")
d = cv2.imread(f"{out}/default.png").astype(np.int32)
for name in ("budget128", "budget96"):
    y = cv2.imread(f"{out}/{name}.png").astype(np.int32)
    print(f"  {name} against the default mode on the same 8-bit file: {int((y != d).sum())} of {d.size} values differ, "
          f"max {int(np.abs(y - d).max())} level(s)")
EOF
