#!/bin/bash
cd /work/main
B=/tmp/bench_pull; F='styled_64_c128/winograd4|styled_32/winograd4'
nf=0; nn=0
run() { env "$@" --benchmark_filter="$F" --benchmark_min_time=0.2 2>/dev/null | grep real_time | awk '{printf "%s ", $2}'; }
for i in $(seq 1 600); do
  d=$(build/core_distance)
  if [ "$d" -gt 200 ] && [ $nf -lt 4 ]; then k=far; nf=$((nf+1));
  elif [ "$d" -lt 150 ] && [ $nn -lt 3 ] && [ $((i % 9)) -eq 0 ]; then k=near; nn=$((nn+1));
  else sleep 2; continue; fi
  a=$(run X=1 $B); b=$(run OMP_NUM_THREADS=1 taskset -c 0 $B); c=$(run OMP_NUM_THREADS=1 taskset -c 1 $B); e=$(run X=1 $B); d2=$(build/core_distance)
  echo "$k $d $d2 | 2t $a | cpu0 $b | cpu1 $c | 2t $e"
  [ $nf -ge 4 ] && [ $nn -ge 3 ] && break
done
