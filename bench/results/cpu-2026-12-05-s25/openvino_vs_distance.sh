#!/bin/bash
cd /work/main
for i in $(seq 1 10); do
  a=$(build/core_distance | cut -d' ' -f1)
  r=$(.venv-peers/bin/python tests/reference/peer_bench.py --peer openvino --size 256 --cm 1 --narrow 0.5 --threads 2 --runs 15 --cache-dir .peers 2>/dev/null | tail -1 | python3 -c "import json,sys;d=json.loads(sys.stdin.read());print(round(d['ms_per_face'],1), round(d['min_ms_per_face'],1))")
  b=$(build/core_distance | cut -d' ' -f1)
  m=$(build/gpen --threads 2 bench --device cpu --size 256 --channel-multiplier 1 --narrow 0.5 --runs 15 --json 2>/dev/null | python3 -c "import json,sys;print(round(json.load(sys.stdin)['median_ms'],1))")
  c=$(build/core_distance | cut -d' ' -f1)
  echo "pp $a OV $r pp $b engine $m pp $c"
done
