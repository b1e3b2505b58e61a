#!/bin/bash
# run the microbenchmarks when far and when near, alternately classified
cd /work/main
nf=0; nn=0
for i in $(seq 1 400); do
  d=$(build/core_distance)
  if [ "$d" -gt 200 ] && [ $nf -lt 6 ]; then k=far; nf=$((nf+1));
  elif [ "$d" -lt 150 ] && [ $nn -lt 6 ] && [ $((i % 7)) -eq 0 ]; then k=near; nn=$((nn+1));
  else sleep 2; continue; fi
  r=$(build/bench/bench_cpu_gpen256 --benchmark_filter='blur_up_257|styled_64_c128/winograd4|styled_32/winograd4' --benchmark_min_time=0.2 2>/dev/null | grep real_time | awk '{printf "%s=%s ", $1, $2}')
  d2=$(build/core_distance)
  echo "$k $d $d2 $r"
  [ $nf -ge 6 ] && [ $nn -ge 6 ] && break
done
