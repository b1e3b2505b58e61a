#!/usr/bin/env bash
# Start-up time of `gpen restore --aligned`: from the shell's fork+exec to the first op of the
# generator (`--trace-start` makes gpen print the wall clock there). Median of N runs, page cache
# warm (the first run is discarded), so it measures the engine, not the disk. Each run restores the
# face in full (the output goes to a temporary folder).
# Usage: scripts/startup.sh MODEL.gpw FACE.png [N=9]
set -euo pipefail
cd "$(dirname "$0")/.."
model=$1 face=$2 n=${3:-9}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
build/gpen restore --aligned --trace-start -m "$model" "$face" -o "$out/warm.png" 2>/dev/null
for i in $(seq "$n"); do
  t0=$(date +%s%N)
  first=$(build/gpen restore --aligned --trace-start -m "$model" "$face" -o "$out/f$i.png" 2>&1 >/dev/null |
          sed -n 's/^gpen: first op at \([0-9]*\) ns$/\1/p')
  echo $(( (first - t0) / 1000 ))
done | sort -n | awk '{v[NR]=$1} END {printf "start-up to first op: median %.1f ms, min %.1f ms, max %.1f ms over %d runs\n", v[int((NR+1)/2)]/1000, v[1]/1000, v[NR]/1000, NR}'
