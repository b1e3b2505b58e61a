#!/usr/bin/env bash
# The CPU targets of docs/benchmarks.md in one go: GPEN-BFR-512 and -256 layouts, RetinaFace R50 at
# 1024x768 and GFPGAN-512 (GFPGANv1Clean as released); on request CodeFormer-512 and RestoreFormer++-512
# as released; engine against ONNX Runtime and OpenVINO in the same invocation, 2 threads each,
# INVOCATIONS times (default 3), the JSON of each under OUT (default out/cpu-peers).
# Prints one table row per invocation and the median ratio against the faster peer per config.
# Needs build/gpen and the peers' venv (scripts/peers_venv.sh; made here when missing). The R50 weights
# are random in the official layout (tests/reference/make_retinaface_fixtures.py --r50), made once
# under build/peers_r50. GFPGAN-512 uses the bench's synthetic weights, the same in the official network
# that tests/reference/export_gfpgan_onnx.py exports (torch for /usr/bin/python3, and the official code:
# $GFPGAN_OFFICIAL, default build/gfpgan-official, installed there out of tree when missing).
# codeformer512 (w $CODEFORMER_W, default 0.5) and restoreformer512 likewise with the bench's synthetic
# weights in the official networks (tests/reference/export_transformer_onnx.py; CodeFormer's code from
# $CODEFORMER_PIP, default /tmp/codeformer-official of scripts/reference_packages.sh, RestoreFormer++'s
# from a checkout at $RESTOREFORMER_REPO, default build/restoreformer-official, cloned when missing).
# They are not in the default list: an invocation of each takes about 2.5 minutes on 2 vCPUs, and the
# first one exports its network (about 2-4 minutes, 300-380 MB).
# Run it on an otherwise idle machine: the figures are wall times.
# Usage: bench/cpu_peers.sh [INVOCATIONS] [OUT] [CONFIGS...]   (CONFIGS: gpen512 gpen256 r50 gfpgan512, the
#        default; also codeformer512 restoreformer512)
# GPEN_PEERS_OMP_SPIN=default: the engine with libgomp's default spin (below).
# PEERS_RUNS=R: R timed runs for the engine and for each peer in every invocation (default 3 for gpen512,
# r50, gfpgan512, codeformer512 and restoreformer512, 5 for gpen256), the same for all three; each reports its median. More runs make a
# median that a short disturbance of the host cannot move (a 90 ms engine median of 5 spans 0.5 s).
# AVX2_ONLY=1 runs everything (engine and both peers) under bench/avx2_only.c, which hides AVX-512
# from CPUID, so an AVX-512 machine measures the AVX2 code paths of all three (the AVX2 target).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-3}
OUT=${2:-out/cpu-peers}
shift $(( $# > 2 ? 2 : $# )) || true
CONFIGS=("$@")
[ ${#CONFIGS[@]} -gt 0 ] || CONFIGS=(gpen512 gpen256 r50 gfpgan512)
mkdir -p "$OUT"
[ -x build/gpen ] || { echo "cpu_peers: build/gpen missing (scripts/build.sh)" >&2; exit 2; }
# The peers' environment and their ONNX exports in the checkout (bench/openvino_layers.py reads .peers/).
if [ -z "${GPEN_PEERS_PYTHON:-}" ]; then
  [ -x .venv-peers/bin/python ] || scripts/peers_venv.sh
  export GPEN_PEERS_PYTHON=$PWD/.venv-peers/bin/python
fi
export GPEN_PEERS_CACHE=${GPEN_PEERS_CACHE:-$PWD/.peers}
R50=build/peers_r50
if [[ " ${CONFIGS[*]} " == *" r50 "* ]] && [ ! -f $R50/r50.gpw ]; then
  /usr/bin/python3 tests/reference/make_retinaface_fixtures.py --r50 $R50 >/dev/null
  build/gpen convert $R50/checkpoint.pth -o $R50/r50.gpw >/dev/null
fi
if [[ " ${CONFIGS[*]} " == *" gfpgan512 "* ]]; then
  export GFPGAN_OFFICIAL=${GFPGAN_OFFICIAL:-$PWD/build/gfpgan-official}
  [ -f "$GFPGAN_OFFICIAL/gfpgan/archs/gfpganv1_clean_arch.py" ] ||
    /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$GFPGAN_OFFICIAL" gfpgan basicsr
fi
if [[ " ${CONFIGS[*]} " == *" codeformer512 "* ]]; then
  export CODEFORMER_PIP=${CODEFORMER_PIP:-/tmp/codeformer-official}
  [ -f "$CODEFORMER_PIP/codeformer/basicsr/archs/codeformer_arch.py" ] || scripts/reference_packages.sh
fi
if [[ " ${CONFIGS[*]} " == *" restoreformer512 "* ]]; then
  export RESTOREFORMER_REPO=${RESTOREFORMER_REPO:-$PWD/build/restoreformer-official}
  [ -f "$RESTOREFORMER_REPO/RestoreFormer/modules/vqvae/vqvae_arch.py" ] ||
    git clone --quiet --depth 1 https://github.com/wzhouxiff/RestoreFormerPlusPlus "$RESTOREFORMER_REPO"
fi
# The engine's OpenMP threads spin briefly by default here (the setting docs/benchmarks.md recommends on a
# shared machine); GPEN_PEERS_OMP_SPIN=default leaves libgomp's own spin (about 300k iterations), as a
# user's plain `gpen` run has it, like the peers' own thread pools, which spin by default.
if [ "${GPEN_PEERS_OMP_SPIN:-short}" = default ]; then unset GOMP_SPINCOUNT; else export GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-1000}; fi
# Built before AVX2_ONLY's LD_PRELOAD below, under which the compiler itself crashes.
cc -O2 -Wall -pthread -o build/core_distance bench/core_distance.c
if [ "${AVX2_ONLY:-0}" = 1 ]; then
  cc -O2 -Wall -shared -fPIC -o build/avx2_only.so bench/avx2_only.c
  export LD_PRELOAD=$PWD/build/avx2_only.so
  build/gpen --version | grep -q "CPU kernels: avx2" || { echo "cpu_peers: AVX2_ONLY=1, but gpen still picks AVX-512" >&2; exit 2; }
fi
args_for() {
  case $1 in
    gpen512) echo "--device cpu --size 512 --runs ${PEERS_RUNS:-3}" ;;
    gpen256) echo "--device cpu --size 256 --channel-multiplier 1 --narrow 0.5 --runs ${PEERS_RUNS:-5}" ;;
    gfpgan512) echo "--device cpu --arch gfpgan --size 512 --accuracy --runs ${PEERS_RUNS:-3}" ;;
    codeformer512) echo "--device cpu --arch codeformer --fidelity ${CODEFORMER_W:-0.5} --accuracy --runs ${PEERS_RUNS:-3}" ;;
    restoreformer512) echo "--device cpu --arch restoreformer --accuracy --runs ${PEERS_RUNS:-3}" ;;
    r50) echo "--device cpu --arch retinaface -d $R50/r50.gpw --image ../shared/images/kids_1024x768.jpg --runs ${PEERS_RUNS:-3} --pytorch-checkpoint $R50/checkpoint.pth" ;;
  esac
}
lscpu | grep -E "Model name|^CPU\(s\)|Flags" | sed 's/Flags:.*\(avx512f\).*/Flags: ... avx512f .../' > "$OUT/cpu.txt"
echo "timed runs per engine and peer: ${PEERS_RUNS:-default}" >> "$OUT/cpu.txt"
echo "engine OpenMP spin: ${GOMP_SPINCOUNT:-libgomp default}${OMP_WAIT_POLICY:+, OMP_WAIT_POLICY=$OMP_WAIT_POLICY}" >> "$OUT/cpu.txt"
[ -z "${LD_PRELOAD:-}" ] || echo "AVX2_ONLY=1: AVX-512 hidden from CPUID (bench/avx2_only.c)" >> "$OUT/cpu.txt"
build/gpen --version > "$OUT/version.txt"
# How far apart the two CPUs are, before and after each invocation (bench/core_distance.c: a cache
# line's round trip; on the VMs of docs/benchmarks.md 50-80 ns on one CCD, 300-350 ns on two, and
# the host moves them within seconds): the engine's 2-thread forwards run 1.2-1.3x slower far apart.
echo "cores: ns per cache-line round trip between the first two CPUs, before / after each invocation" >> "$OUT/cpu.txt"
for i in $(seq 1 "$N"); do
  for c in "${CONFIGS[@]}"; do
    f="$OUT/${c}_peers_$i.json"
    load=$(cut -d' ' -f1 /proc/loadavg)
    echo "$c #$i before: $(cat /proc/loadavg)" >> "$OUT/loadavg.txt"
    dist0=$(build/core_distance || echo ?)
    # shellcheck disable=SC2046
    build/gpen --threads 2 bench $(args_for "$c") --compare onnxruntime,openvino --json > "$f"
    dist1=$(build/core_distance || echo ?)
    echo "$c #$i after:  $(cat /proc/loadavg)" >> "$OUT/loadavg.txt"
    python3 - "$f" "$c" "$i" "$load" "$dist0/$dist1" <<'PY'
import json, sys
f, c, i, load, cores = sys.argv[1:]
d = json.load(open(f))
eng = d.get("network_median_ms", d["median_ms"])
peers = {k: v["ms_per_face"] for k, v in d["peers"].items() if "ms_per_face" in v}
best = min(peers, key=peers.get)
print(f"{c:8s} #{i} load {load:>5s} cores {cores:>7s} ns  engine {eng:8.1f} ms  " +
      "  ".join(f"{k} {v:8.1f}" for k, v in sorted(peers.items())) + f"  vs {best}: {peers[best] / eng:.2f}x")
PY
  done
done | tee "$OUT/summary.txt"
python3 - "$OUT" <<'PY' | tee -a "$OUT/summary.txt"
import re, statistics, sys
rows, by_kind = {}, {}
for line in open(sys.argv[1] + "/summary.txt"):
    m = re.match(r"(\S+)\s+#\d+.* cores\s+(\S+) ns.*: ([\d.]+)x", line)
    if not m: continue
    rows.setdefault(m.group(1), []).append(float(m.group(3)))
    d = m.group(2).split("/")
    kind = "near" if all(x.isdigit() and int(x) < 150 for x in d) else "far" if all(x.isdigit() and int(x) > 200 for x in d) else "mixed"
    by_kind.setdefault(m.group(1), {}).setdefault(kind, []).append(float(m.group(3)))
for c, r in rows.items():
    print(f"{c}: median ratio against the faster peer {statistics.median(r):.2f}x over {len(r)} invocations ({', '.join(f'{x:.2f}' for x in r)})")
    print(f"{c}: by core distance (< 150 ns near, > 200 far, before and after): " +
          ", ".join(f"{k} {statistics.median(v):.2f}x over {len(v)}" for k, v in sorted(by_kind[c].items())))
PY
