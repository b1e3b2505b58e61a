#!/bin/bash
# A/B of env settings for the microbenchmark, classed by distance: $1 = bench binary, $2 = env var for B
cd /work/main
B=$1; V=$2; F="${3:-styled_64_c128/winograd4|styled_32/winograd4}"
nf=0; nn=0
run() { env $1 $B --benchmark_filter="$F" --benchmark_min_time=0.2 2>/dev/null | grep real_time | awk '{printf "%s ", $2}'; }
for i in $(seq 1 600); do
  d=$(build/core_distance)
  if [ "$d" -gt 200 ] && [ $nf -lt ${NF:-6} ]; then k=far; nf=$((nf+1));
  elif [ "$d" -lt 150 ] && [ $nn -lt 4 ] && [ $((i % 9)) -eq 0 ]; then k=near; nn=$((nn+1));
  else sleep 2; continue; fi
  a=$(run X=1); b=$(run $V=1); d2=$(build/core_distance)
  echo "$k $d $d2 | base $a | $V $b"
  [ $nf -ge ${NF:-6} ] && [ $nn -ge 4 ] && break
done
