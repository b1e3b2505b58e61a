#!/bin/bash
# abg.sh OLD NEW N SIZE: alternate two gpen binaries' profiled bench N times; per-node min, total.
OLD=$1 NEW=$2 N=${3:-6} S=${4:-256}
args="--threads 2 bench --device cpu --size $S --runs 5 --profile --json"
[ $S = 256 ] && args="$args --channel-multiplier 1 --narrow 0.5"
d=$(mktemp -d)
for r in $(seq $N); do $OLD $args > $d/old_$r.json 2>/dev/null; $NEW $args > $d/new_$r.json 2>/dev/null; done
python3 - $d $N <<'P'
import json,sys,statistics,glob
d,N=sys.argv[1],int(sys.argv[2])
def load(b):
  L=[json.load(open(f'{d}/{b}_{r}.json')) for r in range(1,N+1)]
  med=[x['median_ms'] for x in L]
  nodes={}
  for x in L:
    for n in x['profile']['nodes']: nodes.setdefault(n['node'],[]).append(n['ms'])
  return med,nodes
mo,no=load('old'); mn,nn=load('new')
print('median_ms old',[round(x,1) for x in mo],'new',[round(x,1) for x in mn])
print(f"min old {min(mo):.2f} new {min(mn):.2f} ratio {min(mo)/min(mn):.3f}; median-of-medians old {statistics.median(mo):.2f} new {statistics.median(mn):.2f} ratio {statistics.median(mo)/statistics.median(mn):.3f}")
rows=[(n,min(no[n]),min(nn[n])) for n in no if n in nn]
rows.sort(key=lambda r:-(r[1]))
for n,a,b in rows[:26]: print(f"{n:32s} {a:7.3f} {b:7.3f} x{a/b:5.2f}")
print('sum of node mins', round(sum(r[1] for r in rows),2), round(sum(r[2] for r in rows),2))
P
