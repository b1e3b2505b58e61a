#!/bin/bash
# ab.sh OLD NEW FILTER N [threads]: alternate two benchmark binaries N times; min and median per case.
OLD=$1 NEW=$2 F=$3 N=${4:-8} T=${5:-2}
out=$(mktemp)
for r in $(seq $N); do
  for b in old new; do bin=$OLD; [ $b = new ] && bin=$NEW
    OMP_NUM_THREADS=$T $bin --benchmark_filter="$F" --benchmark_min_time=0.2 2>/dev/null | grep real_time | awk -v b=$b '{print b, $1, $2}' >> $out
  done
done
python3 - "$out" <<'P'
import sys,collections,statistics
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
  b,n,v=l.split(); d[(n,b)].append(float(v))
names=sorted({n for n,_ in d})
for n in names:
  o=d[(n,'old')]; w=d[(n,'new')]
  print(f"{n:45s} old min {min(o):7.3f} med {statistics.median(o):7.3f} | new min {min(w):7.3f} med {statistics.median(w):7.3f} | old/new min {min(o)/min(w):5.3f} med {statistics.median(o)/statistics.median(w):5.3f}")
P
