#!/bin/bash
# CPU seconds (user+sys) per ParseNet run, engine and PyTorch, 2 threads: (T(runs=3) - T(runs=1)) / 2,
# which cancels start-up, loading and the warm-up run. Passive OpenMP waits on both sides.
export OMP_WAIT_POLICY=passive
S=${1:-512}
cd "$(dirname "$0")/.."
m() { /usr/bin/time -f "%U %S %e" "$@" 2>&1 >/dev/null | tail -1; }
e1=$(m build/gpen --threads 2 bench --arch parsenet -m build/test_parsenet_cache/parsenet_seed1.gpw --size $S --runs 1 --warmup 1)
e3=$(m build/gpen --threads 2 bench --arch parsenet -m build/test_parsenet_cache/parsenet_seed1.gpw --size $S --runs 3 --warmup 1)
p1=$(m /usr/bin/python3 tests/reference/parsenet_reference.py --bench --size $S --threads 2 --runs 1)
p3=$(m /usr/bin/python3 tests/reference/parsenet_reference.py --bench --size $S --threads 2 --runs 3)
echo "engine runs=1: $e1 ; runs=3: $e3 (user sys wall)"
echo "pytorch runs=1: $p1 ; runs=3: $p3 (user sys wall)"
python3 - "$e1" "$e3" "$p1" "$p3" <<'PY'
import sys
v=[list(map(float,a.split())) for a in sys.argv[1:]]
e=((v[1][0]+v[1][1])-(v[0][0]+v[0][1]))/2; p=((v[3][0]+v[3][1])-(v[2][0]+v[2][1]))/2
ew=(v[1][2]-v[0][2])/2; pw=(v[3][2]-v[2][2])/2
print("CPU s per run: engine %.2f, pytorch %.2f, ratio %.2fx; wall s per run: engine %.2f, pytorch %.2f, ratio %.2fx" % (e,p,p/e,ew,pw,pw/ew))
PY
