#!/usr/bin/env bash
# One run on a lent GPU machine (no network there; CUDA, CMake and PyTorch installed, none of this
# build's -dev packages; 16 cores), at most 10 minutes in all. With a bundle (scripts/gpu_bundle.sh:
# the binaries, their libraries and inputs, built on the build machine) nothing is configured or
# built there: the bundle's run.sh runs this copy of the script, and scripts/gpu_check.sh uses
# ./.gpu_bundle when it is there. Without one, the script builds in build-gpu first (the fallback;
# it needs the -dev packages). Without a CUDA device it stops at once: one "no CUDA device" line,
# exit status 3, the summary written. What it measures, most important first (docs/benchmarks.md, "GPU
# run", says how each figure is computed):
#   1. GPEN-512/256/1024 batch 1 on CUDA in fp16, bf16 and fp32 (synthetic weights): time per face
#      (host and cudaEvent), device memory, and --accuracy against the CPU backend in fp32 on the
#      same weights and input (max abs / max rel of the raw output, PSNR of the 8-bit faces);
#      1b. 512 and 256 fp16/bf16 again with the WMMA kernels (GPEN_CUDA_GEMM=wmma): both GEMM
#      families' speeds side by side;
#   2. PyTorch (tests/reference/gpen_reference.py) on the same GPU: GPEN-512 eager fp16 and fp32,
#      speed and memory ratios; 3. RetinaFace mobilenet0.25 on a 1024x768 photo on CUDA, against
#      PyTorch on CUDA; 3b. GFPGAN-512 and 3c. CodeFormer and RestoreFormer++ on CUDA in fp32,
#      then fp16, against the CPU backend in fp32; 4. the whole pipeline on that photo (synthetic GPEN-BFR-256), CUDA and CPU;
#   5. PyTorch at 256 and 1024, batch 8 timings, 512 without CUDA graphs; 6. the test_cuda_*
#      tests on the GPU (the bundle's test_cuda_all, before step 1; else built here); 7. torch.compile at 512;
#      8. compute-sanitizer on the CUDA tests; 9. the Google benchmarks; 10. the CPU tests (not
#      with a bundle: CI runs them; without one, after building the rest).
# Everything after gpen is ready is guarded by the clock: a step that would end past the
# deadline is skipped with a log line, and every command runs under a timeout that ends before it.
# Results go to $OUT (the device tool) or bench/results/gpu-check/: gpu_check_summary.txt, gpu_check_results.json
# (the key numbers of every run, merged) and gpu_check.tgz (every raw file).
# The RetinaFace weights and the photo (models/retinaface-mobilenet0.25.pth, images/kids_1024x768.jpg)
# come from the bundle's shared/, else $GPEN_SHARED_DIR, ./shared, ../shared or ./.gpu_inputs (flat
# or with models/ and images/; laid out so, it also becomes the tests' GPEN_SHARED_DIR); steps 3
# and 4 are skipped without them. Without a bundle: cp -r ../shared/. .gpu_inputs/ and carry it.
set -uo pipefail
if [ -n "${GPU_CHECK_BUNDLE:-}" ]; then
  BUNDLE=$(cd "$GPU_CHECK_BUNDLE" && pwd) || exit 1
  cd "$BUNDLE/.." || exit 1
else
  cd "$(dirname "$0")/.." || exit 1
  BUNDLE=""
  [ -x .gpu_bundle/bin/gpen ] && BUNDLE=$PWD/.gpu_bundle
fi
SCRIPTS=${BUNDLE:-$PWD}/scripts
DEADLINE=${GPU_CHECK_DEADLINE:-570}  # seconds from the start; the device tool stops us at 600
DEST=${OUT:-bench/results/gpu-check}
RES=$(mktemp -d)/gpu_check
WORK=$(mktemp -d)
mkdir -p "$RES" "$DEST"
SUMMARY="$DEST/gpu_check_summary.txt"
: > "$SUMMARY"
# The summary goes straight to DEST (it survives a kill); the merge and the archive at the end.
finish() {
  python3 - "$RES" "$DEST/gpu_check_results.json" >> "$SUMMARY" 2>&1 <<'PY'
import glob, json, math, os, sys
res, out = sys.argv[1], sys.argv[2]
KEEP = ('ms_per_face', 'device_ms_per_face', 'median_ms', 'min_ms', 'cuda_graphs', 'precision', 'batch',
        'device_planned_bytes', 'device_used_bytes', 'device_weights_bytes', 'arena_bytes', 'workspace_bytes',
        'peak_rss_mib', 'faces', 'speedup_vs_pytorch', 'device_name', 'wall_s')
merged = {}
for p in sorted(glob.glob(os.path.join(res, '*.json'))):
    name = os.path.basename(p)[:-5]
    try:
        j = json.load(open(p))
    except Exception as e:
        # a failed run prints no JSON: its message is the last line of NAME.err
        err = os.path.join(res, name + '.err')
        lines = open(err).read().strip().splitlines() if os.path.exists(err) else []
        merged[name] = {'error': lines[-1] if lines else 'unreadable: %s' % e}
        continue
    if not isinstance(j, dict):
        continue
    r = {k: j[k] for k in KEEP if k in j}
    r.update({k: v for k, v in j.items() if k.startswith('accuracy_') and k != 'accuracy_reference'})
    for k in ('vs_pytorch', 'pytorch_variants', 'pytorch', 'totals', 'memory', 'runs'):
        if k in j:
            v = j[k]
            if k in ('pytorch_variants', 'pytorch') and isinstance(v, dict):
                pick = lambda d: {x: d[x] for x in ('ms_per_face', 'device_ms_per_face', 'median_ms', 'peak_device_bytes',
                                                     'device_used_bytes', 'compile_s', 'dtype', 'error', 'torch')
                                  if x in d}
                v = pick(v) if k == 'pytorch' else {n: pick(d) for n, d in v.items()}
            r[k] = v
    merged[name] = r
json.dump(merged, open(out, 'w'), indent=1, sort_keys=True)

def f(v, fmt):
    return fmt % v if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v if v is not None else '-')
print('\nGPEN on CUDA (batch 1 with --accuracy; accuracy against the CPU backend in fp32)')
print('%-28s %9s %9s %11s %9s %9s %9s' % ('run', 'ms/face', 'dev ms', 'planned MiB', 'max abs', 'max rel', 'PSNR dB'))
for n, r in merged.items():
    if n.startswith('gpen_cuda_') and 'error' in r:
        print('%-28s failed: %s' % (n[10:], r['error'][:100]))
    elif n.startswith('gpen_cuda_'):
        print('%-28s %9s %9s %11s %9s %9s %9s' % (n[10:], f(r.get('ms_per_face'), '%.3f'), f(r.get('device_ms_per_face'), '%.3f'),
              f(r.get('device_planned_bytes', 0) / 2**20 if 'device_planned_bytes' in r else None, '%.1f'),
              f(r.get('accuracy_max_abs'), '%.2e'), f(r.get('accuracy_max_rel'), '%.2e'), f(r.get('accuracy_psnr_8bit'), '%.2f')))
print('\nPyTorch comparisons (speedup > 1: the engine is faster; memory: torch peak / engine planned)')
for n, r in merged.items():
    for v, q in (r.get('vs_pytorch') or {}).items():
        t = (r.get('pytorch_variants') or {}).get(v, {})
        print('%-28s %-14s torch %9s ms/face (dev %s)  speedup host %s device %s  memory %s' % (
            n, v, f(t.get('ms_per_face'), '%.3f'), f(t.get('device_ms_per_face'), '%.3f'), f(q.get('speedup_host'), '%.2fx'),
            f(q.get('speedup_device'), '%.2fx'), f(q.get('memory_ratio'), '%.2fx')))
    for v, t in (r.get('pytorch_variants') or {}).items():
        if 'error' in t:
            print('%-28s %-14s not measured: %s' % (n, v, t['error']))
    if n.startswith('retinaface') and 'median_ms' in r:
        pt = r.get('pytorch') or {}
        print('%-28s engine %.2f ms/photo, torch %s ms/photo%s' % (n, r['median_ms'], f(pt.get('median_ms'), '%.2f'),
              ', speedup %.2fx' % r['speedup_vs_pytorch'] if 'speedup_vs_pytorch' in r else ''))
PY
  cp "$SUMMARY" "$RES/summary.txt" 2> /dev/null
  cp "$DEST/gpu_check_results.json" "$RES/results.json" 2> /dev/null
  tar czf "$DEST/gpu_check.tgz" -C "$(dirname "$RES")" gpu_check
}
trap finish EXIT
log() { echo "[$(date +%T) ${SECONDS}s] $*" | tee -a "$SUMMARY"; }
# With a bundle: its binaries get lib/ first in LD_LIBRARY_PATH (their RPATH names it too); Python
# and the driver's tools get the machine's own libraries (a PyTorch wheel finds its libgomp through
# RUNPATH, which LD_LIBRARY_PATH would override with the bundle's older one).
if [ -n "$BUNDLE" ]; then
  OUTER_LDLP=${GPU_CHECK_OUTER_LD_LIBRARY_PATH-${LD_LIBRARY_PATH-}}
  export LD_LIBRARY_PATH=$BUNDLE/lib${OUTER_LDLP:+:$OUTER_LDLP}
  if [ -n "$OUTER_LDLP" ]; then OUTSIDE=(env "LD_LIBRARY_PATH=$OUTER_LDLP"); else OUTSIDE=(env -u LD_LIBRARY_PATH); fi
  python3() { "${OUTSIDE[@]}" python3 "$@"; }
  export GPEN_REFERENCE_DIR=$BUNDLE/tests/reference GPEN_FIXTURE_DIR=$BUNDLE/tests/fixtures GPEN_BINARY_DIR=$BUNDLE/bin
else
  OUTSIDE=()
fi
# can NAME SECONDS: whether a step estimated at SECONDS still ends before the deadline (else logs the skip).
can() {
  if [ $((SECONDS + $2)) -gt "$DEADLINE" ]; then log "  $1: skipped (time budget: ${SECONDS}s used, needs ~$2s)"; return 1; fi
}
# cap N: N seconds, or what is left before the deadline when that is less (at least 5).
cap() { local c=$1 l=$((DEADLINE - SECONDS)); [ "$l" -lt "$c" ] && c=$l; [ "$c" -lt 5 ] && c=5; echo "$c"; }
field() { python3 -c "
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception:
    sys.exit(0)
def get(j, k):
    for p in k.split('.'):
        j = j.get(p) if isinstance(j, dict) else None
    return j
out = []
for k in sys.argv[2:]:
    v = get(j, k)
    if v is not None:
        out.append(f'{k}={v:.4g}' if isinstance(v, float) else f'{k}={v}')
print(' '.join(out))" "$@" 2> /dev/null; }

# The shared inputs (they do not travel with the working tree unless copied into it).
RETINA_PTH="" PHOTO="" SHARED_FOR_TESTS=""
for d in ${BUNDLE:+"$BUNDLE/shared"} "${GPEN_SHARED_DIR:-}" shared ../shared .gpu_inputs; do
  if [ -z "$d" ] || [ ! -d "$d" ]; then continue; fi
  # The tests read GPEN_SHARED_DIR/models/... (the CUDA pipeline and backend tests use the real
  # mobilenet0.25 weights): give them the first folder laid out like ../shared.
  [ -z "$SHARED_FOR_TESTS" ] && [ -f "$d/models/retinaface-mobilenet0.25.pth" ] && SHARED_FOR_TESTS=$(cd "$d" && pwd)
  for f in "$d/models/retinaface-mobilenet0.25.pth" "$d/retinaface-mobilenet0.25.pth"; do
    [ -z "$RETINA_PTH" ] && [ -f "$f" ] && RETINA_PTH=$f
  done
  for f in "$d/images/kids_1024x768.jpg" "$d/kids_1024x768.jpg"; do
    [ -z "$PHOTO" ] && [ -f "$f" ] && PHOTO=$f
  done
done

if command -v nvidia-smi > /dev/null; then
  "${OUTSIDE[@]}" nvidia-smi > "$RES/nvidia-smi.txt" 2>&1
  log "gpu_check: $("${OUTSIDE[@]}" nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -c 300)"
else
  log "gpu_check: no nvidia-smi on this machine"
fi

# ---------------------------------------------------------------- the bundle, or build: the CLI first
BUILD=${GPU_CHECK_BUILD_DIR:-build-gpu}
if [ -n "$BUNDLE" ]; then
  log "bundle $BUNDLE: $(head -n 1 "$BUNDLE/MANIFEST.txt" 2> /dev/null)"
  GPEN=$BUNDLE/bin/gpen
  # A machine whose glibc or libstdc++ is older than the bundle's needs (MANIFEST.txt): say so.
  v=$("$GPEN" --version 2>&1) || { log "the bundle's gpen does not run here ($(getconf GNU_LIBC_VERSION)): $v"; exit 4; }
  log "  $v"
else
  # GPU_CHECK_BUILD_DIR + GPU_CHECK_SKIP_CONFIGURE=1: use an existing build.
  log "no bundle: configure + build gpen (sm_90) in $BUILD"
  if [ -z "${GPU_CHECK_SKIP_CONFIGURE:-}" ]; then
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGPEN_CUDA=ON -DGPEN_CUDA_ARCHS=90 \
      -DGPEN_CUDA_TESTS_NATIVE=ON ${SHARED_FOR_TESTS:+-DGPEN_SHARED_DIR="$SHARED_FOR_TESTS"} > "$RES/configure.txt" 2>&1
  fi
  t0=$SECONDS
  timeout "$(cap 300)" cmake --build "$BUILD" -j "$(nproc)" --target gpen > "$RES/build_gpen.txt" 2>&1 ||
    { log "BUILD FAILED (gpen)"; tail -50 "$RES/build_gpen.txt"; exit 1; }
  log "  gpen built in $((SECONDS - t0)) s"
  GPEN=$BUILD/gpen
fi
# No device, no run: the engine's own answer (a GPEN-64 on CUDA, about a second where there is one).
probe=$(timeout 60 "$GPEN" bench --device cuda --size 64 --channel-multiplier 1 --runs 1 --warmup 0 2>&1 > /dev/null)
if grep -q "no CUDA device" <<< "$probe"; then
  # What the driver side looks like, in the same line (a GPU that nvidia-smi lists but the CUDA
  # runtime does not find points at libcuda.so.1).
  smi=$(command -v nvidia-smi > /dev/null && "${OUTSIDE[@]}" nvidia-smi -L 2>&1 | head -n 1)
  cuda_lib=$(ldconfig -p 2> /dev/null | grep -m 1 -o '/.*libcuda\.so\.1$')
  log "no CUDA device: stopping (gpen bench --device cuda answered: $(tail -n 1 <<< "$probe"); nvidia-smi -L:" \
    "${smi:-none}; libcuda.so.1 in the ld cache: ${cuda_lib:-no}; LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-})"
  exit 3
fi
[ -n "$probe" ] && log "device probe (gpen bench --device cuda --size 64): $(tail -n 1 <<< "$probe" | head -c 300)"

# The Python that has PyTorch, preferably with CUDA (on the lent machine: python3 on the PATH).
PY=""
for want in cuda any; do
  for c in "${GPEN_PYTHON:-}" python3 /usr/bin/python3; do
    if [ -z "$c" ] || ! type -P "$c" > /dev/null; then continue; fi
    if [ $want = cuda ]; then t='import torch; assert torch.cuda.is_available()'; else t='import torch'; fi
    if "${OUTSIDE[@]}" "$c" -c "$t" 2> /dev/null; then PY=$(type -P "$c"); break 2; fi
  done
done
if [ -n "$BUNDLE" ]; then
  # gpen starts $GPEN_PYTHON itself (--compare-pytorch): a wrapper gives it the machine's libraries.
  if [ -n "$PY" ]; then
    { echo '#!/bin/bash'
      if [ -n "$OUTER_LDLP" ]; then printf 'export LD_LIBRARY_PATH=%q\n' "$OUTER_LDLP"; else echo 'unset LD_LIBRARY_PATH'; fi
      printf 'exec %q "$@"\n' "$PY"; } > "$WORK/python"
    chmod +x "$WORK/python"
    PY_SHOWN=$PY PY=$WORK/python
  fi
fi
export GPEN_PYTHON=$PY
log "python with torch: ${PY_SHOWN:-${PY:-none}} ($([ -n "$PY" ] && "$PY" -c 'import torch; print(torch.__version__, "cuda", torch.cuda.is_available())' 2>&1))"
log "RetinaFace weights: ${RETINA_PTH:-not found}; photo: ${PHOTO:-not found}; shared dir for the tests: ${SHARED_FOR_TESTS:-none}"

# ---------------------------------------------------------------- 6. the CUDA tests on the GPU
# Only the test_cuda_* tests here (the rest, CPU tests and benchmarks, at the end if time is
# left); one at a time: test_cuda_backend reads cudaMemGetInfo, which other processes would move.
# A bundle has them all in bin/test_cuda_all, run once per source file (doctest --source-file),
# and needs no build for them: then they run first, so the kernels' results are in even when the
# benchmarks take all the time; without a bundle they come after the benchmarks (step 6 below).
cuda_tests=()
if [ -n "$BUNDLE" ]; then
  mapfile -t cuda_tests < <(sed 's/\.cpp$//' "$BUNDLE/tests/test_cuda_files.txt")
else
  for f in tests/test_cuda_*.cpp; do cuda_tests+=("$(basename "$f" .cpp)"); done
fi
# cuda_cmd NAME: CMD=(the command that runs the tests of tests/NAME.cpp)
cuda_cmd() { if [ -n "$BUNDLE" ]; then CMD=("$BUNDLE/bin/test_cuda_all" "--source-file=*/$1.cpp"); else CMD=("$BUILD/tests/$1"); fi; }
if [ -n "$BUNDLE" ]; then
  log "6. (first, from the bundle) the CUDA tests on the GPU: bin/test_cuda_all, one run per test_cuda_*.cpp"
  export GPEN_SHARED_DIR=${SHARED_FOR_TESTS:-$BUNDLE/shared}
  npass=0 nfail=0
  for name in "${cuda_tests[@]}"; do
    can "$name" 10 || continue
    cuda_cmd "$name"
    [ "$name" = test_cuda_accuracy ] && CMD+=(-s)  # its MESSAGEs: fp16 / bf16 vs CPU fp32 on the GPU's kernels
    timeout "$(cap 120)" "${CMD[@]}" > "$RES/$name.txt" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then npass=$((npass + 1)); else nfail=$((nfail + 1)); fi
    log "  $name: rc=$rc $(grep -E '^\[doctest\] test cases' "$RES/$name.txt" | sed 's/^\[doctest\] //')"
  done
  log "  CUDA test files: $npass passed, $nfail failed"
  grep -E "MESSAGE" "$RES/test_cuda_accuracy.txt" 2> /dev/null | sed 's/^/    /' | tee -a "$SUMMARY"
fi

# ---------------------------------------------------------------- 1. GPEN on CUDA, batch 1, with accuracy
# Synthetic weights (seed 1) and the bench's random input (seed 7); --accuracy runs them again on
# the CPU backend in fp32 after the timed runs (a few seconds for 1024 on 16 cores).
bench() {  # bench NAME ESTIMATE CAP gpen-bench-args...
  local name=$1 est=$2 c=$3
  shift 3
  can "$name" "$est" || return 0
  local t=$SECONDS
  timeout "$(cap "$c")" "$GPEN" bench "$@" --json > "$RES/$name.json" 2> "$RES/$name.err"
  local rc=$?
  log "  $name: rc=$rc $((SECONDS - t))s $(field "$RES/$name.json" ms_per_face device_ms_per_face device_planned_bytes \
    accuracy_max_abs accuracy_max_rel accuracy_psnr_8bit speedup_vs_pytorch) $([ $rc -ne 0 ] && tail -c 300 "$RES/$name.err")"
}
log "1. GPEN on CUDA, batch 1, fp16/bf16/fp32, --accuracy vs CPU fp32, --profile (each node timed alone)"
for size in 512 256 1024; do
  for prec in fp16 bf16 fp32; do
    bench "gpen_cuda_${size}_b1_${prec}" 25 90 --device cuda --size "$size" --batch 1 --precision "$prec" \
      --runs 10 --warmup 2 --accuracy --profile
    # Where the time goes: the op kinds by share (the full per-node table is in the JSON).
    python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['profile']; print('    profile: ' + ', '.join(
      '%s %.0f%% %.1f TFLOP/s' % (o['op'], 100 * o['share'], o['gflops'] / 1e3) for o in p['by_op'][:5]))" \
      "$RES/gpen_cuda_${size}_b1_${prec}.json" >> "$SUMMARY" 2> /dev/null || true
  done
done

# ---------------------------------------------------------------- 1b. the two GEMM kernel families
# Step 1 ran the default family (mma.sync + ldmatrix + cp.async, GPEN_CUDA_GEMM=mma); the same
# benchmarks with the WMMA reference kernels give both speeds side by side from one GPU run
# (time per face, and time and TFLOP/s of the modconv / conv2d nodes from --profile).
log "1b. GEMM families: GPEN_CUDA_GEMM=wmma against step 1's mma, batch 1 (--profile)"
for size in 512 256; do
  for prec in fp16 bf16; do
    GPEN_CUDA_GEMM=wmma bench "gpen_cuda_${size}_b1_${prec}_wmma" 20 60 --device cuda --size "$size" --batch 1 \
      --precision "$prec" --runs 10 --warmup 2 --profile
    python3 -c "import json,sys
def ops(f):
    try: return {o['op']: o for o in json.load(open(f))['profile']['by_op']}, json.load(open(f))['ms_per_face']
    except Exception: return {}, float('nan')
m, tm = ops(sys.argv[1]); w, tw = ops(sys.argv[2])
parts = ['%s mma %.3f ms %.1f TFLOP/s / wmma %.3f ms %.1f TFLOP/s' % (k, m[k]['ms'], m[k]['gflops'] / 1e3, w[k]['ms'],
         w[k]['gflops'] / 1e3) for k in ('modconv', 'conv2d') if k in m and k in w]
print('    %s: mma %.3f / wmma %.3f ms per face; ' % (sys.argv[3], tm, tw) + '; '.join(parts))" \
      "$RES/gpen_cuda_${size}_b1_${prec}.json" "$RES/gpen_cuda_${size}_b1_${prec}_wmma.json" "${size} ${prec}" \
      >> "$SUMMARY" 2> /dev/null || true
  done
done

# ---------------------------------------------------------------- 2. PyTorch at 512 on the same GPU
if [ -n "$PY" ]; then
  log "2. PyTorch on CUDA vs the engine, GPEN-512 batch 1 (eager fp16 and fp32)"
  bench gpen_vs_torch_512_fp16 75 200 --device cuda --size 512 --precision fp16 --runs 10 --warmup 3 \
    --compare-pytorch --pytorch-timeout 90
  bench gpen_vs_torch_512_bf16 45 120 --device cuda --size 512 --precision bf16 --runs 10 --warmup 3 \
    --compare-pytorch --pytorch-variants eager_bf16 --pytorch-timeout 90
else
  log "2. PyTorch: skipped (no python3 with torch)"
fi

# ---------------------------------------------------------------- 3. RetinaFace on CUDA
if [ -n "$RETINA_PTH" ] && [ -n "$PHOTO" ] && can "3. RetinaFace" 40; then
  log "3. RetinaFace mobilenet0.25 on $(basename "$PHOTO") on CUDA"
  timeout "$(cap 60)" "$GPEN" convert "$RETINA_PTH" -o "$WORK/retinaface-mobilenet0.25.gpw" > "$RES/convert_retinaface.txt" 2>&1
  log "  convert: rc=$?"
  cmp_args=()
  [ -n "$PY" ] && cmp_args=(--compare-pytorch --pytorch-checkpoint "$RETINA_PTH" --pytorch-timeout 90)
  bench retinaface_cuda 35 120 --arch retinaface --device cuda -d "$WORK/retinaface-mobilenet0.25.gpw" \
    --image "$PHOTO" --runs 20 --warmup 3 "${cmp_args[@]}"
  [ -s "$RES/retinaface_cuda.json" ] &&
    log "    $(field "$RES/retinaface_cuda.json" device median_ms faces pytorch.median_ms pytorch.device pytorch.peak_device_bytes pytorch.error)"
fi

# ---------------------------------------------------------------- 3b. GFPGAN on CUDA
if can "3b. GFPGAN" 40; then
  log "3b. GFPGANv1Clean 512 on CUDA, fp32 then fp16 (synthetic weights, the released configuration), against the CPU backend"
  for prec in fp32 fp16; do
    bench "gfpgan_cuda_512_$prec" 30 90 --arch gfpgan --device cuda --size 512 --precision "$prec" --runs 5 --warmup 2 --accuracy
    [ -s "$RES/gfpgan_cuda_512_$prec.json" ] &&
      log "    $(field "$RES/gfpgan_cuda_512_$prec.json" device ms_per_face device_used_bytes accuracy_max_abs)"
  done
fi
# ---------------------------------------------------------------- 3c. CodeFormer, RestoreFormer++ on CUDA
for arch in codeformer restoreformer; do
  can "3c. $arch" 45 || continue
  log "3c. $arch 512 on CUDA, fp32 then fp16 (synthetic weights, the released configuration), against the CPU backend"
  for prec in fp32 fp16; do
    bench "${arch}_cuda_512_$prec" 35 100 --arch "$arch" --device cuda --precision "$prec" --runs 5 --warmup 2 --accuracy
    [ -s "$RES/${arch}_cuda_512_$prec.json" ] &&
      log "    $(field "$RES/${arch}_cuda_512_$prec.json" device ms_per_face device_used_bytes accuracy_max_abs accuracy_codes_differing)"
  done
done

# ---------------------------------------------------------------- 4. the whole pipeline on the photo
if [ -n "$RETINA_PTH" ] && [ -n "$PHOTO" ] && [ -n "$PY" ] && [ -f "$WORK/retinaface-mobilenet0.25.gpw" ] &&
  can "4. pipeline" 50; then
  log "4. gpen restore on $(basename "$PHOTO") (synthetic GPEN-BFR-256, real mobilenet0.25): CUDA and CPU"
  timeout "$(cap 60)" "$PY" "$SCRIPTS/make_synthetic_gpen.py" "$WORK/gpen256.pth" --size 256 > "$RES/make_synthetic.txt" 2>&1 &&
    timeout "$(cap 60)" "$GPEN" convert "$WORK/gpen256.pth" -o "$WORK/gpen256.gpw" > "$RES/convert_gpen256.txt" 2>&1
  log "  synthetic checkpoint + convert: rc=$?"
  # Three copies of the photo: the first run pays the plans (and on CUDA the graph captures).
  mkdir -p "$WORK/photos"
  for k in 1 2 3; do cp "$PHOTO" "$WORK/photos/photo$k.jpg"; done
  for dev in cuda cpu; do
    can "  restore --device $dev" 25 || continue
    t=$(date +%s.%N)
    timeout "$(cap 90)" "$GPEN" restore --device "$dev" -m "$WORK/gpen256.gpw" -d "$WORK/retinaface-mobilenet0.25.gpw" \
      "$WORK/photos" -o "$WORK/out_$dev" --report "$RES/pipeline_$dev.json" > "$RES/pipeline_$dev.txt" 2>&1
    rc=$?
    wall=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$t" "$(date +%s.%N)")
    if [ ! -s "$RES/pipeline_$dev.json" ]; then
      log "  restore --device $dev: rc=$rc, $wall s: $(tail -n 2 "$RES/pipeline_$dev.txt" | head -c 300)"
      continue
    fi
    log "  restore --device $dev: rc=$rc, $wall s for 3 photos (process); $(python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
for im in j['images']:
    t = im.get('times_ms', {})
    print('%s %d faces %.0f ms (detect %.1f, restore %.1f, paste %.1f);' % (im.get('image', '?').split('/')[-1],
          im.get('faces_restored', 0), sum(t.values()), t.get('detect', 0), t.get('restore', 0), t.get('paste', 0)), end=' ')
m = j['memory']
print('batch %s, pipeline on device %s' % (m.get('gpen_batch'), m.get('pipeline_on_device')))" "$RES/pipeline_$dev.json" 2>&1 | head -c 600)"
  done
  cp "$WORK/out_cuda/photo1.jpg" "$RES/pipeline_cuda_out.jpg" 2> /dev/null
fi

# ---------------------------------------------------------------- 5. more PyTorch sizes, batch 8, no graphs
if [ -n "$PY" ]; then
  log "5. PyTorch on CUDA vs the engine, GPEN-256 and GPEN-1024 batch 1 (eager fp16 and fp32)"
  bench gpen_vs_torch_256_fp16 60 150 --device cuda --size 256 --channel-multiplier 1 --narrow 0.5 \
    --precision fp16 --runs 10 --warmup 3 --compare-pytorch --pytorch-timeout 60
  bench gpen_vs_torch_1024_fp16 80 200 --device cuda --size 1024 --precision fp16 --runs 5 --warmup 2 \
    --compare-pytorch --pytorch-timeout 90
fi
log "5. GPEN on CUDA, batch 8 (time per face), and 512 fp16 without CUDA graphs"
for size in 512 256 1024; do
  for prec in fp16 bf16 fp32; do
    bench "gpen_cuda_${size}_b8_${prec}" 20 60 --device cuda --size "$size" --batch 8 --precision "$prec" --runs 3 --warmup 1
  done
done
bench gpen_cuda_512_b1_fp16_nographs 15 60 --device cuda --size 512 --batch 1 --precision fp16 --no-cuda-graphs \
  --runs 10 --warmup 2

# ---------------------------------------------------------------- 6. (without a bundle) the CUDA tests
if [ -z "$BUNDLE" ] && can "6. build + run the CUDA tests" 120; then
  log "6. build the CUDA tests, run them on the GPU"
  t0=$SECONDS
  timeout "$(cap 200)" cmake --build "$BUILD" -j "$(nproc)" --target "${cuda_tests[@]}" > "$RES/build_cuda_tests.txt" 2>&1
  log "  build rc=$? in $((SECONDS - t0)) s"
  if can "ctest -L cuda (native)" 30; then
    (cd "$BUILD" && timeout "$(cap 150)" ctest -L cuda --output-on-failure --timeout 120) > "$RES/ctest_cuda.txt" 2>&1
    log "  ctest -L cuda: rc=$? $(grep -E 'tests passed|tests failed' "$RES/ctest_cuda.txt")"
    # the accuracy test's figures (fp16 / bf16 vs CPU fp32 on the GPU's kernels)
    (cd "$BUILD" && timeout 30 tests/test_cuda_accuracy -s 2>&1 | grep -E "MESSAGE" | sed 's/^/    /') | tee -a "$SUMMARY"
  fi
fi

# ---------------------------------------------------------------- 7. torch.compile at 512
if [ -n "$PY" ] && can "7. torch.compile GPEN-512" 150; then
  log "7. torch.compile, GPEN-512 batch 1 fp16 (compile time reported apart)"
  bench gpen_vs_torch_512_compile 140 "$(cap 170)" --device cuda --size 512 --precision fp16 --runs 10 --warmup 3 \
    --compare-pytorch --pytorch-variants compile_fp16 --pytorch-timeout "$(($(cap 170) - 20))"
fi

# ---------------------------------------------------------------- 8. compute-sanitizer
CS=$(command -v compute-sanitizer || { [ -x /usr/local/cuda/bin/compute-sanitizer ] && echo /usr/local/cuda/bin/compute-sanitizer; })
if [ -n "$CS" ]; then
  log "8. compute-sanitizer (memcheck, racecheck) on the CUDA tests"
  for name in "${cuda_tests[@]}"; do
    cuda_cmd "$name"
    [ -x "${CMD[0]}" ] || continue
    for tool in memcheck racecheck; do
      can "$tool $name" 20 || continue
      timeout "$(cap 60)" "${OUTSIDE[@]}" "$CS" --tool $tool --error-exitcode 3 "${CMD[@]}" > "$RES/$name.$tool.txt" 2>&1
      log "  $tool $name: rc=$?"
    done
  done
fi

# ---------------------------------------------------------------- the rest of the build
if [ -z "$BUNDLE" ] && can "build the benchmarks and CPU tests" 90; then
  log "build everything else (benchmarks, CPU tests)"
  t0=$SECONDS
  timeout "$(cap 200)" cmake --build "$BUILD" -j "$(nproc)" > "$RES/build.txt" 2>&1
  log "  rc=$? in $((SECONDS - t0)) s"
fi

# ---------------------------------------------------------------- 9. Google benchmarks (CPU kernels)
log "9. benchmarks (CPU backend figures on this machine)"
benches=("$BUILD"/bench/bench_*)
[ -n "$BUNDLE" ] && benches=("$BUNDLE"/bin/bench_*)
for b in "${benches[@]}"; do
  [ -x "$b" ] || continue
  can "$(basename "$b")" 30 || continue
  timeout "$(cap 40)" "$b" --benchmark_min_time=0.1 --benchmark_format=json > "$RES/$(basename "$b").json" 2> /dev/null
  log "  $(basename "$b"): rc=$?"
done

# ---------------------------------------------------------------- 10. the CPU tests
if [ -n "$BUNDLE" ]; then
  log "10. CPU tests: not in the bundle (they need no GPU: CI runs them)"
elif [ -d "$BUILD/tests" ] && can "10. ctest (everything else)" 60; then
  log "10. ctest (everything else)"
  (cd "$BUILD" && timeout "$(cap 120)" ctest -LE "cuda|slow" -j 8 --timeout 100) > "$RES/ctest_cpu.txt" 2>&1
  log "  rc=$? $(grep -E 'tests passed|tests failed' "$RES/ctest_cpu.txt")"
fi
log "done in ${SECONDS} s"
